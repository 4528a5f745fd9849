"""Table rows as the readers render them ("Net income | 2015: $122,641 | 2014: $266,799"): which cell a span of a
row is, what labels it (the row's label, its column's header, the table's caption), and which cells a question
names by both its row and its column.

``mmkg.ingest.pdf_tables.render`` and the OCR page reader write one line per row: the caption's first words, the
row's label, then ``header: value`` per filled cell, joined by ``CELL_SEP``. The reader scores a number in such a
row by what labels its cell (``table_cell``) and takes a cell the question names by row and column as a candidate
whatever its words announce (``named_cells``). Hand-written: it parses the readers' own rendering.
"""

from __future__ import annotations

import re
from functools import lru_cache

from mmkg.generation.extractive import STOPWORDS, WORD
from mmkg.generation.quantities import NUMBER
from mmkg.generation.question import stem
from mmkg.ingest.pdf_tables import CELL_SEP

_WH = frozenset(stem(w) for w in ("what", "which", "who", "when", "where", "how"))
_DIGITS = re.compile(r"\d{4}")  # a year or a four-digit column name inside a token ("FY2015", "2015:")


@lru_cache(maxsize=4096)
def asked_words(text: str) -> frozenset[str]:
    """The content words of a text as stems, with four-digit numbers inside tokens ("FY2015" -> "2015"); cached,
    as every candidate of a question asks it of the same question and headers."""
    return frozenset({stem(w) for w in WORD.findall(text) if len(w) > 1 and w.lower() not in STOPWORDS} - _WH
                     | set(_DIGITS.findall(text)))  # fmt: skip


@lru_cache(maxsize=4096)
def row_cells(text: str) -> tuple[tuple[tuple[int, str], ...], int]:
    """A table row's cells as (offset, text) and the index of its first value cell (0: none, or no labels);
    parsed once per row, however many of its numbers are candidates."""
    cells, pos = [], 0
    for part in text.split(CELL_SEP):
        cells.append((pos, part))
        pos += len(part) + len(CELL_SEP)
    first_value = next((i for i, (_, part) in enumerate(cells) if NUMBER.search(part.rpartition(": ")[2])), 0)
    return tuple(cells), first_value


def table_cell(text: str, a: int, b: int) -> tuple[str, str, str] | None:
    """For a span in a table row as the PDF reader writes it ("Table 4 ... | Net income | 2015: $122,641 | ..."),
    the row's caption, its label (the cell before the first value) and the span's column header; None when
    the text is no such row, or the span is in its labels or headers, or follows its cell's first number."""
    if CELL_SEP not in text:
        return None
    cells, first_value = row_cells(text)
    if not first_value:
        return None
    for start, part in cells[first_value:]:
        if start <= a and b <= start + len(part):
            header, sep, _ = part.rpartition(": ")
            if sep and a < start + len(header) + len(sep):
                return None  # the span is in the header
            value_at = start + len(header) + len(sep) if sep else start
            first = NUMBER.search(text, value_at, start + len(part))
            if first is not None and a > first.start():
                return None  # "66.4% (0.8%)": the spread after a cell's value is not its value
            caption = " ".join(p for _, p in cells[: first_value - 1])
            return caption, cells[first_value - 1][1], header if sep else ""
    return None


def named_cells(question: str, text: str) -> list[tuple[str, str, int, int]]:
    """The value cells of a table row (``text``) whose row label and column header the question both name, as
    spans: "What is the CAGR of television?" asks for the cell under "CAGR" in the row "TELEVISION" whatever
    type of answer its words announce. A row's caption names every row of its table, so it names none here; nor
    do years a question spans ("from 2012 to 2016") name a column when the row has a column for more than one."""
    if CELL_SEP not in text:
        return []
    cells, first_value = row_cells(text)
    asked = asked_words(question)
    if not first_value or not asked_words(cells[first_value - 1][1]) & asked:
        return []
    headers = [part.rpartition(": ")[0] for _, part in cells[first_value:]]
    if len({y for h in headers for y in _DIGITS.findall(h)} & asked) > 1:
        asked = asked - set(_DIGITS.findall(question))
    out = []
    for start, part in cells[first_value:]:
        header, sep, value = part.rpartition(": ")
        if sep and asked_words(header) & asked and NUMBER.search(value) and value.strip():
            at = start + len(header) + len(sep)
            out.append((value.strip(), "CELL", at, at + len(value.strip())))
    return out
