"""Which row of a table wins a superlative: tables read off real PDF pages (written with matplotlib, read and
chunked by the build's own reader and chunker) and the ruled rows the PDF reader renders."""

from __future__ import annotations

from pathlib import Path

from mmkg.generation.answer import hints
from mmkg.generation.base import Evidence
from mmkg.generation.question import analyze
from mmkg.generation.reader import Reader
from mmkg.generation.short_answer import NOT_ANSWERABLE
from mmkg.generation.superlative import best_row, ruled_tables, text_tables
from tests.test_lookup import _pdf_evidence

BROCHURE = [
    "Courses for school leaders\nProgramme Full-Time\nLeaders in\nEducation Programme 7 months\n"
    "Management and Leadership in\nSchools Programme 17 weeks\nBuilding Bridges:\nInnovation for Leaders 2 weeks\n"
    "Every programme is taught on the main campus.",
]
FAILURES = [
    "Failures at the ACME data centre\nFailure type 2019 2020 2021\nHardware failure 30% 40% 50%\n"
    "Disk 10% 25% 20%\nMemory 15% 5% 20%\nPower 5% 10% 10%\nSoftware failure 70% 60% 50%\n"
    "Table 3: Share of failures by year at ACME.\nThe share of software failures fell each year.",
]


def _answer(tmp_path: Path, pages: list[str], question: str):
    evidence = _pdf_evidence(tmp_path, "doc.pdf", pages, "Report")
    return Reader().read(analyze(question), None, evidence)


def test_a_question_with_a_superlative_and_no_options_asks_for_the_winner():
    assert analyze("Which programme has the longest duration?").superlative == "max"
    assert analyze("What type of failure had the lowest share?").superlative == "min"
    assert analyze("Which film came out first, Alpha or Beta?").superlative == ""  # a choice between options
    assert analyze("What is the largest amount in 2015?").superlative == ""  # a number is asked, not a thing
    assert analyze("Which page shows the last figure?").superlative == ""  # a position, not a value


def test_wrapped_labels_and_durations_in_different_units(tmp_path: Path):
    ans = _answer(tmp_path, BROCHURE, "Which full-time programme has the longest duration?")
    assert (ans.text, ans.method, ans.abstained) == ("Leaders in Education Programme", "superlative", False)
    assert "7 months" in ans.reason and ans.support and "Education Programme" in ans.support[0].sentence
    # 17 weeks (119 days) is longer than 2 weeks, shorter than 7 months (213 days)
    ans = _answer(tmp_path, BROCHURE, "Which full-time programme has the shortest duration?")
    assert ans.text == "Building Bridges: Innovation for Leaders"


def test_a_row_the_question_names_is_asked_among_its_parts(tmp_path: Path):
    ans = _answer(tmp_path, FAILURES, "Which type of hardware failure has the highest total share at ACME?")
    assert ans.text == "Disk" and "total" in ans.reason  # 55 against 40 and 25; "Software failure" (180) is no part
    ans = _answer(tmp_path, FAILURES, "Which type of hardware failure had the highest share in 2019 at ACME?")
    assert ans.text == "Memory"  # the 2019 column: 15% against 10% and 5%
    # a table about another company answers nothing; the span reader finds no such thing either
    other = _answer(tmp_path, FAILURES, "Which type of hardware failure has the highest total share at Globex?")
    assert other.method != "superlative"


def test_text_tables_need_three_rows_of_one_shape_and_a_named_column_or_a_total():
    text = "Results\nModel A 10% 20%\nModel B 30% 5%\nModel C 12% 12%\nThe models were trained once."
    (table,) = text_tables(1, text)
    assert [r.label for r in table.rows] == ["Model A", "Model B", "Model C"] and table.rows[1].values == (30, 5)
    assert best_row("Which model has the highest score?", "max", [table]) is None  # two columns, none named
    win = best_row("Which model has the highest total score?", "max", [table])
    assert win is not None and win.row.label == "Model B" and win.value == 35
    assert text_tables(1, "Model A 10%\nModel B 30%\nSome prose follows.") == []  # two rows are no table
    # prose with numbers in it is no row: a word between two values
    assert text_tables(1, "In 2019 we sold 12 cars\nand 15 trucks in 2020\nwhile 3 boats sank") == []
    # a loss in parentheses or after a minus is negative; the total row is no thing compared
    segments = text_tables(1, "Segment results, in millions\nRetail (534) 100\nCloud 1,200 300\nAds 40 -20\n"
                              "Total 706 380")  # fmt: skip
    win = best_row("Which segment had the lowest total result?", "min", segments)
    assert win is not None and (win.row.label, win.value) == ("Retail", -434)
    win = best_row("Which segment had the highest total result?", "max", segments)
    assert win is not None and win.row.label == "Cloud"  # not "Total" (1,086)
    # a line of years is the columns' headers, not a row of amounts
    units = text_tables(1, "Revenue by business unit\nBusiness unit 2019 2020 2021\nCloud 10 20 30\nRetail 40 5 5\n"
                           "Ads 1 2 3")  # fmt: skip
    assert [r.label for t in units for r in t.rows] == ["Cloud", "Retail", "Ads"] and units[0].headers == (
        "2019", "2020", "2021")
    win = best_row("Which business unit had the highest total revenue?", "max", units)
    assert win is not None and (win.row.label, win.value) == ("Cloud", 60)
    win = best_row("Which business unit had the highest revenue in 2019?", "max", units, ("2019",))
    assert win is not None and (win.row.label, win.column) == ("Retail", "2019")
    tied = text_tables(1, "Model A 10%\nModel B 30%\nModel C 30%")
    assert best_row("Which model has the highest score?", "max", tied) is None


def test_ruled_rows_compare_the_column_the_question_names():
    rows = "\n".join([
        "Table 4 Store sales | North | 2015: $1,200 | 2016: $1,500",
        "Table 4 Store sales | South | 2015: $900 | 2016: $1,900",
        "Table 4 Store sales | West | 2015: $1,100 | 2016: $700",
    ])  # fmt: skip
    (table,) = ruled_tables(3, rows)
    assert table.headers == ("2015", "2016") and table.evidence == 3
    win = best_row("Which store had the lowest sales in 2016?", "min", [table], ("2016",))
    assert win is not None and (win.row.label, win.value, win.column) == ("West", 700, "2016")
    assert best_row("Which store had the lowest sales in 2017?", "min", [table], ("2017",)) is None
    # a row with an empty cell (the renderer writes no "2015: ..." for it) is compared where it has a value
    gappy = rows + "\nTable 4 Store sales | East | 2016: $2,000"
    (table,) = ruled_tables(3, gappy)
    win = best_row("Which store had the highest sales in 2016?", "max", [table], ("2016",))
    assert win is not None and win.row.label == "East"
    win = best_row("Which store had the highest sales in 2015?", "max", [table], ("2015",))
    assert win is not None and win.row.label == "North"
    win = best_row("Which store had the highest total sales?", "max", [table])
    assert win is not None and (win.row.label, win.value) == ("South", 2800)  # East's total is not known
    # two captionless tables, apart on the page, are two tables
    two = "\n".join(["Alpha | 2016: 5", "Beta | 2016: 9", "Gamma | 2016: 7", "Prices in another market:",
                     "Delta | 2016: 50", "Omega | 2016: 40", "Sigma | 2016: 30"])  # fmt: skip
    assert [[r.label for r in t.rows] for t in ruled_tables(1, two)] == [["Alpha", "Beta", "Gamma"],
                                                                       ["Delta", "Omega", "Sigma"]]  # fmt: skip
    evidence = [Evidence(label=3, kind="chunk", text=rows, chunk_id="c3", doc_id="d1", title="Sales",
                         source_path="sales.pdf")]
    ans = Reader().read(analyze("Which store had the highest sales in 2015?"), None, evidence)
    assert (ans.text, ans.method) == ("North", "superlative")
    assert ans.text != NOT_ANSWERABLE and ans.confidence >= 0.25
    assert "Read off the evidence: North (the row of a table in [3] with the largest" in hints(ans)  # a model sees it
