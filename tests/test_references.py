"""Questions that point at a page or a part ("page 4", "the last page", "Figure 2"): parsing, printed page
numbers, and the seed channel on a real index built from a real PDF."""

from __future__ import annotations

import pytest
from conftest import build_index

from mmkg.index import Index
from mmkg.retrieval import retrieve
from mmkg.retrieval.mg2 import MG2, PRESETS
from mmkg.retrieval.references import PageRef, parse, pointed_pages, printed_labels, resolve_pages


def test_parse_pages():
    assert parse("How many people are there in  Page 5?").pages == (PageRef(5),)
    assert parse("the words on the top of the page two").pages == (PageRef(2),)
    assert parse("What is the fax number on page thirty-two?").pages == (PageRef(32),)  # not pages 30 and 2
    assert parse("on pages seventeen and 18").pages == (PageRef(17), PageRef(18))
    assert parse("see pages 3-5 and slide 7").pages == (PageRef(3), PageRef(4), PageRef(5), PageRef(7))
    assert parse("on pp. 12 and 14").pages == (PageRef(12), PageRef(14))
    assert parse("What court is named on the cover page?").pages == (PageRef(1, printed=False),)
    assert parse("the third page").pages == (PageRef(3, printed=False),)
    assert parse("What is on the last page?").pages == (PageRef(1, from_end=True, printed=False),)
    assert parse("In the figure at Page at the second last").pages == (PageRef(2, from_end=True, printed=False),)
    assert parse("the second-to-last slide").pages == (PageRef(2, from_end=True, printed=False),)
    # no page is named: a platform's "page likes", a pager, a page without a number
    assert not parse("metrics are page likes, post clicks and video views")
    assert not parse("Which page of the report covers rainfall?")


def test_parse_parts():
    assert parse("How many green bars appear in Figure 1?").parts == (("figure", "1"),)
    assert parse("Fig. 3b and Table 2 of Section 4.1").parts == (("figure", "3B"), ("table", "2"), ("section", "4.1"))
    assert parse("strengths mentioned in Appendix C?").parts == (("appendix", "C"),)
    assert parse("How many times is Exhibit P-10 mentioned?").parts == (("exhibit", "P-10"),)
    assert not parse("a table a minute").parts  # a lower-case lone letter is a word, not a label
    many = parse(" ".join(f"Table {i} and page {i}" for i in range(1, 500)))
    assert len(many.parts) == 8 and len(many.pages) == 8  # a bounded cost for a hostile question


def test_printed_labels_follow_the_page_order():
    # cover and contents unnumbered, then "1", "2", ... at the foot; a table row that ends in a number
    pages = {1: "Annual Report\n2019", 2: "Contents\nOverview 1\nResults 3"}
    pages |= {p: f"Body text of page {p}.\nRevenue 120 140\n{p - 2}" for p in range(3, 9)}
    labels = printed_labels(pages)
    assert labels[1] == {3} and labels[6] == {8}
    assert all(len(v) == 1 for v in labels.values())  # "3" of the contents, "140" of a row are not labels
    # two-page spreads print two numbers per sheet: label = 2 * page - 3
    spreads = {p: f"Left and right pages\n{2 * p - 3}" for p in range(2, 8)}
    assert printed_labels(spreads)[5] == {4} and printed_labels(spreads)[4] == {4}
    # numbers that follow no page order are not labels
    assert printed_labels({1: "Total 17", 2: "x\n3", 3: "Count 44", 4: "9"}) == {}


# -- on a real index -------------------------------------------------------------------------------------------

PAGES = [
    "Harbour Authority Annual Review\nPrepared for the board",
    "Contents\nShipping traffic\nDredging works\nBudget",
    "Shipping traffic grew as container vessels returned to the eastern quay.\n1",
    "Figure 2: Tonnes of cargo handled each month at the eastern quay.\nCargo peaked in the autumn.\n2",
    "Dredging works deepened the channel so that larger ships can berth at low tide.\n3",
    "The budget for next year funds a new crane and repairs to the breakwater.\n4",
    "Contact the harbour office for copies of this review and earlier ones.\n5",
]


@pytest.fixture(scope="module")
def report_index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    memo = "# Memo\n\nThe harbour review shows cargo by month in Figure 2. The budget is on a later page.\n"
    return build_index(tmp_path_factory, "ref", {"harbour/review.pdf": PAGES, "notes/memo.md": memo})


def _pages(index: Index, chunk_ids: list[str]) -> list[int]:
    page = dict(zip(index.chunks["chunk_id"].to_list(), index.chunks["page"].to_list(), strict=True))
    return [page[c] for c in chunk_ids]


def test_page_numbers_resolve_to_the_position_and_the_printed_number(report_index: Index):
    doc = report_index.documents.filter(report_index.documents["source_path"] == "harbour/review.pdf")["doc_id"][0]
    assert resolve_pages(report_index, [PageRef(2)], [doc]) == {doc: {2, 4}}  # sheet 2 and the sheet printing "2"
    assert resolve_pages(report_index, [PageRef(1, from_end=True, printed=False)], [doc]) == {doc: {7}}
    assert resolve_pages(report_index, [PageRef(9)], [doc]) == {}  # no such page


def test_the_answer_path_keeps_the_pages_a_question_points_at_in_its_top_document(report_index: Index):
    from mmkg.generation.answer import retrieve as gather

    only = {"source_path": "harbour/review.pdf"}
    result = gather(report_index, "Who should readers contact, as mentioned on the last page?", filters=only)
    doc = result.chunks[0].doc_id
    assert result.pointed_pages == {doc: [7]}
    assert pointed_pages(report_index, "What grew, per page 2?", result) == {doc: [2, 4]}  # position, printed
    assert pointed_pages(report_index, "What grew at the quay?", result) == {}


def test_a_question_that_names_a_page_gets_that_page(report_index: Index):
    only = {"source_path": "harbour/review.pdf"}
    p = PRESETS["longdoc"]
    named = {n: {n, n + 2} for n in (2, 3, 4, 5)}  # sheet n, and the sheet that prints n
    on, off = {}, {}
    for n in named:
        result = MG2(p, preset="longdoc").run(report_index, f"Summarize page {n}.", None, 7, only)
        assert result.references == [f"page {n}"] and "references" in result.timings_ms
        on[n] = set(_pages(report_index, [c.chunk_id for c in result.chunks[:2]]))
        plain = MG2(p.override(reference_weight=0.0), preset="x").run(report_index, f"Summarize page {n}.", None, 7,
                                                                       only)  # fmt: skip
        assert plain.references == []
        off[n] = set(_pages(report_index, [c.chunk_id for c in plain.chunks[:2]]))
    assert on == named
    assert off != named  # without the channel, words alone do not find them
    last = MG2(p, preset="longdoc").run(report_index, "Who should readers contact, per the last page?", None, 3, only)
    assert _pages(report_index, [c.chunk_id for c in last.chunks[:1]]) == [7]
    # across the corpus "page 4" names no page: the channel stays empty
    wide = MG2(p, preset="longdoc").run(report_index, "Summarize page 4.", None, 3)
    assert wide.references == []


def test_a_named_figure_is_found_where_its_caption_is(report_index: Index):
    result = retrieve(report_index, text="What does Figure 2 show?", k=3, strategy="mg2:longdoc")
    assert result.references == ["figure 2"]
    top = [(c.source_path, c.page) for c in result.chunks[:2]]
    assert top == [("harbour/review.pdf", 4), ("notes/memo.md", None)]  # the caption first, then the mention
