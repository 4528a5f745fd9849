"""Counting a document's labelled parts (mmkg/generation/counting.py): "How many appendices ...?" is answered from
the parts the whole document labels, read off a real PDF's text layer, not from the eight chunks a reader sees."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from mmkg import schemas
from mmkg.chunking import chunk_documents
from mmkg.generation.base import Evidence
from mmkg.generation.counting import COMPLETE, asked_parts, count_parts
from mmkg.generation.question import analyze
from mmkg.generation.reader import Reader
from mmkg.generation.short_answer import NOT_ANSWERABLE
from mmkg.ingest.base import Limits
from mmkg.ingest.pdf import read_pdf
from mmkg.parts import part_table
from mmkg.retrieval.results import RetrievalResult
from tests.conftest import write_pdf

PAGES = [
    "Harbour Plan 2030\nContents\nThe plan sets out the works; Appendix B lists the budget.",
    "Appendix A: Dredging schedule\nThe channel is dredged each spring.\nFigure 1: The channel in 1990.",
    "Appendix B: Budget\nFigure 2: Spending by year. The budget grows by a tenth each year (see Figure 4).",
    "Appendix C: Consultation\nFigure 4: Responses by district. Residents asked for a second ferry.",
]


@pytest.mark.parametrize(
    ("question", "asked"),
    [
        ("How many appendices does the plan have?", ("appendix", False)),
        ("How many figures are there in the report?", ("figure", False)),
        ("How many Figures are referred to in the text?", ("figure", True)),
        ("How many pie charts are there in the paper?", None),  # what pictures show, not labels
        ("How many figures are in Appendix C?", None),  # a count inside one part
        ("How many tables are on page 5?", None),  # ... or one page
        ("How many times is Figure 2 mentioned?", None),
        ("How many boats are in the harbour?", None),
        ("How many figures are there in total, excluding tables?", ("figure", False)),  # "tables" is no label
        ("How many tables are on the first page?", None),
        ("How many figures are in the appendix?", None),
    ],
)
def test_a_count_of_a_kind_of_part_over_the_whole_document_is_recognized(question: str, asked: tuple | None):
    assert asked_parts(question) == asked


def _chunked(tmp_path: Path, name: str, pages: list[str], doc_id: str, title: str, max_tokens: int):
    """A PDF of ``pages`` written and read by the real reader, as a one-row documents frame and its chunks."""
    path = write_pdf(tmp_path / name, pages)
    doc, _ = read_pdf(path.read_bytes(), name, Limits())
    documents = schemas.frame(
        [{"doc_id": doc_id, "partition": "p", "source_path": name, "record_key": "", "kind": "pdf",
          "title": title, "text": doc.text, "page_starts": doc.page_starts, "n_pages": len(pages),
          "content_sha256": "x", "n_bytes": 1}],
        schemas.DOCUMENTS,
    )  # fmt: skip
    return documents, chunk_documents(documents, schemas.empty(schemas.IMAGES), max_tokens=max_tokens)


def _plan(tmp_path: Path):
    documents, chunks = _chunked(tmp_path, "plan.pdf", PAGES, "d1", "Harbour plan", 60)
    return chunks, part_table(chunks, documents)


def test_labels_that_run_without_a_gap_are_counted_with_confidence(tmp_path: Path):
    _, parts = _plan(tmp_path)
    n, confidence, rows = count_parts("appendix", False, parts.to_dicts())
    assert (n, confidence) == (3, COMPLETE) and [r["label"] for r in rows] == ["A", "B", "C"]
    # Figures 1, 2 and 4 are captioned: a gap, so some may have been missed
    n, confidence, _ = count_parts("figure", False, parts.to_dicts())
    assert n == 3 and confidence < COMPLETE


def test_the_reader_answers_a_count_from_the_document_s_parts_and_cites_the_captions_shown(tmp_path: Path):
    chunks, parts = _plan(tmp_path)
    # the reader sees two chunks only (neither the first page nor the last); the parts cover the whole document
    shown = chunks.filter(chunks["page"].is_in([2, 3]))
    evidence = [Evidence(label=i + 1, kind="chunk", text=r["text"], chunk_id=r["chunk_id"], doc_id="d1",
                         title="Harbour plan", source_path="plan.pdf", page=r["page"], chunk_index=r["chunk_index"])
                for i, r in enumerate(shown.iter_rows(named=True))]  # fmt: skip
    result = RetrievalResult("v", "mg2", "default", "q", None, [], parts=parts.to_dicts())
    q = analyze("How many appendices does the harbour plan have?")
    ans = Reader().read(q, result, evidence)
    assert (ans.text, ans.method, ans.abstained) == ("3", "parts", False), ans.reason
    assert "A (p. 2), B (p. 3), C (p. 4)" in ans.reason
    assert {s.label for s in ans.support} == {1, 2}
    # each support marks the label as its caption writes it
    assert [s.sentence[s.start : s.end] for s in ans.support] == ["Appendix A", "Appendix B"]
    # figures 1, 2, 4: the gap lowers the confidence below the threshold; the count is the guess
    ans = Reader().read(analyze("How many figures are there in the harbour plan?"), result, evidence)
    assert ans.text == NOT_ANSWERABLE and ans.guess == "3" and ans.method == "parts"


def test_the_answer_path_counts_the_top_document_s_parts_of_the_asked_kind(art_index, monkeypatch, tmp_path: Path):
    import importlib

    from mmkg.generation.answer import prepare, retrieve

    answer_path = importlib.import_module("mmkg.generation.answer")  # the package exports a function of that name

    _, parts = _plan(tmp_path)
    asked: list[str] = []

    def parts_of(index, doc_id):  # the plan's parts, as if it were the top document
        asked.append(doc_id)
        return parts.with_columns(doc_id=pl.lit(doc_id))

    monkeypatch.setattr(answer_path, "document_parts", parts_of)
    result = retrieve(art_index, "How many appendices does The Blue Harbour have?")
    assert asked == [result.chunks[0].doc_id]
    assert [p["label"] for p in result.parts] == ["B", "A", "C"] and {p["kind"] for p in result.parts} == {"appendix"}
    request, _, _ = prepare(result, "How many appendices does The Blue Harbour have?")
    reading = request.reading
    assert (reading.text, reading.method) == ("3", "parts"), reading.reason
    assert reading.reason.startswith(f"the document {result.chunks[0].title!r} opens a line with")
    assert "Count: 3 (" in request.user  # a model's prompt carries the count


def test_the_answer_path_reads_the_top_document_s_parts_from_the_open_index(art_index):
    from mmkg.generation.answer import retrieve
    from mmkg.retrieval.document_parts import document_parts

    doc = art_index.chunks["doc_id"][0]
    parts = document_parts(art_index, doc)
    assert parts.schema == schemas.PARTS and parts.height == 0  # the art corpus labels no part
    assert document_parts(art_index, doc) is parts  # derived once per open index
    result = retrieve(art_index, "How many figures does the article about The Blue Harbour have?")
    assert result.parts == []  # asked, but none labelled: the reader reads the evidence as before
    assert retrieve(art_index, "Who painted The Blue Harbour?").parts == []


# -- counting a list's items: "How many steps are needed to replace the filter?" ---------------------------------


def _kettle(tmp_path: Path) -> pl.DataFrame:
    """The kettle manual of test_enumerations as the build chunks it: small chunks, so its lists run over two."""
    from tests.test_enumerations import KETTLE

    return _chunked(tmp_path, "kettle.pdf", KETTLE, "k1", "Kettle manual", 20)[1]


class _ChunksOnly:
    """An open index as ``document_lists`` reads it: its chunks (derived data is kept per object)."""

    def __init__(self, chunks: pl.DataFrame):
        self.chunks = chunks


def test_a_how_many_question_is_answered_by_the_list_whose_heading_it_names(tmp_path: Path):
    from mmkg.enumerations import document_lines, enumerations
    from mmkg.generation.counting import LIST_CONFIDENCE, LIST_MATCH, asks_items, count_items

    chunks = _kettle(tmp_path)
    lists = enumerations(document_lines(chunks.sort("chunk_index").select("page", "text").iter_rows()))
    assert asks_items("How many steps are needed to replace the filter?")
    assert not asks_items("How many appendices does the plan have?")  # a count of labelled parts
    assert not asks_items("What is the capacity of the kettle?")
    n, confidence, chosen, share = count_items("How many steps are needed to replace the filter?", lists)
    assert (n, chosen.heading) == (3, "To replace the filter:") and share >= LIST_MATCH
    assert confidence == round(share * LIST_CONFIDENCE, 3)
    assert count_items("How many steps does it take to descale the kettle?", lists)[0] == 4
    assert count_items("How many watts does the kettle draw?", lists) is None  # "kettle" alone: too little
    # a number the question names tells two units' lists apart ("UNIT 8" above one, "UNIT 7" above the other)
    heading = "SWBAT TO ANSWER THESE LEARNING OUTCOMES:"
    units = [type(lists[0])("bulleted", tuple("abcdefgh"[:n]), (1,), heading, f"UNIT {u}") for u, n in ((7, 8), (8, 5))]
    assert count_items("How many learning outcomes should be answered in unit 8?", units)[:2] == (5, LIST_CONFIDENCE)
    # two lists that fit as well and count differently: the first (the evidence's best) at half the confidence
    twin = next(e for e in lists if e.heading == "To descale the kettle:")
    other = type(twin)("numbered", ("a", "b"), (9,), twin.heading, twin.context)
    _, halved, first, _ = count_items("How many steps does it take to descale the kettle?", [twin, other])
    _, whole, _, _ = count_items("How many steps does it take to descale the kettle?", [twin])
    assert first is twin and halved == pytest.approx(whole / 2, abs=1e-3)


def test_the_reader_counts_a_list_that_runs_over_two_chunks_and_cites_its_heading(tmp_path: Path):
    from mmkg.retrieval.document_lists import document_lists, evidence_lists
    from mmkg.retrieval.results import RetrievedChunk

    chunks = _kettle(tmp_path)
    assert chunks.filter(pl.col("text").str.contains("To descale")).height == 1
    assert chunks.filter(pl.col("text").str.contains("Rinse it twice")).height == 1  # step 4, in another chunk
    index = _ChunksOnly(chunks)
    lists = document_lists(index, "k1")
    assert document_lists(index, "k1") is lists  # derived once per open index
    # the evidence: the chunk with step 4 first, then the heading's chunk
    shown = chunks.sort(pl.col("text").str.contains("Rinse it twice"), descending=True)
    shown = shown.filter(pl.col("text").str.contains("Rinse it twice|To descale"))
    evidence = [Evidence(label=i + 1, kind="chunk", text=r["text"], chunk_id=r["chunk_id"], doc_id="k1",
                         title="Kettle manual", source_path="kettle.pdf", page=r["page"], chunk_index=r["chunk_index"])
                for i, r in enumerate(shown.iter_rows(named=True))]  # fmt: skip
    hits = [RetrievedChunk(e.label, e.chunk_id, "k1", "p", "Kettle manual", "kettle.pdf", e.page, e.text,
                           1 - e.label / 10) for e in evidence]  # fmt: skip
    result = RetrievalResult("v", "mg2", "default", "q", None, hits)
    result.lists = evidence_lists(index, result)
    # lists on the evidence's pages (2, then 1), by the best rank of their pages: the filter's list is on page 2 only
    assert [e.heading for e in result.lists] == ["To descale the kettle:", "To replace the filter:"]
    ans = Reader().read(analyze("How many steps are needed to descale the kettle?"), result, evidence)
    assert (ans.text, ans.method, ans.abstained) == ("4", "list", False), ans.reason
    assert "'To descale the kettle:' (pp. 1-2) sets out 4 item(s)" in ans.reason
    assert [s.sentence[s.start : s.end] for s in ans.support][:1] == ["To descale the kettle:"]
    from mmkg.generation.answer import hints

    assert "Count: 4 (the numbered list under" in hints(ans)  # a model's prompt carries the count
    # a count no list's heading names is read off the sentences as before
    assert Reader().read(analyze("How many litres does the kettle hold?"), result, evidence).method != "list"


def test_the_answer_path_attaches_the_evidence_s_lists_to_a_how_many_question(art_index, monkeypatch):
    import importlib

    from mmkg.generation.answer import retrieve

    answer_path = importlib.import_module("mmkg.generation.answer")
    asked: list[str] = []

    def lists_of(index, result):
        asked.append(result.query_text)
        return []  # the art corpus sets out no list

    monkeypatch.setattr(answer_path, "evidence_lists", lists_of)
    assert retrieve(art_index, "How many paintings did Margit Holm make?").lists == []
    retrieve(art_index, "Who painted The Blue Harbour?")
    retrieve(art_index, "How many appendices does The Blue Harbour have?")  # a count of parts: no lists
    assert asked == ["How many paintings did Margit Holm make?"]


def test_a_markdown_manual_s_list_is_counted_though_its_chunks_have_no_page(tmp_path: Path):
    from mmkg.ingest.text import read_markdown
    from mmkg.retrieval.document_lists import evidence_lists
    from mmkg.retrieval.results import RetrievedChunk

    path = tmp_path / "stalls.md"
    path.write_text("# Market stalls\n\nTo close a stall:\n\n1. Lock the till.\n2. Lower the shutter.\n\n"
                    "## Opening\n\nTo open a stall:\n\n1. Unlock the shutter.\n2. Switch on the lights.\n"
                    "3. Sign the register.\n")  # fmt: skip
    doc, _ = read_markdown(path, path.read_bytes(), "stalls.md")
    documents = schemas.frame(
        [{"doc_id": "m1", "partition": "p", "source_path": "stalls.md", "record_key": "", "kind": "markdown",
          "title": doc.title, "text": doc.text, "page_starts": doc.page_starts, "n_pages": len(doc.page_starts),
          "content_sha256": "x", "n_bytes": 1}],
        schemas.DOCUMENTS,
    )  # fmt: skip
    chunks = chunk_documents(documents, schemas.empty(schemas.IMAGES), max_tokens=30)
    assert chunks.height >= 2 and chunks["page"].is_null().all()
    # the chunk with the opening steps' first item ranks first, the one with both headings second
    ranked = chunks.sort(pl.col("text").str.contains("Unlock the shutter"), descending=True)
    hits = [RetrievedChunk(i, r["chunk_id"], "m1", "p", "Market stalls", "stalls.md", None, r["text"], 1 - i / 10)
            for i, r in enumerate(ranked.iter_rows(named=True))]  # fmt: skip
    result = RetrievalResult("v", "mg2", "default", "q", None, hits)
    result.lists = evidence_lists(_ChunksOnly(chunks), result)
    assert [e.heading for e in result.lists] == ["To open a stall:", "To close a stall:"]
    evidence = [Evidence(label=h.rank + 1, kind="chunk", text=h.text, chunk_id=h.chunk_id, doc_id="m1",
                         title="Market stalls", source_path="stalls.md") for h in hits]  # fmt: skip
    ans = Reader().read(analyze("How many steps are needed to open a stall?"), result, evidence)
    assert (ans.text, ans.method) == ("3", "list"), ans.reason
