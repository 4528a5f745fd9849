"""Quantities as an answer reads them: the scale a number is written in, the scale and precision the question
asks for, and which year a number of a "respectively" sentence is stated for.

- **Scale**: "$3.0 billion" is 3.0e9; a bare number in a statement noted "(in thousands, except per share
  data)" is in thousands. A question that says "Answer in millions" gets the value in millions, whatever
  scale the evidence wrote it in ("$253.3 million" -> 253.3, "253,300" in thousands -> 253.3).
- **Precision**: "Round your answer to three decimal places" rounds the answer.
- **Totals**: "Expected future amortization expense ... 2018 $ 377 / 2019 337 / ... / Thereafter 1,998 / $ 3,362":
  a statement's or a list's total is the sum of the values right before it. ``total_of`` says how many of them
  a number sums (the years that label the rows are no values), so "what is the total amount of ..." reads the
  total, not the first line.
- **Years stated together**: "As of December 31, 2016 and 2017, our liabilities ... was $2.4 billion and
  $3.0 billion" and "$4.9 billion, $6.4 billion, and $8.8 billion for 2015, 2016, and 2017" pair the n-th
  value of a coordinated run with the n-th year of a run of the same length; a question about 2017 then reads
  the 2017 value, not its neighbour.

Hand-written: these are the few conventions of financial and statistical prose (scale words, statement notes,
coordinated runs) over text the reader already holds; no maintained library reads them from prose.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import lru_cache

from mmkg.generation.extractive import STOPWORDS
from mmkg.numerals import spelled_number

# a number standing alone: not part of a name or code ("GPT-4", "PaLM-2L", "COVID-19", "B2B")
NUMBER = re.compile(r"(?<![\w.-])[-+]?\$?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?%?(?![\w-])"
                    r"|(?<![\w.-])[-+]?\$?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?=-(?:fold|times|percent)\b)")

SCALES = {"thousand": 1e3, "thousands": 1e3, "million": 1e6, "millions": 1e6, "mn": 1e6, "billion": 1e9,
          "billions": 1e9, "bn": 1e9, "trillion": 1e12, "trillions": 1e12}  # fmt: skip
_SCALE_WORD = r"(thousands?|millions?|billions?|trillions?)"
# "Answer in millions", "answer in billion", "(in thousands)", "expressed in millions of dollars"
_ASKED_SCALE = re.compile(
    r"\b(?:answer|express|expressed|give|report|round)\w*\s+(?:it\s+|the\s+\w+\s+)?in\s+" + _SCALE_WORD
    + r"|\(\s*in\s+" + _SCALE_WORD + r"\s*\)|\bin\s+" + _SCALE_WORD + r"\s+of\s+(?:dollars|usd|euros)",
    re.IGNORECASE,
)  # fmt: skip
_DECIMALS = re.compile(r"\b(one|two|three|four|five|six|\d)\s+decimals?(?:\s+places?|\s+points?)?\b", re.IGNORECASE)
# the scale word written after a number: "$3.0 billion", "714.3 million", "$2bn"
_SCALE_AFTER = re.compile(r"^\s*(thousands?|millions?|billions?|trillions?|bn|mn)\b", re.IGNORECASE)
# a statement's note on the scale of its bare numbers: "(in thousands, except per share data)", "in millions"
_NOTE = re.compile(r"\(\s*(?:[$€£]\s*|amounts\s+|dollars\s+)?in\s+" + _SCALE_WORD + r"\b|\bin\s+" + _SCALE_WORD
                   + r",\s+except\b", re.IGNORECASE)  # fmt: skip
_YEAR = r"(?:19|20)\d{2}"
# a coordinated run of years: "2016 and 2017", "2015, 2016, and 2017"
_YEAR_RUN = re.compile(rf"\b{_YEAR}(?:\s*,\s*(?:and\s+)?{_YEAR})*\s*,?\s*(?:and|&)\s+{_YEAR}\b")
# one value: "$2.4 billion", "38%", "650,788", "$ 1.0 billion"
_VALUE = r"[-+]?[$€£]?\s?\d[\d,]*(?:\.\d+)?\s?%?(?:\s+(?:thousand|million|billion|trillion))?"
_VALUE_RUN = re.compile(rf"(?<![\w.,-]){_VALUE}(?:\s*,\s*(?:and\s+)?{_VALUE})*\s*,?\s*(?:and|&)\s+{_VALUE}(?![\w-])")
_ONE_VALUE = re.compile(rf"(?<![\w.,-]){_VALUE}(?![\w-])")
_ANY_YEAR = re.compile(r"1\d{3}|20\d{2}")
# a year a text names as its period: not an amount ("$1,950", "1950%", "2010.5")
_PERIOD_YEAR = re.compile(rf"(?<![\d$.,])({_YEAR})(?![\d%]|[.,]\d)")
_WORD_BEFORE = re.compile(r"([^\W\d_][\w-]*)\s+$")
#: the months' names, in order
MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
               "november", "december")  # fmt: skip
_LINE_END = re.compile(r"\d[\d,.]*\)?%?\s*$")  # a line that ends in a number: a table row laid out as text
# a question that asks for a total: "the total amount of", "how many ... in total", "in all", "altogether"
_ASKS_TOTAL = re.compile(r"\b(?:total|in\s+all|altogether|combined)\b", re.IGNORECASE)
_BARE_YEAR = re.compile(_YEAR)  # "2018" labelling a row: no amount
TOTAL_TERMS = 12  # a total is checked against at most this many values before it
TOTAL_TOLERANCE = 1e-3  # relative: rounded parts may miss their total by a unit or two


def asked_scale(question: str) -> float | None:
    """The scale the question asks its answer in ("Answer in millions" -> 1e6), or None."""
    m = _ASKED_SCALE.search(question)
    if m is None:
        return None
    word = next(g for g in m.groups() if g)
    return SCALES[word.lower()]


def asked_decimals(question: str) -> int | None:
    """The decimal places the question asks its answer rounded to ("round ... to three decimal places"), or None."""
    m = _DECIMALS.search(question)
    if m is None:
        return None
    word = m.group(1).lower()
    return int(word) if word.isdigit() else spelled_number(word) or 0


def stated_scale(text: str, end: int, note: float | None = None) -> float | None:
    """The scale of the number that ends at ``end`` in ``text``: the scale word after it ("$3.0 billion"),
    else ``note`` (the statement's "(in thousands)" note), else None (a plain number)."""
    m = _SCALE_AFTER.match(text[end:])
    if m is not None:
        return SCALES[m.group(1).lower()]
    return note


@lru_cache(maxsize=4096)
def scale_note(text: str) -> float | None:
    """The scale a statement's note gives its bare numbers ("(in thousands, except per share data)"), or None;
    two different notes in one text leave it unknown."""
    found = {SCALES[next(g for g in m.groups() if g).lower()] for m in _NOTE.finditer(text)}
    return found.pop() if len(found) == 1 else None


def as_asked(value: float, stated: float | None, asked: float | None, decimals: int | None) -> str:
    """``value`` (written at scale ``stated``) as the question asks it: at scale ``asked`` and rounded to
    ``decimals`` places; a value whose own scale is unknown is taken as written."""
    if asked is not None and stated is not None:
        value = value * stated / asked
    if decimals is not None:
        return f"{value:.{decimals}f}"
    text = f"{value:.6f}".rstrip("0").rstrip(".")
    return text if text not in ("-0", "") else "0"


@lru_cache(maxsize=4096)
def years_stated(text: str) -> tuple[tuple[int, int, int, int, int], ...]:
    """(start, end, year, run start, run end) for each value of a coordinated run that a run of as many years
    pairs with a year.

    "As of December 31, 2016 and 2017, ... was $2.4 billion and $3.0 billion" pairs $2.4 billion with 2016 and
    $3.0 billion with 2017; so does "$4.9 billion, $6.4 billion, and $8.8 billion for 2015, 2016, and 2017".
    Only runs of equal length pair, and only when the sentence holds one run of years of that length."""
    runs = list(_YEAR_RUN.finditer(text))
    years = [[int(y) for y in re.findall(_YEAR, m.group(0))] for m in runs]
    spans = [(m.start(), m.end()) for m in runs]
    out: list[tuple[int, int, int, int, int]] = []
    for run in _VALUE_RUN.finditer(text):
        if any(a <= run.start() < b for a, b in spans):
            continue  # the run of years itself
        values = [(run.start() + v.start(), run.start() + v.end()) for v in _ONE_VALUE.finditer(run.group(0))]
        same = [ys for ys in years if len(ys) == len(values)]
        if len(same) != 1:
            continue
        for (a, b), year in zip(values, same[0], strict=True):
            out.append((a, b, year, run.start(), run.end()))
    return tuple(out)


def _stated(text: str, a: int, b: int) -> tuple[int, int, int, int, int] | None:
    """The entry of ``years_stated`` for the value at ``text[a:b]``, or None."""
    return next((s for s in years_stated(text) if s[0] <= a < s[1] or a <= s[0] < b), None)


def year_of(text: str, a: int, b: int) -> int | None:
    """The year a "respectively" sentence states the value at ``text[a:b]`` for, or None."""
    stated = _stated(text, a, b)
    return stated[2] if stated else None


def run_of(text: str, a: int, b: int) -> tuple[int, int] | None:
    """The span of the coordinated run of values paired with years that holds ``text[a:b]``, or None: what
    the sentence says of the run ("Depreciation expense ... was") it says of each of its values."""
    stated = _stated(text, a, b)
    return (stated[3], stated[4]) if stated else None


@lru_cache(maxsize=4096)
def crowded(text: str) -> bool:
    """Whether a text is a table as page text ("Gross ... 2016 2017 $ 29,114 $ 23,718 ..."): six numbers or more
    (years aside), and as many as its words or more, or three lines or more that end in a number. Which words a
    number there belongs to, its position does not say (``mmkg.ingest.pdf_tables`` writes such tables' rows with
    their labels)."""
    numbers = sum(1 for v in _ONE_VALUE.findall(text) if not _ANY_YEAR.fullmatch(v.strip()))  # years: dates
    if numbers < 6:
        return False
    rows = sum(1 for line in text.splitlines() if _LINE_END.search(line))
    words = sum(1 for w in text.split() if any(ch.isalpha() for ch in w))
    return numbers >= words or rows >= 3


def question_years(question: str) -> frozenset[int]:
    """The years a question names ("in FY2015", "from 2014 to 2015")."""
    return frozenset(int(y) for y in re.findall(rf"(?<!\d){_YEAR}(?!\d)", question))


def period_years(text: str) -> set[int]:
    """The years a text names as a period ("in 2015", "In 2015,", "December 31, 2014", "FY2015"); not a year that
    is part of a name ("the HSCA 2008", "Regulations 2014": after a capitalized word that is no month and no
    function word) or an amount."""
    out = set()
    for m in _PERIOD_YEAR.finditer(text):
        before = _WORD_BEFORE.search(text, 0, m.start())
        word = before[1].lower() if before else ""
        if before is None or not before[1][0].isupper() or word in MONTH_NAMES or word in STOPWORDS:  # "In 2015,"
            out.add(int(m[1]))
    return out


def asks_total(question: str) -> bool:
    """Whether the question asks for a total ("the total amount of", "in all", "altogether")."""
    return bool(_ASKS_TOTAL.search(question))


def _amount(text: str, a: int, b: int) -> float | None:
    """The number at ``text[a:b]`` ("$ 3,362", "1,998", "38%"), negative when parenthesised ("(534)")."""
    token = text[a:b].replace("$", "").replace(",", "").rstrip("%").strip()
    try:
        value = float(token)
    except ValueError:
        return None
    negative = text[:a].rstrip().endswith("(") and text[b:].lstrip().startswith(")")
    return -value if negative else value


@lru_cache(maxsize=256)
def _number_spans(text: str) -> tuple[tuple[int, int], ...]:
    """Where each number of ``text`` starts and ends, in order: read once per text, since the reader asks
    ``total_of`` about every number of a sentence (a statement's sentence holds hundreds)."""
    return tuple((m.start(), m.end()) for m in NUMBER.finditer(text))


def total_of(text: str, a: int, b: int) -> int:
    """How many of the values right before the number at ``text[a:b]`` it is the sum of, counted back from the
    nearest (0 when no run of two to ``TOTAL_TERMS`` of them sums to it). Bare years label rows and are skipped;
    a percentage sums percentages only, an amount amounts only."""
    value = _amount(text, a, b)
    if not value:
        return 0
    percent = text[a:b].rstrip().endswith("%")
    terms: list[float] = []
    spans = _number_spans(text)
    for start, end in reversed(spans[: bisect_right(spans, (a, -1))]):  # the numbers before this one, nearest first
        if end > a:
            continue  # one that runs into this number is no term of it
        token = text[start:end]
        if _BARE_YEAR.fullmatch(token) or token.endswith("%") != percent:
            continue
        term = _amount(text, start, end)
        if term is None:
            continue
        terms.append(term)
        if len(terms) >= 2 and abs(sum(terms) - value) <= max(0.5, abs(value) * TOTAL_TOLERANCE):
            return len(terms)
        if len(terms) >= TOTAL_TERMS:
            break
    return 0

def number_value(text: str) -> float | None:
    """The first number of ``text`` as a float ("$1,250.5" -> 1250.5, "-3%" -> -3.0); None when it has none."""
    m = NUMBER.search(text.replace("\u2212", "-"))
    if not m:
        return None
    try:
        return float(m.group(0).replace(",", "").replace("$", "").rstrip("%"))
    except ValueError:
        return None
