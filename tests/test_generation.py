"""Grounded generation: prompts, context within a token budget, citations, the extractive and openai backends.

Runs on the hand-written corpus of ``conftest.art`` (indexed through the real Dagster assets) and on
real HTTP: a closed port and a server that accepts and never answers, on localhost.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from conftest import ArtCorpus, free_port
from tiny_models import write_tiny_gguf, write_tiny_llava, write_tiny_lm
from typer.testing import CliRunner

from mmkg.cli import app
from mmkg.generation import (
    ExtractiveGenerator,
    GenerationError,
    answer,
    answer_stream,
    build_context,
    cited_labels,
    get_generator,
    load_template,
    prepare,
    tasks,
)
from mmkg.generation.base import approx_tokens
from mmkg.index import Index
from mmkg.retrieval import retrieve

BIRTH = "Where was Margit Holm born?"


def test_every_bundled_task_loads_and_fills_its_placeholders(art_index: Index, tmp_path: Path):
    assert {"qa", "vqa", "mg2_reasoning", "mg2_task_bc", "mg2_task_mc", "mkg_graph", "m3kg_triples"} <= set(tasks())
    res = retrieve(art_index, text=BIRTH, k=3, strategy="mkg")
    for task in tasks():
        template = load_template(task)
        assert template.system and "${" in template.user
        request, _, name = prepare(res, BIRTH, task)
        assert name == task and BIRTH in request.user and "${" not in request.system + request.user
        assert "[1]" in request.user
    assert "Option Letter only" in load_template("mg2_reasoning").system  # MG2-RAG Prompt 1, as the paper has it
    with pytest.raises(ValueError, match=r"unknown task 'poem'; choose one of \['m3kg_triples'"):
        load_template("poem")
    mine = tmp_path / "terse.txt"
    mine.write_text("# my own\n[System]\nBe terse.\n[User]\nQ: ${question}\n${context}\n")
    system, user = load_template(mine).render(question="why?", context="[1] because")
    assert system == "Be terse." and user == "Q: why?\n[1] because"


@pytest.mark.parametrize("budget", [60, 150, 400, 2000])
def test_context_respects_the_token_budget(art_index: Index, budget: int):
    res = retrieve(art_index, text=BIRTH, k=5, strategy="mkg")
    ctx = build_context(res, budget)
    shown = ctx.text + ctx.graph
    assert approx_tokens(ctx.text) + approx_tokens(ctx.graph) <= budget + 2 * len(ctx.evidence) + 2
    assert ctx.tokens <= budget
    labels = [e.label for e in ctx.evidence]
    assert labels == list(range(1, len(labels) + 1))
    for e in ctx.evidence:  # a chunk is shown whole or cut at a sentence end
        assert f"[{e.label}] " in shown and e.text.rstrip()[-1] in ".!?"
    if budget >= 2000:
        assert len(ctx.evidence) == len(res.chunks) and not ctx.left_out
    if budget <= 60:
        assert ctx.left_out >= 1 and ctx.notes


def test_citations_only_point_at_evidence_in_the_context(art_index: Index):
    res = retrieve(art_index, text=BIRTH, k=5)
    ctx = build_context(res, 120)
    n = len(ctx.evidence)
    assert n >= 1
    text = f"Uppsala [1]. Also [{n + 5}] and [1, {n + 7}] and again [1]."
    assert cited_labels(text, ctx) == [1]


def test_extractive_answers_with_the_sentence_and_its_citation(art_index: Index):
    for strategy in ("mg2", "mkg"):
        a = answer(art_index, BIRTH, ExtractiveGenerator(), strategy=strategy, budget=800)
        assert a.extractive and a.text.startswith("Uppsala [") and a.short_answer == "Uppsala"
        assert '"Margit Holm was born in Uppsala in 1890." [' in a.text  # the sentence that supports it, quoted
        assert a.citations and a.citations[0].source_path == "art/margit_holm.md"
        texts = dict(art_index.chunks.select("chunk_id", "text").iter_rows())
        for c in a.citations:  # what a citation names was in the context the backend saw
            assert f"[{c.label}] " in a.context and texts[c.chunk_id][:40] in a.context
        assert a.invalid_citations == 0 and a.strategy == strategy
    # a request built without the reader (a caller's own prompt) still gets the best sentences, labelled as copied
    request, _, _ = prepare(retrieve(art_index, text=BIRTH, k=3), BIRTH)
    gen = ExtractiveGenerator().generate(replace(request, reading=None))
    assert gen.text.startswith("Extractive answer") and "born in Uppsala in 1890. [" in gen.text


# -- the openai backend on real sockets ----------------------------------------------------------------


def test_openai_backend_server_down_is_a_clear_error_within_the_timeout(art_index: Index):
    port = free_port()  # nothing listens there
    gen = get_generator("openai", "tiny", base_url=f"http://127.0.0.1:{port}/v1", timeout=5, max_retries=0)
    t0 = time.perf_counter()
    with pytest.raises(GenerationError, match=rf"cannot reach http://127.0.0.1:{port}/v1 .*is the server running"):
        answer(art_index, BIRTH, gen)
    assert time.perf_counter() - t0 < 5


def test_openai_backend_slow_server_times_out_with_a_clear_error(art_index: Index):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept_and_stay_silent() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
                held.append(conn)  # read nothing, answer nothing
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept_and_stay_silent, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.getsockname()[1]}/v1"
        gen = get_generator("openai", "tiny", base_url=url, timeout=1.5, max_retries=0)
        t0 = time.perf_counter()
        with pytest.raises(GenerationError, match=r"did not answer within 2s"):
            answer(art_index, BIRTH, gen)
        assert 1.0 < time.perf_counter() - t0 < 6
    finally:
        stop.set()
        thread.join(timeout=5)
        for conn in held:
            conn.close()
        server.close()


def test_backend_configuration_errors_name_the_fix():
    with pytest.raises(GenerationError, match="needs a model name"):
        get_generator("openai", None)
    with pytest.raises(GenerationError, match=r"GGUF model /nope.gguf not found"):
        get_generator("llamacpp", "/nope.gguf")
    with pytest.raises(GenerationError, match=r"unknown generation backend 'gpt'"):
        get_generator("gpt")


def test_cli_ask(art: ArtCorpus):
    index = str(art.data / "index")
    out = CliRunner().invoke(app, ["ask", BIRTH, "--index", index, "--json"])
    assert out.exit_code == 0, out.output
    got = json.loads(out.stdout)
    assert got["backend"] == "extractive" and got["citations"][0]["source_path"] == "art/margit_holm.md"
    out = CliRunner().invoke(app, ["ask", BIRTH, "--index", index, "--stream"])
    assert out.exit_code == 0 and "Uppsala" in out.output and "art/margit_holm.md" in out.output
    for args, message in (
        (["--backend", "gpt"], "unknown generation backend 'gpt'"),
        (["--task", "poem"], "unknown task 'poem'"),
        (["--strategy", "mkg", "--param", "hop=2"], "unknown parameter(s) ['hop']"),
    ):
        out = CliRunner().invoke(app, ["ask", BIRTH, "--index", index, *args])
        assert out.exit_code == 2 and message in out.output, out.output


# -- the transformers backend with a tiny random model written here (the real loading code, offline) ------


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_lm(tmp_path_factory.mktemp("tiny-lm"))


def test_transformers_backend_answers_through_the_real_loading_code(art_index: Index, tiny_lm: Path, no_network):
    gen = get_generator("transformers", str(tiny_lm))
    a = answer(art_index, BIRTH, gen, k=3, budget=300, max_tokens=6)
    assert a.backend == "transformers" and a.model == tiny_lm.name and not a.extractive
    assert a.prompt_tokens > 50 and 1 <= a.completion_tokens <= 6  # a random model writes random words: the path
    request, _, _ = prepare(retrieve(art_index, text=BIRTH, k=3), BIRTH, "qa", 300, gen, None, 6)
    assert "".join(gen.stream(request)).split() == gen.generate(request).text.split()  # greedy: the same words
    with pytest.raises(GenerationError, match="cannot load the model"):
        get_generator("transformers", str(tiny_lm / "missing"))


def test_answers_asset_writes_a_table_of_answers_and_citations(art: ArtCorpus, tmp_path: Path):
    import polars as pl
    from dagster import materialize

    from assets.generation import answers
    from pipelines.resources import default_resources

    questions = tmp_path / "questions.jsonl"
    lines = [{"id": "q1", "question": BIRTH}, {"id": "q2", "question": "Who painted The Red Mill?"},
             {"id": "q3", "question": "Which is the largest lake?", "filters": {"partition": "other"}},
             {"id": "q4", "question": "What is in this picture?", "image": "missing.png"}]  # fmt: skip
    questions.write_text("\n".join(json.dumps(q) for q in lines) + "\n")
    data = tmp_path / "data"
    data.mkdir()
    (data / "index").symlink_to(art.data / "index")  # the published index, read only
    res = materialize(
        [answers],
        resources=default_resources(art.corpus, data),
        run_config={"ops": {"answers": {"config": {"questions": str(questions), "strategy": "mkg"}}}},
    )
    assert res.success
    table = pl.read_parquet(data / "tables" / "answers.parquet")
    assert table["question_id"].to_list() == ["q1", "q2", "q3", "q4"]
    by_id = {r["question_id"]: r for r in table.iter_rows(named=True)}
    assert "Uppsala" in by_id["q1"]["answer"] and by_id["q1"]["citations"][0]["source_path"] == "art/margit_holm.md"
    assert "Erik Sand" in by_id["q2"]["answer"]
    assert by_id["q1"]["short_answer"] == "Uppsala" and by_id["q1"]["answer_type"] == "place"
    assert 0 < by_id["q1"]["confidence"] <= 1
    assert by_id["q3"]["citations"] and {c["source_path"] for c in by_id["q3"]["citations"]} == {"other/lakes.md"}
    assert by_id["q4"]["answer"] == "" and "missing.png" in by_id["q4"]["error"]  # kept, with its reason
    assert set(table["strategy"].unique()) == {"mkg"} and not table["extractive"].is_null().any()
    meta = res.asset_materializations_for_node("answers")[0].metadata
    assert meta["answered"].value == 3 and meta["failed"].value == 1


def test_transformers_backend_shows_the_picture_to_a_vision_language_model(
    art_index: Index, tiny_lm: Path, tmp_path: Path, no_network
):
    from dataclasses import replace

    from PIL import Image

    picture = tmp_path / "red.png"
    Image.new("RGB", (40, 30), (200, 10, 10)).save(picture)
    gen = get_generator("transformers", str(write_tiny_llava(tmp_path / "tiny-llava")))
    request, _, task = prepare(retrieve(art_index, text=BIRTH, k=2), "What is in this picture?", None, 200, gen,
                               picture, 4)  # fmt: skip
    assert task == "vqa" and request.images == (picture,)
    seen = gen.generate(request)
    blind = gen.generate(replace(request, images=()))
    # the picture became the vision tower's 16 patch tokens ((32 / 8)^2) in place of one <image> marker
    assert seen.prompt_tokens == blind.prompt_tokens + 16 and 1 <= seen.completion_tokens <= 4
    assert "".join(gen.stream(request)).split() == seen.text.split()
    text_only = get_generator("transformers", str(tiny_lm))
    with pytest.raises(GenerationError, match="is a text model and cannot see the picture"):
        text_only.generate(request)


# -- llama.cpp: a tiny GGUF in process, and behind llama-cpp-python's OpenAI-compatible server ----------------


def test_llamacpp_backend_answers_in_process(art_index: Index, tiny_gguf: Path, no_network):
    gen = get_generator("llamacpp", str(tiny_gguf), n_ctx=2048)
    a = answer(art_index, BIRTH, gen, k=3, budget=300, max_tokens=8)
    assert a.backend == "llamacpp" and a.model == "tiny.gguf" and not a.extractive
    assert a.prompt_tokens > 50 and 1 <= a.completion_tokens <= 8
    request, _, _ = prepare(retrieve(art_index, text=BIRTH, k=3), BIRTH, "qa", 300, gen, None, 8)
    assert "".join(gen.stream(request)) == gen.generate(request).text  # greedy: the same text


def test_llamacpp_gguf_without_a_chat_template_warns_and_takes_a_named_format(
    art_index: Index, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, no_network
):
    # a base model's GGUF carries no tokenizer.chat_template: llama-cpp-python would write Llama 2's "<<SYS>>"
    # prompts, which other models echo; the backend says so, and MMKG_LLM_CHAT_FORMAT names the format instead
    bare = write_tiny_gguf(tmp_path / "bare.gguf", chat_template=False)
    monkeypatch.delenv("MMKG_LLM_CHAT_FORMAT", raising=False)
    with caplog.at_level("WARNING", logger="mmkg.llm.local"):
        gen = get_generator("llamacpp", str(bare), n_ctx=2048)
    assert gen.chat_format == "llama-2"
    (warning,) = [r.getMessage() for r in caplog.records if r.name == "mmkg.llm.local"]
    assert str(bare) in warning and "no chat template" in warning and "MMKG_LLM_CHAT_FORMAT" in warning

    caplog.clear()
    monkeypatch.setenv("MMKG_LLM_CHAT_FORMAT", "chatml")
    with caplog.at_level("WARNING", logger="mmkg.llm.local"):
        named = get_generator("llamacpp", str(bare), n_ctx=2048)
    assert named.chat_format == "chatml" and not caplog.records
    request, _, _ = prepare(retrieve(art_index, text=BIRTH, k=3), BIRTH, "qa", 300, named, None, 8)
    # chatml wraps each message in <|im_start|> ... <|im_end|>: the prompt grows by those markers' tokens
    assert named.generate(request).prompt_tokens > gen.generate(request).prompt_tokens

    monkeypatch.setenv("MMKG_LLM_CHAT_FORMAT", "no-such-format")
    with pytest.raises(GenerationError, match=r"MMKG_LLM_CHAT_FORMAT.*no-such-format.*chatml"):
        get_generator("llamacpp", str(bare), n_ctx=2048)


def test_cli_ask_takes_a_chat_format_for_a_gguf_without_one(art: ArtCorpus, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch, no_network):  # fmt: skip
    bare = str(write_tiny_gguf(tmp_path / "bare.gguf", chat_template=False))
    monkeypatch.delenv("MMKG_LLM_CHAT_FORMAT", raising=False)
    index = str(art.data / "index")
    base = ["ask", BIRTH, "--index", index, "--backend", "llamacpp", "--model", bare, "--max-tokens", "4", "--json"]
    out = CliRunner().invoke(app, [*base, "--chat-format", "chatml"])
    assert out.exit_code == 0, out.output
    got = json.loads(out.stdout)
    assert got["backend"] == "llamacpp" and got["model"] == "bare.gguf" and 1 <= got["completion_tokens"] <= 4
    out = CliRunner().invoke(app, [*base, "--chat-format", "no-such-format"])
    assert out.exit_code == 2 and "--chat-format" in out.output and "no-such-format" in out.output, out.output


def test_generator_resource_passes_its_chat_format(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from resources.generator import GeneratorResource

    monkeypatch.delenv("MMKG_LLM_CHAT_FORMAT", raising=False)
    bare = str(write_tiny_gguf(tmp_path / "bare.gguf", chat_template=False))
    assert GeneratorResource(backend="llamacpp", model=bare, chat_format="chatml").get().chat_format == "chatml"
    assert GeneratorResource(backend="llamacpp", model=bare).get().chat_format == "llama-2"  # the fallback, warned


def test_llamacpp_gguf_with_its_own_template_loads_quietly(
    tiny_gguf: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    monkeypatch.delenv("MMKG_LLM_CHAT_FORMAT", raising=False)
    with caplog.at_level("WARNING", logger="mmkg.llm.local"):
        gen = get_generator("llamacpp", str(tiny_gguf), n_ctx=2048)
    assert not caplog.records and gen.chat_format != "llama-2"


def test_openai_backend_against_a_real_llama_cpp_server(art_index: Index, llama_server: str):
    gen = get_generator("openai", "tiny", base_url=llama_server, timeout=60, max_retries=0)
    a = answer(art_index, BIRTH, gen, k=3, budget=300, max_tokens=8)
    assert a.backend == "openai" and a.model == "tiny" and not a.extractive
    assert a.prompt_tokens > 50 and 1 <= a.completion_tokens <= 8  # the server's own usage counts
    streamed = list(answer_stream(art_index, BIRTH, gen, k=3, budget=300, max_tokens=8))
    pieces, final = streamed[:-1], streamed[-1]
    assert len(pieces) >= 2 and all(isinstance(p, str) for p in pieces)  # server-sent events, piece by piece
    assert "".join(pieces) == final.text == a.text  # greedy: the same answer either way


def test_openai_backend_sends_the_picture_as_a_data_url(art_index: Index, llama_server: str, tmp_path: Path):
    from dataclasses import replace

    from PIL import Image

    from mmkg.llm.openai_backend import data_url

    gen = get_generator("openai", "tiny", base_url=llama_server, timeout=60, max_retries=0)
    small = tmp_path / "dot.png"
    Image.new("RGB", (4, 4), (0, 90, 200)).save(small)
    request, _, _ = prepare(retrieve(art_index, text=BIRTH, k=2), "What is in this picture?", None, 150, gen,
                            small, 4)  # fmt: skip
    seen = gen.generate(request)
    blind = gen.generate(replace(request, images=()))
    # the tiny model's chat template writes an image part's URL into the prompt, one byte token per character
    assert seen.prompt_tokens - blind.prompt_tokens >= len(data_url(small))
    big = tmp_path / "noise.png"
    noise = np.random.default_rng(0).integers(0, 256, (64, 64, 3), dtype=np.uint8)
    Image.fromarray(noise).save(big)  # ~16 KB of data URL: past the 8192-token context
    with pytest.raises(GenerationError, match=rf"{llama_server} answered 400 for model tiny"):
        gen.generate(replace(request, images=(big,)))


def test_a_decline_never_says_a_number_is_below_itself():
    """"confidence 0.36 is below 0.36" (0.3595 against 0.364) read as a contradiction to a user."""
    from mmkg.generation.short_answer import below

    assert below(0.3595, 0.364) == "confidence 0.359 is below 0.364"
    assert below(0.29, 0.364) == "confidence 0.29 is below 0.36"
