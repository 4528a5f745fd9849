"""Answers keyed by a code, and answers held to the page a question points at: the reader over chunks of a real PDF
(written with matplotlib, read and chunked by the build's own reader and chunker)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from mmkg.generation.base import Evidence
from mmkg.generation.document_answers import KEYED
from mmkg.generation.lookup import codes, keyed_lines, labelled_lines, named_rows, row_value
from mmkg.generation.question import analyze
from mmkg.generation.reader import Reader
from mmkg.generation.short_answer import NOT_ANSWERABLE
from mmkg.ingest.base import Limits
from mmkg.ingest.pdf import read_pdf
from mmkg.retrieval.results import RetrievalResult
from tests.test_counting import _chunked

DIRECTORY = [
    "Harbour Board market directory\nEach market is named by its code.\n"
    "Northern district (HN)\n1. Quayside and Old Town HN01\n2. Fishmarket Hill HN02\n3. The Narrows HN03",
    "Southern district (HS)\n1. Lighthouse Point HS01\n2. Cannery Row and the Docks HS02\n"
    "The governor of the harbour board is Ada Brandt.",
    "Contact the harbour office for the full list of markets.\nThe office is open on weekdays.",
]


def _pdf_evidence(tmp_path: Path, name: str, pages: list[str], title: str) -> list[Evidence]:
    """Evidence items, one per chunk, of a PDF of ``pages`` written, read and chunked by the build's own code."""
    _, chunks = _chunked(tmp_path, name, pages, "d1", title, 400)
    return [Evidence(label=i + 1, kind="chunk", text=r["text"], chunk_id=r["chunk_id"], doc_id="d1", title=title,
                     source_path=name, page=r["page"], chunk_index=r["chunk_index"])
            for i, r in enumerate(chunks.iter_rows(named=True))]  # fmt: skip


def _evidence(tmp_path: Path) -> list[Evidence]:
    return _pdf_evidence(tmp_path, "directory.pdf", DIRECTORY, "Market directory")


def test_codes_are_letters_and_digits_with_a_capital_and_no_year_or_quantity():
    assert codes("What's the market name for EPS Code HN02?") == ["HN02"]
    assert codes("Exhibits P-10 and SKU-4410-B") == ["P-10", "SKU-4410-B"]
    # a fiscal year, an ordinal, a decade, a quantity and a number joined to a word are no codes
    assert codes("In FY2015, the 21st floor, the 1990s, 16GB, 75k, a 100-shot setting, 3-hop claims") == []


def test_a_line_that_holds_the_code_whole_gives_its_value():
    lines = keyed_lines("the name for HN01", [(1, "1. Quayside HN01\n2. Old Town HN011\nCHN01 Hill")])
    assert [(k.line, k.value) for k in lines] == [("1. Quayside HN01", "Quayside")]  # not HN011, not CHN01
    assert keyed_lines("the name for HN01", [(1, "HN01 | 4 | 17")]) == []  # numbers name nothing
    # prose that mentions the code is no line keyed by it: its "value" would be the sentence without the code
    prose = ("On that flight, STS-93, the orbiter Columbia deployed the Chandra X-ray Observatory. In 2005 she "
             "commanded STS-114, the Return to Flight mission of Discovery.")
    assert keyed_lines("Who commanded STS-93?", [(1, prose)]) == []
    assert [k.value for k in keyed_lines("Who commanded STS-93?", [(1, "3. STS-93 Eileen Collins")])] == [
        "Eileen Collins"
    ]
    # a table row as the PDF reader renders it: the cell the question names, else the row's label
    row = "Table 3 Markets | Quayside | Code: HN01 | Market name: Quayside and Old Town | Stalls: 40"
    assert row_value(row, "HN01", "What is the market name for HN01?") == "Quayside and Old Town"
    assert row_value("Table 3 Markets | Quayside | Code: HN01 | Stalls: 40", "HN01", "What is HN01?") == "Quayside"


def test_the_reader_answers_from_the_line_a_code_keys_and_declines_a_code_no_line_holds(tmp_path: Path):
    evidence = _evidence(tmp_path)
    ans = Reader().read(analyze("What's the market name for code HS02?"), None, evidence)
    assert (ans.text, ans.method, ans.confidence) == ("Cannery Row and the Docks", "lookup", KEYED), ans.reason
    sup = ans.support[0]
    assert sup.sentence[sup.start : sup.end] == "Cannery Row and the Docks" and "HS02" in ans.reason
    # "HS03" is in no line: no line answers, and the question names a code the evidence lacks
    ans = Reader().read(analyze("What's the market name for code HS03?"), None, evidence)
    assert ans.text == NOT_ANSWERABLE and ans.method != "lookup" and "HS03" in ans.reason, ans.reason
    # a code in two lines that give different values is no key
    twice = [*evidence, Evidence(label=9, kind="chunk", text="HS02 Pier Street", chunk_id="x", doc_id="d2",
                                 title="Other", source_path="o.pdf", page=1)]  # fmt: skip
    assert Reader().read(analyze("What's the market name for code HS02?"), None, twice).method != "lookup"
    # a yes/no question about a code asks no lookup
    assert Reader().read(analyze("Is market HS02 part of the Northern district?"), None, evidence).method != "lookup"


COVER = [
    "Harbour Board Strategic Plan 2016-2020\nVersion 1.3\nRevised May 2016\nProduced by:\n"
    "Nordmark Harbour Authority\n12 Quay Street, Box 4\nNote: figures are rounded.",
    "Visitors by age group\n18-24 26.2\n25-34 32.1\n35-44 25.2\nSource: Nordmark Tourism Survey\n"
    "The ferries carried more visitors in summer than in any other season.",
]


def test_a_label_the_question_asks_for_gives_the_value_after_it():
    items = [(1, "• Source:eMarketer\nNote: rounded"), (2, "Source of funds: (Harbour Fund)")]
    lines = labelled_lines({"sourc", "data"}, "sourc", items)
    # a bullet before the label is no part of it; "Note" is no word the question asks with; a label of more
    # words than the question asks with ("Source of funds") is another label
    assert [(k.key, k.value, k.label) for k in lines] == [("Source", "eMarketer", 1)]
    # the value on the next line when the label ends its own; a web address is no label
    lines = labelled_lines({"produ"}, "", [(1, "Produced by:\nNordmark Harbour Authority\nhttp://nordmark.example")])
    assert [(k.key, k.value) for k in lines] == [("Produced by", "Nordmark Harbour Authority")]
    # a value opened by a bullet, or by the control character a PDF maps a Wingdings bullet to, is read without it
    items = [(1, "Produced by:\n\x99 Nordmark Harbour Authority"), (2, "Produced by: • Ports")]
    lines = labelled_lines({"produ"}, "", items)
    assert [k.value for k in lines] == ["Nordmark Harbour Authority", "Ports"]
    assert labelled_lines({"sourc"}, "sourc", [(1, "See http://nordmark.example/source")]) == []


def test_the_reader_answers_from_a_label_and_holds_it_to_the_question_s_year(tmp_path: Path):
    evidence = _pdf_evidence(tmp_path, "plan.pdf", COVER, "Strategic plan")
    ans = Reader().read(analyze("Who produced the document that was revised on May 2016?"), None, evidence)
    assert (ans.text, ans.method, ans.confidence) == ("Nordmark Harbour Authority", "label", KEYED), ans.reason
    sup = ans.support[0]
    assert sup.sentence[sup.start : sup.end] == "Nordmark Harbour Authority" and "Produced by" in ans.reason
    # the build's entity spans (as the answer path attaches them) say what it is: who produced it is an organization
    assert ans.answer_type == "person"
    tagged = [replace(e, mentions=(("Nordmark Harbour Authority", "ORG"), ("May 2016", "DATE"))) for e in evidence]
    ans = Reader().read(analyze("Who produced the document that was revised on May 2016?"), None, tagged)
    assert (ans.text, ans.answer_type, ans.method) == ("Nordmark Harbour Authority", "organization", "label")
    ans = Reader().read(analyze("What is the source of the data on visitors by age group?"), None, evidence)
    assert (ans.text, ans.method) == ("Nordmark Tourism Survey", "label"), ans.reason
    # the item that gives the value does not state the year the question names: no label answers it
    ans = Reader().read(analyze("Who produced the document that was revised on May 2018?"), None, evidence)
    assert ans.method != "label", ans.reason
    # two items that give the label different values: no label answers it
    other = Evidence(label=9, kind="chunk", text="Produced by: Sealink Ferries 2016", chunk_id="x", doc_id="d2",
                     title="Other", source_path="o.pdf", page=1)  # fmt: skip
    ans = Reader().read(analyze("Who produced the document that was revised on May 2016?"), None, [*evidence, other])
    assert ans.method != "label", ans.reason


def test_an_answer_is_read_on_the_page_the_question_points_at_or_declined(tmp_path: Path):
    evidence = _evidence(tmp_path)
    assert [e.page for e in evidence] == [1, 2, 3]
    ask = "Who is the governor of the harbour board, as mentioned on the {} page of the document?"
    on_second = RetrievalResult("v", "mg2", "default", "q", None, [], pointed_pages={"d1": [2]})
    ans = Reader().read(analyze(ask.format("second")), on_second, evidence)
    assert (ans.text, ans.abstained) == ("Ada Brandt", False), ans.reason
    # the last page is in the evidence: the answer is read there alone, and it names no governor
    on_last = RetrievalResult("v", "mg2", "default", "q", None, [], pointed_pages={"d1": [3]})
    ans = Reader().read(analyze(ask.format("last")), on_last, evidence)
    assert ans.text == NOT_ANSWERABLE and ans.guess != "Ada Brandt", ans.reason
    # the page pointed at is not in the evidence: the answer read elsewhere is declined, saying where it was read
    on_seventh = RetrievalResult("v", "mg2", "default", "q", None, [], pointed_pages={"d1": [7]})
    ans = Reader().read(analyze(ask.format("seventh")), on_seventh, evidence)
    assert ans.text == NOT_ANSWERABLE and ans.guess == "Ada Brandt", ans.reason
    assert "points at page(s) 7 and the answer was read on page 2" in ans.reason


def test_names_the_question_gives_are_looked_for_on_every_page_shown(tmp_path: Path):
    # the board is named on page 1 only, its governor on page 2, which the question points at: read on page 2,
    # the answer is not declined for a name "no evidence mentions"
    pages = ["The Rotterdam Harbour Board runs the port and its ferries.",
             "The governor of the board is Piet Vos. The board meets monthly."]
    evidence = _pdf_evidence(tmp_path, "board.pdf", pages, "Board")
    on_second = RetrievalResult("v", "mg2", "default", "q", None, [], pointed_pages={"d1": [2]})
    ans = Reader(min_confidence=0.0).read(
        analyze("Who is the governor of the Rotterdam Harbour Board, as mentioned on page 2?"), on_second, evidence)
    assert ans.text == "Piet Vos" and "no evidence mentions" not in ans.reason, ans.reason


def test_the_page_pointed_at_is_read_even_where_another_page_states_it_better(tmp_path: Path):
    pages = ["The governor of the harbour board is Ada Brandt. The governor of the harbour board chairs it.",
             "Board members\nPiet Vos, governor of the harbour board since 2019\nLena Holm, treasurer"]
    evidence = _pdf_evidence(tmp_path, "board.pdf", pages, "Harbour board")
    ask = "Who is the governor of the harbour board on page 2?"
    assert Reader(min_confidence=0.0).read(analyze(ask), None, evidence).text == "Ada Brandt"  # page 1 says it best
    on_second = RetrievalResult("v", "mg2", "default", "q", None, [], pointed_pages={"d1": [2]})
    ans = Reader(min_confidence=0.0).read(analyze(ask), on_second, evidence)
    assert ans.text == "Piet Vos" and ans.support[0].label == 2, ans.reason


def test_a_table_row_whose_labels_the_question_names_gives_its_value():
    rows = named_rows("What will happen when you press and hold the down button?", [
        (1, "Up button | Press and hold | Function: Start boiling\n"
            "Down button | Press once | Function: Lower the temperature | Remarks: Beeps once"),
        (2, "Down button | Press and hold | Function: Keep the water warm | Remarks: Lights up"),
    ])  # fmt: skip
    # "Press once" says a word the question does not ("once"); "Up button" loses to "Down button" on the caption
    assert [(r.label, r.value, r.header) for r in rows] == [(2, "Keep the water warm", "Function"),
                                                            (1, "Start boiling", "Function")]  # fmt: skip
    # a column the question names is read instead of the first
    (row,) = named_rows("What remarks apply when you press and hold the down button?", [
        (2, "Down button | Press and hold | Function: Keep the water warm | Remarks: Lights up")])  # fmt: skip
    assert (row.header, row.value) == ("Remarks", "Lights up")
    # a row of numbers is the number reader's
    assert named_rows("What is the revenue of streaming?", [(1, "Streaming | 2015: 6,779")]) == []
    # a caption may hold ": " itself, and a value may too
    (row,) = named_rows("What will happen when you press and hold the down button?", [
        (3, "Table 2: Down button | Press and hold | Function: Note: keeps the water warm")])  # fmt: skip
    assert (row.header, row.value) == ("Function", "Note: keeps the water warm")


def test_the_reader_answers_from_a_ruled_table_row_of_a_real_pdf(tmp_path: Path):
    from tests.test_pdf_tables import write_manual_pdf

    path = write_manual_pdf(tmp_path / "manual.pdf")
    doc, _ = read_pdf(path.read_bytes(), "manual.pdf", Limits())
    evidence = [Evidence(label=1, kind="chunk", text=doc.text, chunk_id="c0", doc_id="d1", title="Kettle",
                         source_path="manual.pdf", page=1)]  # fmt: skip
    ans = Reader().read(analyze("What will happen when you press and hold the down button?"), None, evidence)
    assert (ans.text, ans.method) == ("Keep the water warm for an hour", "row"), ans.reason
    assert ans.confidence >= 0.25 and "Down button | Press and hold" in ans.reason
    assert ans.support and ans.support[0].label == 1
    from mmkg.generation.answer import hints

    assert "Read off the evidence: Keep the water warm for an hour (the table row" in hints(ans)  # a model sees it
    ans = Reader().read(analyze("What will happen when you press and hold the up button?"), None, evidence)
    assert ans.text == "Start boiling", ans.reason
    # no row is labelled by what this question says: no row answers it
    ans = Reader().read(analyze("What will happen when you press the down button twice?"), None, evidence)
    assert ans.method != "row", ans.reason
