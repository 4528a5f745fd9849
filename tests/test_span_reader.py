"""mmkg's own span model (``mmkg/generation/span_reader.onnx``): the shipped file is the recorded one, it points at
plain nouns, names and passive agents in real sentences, ``mmkg ask`` reads with it by default in a fresh process
and states only what a cited sentence says, and its training script trains and exports a model that loads.

The rest of the suite runs the rule reader alone (``MMKG_READER_MODEL=off``, tests/conftest.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import PROJECT, build_index

from mmkg.generation.base import GenerationError
from mmkg.generation.short_answer import NOT_ANSWERABLE, normalize
from mmkg.generation.span_reader import MODEL, MODEL_SHA256, NAME, SpanModel, load
from mmkg.model_files import sha256_of

NOTES = {
    "team/quarry.md": "# Quarry\n\nQuarry is the billing export service of the Lanternfish team. Quarry is written "
    "in Elixir and keeps its job queue in RabbitMQ. The service is maintained by Ines Okafor, who moved it to a new "
    "cluster in May 2025.\n",
    "team/mosaic.md": "# Mosaic\n\nMosaic is the team's dashboard. It draws its charts with Vega and reads its "
    "figures from a DuckDB file that a nightly job writes. Mosaic was built by Pavel Sorensen in 2023.\n",
    "team/holidays.md": "# Holidays\n\nThe office closes between Christmas and New Year. Requests for leave go to "
    "the team lead two weeks ahead.\n",
}


def test_the_shipped_span_model_is_the_recorded_file_and_a_changed_one_is_refused(tmp_path: Path):
    assert sha256_of(MODEL) == MODEL_SHA256
    assert MODEL.stat().st_size <= 30 * 1024 * 1024  # the committed model stays within 30 MB
    changed = tmp_path / "span_reader.onnx"
    shutil.copyfile(MODEL, changed)
    with changed.open("r+b") as f:
        f.seek(changed.stat().st_size // 2)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(GenerationError, match="SHA-256"):
        SpanModel(changed)


@pytest.mark.parametrize(("question", "passage", "answer", "exact"), [
    ("Which language is Quarry written in?", NOTES["team/quarry.md"], "Elixir", True),
    ("Who maintains Quarry?", NOTES["team/quarry.md"], "Ines Okafor", True),
    ("Where does Quarry keep its job queue?", NOTES["team/quarry.md"], "RabbitMQ", True),
    ("Who built Mosaic?", NOTES["team/mosaic.md"], "Pavel Sorensen", True),
    # its best span runs long here ("Pavel Sorensen in 2023"); in mmkg ask the rule reader's typed date candidate
    # stands beside the model's spans
    ("When was Mosaic built?", NOTES["team/mosaic.md"], "2023", False),
])  # fmt: skip
def test_the_span_model_points_at_the_answer_in_a_real_passage(question: str, passage: str, answer: str,
                                                               exact: bool):  # fmt: skip
    spans = load().spans(question, [NOTES["team/holidays.md"], passage])
    assert spans, question
    best = spans[0]
    shown = [(s.text, round(s.logp, 2)) for s in spans[:4]]
    if exact:
        assert normalize(best.text) == normalize(answer), shown
    else:  # the best span holds the answer, and the answer alone is among the three best
        assert normalize(answer) in normalize(best.text), shown
        assert normalize(answer) in [normalize(s.text) for s in spans[:3]], shown
    assert best.passage == 1 and passage[best.start:best.end] == best.text
    assert best.logp > best.null_logp  # it answers here rather than pointing at "no answer"


def test_the_span_model_finds_no_answer_in_a_passage_that_has_none():
    spans = load().spans("Who maintains Quarry?", [NOTES["team/holidays.md"]])
    assert spans and spans[0].null_logp > spans[0].logp, [(s.text, s.logp, s.null_logp) for s in spans[:3]]


@pytest.fixture(scope="module")
def notes_index(tmp_path_factory: pytest.TempPathFactory):
    return build_index(tmp_path_factory, "notes", NOTES)


def _ask(index: Path, question: str, setting: str) -> tuple[dict, float]:
    env = {**os.environ, "MMKG_READER_MODEL": setting, "HF_HUB_OFFLINE": "1"}
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "mmkg.cli", "ask", question, "--index", str(index), "--json"],
                         capture_output=True, text=True, timeout=300, env=env, cwd=PROJECT)  # fmt: skip
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout), time.perf_counter() - t0


@pytest.mark.parametrize(("question", "answer"), [("Which language is Quarry written in?", "Elixir"),
                                                  ("Who maintains Quarry?", "Ines Okafor")])
def test_mmkg_ask_reads_with_the_span_model_by_default(notes_index, question: str, answer: str):
    got, _ = _ask(notes_index.root, question, "")
    reading = got["reading"]
    assert reading["model"] == NAME, reading
    assert 0.0 <= reading["confidence"] <= 1.0
    shown = reading["guess"] if reading["abstained"] else got["short_answer"]
    assert normalize(shown) == normalize(answer), reading
    if not reading["abstained"]:  # stated: a span of a cited sentence
        sentences = " | ".join(s["sentence"] for s in reading["support"])
        assert normalize(got["short_answer"]) in normalize(sentences)
    else:
        assert got["short_answer"] == NOT_ANSWERABLE and "declined" in reading["reason"]


def test_training_a_tiny_span_model_lowers_its_loss_and_exports_a_file_that_loads(tmp_path: Path):
    out, report = tmp_path / "tiny.onnx", tmp_path / "report.json"
    run = subprocess.run([sys.executable, "-m", "training.span_reader.train", "--out", str(out), "--report",
                          str(report), "--max-texts", "2", "--max-generated", "200", "--max-steps", "16",
                          "--eval-every", "8", "--check-limit", "16", "--lr", "3e-4", "--batch", "8"],
                         capture_output=True, text=True, timeout=900, cwd=PROJECT)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    got = json.loads(report.read_text())
    curve = got["curve"]
    assert len(curve) == 2 and curve[-1]["loss"] < curve[0]["loss"], curve
    assert got["sha256"] == sha256_of(out) and got["sources"]["squad"] > 0 and got["sources"]["packages"] > 0
    model = SpanModel(out, sha256=got["sha256"])
    spans = model.spans("Who maintains Quarry?", [NOTES["team/quarry.md"]])
    assert spans and all(NOTES["team/quarry.md"][s.start:s.end] == s.text for s in spans)


def test_a_person_question_never_chooses_a_span_that_cannot_be_a_person():
    """The policy ``mmkg ask`` runs and ``benchmarks/reader_fit.py`` fits: for "who", a span that cannot be a person
    (a year) is never chosen over one that can, however the model scores them; when every span is of another type,
    the choice says so (and is declined). The form decides, not spaCy's label of an invented name."""
    from mmkg.generation.span_choice import contradicts

    assert contradicts("person", "1987", "DATE") and contradicts("person", "in 1987", "")
    assert not contradicts("person", "Ines Okafor", "LOC")  # the small model's label of an invented name
    assert contradicts("date", "Elspeth Marrow", "PERSON") and not contradicts("date", "May 2025", "DATE")
    assert contradicts("number", "unbleached cotton", "") and not contradicts("number", "five", "CARDINAL")
    from mmkg.generation import calibration
    from mmkg.generation.calibration import RuleAnswer
    from mmkg.generation.span_choice import CALIBRATION, FEATURES, policy

    cal = calibration.load(CALIBRATION)
    assert cal is not None and cal.candidate.names == [f for f in FEATURES if f in cal.candidate.names]
    base = dict.fromkeys(FEATURES, 0.0) | {"sm_found": 1.0, "sm_null": 0.1, "q_overlap": 0.5, "words": 1.0}
    telescope = base | {"sm_logp": -0.1, "sm_p": 0.9, "sm_gap": 3.0, "sm_top": 1.0, "sm_rank": 1.0, "sm_share": 0.9,
                        "mistyped": 1.0}  # fmt: skip
    person = base | {"sm_logp": -4.0, "sm_p": 0.02, "sm_gap": -1.0, "sm_rank": 0.5, "sm_share": 0.1, "typed": 1.0}
    rule = RuleAnswer("span", 0.3, False, "", True)
    order, probs, decision, mistyped = policy(cal, "person", [telescope, person], rule)
    assert order[decision.option or 0] == 1 and not mistyped
    # the same spans for a question of no strict type: the probabilities decide
    order, probs, decision, _ = policy(cal, "string", [telescope, person], rule)
    assert order[decision.option or 0] == max(range(2), key=lambda i: probs[i])
    # only spans of another type: the best of them, flagged, and mmkg ask declines it
    _, _, _, mistyped = policy(cal, "person", [telescope], rule)
    assert mistyped
