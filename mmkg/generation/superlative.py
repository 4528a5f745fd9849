"""Which row of a table holds the largest or smallest value: "Which program has the longest time period?".

A *which* or *what* question that orders with a superlative ("the most", "the lowest", "the longest") and names
no options asks for a row's label: the thing whose value wins. The span reader scores names and phrases by the
words around them and cannot compare values; this reads the tables of the evidence instead:

- the ruled tables the PDF reader renders, one row per line (``label | header: value | ...``,
  ``mmkg.generation.cells``);
- runs of page-text lines that read like a table: three or more lines in a row, each a label followed by the same
  number of values in the same kind of unit ("Subtask 2% 5% 2%", "Leaders in Education Programme 7 months").
  A line that holds no value and wraps (it ends in a space, a colon, a comma or a function word) opens the next
  row's label ("Leaders in" / "Education Programme 7 months"); the last words of the line right above the rows,
  one per value, are the columns' headers ("2-hop 3-hop 4-hop", "Failure type 2019 2020 2021").

The value compared is the cell under the one column the question names, else the row's total when the question
asks for a total or the row has one value; a table with several columns and none named answers nothing. Values
are compared within one kind: percentages, durations (converted to days, so 7 months is longer than 17 weeks), or
plain amounts. A row the question names whole is the group it asks about, not an answer: when the rows right
below it add up to it ("Semantic error 29%" over "Token 8%", "Structure 19%", "Subtask 2%"), the question asks
among those parts. A total row is no thing compared. The table whose caption, header and labels share the most of
the question's words answers, if it names every thing the question names (a table about another dataset or year
answers another question); a tie between the top two values answers nothing.

Hand-written: no library parses a table out of reading-order page text, and the ruled rows are the reader's own
rendering.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

from mmkg.generation.cells import asked_words
from mmkg.generation.quantities import asks_total
from mmkg.ingest.pdf_tables import CELL_SEP

#: a value cell in page text: a number with its percent sign, currency or a duration's unit after it
_VALUE = re.compile(
    r"(?<![\w.,])(?P<neg>[-−(])?(?P<cur>[$€£¥])?(?P<num>\d{1,3}(?:,\d{3})+|\d+)(?P<dec>\.\d+)?\s?"
    r"(?P<unit>%|percent\b|(?:days?|weeks?|months?|years?|hours?|hrs?|minutes?|mins?)\b)?(?P<close>\))?(?![\w-])",
    re.IGNORECASE,
)
_DAYS = {"day": 1.0, "week": 7.0, "month": 30.44, "year": 365.25, "hour": 1 / 24, "hr": 1 / 24, "minute": 1 / 1440,
         "min": 1 / 1440}  # fmt: skip
#: a line that wraps into the next: it ends in a word that cannot end a label
_WRAPS = re.compile(r"(?:[,:&/-]|\b(?:of|in|and|for|the|to|with|on|at|by|a|an|or|from))\s*$", re.IGNORECASE)
_TOTAL = re.compile(r"^\s*(?:(?:grand\s+)?total\b|(?:sum|all|overall)\s*:?\s*$)", re.IGNORECASE)
_LETTER = re.compile(r"[^\W\d_]")
_YEAR = re.compile(r"(?:19|20)\d{2}")
MIN_ROWS = 3
MAX_VALUES = 8  # a line with more values is running text or a list of figures, not a row


@dataclass(frozen=True)
class Row:
    label: str
    values: tuple[float, ...]  # NaN where a ruled row leaves its cell empty
    kind: str  # "%", "days" or "" (a plain amount; currency counts as plain)
    line: str  # the row as the evidence writes it


@dataclass(frozen=True)
class Table:
    evidence: int  # the evidence item's label
    rows: tuple[Row, ...]
    headers: tuple[str, ...]  # one per value column, "" where unknown
    context: str  # the lines around the table: its caption and title


@dataclass(frozen=True)
class Winner:
    row: Row
    table: Table
    value: float
    runner_up: float
    column: str  # the header compared, "total", or "" for a one-value row
    named: float  # the share of the question's words the table names


def _value(m: re.Match[str]) -> tuple[float, str]:
    """A value and its kind; "(534)" and "-3.2" are negative, as statements write losses."""
    number = float(m.group("num").replace(",", "") + (m.group("dec") or ""))
    neg = m.group("neg")
    if (neg == "(" and m.group("close")) or neg in ("-", "−"):
        number = -number
    unit = (m.group("unit") or "").lower()
    if unit in ("%", "percent"):
        return number, "%"
    if unit:
        return number * _DAYS[unit.rstrip("s")], "days"
    return number, ""


def _text_row(line: str) -> tuple[str, tuple[float, ...], str] | None:
    """A page-text line read as a row: its label, its values and their kind; None when it is no row."""
    found = list(_VALUE.finditer(line))
    if not found or len(found) > MAX_VALUES:
        return None
    label = line[: found[0].start()].strip(" \t:|-–")
    between = [line[a.end() : b.start()] for a, b in pairwise(found)] + [line[found[-1].end() :]]
    if not _LETTER.search(label) or any(_LETTER.search(gap) for gap in between):
        return None  # values must follow the label with nothing but spaces between them and after
    parsed = [_value(m) for m in found]
    kinds = {k for _, k in parsed}
    if len(kinds) != 1:
        return None
    if kinds == {""} and all(m.group("dec") is None and _YEAR.fullmatch(m.group("num")) for m in found):
        return None  # "Business unit 2019 2020 2021": the columns' headers, not a row of amounts
    return label, tuple(v for v, _ in parsed), kinds.pop()


def text_tables(label: int, text: str) -> list[Table]:
    """The runs of table-like lines in one evidence item's text."""
    lines = text.split("\n")
    tables: list[Table] = []
    run: list[Row] = []
    start = 0
    pending, pending_from = "", 0  # wrapped lines that open the next row's label, and where they start

    def close(end: int) -> None:
        nonlocal run
        if len(run) >= MIN_ROWS:
            above = lines[start - 1].split() if start > 0 else []
            k = len(run[0].values)
            # the line above names the columns by its last words ("Failure type 2019 2020 2021", "2-hop 3-hop")
            headers = tuple(above[-k:]) if len(above) >= k > 1 else ("",) * k
            context = " ".join(lines[max(0, start - 2) : start] + lines[end : end + 2])
            tables.append(Table(label, tuple(run), headers, context))
        run = []

    for i, raw in enumerate(lines):
        row = _text_row(raw)
        if row is not None:
            name, values, kind = row
            if run and (len(values) != len(run[0].values) or kind != run[0].kind):
                close(i)
            if not run:
                start = pending_from if pending else i
            full = f"{pending} {name}".strip() if pending else name
            run.append(Row(full, values, kind, f"{pending} {raw.strip()}".strip() if pending else raw.strip()))
            pending = ""
        elif raw.strip() and (raw.endswith((" ", "\t")) or _WRAPS.search(raw)) and len(raw.split()) <= 8:
            if not pending:
                pending_from = i
            pending = f"{pending} {raw.strip()}".strip()
        else:
            close(i)
            pending = ""
    close(len(lines))
    return tables


def ruled_tables(label: int, text: str) -> list[Table]:
    """The rows the PDF reader rendered (``caption | label | header: value | ...``), one table per caption and run of
    adjacent lines. A row that leaves a cell empty (the renderer then writes no ``header: value`` for it) has no
    value in that column."""
    by_caption: dict[tuple[int, str], list[tuple[str, dict[str, tuple[float, str]], str]]] = {}
    block = 0  # rendered rows of one table stand on adjacent lines: two captionless tables are two blocks
    for line in text.split("\n"):
        if CELL_SEP not in line:
            block += 1
            continue
        cells = line.split(CELL_SEP)
        first = next((i for i, c in enumerate(cells) if _VALUE.fullmatch(c.rpartition(": ")[2].strip())), 0)
        if first == 0:
            continue
        cells_by_header: dict[str, tuple[float, str]] = {}
        for cell in cells[first:]:
            header, _, value = cell.rpartition(": ")
            m = _VALUE.fullmatch(value.strip())
            if m is not None and header.strip() not in cells_by_header:
                cells_by_header[header.strip()] = _value(m)
        caption = " ".join(cells[: first - 1])
        by_caption.setdefault((block, caption), []).append((cells[first - 1].strip(), cells_by_header, line))
    out = []
    for (_, caption), rows in by_caption.items():
        headers = tuple(dict.fromkeys(h for _, cells, _ in rows for h in cells))
        kinds = {k for _, cells, _ in rows for _, k in cells.values()}
        if len(rows) < MIN_ROWS or len(kinds) != 1:
            continue
        kind = kinds.pop()
        table_rows = tuple(Row(name, tuple(cells[h][0] if h in cells else math.nan for h in headers), kind, line)
                           for name, cells, line in rows)  # fmt: skip
        out.append(Table(label, table_rows, headers, caption))
    return out


def _parts(rows: tuple[Row, ...], named: int) -> tuple[Row, ...] | None:
    """The rows right below ``rows[named]`` that add up to it, column by column (rounding allowed)."""
    whole = rows[named].values
    slack = [max(1.0, 0.01 * abs(w)) for w in whole]  # a unit, or 1%: what rounding the parts may lose
    sums = [0.0] * len(whole)
    for j in range(named + 1, len(rows)):
        sums = [s + v for s, v in zip(sums, rows[j].values, strict=True)]
        if j > named + 1 and all(abs(s - w) <= e for s, w, e in zip(sums, whole, slack, strict=True)):
            return rows[named + 1 : j + 1]
        if any(s > w + e for s, w, e in zip(sums, whole, slack, strict=True)):
            return None
    return None


def _names(text: str, name: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text, re.IGNORECASE) is not None


def _named_row(question: str, label: str) -> bool:
    """Whether the question names the row by its whole label, in the singular or plural ("semantic errors")."""
    words = label.split()
    if not words:
        return False
    pattern = r"\s+".join(re.escape(w) for w in words)
    return re.search(rf"(?<!\w){pattern}(?:s|es)?(?!\w)", question, re.IGNORECASE) is not None


def best_row(question: str, order: str, tables: Iterable[Table], names: Sequence[str] = ()) -> Winner | None:
    """The row whose value wins ``order`` ("max" or "min") in the table that names the most of the question.

    A table must name every one of ``names`` (the things the question names: "in HOVER dataset", "in 2015") in
    its caption, title, header or rows: a table about another dataset or year answers another question."""
    asked = asked_words(question)
    total = asks_total(question)
    best: tuple[float, Winner] | None = None
    for t in tables:
        said = " ".join((t.context, *t.headers, *(r.line for r in t.rows)))
        if not all(_names(said, n) for n in names):
            continue
        labels = " ".join(r.label for r in t.rows)
        named = len(asked & asked_words(f"{t.context} {' '.join(t.headers)} {labels}")) / len(asked) if asked else 0.0
        rows = tuple(r for r in t.rows if not _TOTAL.match(r.label))
        whole = [i for i, r in enumerate(rows) if _named_row(question, r.label)]
        if whole:  # the question names a row: it asks among that row's parts, or the row is not one compared
            parts = _parts(rows, whole[0])
            rows = parts if parts is not None else tuple(r for i, r in enumerate(rows) if i not in whole)
        if len(rows) < 2:
            continue
        k = len(rows[0].values)
        columns = [i for i, h in enumerate(t.headers) if h and asked_words(h) and asked_words(h) <= asked]
        if len(columns) == 1:
            col, column = columns[0], t.headers[columns[0]]
            rows = tuple(r for r in rows if not math.isnan(r.values[col]))  # a row with that cell empty: not compared
            values = [r.values[col] for r in rows]
        elif k == 1 or total:
            rows = tuple(r for r in rows if not any(math.isnan(v) for v in r.values))  # a total needs every cell
            values, column = [sum(r.values) for r in rows], ("total" if k > 1 else "")
        else:
            continue  # several columns and none named: which to compare is not said
        if len(rows) < 2:
            continue
        ranked = sorted(zip(values, range(len(rows)), strict=True), reverse=order == "max")
        if ranked[0][0] == ranked[1][0]:
            continue
        win = Winner(rows[ranked[0][1]], t, ranked[0][0], ranked[1][0], column, named)
        if best is None or named > best[0]:
            best = (named, win)
    return best[1] if best is not None else None
