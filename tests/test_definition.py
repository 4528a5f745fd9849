"""Definitions: the term a question asks to define, the evidence's definitions of it, and the reader's answer."""

from __future__ import annotations

import pytest

from mmkg.generation.base import Evidence
from mmkg.generation.definition import defined_term, definitions, expansions
from mmkg.generation.question import analyze
from mmkg.generation.reader import Reader
from mmkg.generation.short_answer import NOT_ANSWERABLE

GESTALT = (
    "Gestalt Principles of Visual Perception\n"
    "Law of good Gestalt. Elements of objects tend to be \n"
    "perceptually grouped together if they form a pattern that is regular, \n"
    "simple, and orderly. This law implies that as individuals perceive the \n"
    "world, they eliminate complexity and unfamiliarity."
)
CHURN = (
    "Our churn rate rose in 2015 as prices went up. Churn rate is defined as the share of subscribers who cancel "
    "within a year. It fell again in 2016."
)
CLOSURE = "Closure\nWe tend to perceive objects such as shapes and letters as being whole when they are not complete."
AGENCIES = "The Care Quality Commission (CQC) inspects services. Reports go to the NHS (National Health Service)."


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("How does this document define the law of good gestalt?", ("law of good gestalt", "define")),
        ("How is a pedestrian zone defined in the report?", ("pedestrian zone", "define")),
        ("What is the definition of churn rate according to the filing?", ("churn rate", "define")),
        ('What does the term "net promoter score" mean in this report?', ("net promoter score", "define")),
        ("What is meant by closure?", ("closure", "define")),
        ("What does the acronym CQC stand for?", ("CQC", "expand")),
        ("What do you mean by churn rate?", ("churn rate", "define")),  # "you" is who means it, not the term
        ('What does the term "return on the investment" mean?', ("return on the investment", "define")),
        ("Which company defined the standard?", None),  # a question about who defined something
        ("Under which definition of poverty were 20% of people poor?", None),
        ("What does the mean score tell us?", None),
        ("How many pages define terms?", None),
        ("What is the churn rate in 2015?", None),  # a value, not a definition
    ],
)
def test_the_term_a_question_asks_to_define(question: str, expected: tuple[str, str] | None) -> None:
    assert defined_term(question) == expected


def test_definitions_in_the_shapes_documents_write_them() -> None:
    items = [(1, GESTALT), (2, CHURN), (3, CLOSURE)]
    (lead,) = definitions("law of good gestalt", items)
    assert lead.shape == "lead" and lead.label == 1 and lead.term == "Law of good Gestalt"
    assert lead.text == ("Elements of objects tend to be perceptually grouped together if they form a pattern that "
                         "is regular, simple, and orderly.")  # fmt: skip
    (verb,) = definitions("churn rate", items)  # "Our churn rate rose" mentions it, defines nothing
    assert verb.shape == "verb" and verb.text == "the share of subscribers who cancel within a year."
    (heading,) = definitions("closure", items)  # the term on a line of its own above the sentence
    assert heading.label == 3 and heading.text.startswith("We tend to perceive objects")
    assert definitions("gestalt", items) == []  # "Gestalt Principles of ..." is a title, not a definition


def test_acronyms_are_spelled_out_by_their_initials() -> None:
    (cqc,) = expansions("CQC", [(1, AGENCIES)])
    assert cqc.text == "Care Quality Commission"  # "The" gives no letter
    (nhs,) = expansions("NHS", [(1, AGENCIES)])
    assert nhs.text == "National Health Service"
    assert expansions("IMF", [(1, AGENCIES)]) == [] and expansions("2015", [(1, AGENCIES)]) == []


def _items(*texts: str) -> list[Evidence]:
    return [Evidence(i, "chunk", t, f"c{i}", "d1", "Guide", "guide.pdf", page=i) for i, t in enumerate(texts, 1)]


def test_the_reader_answers_with_the_definition_and_cites_it() -> None:
    reader = Reader()
    ans = reader.read(analyze("How does this document define the law of good gestalt?"), None,
                      _items(CHURN, GESTALT))  # fmt: skip
    assert ans.method == "definition" and not ans.abstained
    assert ans.text.startswith("Elements of objects tend to be perceptually grouped") and ans.confidence == 0.5
    assert ans.support and ans.support[0].label == 2 and "Law of good Gestalt" in ans.reason
    expanded = reader.read(analyze("What does CQC stand for?"), None, _items(CHURN, AGENCIES))
    assert expanded.method == "definition" and expanded.text == "Care Quality Commission"


def test_a_term_the_evidence_never_defines_is_not_answered_by_a_definition() -> None:
    ans = Reader().read(analyze("How does the guide define proximity?"), None, _items(GESTALT, CLOSURE))
    assert ans.method != "definition" and not ans.text.startswith("Elements of objects"), ans.reason
    # "we" is who means it: the definition read is the term's, not a sentence that opens with "We are"
    ev = _items("We are the leading provider of recycled packaging in Europe.",
                "Sustainability means meeting the needs of the present without compromising the future.")
    ans = Reader().read(analyze("What do we mean by sustainability?"), None, ev)
    assert ans.method == "definition" and ans.text.startswith("meeting the needs of the present"), ans.reason
    assert NOT_ANSWERABLE not in ans.text
