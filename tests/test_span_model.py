"""The ``span-model`` backend: a local extractive QA model reads the answer's span out of the evidence.

The model is ``tiny_models.write_tiny_qa``: a two-layer BERT with a span head, trained here for seconds to point at
two made-up words ("Uppsala" as upp ##sala, "Quibbletown" as quib ##ble ##town) and at [CLS] when a passage has
neither. It understands nothing; what is under test is the reader around it: loading a folder offline, windows
over a passage longer than the model reads, tokens back to characters, the best span across passages, declining,
the reader's computed answers standing, and the answer through ``answer()``, the CLI and its ``--json``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ArtCorpus
from tiny_models import write_tiny_qa
from typer.testing import CliRunner

from mmkg.cli import app
from mmkg.generation import GenerationError, answer, get_generator
from mmkg.generation.base import Evidence, GenerationRequest
from mmkg.generation.extractive import ExtractiveGenerator
from mmkg.generation.short_answer import ShortAnswer, Support
from mmkg.generation.span_model import SpanModelGenerator, sentence_around
from mmkg.index import Index

BIRTH = "Where was Margit Holm born?"
LONG = " ".join(["the museum of the lake"] * 20) + ". Margit Holm was born in Quibbletown in 1890. " + " ".join(
    ["bronze works"] * 10)  # fmt: skip
OTHER = "The old mill was painted in the city. She studied at the academy."


@pytest.fixture(scope="module")
def tiny_qa(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_qa(tmp_path_factory.mktemp("tiny-qa"))


def _ev(label: int, text: str) -> Evidence:
    return Evidence(label, "chunk", text, f"c{label}", f"d{label}", f"doc {label}", f"doc{label}.md")


def _request(evidence: tuple[Evidence, ...], reading: ShortAnswer | None = None) -> GenerationRequest:
    return GenerationRequest("system", "user", "Where was she born?", evidence, reading=reading)


def test_the_best_span_across_windows_and_passages_maps_back_to_its_characters(tiny_qa: Path, no_network):
    gen = SpanModelGenerator(str(tiny_qa), max_length=64, stride=16)
    # the answer sits past the first 64 tokens of the second passage: only a later window sees it
    assert gen.tokenizer(LONG).char_to_token(LONG.index("Quibbletown")) > 64
    request = _request((_ev(1, OTHER), _ev(2, LONG)))
    reading = gen.read(request)
    assert reading.text == "Quibbletown" and reading.method == "span-model" and not reading.abstained
    assert 0.2 < reading.confidence <= 1  # start × end probability in its window
    hits, null = gen.spans(request.question, request.evidence)
    assert hits[0].score - null > 2  # a clear margin over declining, so a retrained model's drift would show
    (sup,) = reading.support
    assert sup.label == 2 and sup.chunk_id == "c2"
    assert sup.sentence == "Margit Holm was born in Quibbletown in 1890."
    assert sup.sentence[sup.start : sup.end] == "Quibbletown"
    assert LONG[sup.offset : sup.offset + len(sup.sentence)] == sup.sentence  # where it is in the passage shown
    assert reading.candidates[0].text == "Quibbletown" and reading.candidates[0].evidence == 2
    gen_text = gen.generate(request)
    assert gen_text.text.startswith("Quibbletown [2]") and gen_text.used == [2] and gen_text.extractive
    assert gen_text.reading is not None and gen_text.reading.text == "Quibbletown"
    # a question longer than half a window is cut to half of it: the passage still gets the rest
    wordy = GenerationRequest("s", "u", " ".join(["where was she born"] * 30) + "?", (_ev(2, LONG),))
    assert gen.read(wordy).text == "Quibbletown"
    # one window holding the whole passage reads the same span
    whole = SpanModelGenerator(str(tiny_qa), max_length=128, stride=32).read(_request((_ev(2, LONG[-160:]),)))
    assert whole.text == "Quibbletown" and whole.support[0].label == 2
    # windows in batches of one read the same as in one batch
    one_by_one = SpanModelGenerator(str(tiny_qa), max_length=64, stride=16, batch_size=1).read(request)
    assert (one_by_one.text, one_by_one.support, one_by_one.confidence) == (reading.text, reading.support,
                                                                           pytest.approx(reading.confidence))


def test_the_confidence_does_not_depend_on_the_other_passages_padding(tiny_qa: Path):
    gen = SpanModelGenerator(str(tiny_qa), max_length=64, stride=16)
    short = _ev(2, "Margit Holm was born in Quibbletown in 1890.")
    alone = gen.read(_request((short,)))
    beside = gen.read(_request((short, _ev(3, LONG))))  # LONG's full windows pad the short one's
    assert alone.text == beside.text == "Quibbletown"
    assert alone.confidence == pytest.approx(beside.confidence, abs=1e-3)


def test_it_declines_when_no_passage_answers_unless_the_threshold_says_otherwise(tiny_qa: Path):
    gen = SpanModelGenerator(str(tiny_qa), max_length=64, stride=16)
    reading = gen.read(_request((_ev(1, OTHER),)))
    assert reading.abstained and reading.text == "Not answerable" and reading.method == "span-model"
    assert "no-answer score" in reading.reason and reading.guess and reading.confidence == 0.0
    hits, null = gen.spans("Where was she born?", (_ev(1, OTHER),))
    assert null - hits[0].score > 2  # a clear margin, so a retrained model's drift would show
    # the guess stays checkable: cited, in its sentence
    assert reading.support[0].label == 1 and gen.generate(_request((_ev(1, OTHER),))).text.startswith(
        f"Not answerable (best guess: {reading.guess} [1])")  # fmt: skip
    # a SQuAD 1.1 model never learned to decline: a large threshold keeps its best span
    eager = SpanModelGenerator(str(tiny_qa), max_length=64, stride=16, null_threshold=1e6).read(
        _request((_ev(1, OTHER),)))  # fmt: skip
    assert not eager.abstained and eager.text == reading.guess
    nothing = SpanModelGenerator(str(tiny_qa)).read(_request(()))
    assert nothing.abstained and nothing.reason == "the model found no span in the passages shown"


def test_what_the_reader_computed_stands(tiny_qa: Path):
    computed = ShortAnswer("42", "number", 0.8, method="arithmetic",
                           support=[Support(1, "The old mill was painted in the city.", 0, 3)],
                           reason="the difference of two values")  # fmt: skip
    request = _request((_ev(1, OTHER), _ev(2, LONG)), computed)
    gen = SpanModelGenerator(str(tiny_qa), max_length=64, stride=16)
    assert gen.read(request) is computed
    assert gen.generate(request).text == ExtractiveGenerator().generate(request).text
    # a span the reader picked by its features is read again by the model
    picked = ShortAnswer("1890", "place", 0.3, method="span", support=[Support(2, "x", 0, 1)])
    assert gen.read(_request((_ev(1, OTHER), _ev(2, LONG)), picked)).text == "Quibbletown"
    # a yes/no or choice question the reader declined stays declined: a span is no yes and no option
    for kind in ("yes_no", "choice"):
        declined = ShortAnswer("Not answerable", kind, 0.0, abstained=True, method=kind)
        assert gen.read(_request((_ev(2, LONG),), declined)) is declined
    declined = ShortAnswer("Not answerable", "place", 0.0, abstained=True, method="span")
    assert gen.read(_request((_ev(2, LONG),), declined)).text == "Quibbletown"


def test_a_model_without_token_types_reads_with_a_bert_tokenizer(tiny_qa: Path, tmp_path: Path):
    """A DistilBERT span model beside a BERT tokenizer (which gives token_type_ids the model does not take)."""
    from transformers import AutoTokenizer, DistilBertConfig, DistilBertForQuestionAnswering

    tok = AutoTokenizer.from_pretrained(tiny_qa)
    config = DistilBertConfig(vocab_size=len(tok), dim=32, n_layers=1, n_heads=2, hidden_dim=64,
                              max_position_embeddings=128)  # fmt: skip
    DistilBertForQuestionAnswering(config).save_pretrained(tmp_path / "distil")
    tok.save_pretrained(tmp_path / "distil")
    gen = SpanModelGenerator(str(tmp_path / "distil"), max_length=64, stride=16)
    assert "token_type_ids" in tok.model_input_names and "token_type_ids" not in gen.inputs
    reading = gen.read(_request((_ev(2, LONG),)))  # random weights: some span of the passage, or a decline
    assert reading.method == "span-model" and (reading.abstained or reading.text in LONG)


def test_sentence_around_a_span():
    text = "First one. Second one here!\nThird line"
    a = text.index("one here")
    assert sentence_around(text, a, a + 3) == ("Second one here!", 11)
    b = text.index("Third")
    assert sentence_around(text, b, b + 5) == ("Third line", b)
    assert sentence_around(text, 0, len(text)) == (text, 0)  # a span across sentences keeps them all


def test_answers_on_a_real_index_through_answer_the_cli_and_json(art: ArtCorpus, art_index: Index, tiny_qa: Path,
                                                                  no_network):  # fmt: skip
    gen = get_generator("span-model", str(tiny_qa))
    a = answer(art_index, BIRTH, gen, k=4, budget=400)
    assert a.backend == "span-model" and a.model == tiny_qa.name and a.extractive
    assert a.short_answer == "Uppsala" and a.reading["method"] == "span-model"
    assert a.citations[0].source_path == "art/margit_holm.md"
    sup = a.reading["support"][0]
    assert sup["sentence"][sup["start"] : sup["end"]] == "Uppsala" and "[" in a.text
    index = str(art.data / "index")
    out = CliRunner().invoke(app, ["ask", BIRTH, "--index", index, "--backend", "span-model", "--model",
                                   str(tiny_qa), "--json"])  # fmt: skip
    assert out.exit_code == 0, out.output
    got = json.loads(out.stdout)
    assert got["short_answer"] == "Uppsala" and got["backend"] == "span-model"
    assert got["citations"][0]["source_path"] == "art/margit_holm.md"
    out = CliRunner().invoke(app, ["ask", BIRTH, "--index", index, "--backend", "span-model", "--model",
                                   str(tiny_qa), "--stream"])  # fmt: skip
    assert out.exit_code == 0 and "Uppsala" in out.output and "short answer: Uppsala" in out.output, out.output


def test_a_missing_or_wrong_model_is_a_clear_error(tiny_qa: Path, tmp_path: Path):
    with pytest.raises(GenerationError, match="span-model backend needs --model"):
        get_generator("span-model")
    with pytest.raises(GenerationError, match="cannot load an extractive question-answering model from"):
        get_generator("span-model", str(tmp_path / "missing"))
    out = CliRunner().invoke(app, ["ask", BIRTH, "--backend", "span-model"])
    assert out.exit_code == 2 and "span-model backend needs --model" in out.output
    with pytest.raises(GenerationError, match="stride 64 must be under half of max_length 128"):
        SpanModelGenerator(str(tiny_qa), max_length=128, stride=64)


def test_eval_scores_the_span_model_beside_the_reader(art: ArtCorpus, tiny_qa: Path, tmp_path: Path):
    questions = [
        {"id": "s1", "question": BIRTH, "answer": "Uppsala", "supporting_titles": ["Margit Holm"]},
        {"id": "s2", "question": "Who was born first, Margit Holm or Erik Sand?", "answer": "Erik Sand",
         "supporting_titles": ["Margit Holm", "Erik Sand"]},
        {"id": "s3", "question": "Which lake is the largest in Sweden?", "answer": "Vanern",
         "supporting_titles": ["Swedish lakes"]},
    ]  # fmt: skip
    qpath = tmp_path / "questions.json"
    qpath.write_text(json.dumps(questions))
    out = tmp_path / "out"
    index = str(art.data / "index")
    r = CliRunner().invoke(app, ["eval", "sample", "--questions", str(qpath), "--index", index, "--answers", "only",
                                 "--out", str(out), "--span-model", str(tiny_qa)])  # fmt: skip
    assert r.exit_code == 0, r.output
    report = json.loads((out / "answers.json").read_text())
    assert report["systems"][-1] == "span_model" and "span_model" in report["summary"]
    preds = {q["id"]: q["predictions"] for q in report["questions"]}
    assert preds["s1"]["span_model"] == "Uppsala"  # the model's span
    assert preds["s2"]["span_model"] == preds["s2"]["reader"] == "Erik Sand"  # a comparison: the reader's stands
    # where the reader picked a span or declined, the model reads: this one points at its word wherever the evidence
    # has it (every chunk of this small corpus is retrieved), so it answers the lake question wrongly
    assert preds["s3"]["span_model"] == "Uppsala"
    assert report["summary"]["span_model"]["em"] == round(2 / 3, 4)
    md = (out / "answers.md").read_text()
    assert report["latency"]["span_model_p50_ms"] > 0 and "| span_model |" in md
    # the by-type table has the model's column too, after the baselines
    assert "| first_sentence | random_choice | span_model |" in md
    bad = CliRunner().invoke(app, ["eval", "sample", "--questions", str(qpath), "--index", index, "--answers", "only",
                                   "--span-model", str(tmp_path / "none")])  # fmt: skip
    assert bad.exit_code == 2 and "cannot load an extractive question-answering model" in bad.output


def test_steps_that_need_a_writing_model_refuse_the_reading_backends(tiny_qa: Path):
    from mmkg.llm import get_llm
    from resources.generator import GeneratorResource

    for backend in ("extractive", "span-model"):
        with pytest.raises(GenerationError, match=f"the {backend} backend reads answers out of the evidence"):
            get_llm(backend, str(tiny_qa))
    # the cross-modal linking step asks the configured backend to choose only when it writes
    assert not GeneratorResource(backend="span-model", model=str(tiny_qa)).writes
    assert GeneratorResource(backend="openai", model="m").writes
    assert isinstance(GeneratorResource(backend="span-model", model=str(tiny_qa)).get(), SpanModelGenerator)
