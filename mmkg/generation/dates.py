"""Dates as the evidence writes them: a sortable key for comparing them, the year alone, a life span's two dates
(also where the text lost the dash between them), and the month and day patterns the reader's spans use.

Hand-written rather than ``dateutil``: the reader needs what a date *is in a sentence* (before or after a life
span's dash, a day glued to a year, "43 BC", a year before 1000 in a DATE span), not the parsing of one date
string, and ``dateutil``'s fuzzy parser invents the missing parts (today's month and day) where a comparison
needs to know they are missing.
"""

from __future__ import annotations

import re

from mmkg.generation.quantities import MONTH_NAMES

YEAR = re.compile(r"\b(1\d{3}|20\d{2})\b")
DASH = re.compile(r"\s[–—-]\s|[–—]")
MONTHS = {m: i for i, m in enumerate(MONTH_NAMES, 1)}
MONTH = re.compile(r"\b(" + "|".join(MONTHS) + r")\b", re.IGNORECASE)
MONTH_WORD = "(?:" + "|".join(m.capitalize() for m in MONTHS) + ")"
DATE_AT = re.compile(rf"\d{{1,2}}\s+{MONTH_WORD}\s+\d{{4}}|{MONTH_WORD}\s+\d{{1,2}},?\s+\d{{4}}")
DATE_LEAD = re.compile(rf"(?:\d{{1,2}}\s+{MONTH_WORD}|{MONTH_WORD}\s+\d{{1,2}},?)\s+$")

# a life span whose dash the text lost: "(21 March 192011 January 2010)", "(March 25, 1942August 16, 2018)"; the
# match is the first date's year, and the second date opens where it ends
GLUED_YEAR = re.compile(rf"(?<![\d,.])(?:1\d{{3}}|20\d{{2}})(?=\d{{1,2}}\s+{MONTH_WORD}\b|{MONTH_WORD}\b)")
DAY = re.compile(r"\b([0-3]?\d)(?:st|nd|rd|th)?\b")
MONTH_NEXT = re.compile(r"\b(?:" + "|".join(MONTHS) + r"|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)\.?\s*$",
                        re.IGNORECASE)  # fmt: skip
NEXT_MONTH = re.compile(r"^(?:st|nd|rd|th)?\s+(?:" + "|".join(MONTHS) + r")\b", re.IGNORECASE)
DAY_BEFORE = re.compile(r"\b[0-3]?\d\s+$")
OLD_YEAR = re.compile(r"\b(\d{2,3})(?:\s*(BC|BCE|B\.C\.))?(?!\s*(?:st|nd|rd|th)\b)(?![\d,.%])", re.IGNORECASE)


def date_key(text: str) -> tuple[int, int, int] | None:
    """A sortable (year, month, day) from a date as written ("3 May 1950", "May 1950", "1950", "538", "43 BC");
    None without a year. A date span (NER's DATE) may hold a year before 1000; "BC" makes it negative."""
    years = YEAR.findall(text)
    if not years:
        month_named = MONTH.search(text) is not None  # "12 November": 12 is the day, not the year
        old = next((m for m in OLD_YEAR.finditer(text) if not month_named or len(m.group(1)) == 3), None)
        if old is None:
            return None
        year = int(old.group(1)) * (-1 if old.group(2) else 1)
        return year, 0, 0
    month_m = MONTH.search(text)
    month = MONTHS[month_m.group(1).lower()] if month_m else 0
    day = 0
    if month_m:
        rest = text[: month_m.start()] + " " + text[month_m.end() :]
        day = next((int(m.group(1)) for m in DAY.finditer(rest) if 1 <= int(m.group(1)) <= 31
                    and not YEAR.fullmatch(m.group(0))), 0)  # fmt: skip
    return int(years[0]), month, day


def unglued(text: str, span: tuple[str, str, int, int]) -> list[tuple[str, str, int, int]]:
    """A date span that holds two dates glued where a dash was lost ("21 March 192011 January 2010") as its two
    dates; any other span as it is."""
    _, label, a, b = span
    m = GLUED_YEAR.search(text, a)  # NER may have cut the glued run anywhere ("21 March 192011", "January 2010")
    second = DATE_AT.match(text, m.end()) if label == "DATE" and m is not None and m.start() < b else None
    if m is None or second is None:
        return [span]
    start = a
    if m.start() == a and (lead := DATE_LEAD.search(text, 0, a)):  # cut as "21 March" + "192011 January 2010"
        start = lead.start()
    return [(text[start : m.end()], label, start, m.end()), (second.group(0), label, m.end(), second.end())]


def lifespan_role(text: str, a: int, b: int) -> tuple[str, ...]:
    """The words a span inside a life-span parenthesis stands for: ("born", "birth") before the dash,
    ("died", "death") after it; () elsewhere."""
    open_ = text.rfind("(", 0, a)
    close = text.find(")", b)
    if open_ < 0 or close < 0 or ")" in text[open_:a]:
        return ()
    inner = text[open_ + 1 : close]
    dash = DASH.search(inner) or GLUED_YEAR.search(inner)
    if dash is None:
        return ()
    # a dash stands between dates with a year; a lost one (GLUED_YEAR) sat where the first date's year ends
    if dash.re is not GLUED_YEAR and not (YEAR.search(inner[: dash.start()]) or YEAR.search(inner[dash.end() :])):
        return ()
    return ("died", "death") if a - open_ - 1 >= dash.end() else ("born", "birth")
