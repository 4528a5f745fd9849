"""Lookup by a code: the line of a listing or a table that a question's identifier keys.

"What's the geographic market name for EPS Code AR01?" is answered by the one line of the evidence that holds
"AR01" ("1. Little Rock AR01"): codes, part numbers and exhibit labels key rows of catalogues, directories and
tables, and the rest of that row is what it names. No sentence states it, so the span reader, which scores
entities by the words around them, finds the neighbouring rows' names as readily.

``codes`` finds the question's codes: a token of letters and digits with a capital ("AR01", "P-26", "TX10"),
not a year ("FY2015"), an ordinal ("21st"), a quantity ("16GB") or a number joined to a word ("100-shot").
``keyed_lines`` finds the evidence lines that hold one whole (never "AR011", nor "AR01" inside "CAR01");
``row_value`` is what such a line gives for it: the line without the code, its list number and the separators
around them, or in a rendered table row the cell whose header the question names. The reader answers with it
only when the question names one code and every line that holds it gives the same value.

**Lookup by a label**: "Who produced the document?" is answered by "Produced by: Florida Department of Health"
(the value on the label's line, or on the next line when the label ends its own), "What is the source of the
data?" by "Source: eMarketer". Covers, forms, chart notes and contact blocks state such facts as a label and
a value, never as a sentence, and the span reader took the street on the next line for the producer.
``labelled_lines`` finds the lines whose label (at most four words before a colon, outside table rows) holds
only words the question asks with: its relation words and the noun it asks for, which the label must hold when
the question has one ("source"); the reader answers with the value when every such line gives the same.

**Lookup by a row's labels**: "What will happen when you press and hold the down button?" is answered by the
table row "Down button | Press and hold | Function: Wake up the voice assistant. | Remarks: ..." (as
``mmkg.ingest.pdf_tables.render`` writes rows): a manual's, a brochure's or a report's table states a fact as a
row whose labels name the thing asked about and whose cells give it, never as a sentence. ``named_rows`` finds
the rendered rows whose own label (the cell before the first ``header: value`` cell) holds only words the
question says, stop words included ("Press once" is not "press and hold"); the value is the cell whose header
the question names, else the row's first. The reader answers with the row whose caption and label name most of
the question's content words (then whose caption holds fewest words the question does not say: "Up button"
loses to "Down button"), and only when the rows tied with it agree.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from mmkg.enumerations import BULLET_GLYPH, LEADING_MARK
from mmkg.generation.cells import asked_words
from mmkg.generation.extractive import content_words
from mmkg.generation.question import stem
from mmkg.ingest.pdf_tables import CELL_SEP

# a code: letters and digits in one token, hyphens inside ("AR01", "P-26", "SKU-4410-B"), at most 16 characters
_CODE = re.compile(r"(?<![\w-])(?=[A-Za-z-]*\d)(?=[\d-]*[A-Za-z])[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*(?![\w-])")
_YEARISH = re.compile(r"(?:1\d{3}|20\d{2})")
_ORDINAL = re.compile(r"\d+(?:st|nd|rd|th|s)", re.IGNORECASE)  # "21st", "1990s"
_UNIT = re.compile(r"\d+(?:[.,]\d+)?(?:k|m|bn|kg|km|cm|mm|ml|gb|mb|tb|hz|ghz|mhz|kb|pm|am|x|h|d|p)", re.IGNORECASE)
_LIST_NUMBER = re.compile(r"^\s*(?:\(?\d{1,3}[.)]|[a-z][.)]|[•·▪●◦‣\-–])\s+")
_EDGES = " \t|:;,.-–—=()[]"
# "Produced by: ...", "• Source:eMarketer": a label opens the line (after a bullet), a colon ends it
_LABELLED = re.compile(rf"^\s*(?:(?:{BULLET_GLYPH}|[·‣\-–])\s*)?(?P<label>[^\W\d_][^\n:]{{0,40}}?)\s*:(?!//)\s*"
                       r"(?P<value>.*)$")
_LABEL_WORDS = 4  # "Date of issue", "Produced by", "Name of the provider": longer is a clause, no label
_VALUE_WORDS = 12  # a value is a name, a date, a number: longer is a sentence


@dataclass(frozen=True)
class KeyedLine:
    """A line of one evidence item that holds the question's code whole."""

    code: str
    line: str
    label: int  # the evidence item's number
    value: str  # the line without the code and its list number


def codes(question: str) -> list[str]:
    """The codes a question names, in its order: tokens of letters and digits with a capital that are no year
    ("FY2015"), no ordinal or decade ("21st", "1990s"), no quantity with its unit ("75k", "16GB") and no number
    joined to a word ("100-shot")."""
    out = []
    for m in _CODE.finditer(question):
        token = m.group(0)
        digits = re.findall(r"\d+", token)
        if any(_YEARISH.fullmatch(d) for d in digits) or _ORDINAL.fullmatch(token) or _UNIT.fullmatch(token):
            continue
        if not any(ch.isupper() for ch in token):
            continue  # "100-shot", "3-hop", "5-year": a number and a word, no code
        if len(token) <= 16 and token not in out:
            out.append(token)
    return out


def row_value(line: str, code: str, question: str = "") -> str:
    """What the line gives for the code: in a table row as ``mmkg.ingest.pdf_tables.render`` writes it
    ("caption | label | header: value | ..."), the cell whose header shares a word with the question, else
    the row's label when the code is a cell's value; in any other line, the line without the code, a list
    number opening it and the separators left at either end."""
    if CELL_SEP in line:
        cells = [c.strip() for c in line.split(CELL_SEP)]
        asked = content_words(question)
        keyed = [c for c in cells if _has(c, code)]
        for cell in cells:
            header, sep, value = cell.rpartition(": ")
            if sep and not _has(cell, code) and content_words(header) & asked and value.strip():
                return value.strip()
        first = next((i for i, c in enumerate(cells) if ": " in c), len(cells))
        if keyed and ": " in keyed[0] and first > 0 and not _has(cells[first - 1], code):
            return cells[first - 1]  # "| Little Rock | Code: AR01 |": the row's label
        return ""
    rest = _whole(code).sub(" ", line)
    rest = _LIST_NUMBER.sub("", rest)
    return " ".join(rest.split()).strip(_EDGES)


def keyed_lines(question: str, evidence: Iterable[tuple[int, str]]) -> list[KeyedLine]:
    """The evidence lines (``(label, text)`` items) that hold one of the question's codes whole, with each
    line's value; a line whose value holds no letter (a row of numbers) is no name, and one of more than
    ``_VALUE_WORDS`` words is prose that mentions the code ("On that flight, STS-93, the orbiter Columbia
    deployed ..."), not a list's or a table's line keyed by it."""
    found = []
    wanted = codes(question)
    if not wanted:
        return []
    for label, text in evidence:
        for line in text.split("\n"):
            for code in wanted:
                if _has(line, code):
                    value = row_value(line, code, question)
                    if re.search(r"[^\W\d_]{2}", value) and len(value.split()) <= _VALUE_WORDS:
                        found.append(KeyedLine(code, line.strip(), label, value))
    return found


def _whole(code: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w-]){re.escape(code)}(?![\w-])", re.IGNORECASE)


def _has(text: str, code: str) -> bool:
    return _whole(code).search(text) is not None


@dataclass(frozen=True)
class LabelledLine:
    """A line of one evidence item that opens with a label the question asks for."""

    key: str  # the label as written ("Produced by")
    line: str
    label: int  # the evidence item's number
    value: str  # what follows the colon, or the next line when the label ends its own


def labelled_lines(asked: set[str], head: str, evidence: Iterable[tuple[int, str]]) -> list[LabelledLine]:
    """The evidence lines (``(label, text)`` items) that open with a label made only of ``asked`` words
    (``content_words`` stems: the question's relation words and the noun it asks for) and holding ``head`` (that
    noun's stem) when it is given, each with its value: the rest of the line, or the next non-empty line when
    the label ends its own ("Produced by:" above "Florida Department of Health"). Table rows are left to the
    cells (``mmkg.generation.cells``); a value of more than twelve words is a sentence, not a value."""
    found = []
    for label, text in evidence:
        lines = text.split("\n")
        for i, line in enumerate(lines):
            m = _LABELLED.match(line)
            if m is None or CELL_SEP in line or len(m["label"].split()) > _LABEL_WORDS:
                continue
            words = content_words(m["label"])
            if not words or not words <= asked or (head and head not in words):
                continue
            value = m["value"].strip() or next((x.strip() for x in lines[i + 1 : i + 3] if x.strip()), "")
            value = _trim(_LIST_NUMBER.sub("", LEADING_MARK.sub("", value)))
            if value and len(value.split()) <= _VALUE_WORDS and re.search(r"[^\W_]", value) and \
                    _LABELLED.match(value) is None:  # fmt: skip
                found.append(LabelledLine(m["label"].strip(), line.strip(), label, value))
    return found


def _trim(value: str) -> str:
    """A value without the separators at its ends, its brackets kept where they pair ("GS6001 (Research
    Ethics)"), dropped where they do not ("(eMarketer")."""
    value = value.strip(" \t|:;,.-–—=")
    if value.startswith("(") and value.endswith(")") and value.count("(") == 1:
        return value[1:-1].strip()
    if value.count("(") > value.count(")"):
        value = value.lstrip("(")
    if value.count(")") > value.count("("):
        value = value.rstrip(")")
    return value.strip()


@dataclass(frozen=True)
class NamedRow:
    """A rendered table row whose labels the question names, and the value it gives."""

    line: str
    label: int  # the evidence item's number
    header: str  # the value's column header
    value: str
    named: int  # how many of the question's content words the row's caption and label name
    extra: int  # how many words of the row's caption the question does not say


def named_rows(question: str, evidence: Iterable[tuple[int, str]]) -> list[NamedRow]:
    """The rendered table rows (``caption | label | header: value | ...`` lines of ``(label, text)`` items) whose
    row label holds only words the question says (stop words too) and some content words it asks with
    (``mmkg.generation.cells.asked_words``), each with the value of the cell whose header the question names,
    else of its first cell. A value without two letters in a row (a bare number: the number reader's,
    ``mmkg.generation.cells.named_cells``) is left out. Best first: most of the question's content words named
    by the caption and label together, then fewest of the caption's words the question does not say."""
    asked, said = asked_words(question), _all_words(question)
    found = []
    for label, text in evidence:
        for line in text.split("\n"):
            if CELL_SEP not in line:
                continue
            cells = [c.strip() for c in line.split(CELL_SEP)]
            # the first cell is a label or the caption, which may hold ": " itself ("Table 2: Button functions")
            first = next((i for i in range(1, len(cells)) if ": " in cells[i]), 0)
            if first == 0:
                continue
            own = asked_words(cells[first - 1])
            if not own or not _all_words(cells[first - 1]) <= said:  # "Press once" is not "press and hold"
                continue
            caption = " ".join(cells[: first - 1])
            values = [(h.strip(), v.strip()) for h, _, v in (c.partition(": ") for c in cells[first:])]
            header, value = next(((h, v) for h, v in values if asked_words(h) & asked), values[0])
            if re.search(r"[^\W\d_]{2}", value):
                # every word counts against a caption the question does not say ("Up button" for "down button")
                found.append(NamedRow(line.strip(), label, header, value, len((own | asked_words(caption)) & asked),
                                      len(_all_words(caption) - said)))  # fmt: skip
    found.sort(key=lambda r: (-r.named, r.extra))
    return found


def _all_words(text: str) -> set[str]:
    """Every word of a text as its stem (``mmkg.generation.question.stem``), stop words included ("up", "down",
    "once")."""
    return {stem(w) for w in re.findall(r"[^\W_]+", text)}
