"""Query expansion from lexicons: a metric's name brings the line items it is computed from (pure functions,
then the BM25 seeds of a real index built from a real PDF of financial statements)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import build_index

from mmkg.index import Index
from mmkg.retrieval.expansion import expand, load_lexicon
from mmkg.retrieval.mg2 import MG2, PRESETS


def test_names_match_whole_words_longest_first():
    text, names = expand("What is Amazon's FY2017 return on asset?", "finance")
    assert names == ["return on asset", "fiscal 2017"]
    assert text.endswith("net income total assets 2017")
    # "cost of sales" is one name: its "sales" is not expanded again
    assert expand("the components of cost of sales", "finance")[1] == ["cost of sales"]
    assert expand("Days Payable Outstanding (DPO) in fiscal year 2016", "finance")[1] == [
        "days payable outstanding", "dpo", "fiscal 2016"]  # fmt: skip
    assert expand("FY 17 EBITDA margins", "finance")[1] == ["ebitda margin", "fiscal 2017"]
    # no name inside another word ("roam", "salesman"), and no lexicon: the text as it is
    assert expand("roaming salesmen", "finance") == ("roaming salesmen", [])
    assert expand("return on assets", "") == ("return on assets", [])


def test_lexicons_are_data_and_errors_name_the_problem(tmp_path: Path):
    own = tmp_path / "shipping.json"
    own.write_text(json.dumps({"entries": [{"names": ["TEU"], "terms": "twenty-foot equivalent unit containers"}]}))
    assert expand("How many TEUs were handled?", str(own))[0].endswith("twenty-foot equivalent unit containers")
    with pytest.raises(ValueError, match=r"no query-expansion lexicon 'nautical'; known: \['finance'\]"):
        load_lexicon("nautical")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"entries": [{"terms": "x"}]}))
    with pytest.raises(ValueError, match=r"bad\.json: not a lexicon"):
        load_lexicon(str(bad))
    with pytest.raises(ValueError, match="no query-expansion lexicon"):
        PRESETS["longdoc"].override(expansion="finance,nautical")  # fails when the preset is made


PAGES = [
    "Harbour Authority\nAnnual Report 2019",
    "Chair's letter\nThe return on our investment in the new crane was strong, and the asset base grew.\n"
    "Every asset of the port returned to service after the storm, a return to normal operations.",
    "Consolidated Statement of Operations\nYear ended December 31, 2019 2018\nRevenues 5,210 4,870\n"
    "Operating expenses 4,100 3,990\nOperating income 1,110 880\nNet income 840 610",
    "Consolidated Balance Sheet\nDecember 31, 2019 2018\nTotal current assets 2,300 2,050\n"
    "Total assets 12,400 11,900\nTotal current liabilities 1,700 1,650\nTotal liabilities 6,100 6,000",
    "Harbour history\nThe quay was built in 1887 and extended twice.",
]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Index, dict]:
    return build_index(tmp_path_factory, "fin", {"port/annual.pdf": PAGES}), {"source_path": "port/annual.pdf"}


def _top_pages(index: Index, result, n: int) -> set[int]:
    page = dict(zip(index.chunks["chunk_id"].to_list(), index.chunks["page"].to_list(), strict=True))
    return {page[c.chunk_id] for c in result.chunks[:n]}


def test_a_ratio_question_finds_the_statements_it_is_computed_from(
    report: tuple[Index, dict], monkeypatch: pytest.MonkeyPatch
):
    index, only = report
    question = "What was the authority's FY2019 return on assets?"
    p = PRESETS["longdoc"]
    assert p.expansion == ""  # a domain's word list is opt-in by corpus, not the default
    plain = MG2(p, preset="longdoc").run(index, question, None, 5, only)
    assert _top_pages(index, plain, 2) != {3, 4} and not plain.notes  # the letter's "return" and "asset" win
    monkeypatch.setenv("MMKG_QUERY_EXPANSION", "finance")  # the corpus opts in (mmkg.toml: query_expansion)
    result = MG2(p, preset="longdoc").run(index, question, None, 5, only)
    assert _top_pages(index, result, 2) == {3, 4}  # net income, and total assets
    assert any("return on assets" in note and "fiscal 2019" in note for note in result.notes)
    explicit = MG2(p.override(expansion="finance"), preset="x").run(index, question, None, 5, only)
    monkeypatch.delenv("MMKG_QUERY_EXPANSION")
    assert _top_pages(index, explicit, 2) == {3, 4}  # a query's own parameter needs no setting
    wc = MG2(p.override(expansion="finance"), preset="x").run(
        index, "What was its working capital at the end of FY2019?", None, 5, only)
    assert _top_pages(index, wc, 1) == {4}  # current assets and current liabilities
