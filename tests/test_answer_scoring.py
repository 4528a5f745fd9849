"""MMLongBench-Doc's rule-based answer scoring, on the answer shapes its dev set has, and the short-answer rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mmkg.eval.answer_scoring import (
    NOT_ANSWERABLE,
    Scored,
    accuracy_and_f1,
    anls,
    extract_short_answer,
    score,
)

DEV = Path(__file__).resolve().parents[2] / "shared/datasets/mmlongbench-dev/questions_dev.json"


@pytest.mark.parametrize(
    ("gold", "pred", "fmt", "expected"),
    [
        ("5", "5.0", "Int", 1.0),  # read as a number, truncated
        ("5", "6", "Int", 0.0),
        ("5", "five", "Int", 0.0),  # no number: no credit (the benchmark's LLM step would have written 5)
        ("0.25", "25%", "Float", 1.0),  # a percentage written either way
        ("25.5", "25.6", "Float", 1.0),  # within 1 % relative
        ("25.5", "27", "Float", 0.0),
        ("$1,000", "1000", "Float", 0.0),  # the benchmark does not drop thousands separators
        ("Not answerable", "not answerable", "None", 1.0),
        ("Hong Kong", "hongkong", "Str", 1.0 - 1 / 9),  # ANLS: one edit in nine characters
        ("Hong Kong", "Singapore", "Str", 0.0),  # ANLS at or below 0.5 counts 0
        ("https://a.org/x", "https://a.org/y", "Str", 0.0),  # URLs must match exactly
        ("2019-05", "2019-05", "Str", 1.0),
        ("Cold (sore)", "cold", "Str", 1.0),  # parenthesized asides and case do not count
        ("['Apple', 'Banana']", "['banana', 'apple']", "List", 1.0),  # order does not count
        ("['Apple', 'Banana']", "['apple']", "List", 0.0),  # length does
        ("['3', '4']", "['4', '3']", "List", 1.0),
        ("['3', '4']", "['3', '5']", "List", 0.0),  # numeric items all exact
        ("['Red Mill', 'Blue Harbour']", "['red mill', 'blue harbor']", "List", 1.0 - 1 / 12),  # min ANLS
    ],
)
def test_score_follows_the_benchmark_rules(gold: str, pred: str, fmt: str, expected: float):
    assert score(gold, pred, fmt) == pytest.approx(expected)


def test_score_names_an_unknown_format_and_never_evaluates_code():
    with pytest.raises(ValueError, match="unknown answer format 'Bool'"):
        score("yes", "yes", "Bool")
    assert score("['a', 'b']", "[__import__('os').getcwd(), 'b']", "List") == 0.0  # not a literal: one string


def test_anls_threshold():
    assert anls("abcd", "abcd") == 1.0 and anls("", "") == 1.0 and anls("abcd", "wxyz") == 0.0


def test_accuracy_and_f1():
    rows = [Scored("1", "5", "5", "Int", 1.0), Scored("2", NOT_ANSWERABLE, NOT_ANSWERABLE, "None", 1.0),
            Scored("3", "x", NOT_ANSWERABLE, "Str", 0.0), Scored("4", "7", "8", "Int", 0.0)]  # fmt: skip
    acc, f1 = accuracy_and_f1(rows)
    recall, precision = 1 / 3, 1 / 2  # answerable: 1 of 3 right; answered: 1 of 2 right
    assert acc == 0.5 and f1 == pytest.approx(2 * recall * precision / (recall + precision))
    assert accuracy_and_f1([]) == (0.0, 0.0)


@pytest.mark.parametrize(
    ("question", "response", "short"),
    [
        ("How many stores opened in 2019?", "Extractive answer (copied ...): In 2019 it opened 12 stores [1].", "12"),
        ("How many colours are shown?", "There are three colours [2].", "3"),
        ("What percentage of adults in 2013 used it?", "In 2013, 59% of adults [2] used it.", "59"),
        ("Which year was the lab founded?", "The lab was founded in 1998 by two students.", "1998"),
        ("Who painted The Red Mill?", "The Red Mill was painted by Erik Sand [1]. It hangs in Oslo.",
         "The Red Mill was painted by Erik Sand"),
        ("What is the capital?", "The document does not mention a capital.", NOT_ANSWERABLE),
        ("What is the capital?", "Extractive answer (...): the evidence holds no sentence to answer with.",
         NOT_ANSWERABLE),
    ],
)  # fmt: skip
def test_short_answers_come_from_the_question_wording(question: str, response: str, short: str):
    assert extract_short_answer(question, response) == short


def test_gold_answers_of_the_dev_set_score_1_against_themselves():
    if not DEV.is_file():
        pytest.skip(f"{DEV} not found (the shared datasets sit beside the repository)")
    rows = json.loads(DEV.read_text())
    formats = {r["answer_format"] for r in rows}
    assert formats == {"Str", "Int", "Float", "List", "None"}
    assert all(score(r["answer"], r["answer"], r["answer_format"]) == 1.0 for r in rows)
