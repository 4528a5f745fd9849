"""Quantities as the reader reads them: scale words and statement notes, the scale and precision a question
asks, values stated for several years at once; and the reader's answers from them on real spaCy parses.

The texts are written for these tests in the manner of annual reports (a ferry operator's); none is a
benchmark document.
"""

from __future__ import annotations

import pytest
from test_reader import _evidence

from mmkg.generation.arithmetic import Operation, combine, operation
from mmkg.generation.quantities import (
    as_asked,
    asked_decimals,
    asked_scale,
    asks_total,
    crowded,
    period_years,
    question_years,
    scale_note,
    stated_scale,
    total_of,
    year_of,
)
from mmkg.generation.question import analyze, split_instructions
from mmkg.generation.reader import Reader
from mmkg.generation.short_answer import NOT_ANSWERABLE
from mmkg.numerals import spelled_number


@pytest.mark.parametrize(
    ("question", "scale", "decimals"),
    [
        ("What was fuel expense in 2019? Answer in millions.", 1e6, None),
        ("What was fuel expense in 2019? Answer in billion", 1e9, None),
        ("What is the fuel to revenue ratio? Round your answer to three decimal places.", None, 3),
        ("What is the margin? Answer in percentage term, round to one decimal place.", None, 1),
        ("What were ticket sales (in thousands)?", 1e3, None),
        ("How many ferries sailed in 2019?", None, None),
    ],
)
def test_the_scale_and_precision_a_question_asks(question: str, scale: float | None, decimals: int | None):
    assert asked_scale(question) == scale
    assert asked_decimals(question) == decimals


def test_scale_words_and_statement_notes():
    text = "Fuel expense was $3.2 billion. Tickets 4,512"
    assert stated_scale(text, text.index("3.2") + 3) == 1e9
    assert stated_scale(text, len(text)) is None
    assert stated_scale(text, len(text), note=1e3) == 1e3
    assert scale_note("CONSOLIDATED STATEMENTS (in thousands, except per share data) Revenues 4,512") == 1e3
    assert scale_note("Property and equipment consisted of the following (in millions):") == 1e6
    assert scale_note("(in thousands) ... (in millions)") is None  # two notes: unknown
    assert as_asked(3.2, 1e9, 1e6, None) == "3200"
    assert as_asked(650788, 1e3, 1e3, 2) == "650788.00"
    assert as_asked(0.10498, None, None, 3) == "0.105"
    assert as_asked(12.0, None, 1e6, None) == "12"  # a value whose own scale is unknown is taken as written


def test_values_stated_for_several_years_pair_with_their_year():
    text = "As of December 31, 2018 and 2019, our liabilities for unused tickets were $2.4 million and $3.1 million."
    assert year_of(text, text.index("$2.4"), text.index("$2.4") + 4) == 2018
    assert year_of(text, text.index("$3.1"), text.index("$3.1") + 4) == 2019
    text = "Fuel expense was $4.9 million, $6.4 million, and $8.8 million for 2017, 2018, and 2019."
    assert [year_of(text, text.index(v), text.index(v) + 4) for v in ("$4.9", "$6.4", "$8.8")] == [2017, 2018, 2019]
    # runs of different lengths do not pair
    text = "Fuel expense was $4.9 million and $6.4 million for 2017, 2018, and 2019."
    assert year_of(text, text.index("$4.9"), text.index("$4.9") + 4) is None
    assert question_years("What was fuel expense in FY2019?") == {2019}


def test_a_table_as_page_text_is_crowded_and_prose_is_not():
    table = "Ferries 12 14\nCrew 310 352\nRoutes 8 9\nPorts 5 6"
    assert crowded(table)
    assert not crowded("The line ran 12 ferries in 2018 and 14 in 2019, with 310 and 352 crew on 8 and 9 routes.")
    # a list of years (a reign's periods) is dates, not a table
    assert not crowded("He was King in the periods of 1707–11, 1712–13, 1713–16, and 1719–1720.")


def test_instructions_are_read_for_the_form_and_left_out_of_the_question():
    asked, told = split_instructions("What was fuel expense in 2019? Answer in millions. Round to one decimal place.")
    assert asked == "What was fuel expense in 2019?" and told.startswith("Answer in millions")
    q = analyze("What was fuel expense of Nordline in FY2019?Answer in millions.")  # no space after the "?"
    assert q.answer_type == "number" and q.scale == 1e6 and q.years == {2019}
    assert "Answer" not in " ".join(q.entities) and "answer" not in q.relation_words
    assert split_instructions("List the ports. Write the answer as a list.")[0] == "List the ports."
    # an instruction in lowercase after the "?" is one too; a lowercase word after a full stop is not split off
    assert split_instructions("what was fuel expense in 2019? round your answer to two decimal places") == (
        "what was fuel expense in 2019?", "round your answer to two decimal places")
    assert split_instructions("What did the Ro. answer say?")[1] == ""


REPORT = (
    "Nordline operates ferries between the islands. Fuel expense was $41.2 million, $44.9 million and $52.6 "
    "million for the years ended December 31, 2017, 2018 and 2019. As of December 31, 2018 and 2019, our "
    "liabilities for unused tickets were $2.4 billion and $3.1 billion.",
    "CONSOLIDATED STATEMENTS OF OPERATIONS (in thousands, except per share data)\n"
    "Harbour fees | 2019: 18,330 | 2018: 17,902",
)


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What was Nordline's fuel expense in 2018? Answer in millions.", "44.9"),
        ("What was the fuel expense in FY2019? Answer in thousands.", "52600"),
        ("What amount were liabilities for unused tickets in 2019? Answer in billion.", "3.1"),
        ("What were harbour fees in 2019? Answer in thousands.", "18330"),
        ("What were harbour fees in 2019? Answer in millions.", "18.33"),
    ],
)
def test_the_reader_reads_the_year_asked_at_the_scale_asked(question: str, expected: str):
    ans = Reader(min_confidence=0.0).read(analyze(question), None, _evidence(*REPORT))
    assert ans.text == expected, ans.candidates[:4]


SCHEDULE = (
    "Expected future maintenance expense of the ferry fleet as of December 31, 2019 is as follows (in millions):\n"
    "Year Ended December 31,\n2020 $ 412\n2021 398\n2022 275\n2023 231\nThereafter 1,204\n$ 2,520\n41"
)


def _at(text: str, token: str) -> tuple[int, int]:
    a = text.index(token)
    return a, a + len(token)


def test_a_total_is_the_sum_of_the_values_before_it():
    assert total_of(SCHEDULE, *_at(SCHEDULE, "2,520")) == 5  # the years that label the rows are no values
    assert total_of(SCHEDULE, *_at(SCHEDULE, "1,204")) == 0 and total_of(SCHEDULE, *_at(SCHEDULE, "412")) == 0
    assert total_of(SCHEDULE, *_at(SCHEDULE, "41")) == 0  # the page number under it sums nothing
    # a parenthesised value is subtracted; rounded parts may miss their total by a unit
    statement = "Gross obligations $ 1,480\nLess imputed interest (53)\nNet obligations 1,428"
    assert total_of(statement, *_at(statement, "1,428")) == 2
    shares = "Cyclists 12% Walk-on 30% Cars 58% Total 100% of 2,310 passengers"
    assert total_of(shares, *_at(shares, "100%")) == 3  # percentages sum percentages only
    assert total_of(shares, *_at(shares, "2,310")) == 0
    assert asks_total("What is the total amount of expected maintenance expense?")
    assert asks_total("How many ferries are there in all?") and not asks_total("What was the fuel expense in 2019?")


def test_the_reader_reads_the_total_a_question_asks_for():
    q = analyze("What is the total amount of expected future maintenance expense of the fleet? Answer in millions.")
    ans = Reader(min_confidence=0.0).read(q, None, _evidence(SCHEDULE))
    assert ans.text == "2520" and ans.candidates[0].features.get("total") == 1.0, ans.candidates[:4]
    # without "total" the sum earns nothing: the question asks for one year's value
    q = analyze("What is the expected maintenance expense of the ferry fleet in 2021? Answer in millions.")
    ans = Reader(min_confidence=0.0).read(q, None, _evidence(SCHEDULE))
    assert all("total" not in c.features for c in ans.candidates), ans.candidates[:4]


def test_the_years_a_text_names_as_its_period():
    assert period_years("Year ended December 31, 2015 as compared to the year ended December 31, 2014") == {2015, 2014}
    assert period_years("in FY2019 and in fiscal 2018, and in May 2017") == {2019, 2018, 2017}
    assert period_years("In 2016, fees rose. For 2015 they fell.") == {2016, 2015}
    # a year in a name, and amounts, are no period
    assert period_years("breaches of the Harbour Act 2008 and Regulations 2014") == set()
    assert period_years("a fee of $1,950, 2010.5 tonnes, 1998% more") == set()


MDNA = (
    "Year ended December 31, 2019 as compared to the year ended December 31, 2018\n"
    "Harbour costs rose mainly because the fees paid to pilots grew by $12.4 million.",
    "Year ended December 31, 2018 as compared to the year ended December 31, 2017\n"
    "Pilotage fees increased by $30.1 million.",
)


def test_a_value_under_another_period_s_heading_is_not_the_asked_year_s():
    # the 2018 text says "pilotage fees increased" as the question does; its heading names other years
    q = analyze("What amount did pilotage fees increase in 2019? Answer in millions.")
    for evidence in (MDNA, MDNA[::-1]):
        assert Reader(min_confidence=0.0).read(q, None, _evidence(*evidence)).text == "12.4"
    q = analyze("What amount did pilotage fees increase in 2017? Answer in millions.")
    assert Reader(min_confidence=0.0).read(q, None, _evidence(*MDNA)).text == "30.1"
    # a year in the question's name is no period: nothing is held against either value
    q = analyze("What amount did pilotage fees increase under the Harbour Act 2008? Answer in millions.")
    assert "other_year" not in Reader(min_confidence=0.0).read(q, None, _evidence(*MDNA)).candidates[0].features


def test_a_number_spelled_out_is_answered_in_digits():
    assert [spelled_number(w) for w in ("ten", "Twenty-five", "ninety nine", "zero", "SIX")] == [10, 25, 99, 0, 6]
    assert [spelled_number(w) for w in ("one hundred", "tenth", "twenty-ten", "")] == [None, None, None, None]
    ev = _evidence("Nordline runs three ferries between the islands.", "Ten percent of its passengers are cyclists.")
    ans = Reader(min_confidence=0.0).read(analyze("How many ferries does Nordline run?"), None, ev)
    assert ans.text == "3", ans.candidates[:4]
    ans = Reader(min_confidence=0.0).read(analyze("What percentage of Nordline's passengers are cyclists?"), None, ev)
    assert ans.text == "10%", ans.candidates[:4]


def test_the_day_of_a_date_is_no_quantity():
    ev = _evidence("As of December 31, 2019, the harbour fund held $12.5 million.")
    ans = Reader(min_confidence=0.0).read(analyze("How much did the harbour fund hold? Answer in millions."), None, ev)
    assert ans.text == "12.5" and all(c.text != "31" for c in ans.candidates)


def test_a_question_naming_what_no_evidence_mentions_is_declined():
    ev = _evidence(*REPORT)
    reader = Reader(min_confidence=0.0)
    # a name the evidence never holds, a year it never states
    for question in ("What was Sealink's fuel expense in 2018? Answer in millions.",
                     "What was Nordline's fuel expense in 2022? Answer in millions."):  # fmt: skip
        ans = reader.read(analyze(question), None, ev)
        assert ans.text == NOT_ANSWERABLE and ans.abstained and "no evidence mentions" in ans.reason, ans
        # the guess is kept with what made it the best, so a person can check it
        said = f"(best guess {ans.guess!r}: the evidence's best-scored candidate for a question that asks for a number"
        assert said in ans.reason, ans.reason
    ans = Reader(min_confidence=0.9).read(analyze("What was Nordline's fuel expense in 2018? Answer in millions."),
                                          None, ev)  # fmt: skip
    assert ans.abstained and ans.reason.startswith("declined: confidence") and ans.confidence > 0, ans
    assert f"(best guess {ans.guess!r}: the evidence's best-scored candidate" in ans.reason, ans.reason
    # a name misspelt by a letter is still the name; the document's file name names its subject
    assert reader.read(analyze("What was Nordlne's fuel expense in 2018? Answer in millions."), None, ev).text == "44.9"
    ev = [*(_evidence(*REPORT))]
    ev = [type(e)(**{**e.__dict__, "source_path": "docs/SEAWAYS_2019_10K.pdf"}) for e in ev]
    named = reader.read(analyze("What was Seaways' fuel expense in 2018? Answer in millions."), None, ev)
    assert named.text == "44.9" and named.coverage == 1.0, named
    # two neighbouring letters swapped are one slip ("Saeways"), as a letter left out is; two slips make another name
    swapped = reader.read(analyze("What was Saeways' fuel expense in 2018? Answer in millions."), None, ev)
    assert swapped.text == "44.9" and swapped.confidence == named.confidence, swapped
    ans = reader.read(analyze("What was Saewyas' fuel expense in 2018? Answer in millions."), None, ev)
    assert ans.abstained and "Saewyas" in ans.reason, ans


@pytest.mark.parametrize(
    ("question", "kind", "first", "second"),
    [
        ("How much higher is the punctuality of Nordline compared to Sealink in 2019?", "difference",
         "What is the punctuality of Nordline in 2019?", "What is the punctuality of Sealink in 2019?"),
        ("How much lower is the punctuality of Nordline in 2018 than in 2019?", "difference",
         "What is the punctuality of Nordline in 2018?", "What is the punctuality of Nordline in 2019?"),
        ("What is the gap between the share of ferries on time and the share of ferries cancelled?", "difference",
         "What is the share of ferries on time?", "What is the share of ferries cancelled?"),
        ("What is the total share of `Day trips` and `Freight` on the Baltic routes?", "sum",
         "What is the share of `Day trips` on the Baltic routes?",
         "What is the share of `Freight` on the Baltic routes?"),
        ("In the 2019 report, what is the sum of the punctuality of Nordline and Sealink?", "sum",
         "In the 2019 report, what is the punctuality of Nordline?",
         "In the 2019 report, what is the punctuality of Sealink?"),
        ("What is the percentage change of fuel expense from 2018 to 2019?", "change",
         "What is fuel expense in 2018?", "What is fuel expense in 2019?"),
    ],
)  # fmt: skip
def test_arithmetic_questions_are_rewritten_as_the_two_value_questions(question, kind, first, second):
    op = operation(question)
    assert op is not None and op.kind == kind, op
    assert op.questions == (first, second)


@pytest.mark.parametrize(
    "question",
    ["Which ferry sailed first, Nordline or Sealink?", "What is the total fuel expense in 2019?",
     "How much fuel did Nordline burn in 2019?", "What is the total long-term lease obligation for ships and ports?"],
)  # fmt: skip
def test_other_questions_ask_for_no_arithmetic(question):
    assert operation(question) is None


def test_combine():
    diff, total, change = (Operation("difference", ("a", "b")), Operation("sum", ("a", "b")),
                           Operation("change", ("a", "b"), percent_change=True))  # fmt: skip
    assert combine(diff, (57.4, 41.5)) == pytest.approx(15.9)
    assert combine(diff, (41.5, 57.4)) == pytest.approx(15.9)  # "how much lower" is the same gap
    assert combine(total, (50.0, 12.0)) == 62.0
    assert combine(change, (44.9, 52.6)) == pytest.approx(17.149, abs=1e-3)
    assert combine(change, (0.0, 52.6)) is None


PUNCTUALITY = (
    "Table 3: Ferry punctuality by operator | Nordline | 2019: 91.5% | 2018: 88.0%\n\n"
    "Table 3: Ferry punctuality by operator | Nordline Express | 2019: 95.0% | 2018: 93.1%\n\n"
    "Table 3: Ferry punctuality by operator | Sealink | 2019: 84.2% | 2018: 86.1%",
    "Fuel expense was $41.2 million, $44.9 million and $52.6 million for the years ended December 31, 2017, 2018 "
    "and 2019.",
)


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("How much higher is the punctuality rate of Nordline compared to Sealink in 2019?", "7.3%"),
        ("How much lower was the punctuality rate of Sealink in 2019 compared to Nordline Express?", "10.8%"),
        ("What is the percentage change of fuel expense from 2018 to 2019?", "17.15%"),
        ("What is the percentage change of fuel expense from 2018 to 2019? Round your answer to one decimal place.",
         "17.1%"),
    ],
)  # fmt: skip
def test_the_reader_computes_from_the_two_values_it_reads(question: str, expected: str):
    ans = Reader(min_confidence=0.0).read(analyze(question), None, _evidence(*PUNCTUALITY))
    assert ans.method == "arithmetic" and ans.text == expected, (ans.text, ans.reason)
    assert len(ans.support) == 2 and all(sp.start >= 0 for sp in ans.support)
    assert "read from the evidence" in ans.reason


def test_a_difference_of_which_one_value_is_read_is_declined():
    # the evidence states Nordline's rate and nothing of Sealink's: one value is no difference
    question = "How much higher is the punctuality rate of Nordline compared to Sealink in 2019?"
    evidence = _evidence("In 2019 the punctuality rate of Nordline ferries was 91.5%.",
                         "Sealink ferries sail from the north quay of the harbour.")  # fmt: skip
    ans = Reader(min_confidence=0.0).read(analyze(question), None, evidence)
    assert ans.abstained and ans.text == "Not answerable" and ans.confidence == 0.0, (ans.text, ans.reason)
    assert "of two values" in ans.reason and ans.guess


def test_a_row_whose_label_the_question_asks_whole_beats_a_longer_one():
    ans = Reader(min_confidence=0.0).read(analyze("What was the punctuality rate of Nordline in 2019?"), None,
                                          _evidence(*PUNCTUALITY))  # fmt: skip
    assert ans.text == "91.5%", ans.candidates[:3]
