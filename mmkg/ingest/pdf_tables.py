"""Tables on a PDF page as tables: rows that keep their column headers, their row label and the table's caption.

``page_tables(page)`` reads one pdfplumber page and returns its tables; ``render(table)`` writes each row
as one line a reader, BM25 and the dense encoder can match: ``Net income | 2015: $122,641 | 2014: $266,799``.

Two finders, because reports draw tables two ways:

- **ruled tables** (cell borders): pdfplumber's own finder (``Page.find_tables``, the lines strategy); with
  no "Table N" caption, the short line right above the border is the title ("Down button");
- **aligned tables** (no borders, the financial statements of a 10-K, most tables in papers): rows are
  lines whose right-hand part is a run of numbers, columns are where those numbers line up across rows,
  and the header of a column is the text of the lines above the first row that sits over that column
  ("2015", "Year ended December 31,"), read past a units note ("(in thousands)", which then leads each
  row) and past headings over no column ("ASSETS", "Current assets:"). A row set in under a heading that
  ends in a colon carries it ("Current assets — Inventories"). pdfplumber's text strategy was measured
  on such pages and cuts header words apart ("20", "15 2", "014 2" for "2015 2014 2013" on Netflix's
  10-K), so this finder is hand-written over pdfplumber's words instead; it only reads positions
  pdfplumber extracted.

A page's table rows are added to its text after the page's own text (``mmkg.ingest.pdf``), so the
flattened cells stay where they were and each row also appears once with its headers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

#: between a rendered row's cells: "Net income | 2015: $122,641" (the readers split rows on it)
CELL_SEP = " | "
#: a number cell: "$ 122,641", "(37,887)", "12.5%", "-3.2"; a lone dash is an empty cell
_VALUE = re.compile(r"^[($€£¥+-]*\d(?:[\d,]*\d)?(?:\.\d+)?%?\)?%?(?:\s?[(±]\s?\d[\d,]*(?:\.\d+)?%?\)?)?[*†]?$|^[—–-]$")
_SPREAD = re.compile(r"^\(±?\d[\d,]*(?:\.\d+)?%?\)$")
_YEAR = re.compile(r"^(?:FY)?(?:19|20)\d{2}$")
_CURRENCY = frozenset({"$", "€", "£", "¥"})
_OPENERS = _CURRENCY | {"(", "$("}  # tokens that join the number after them
#: a footnote marker set right after a row's label: "Global streaming memberships (1)"
_FOOTNOTE = re.compile(r"^\(\d\)$")
#: a statement's note on its units, between the column headers and the rows: "(in thousands, except per share data)"
_UNIT_NOTE = re.compile(r"^\((?:in|amounts\s+in|dollars\s+in)\s[^()]*\)$", re.IGNORECASE)
_LEADERS = re.compile(r"\s*(?:[.…_]\s?){3,}$")  # "Digital Media ......": the dots that lead to its values
_SECTION_NO = re.compile(r"^\d{1,2}(?:\.\d{1,2})*\.?\s+(?=[A-Z])")
_CAPTION = re.compile(r"^(?:Table|TABLE|Exhibit|EXHIBIT)\s+[\dIVX]+[A-Za-z]?\b")
LINE_TOLERANCE = 3.0  # words whose tops differ by less than this (points) are one line
PHRASE_GAP = 4.0  # words closer than this (points) are one phrase; a wider gap starts a new cell
MAX_HEADER_LINES = 4  # lines above a table's first row read as its column headers
MAX_HEADER_GAP = 60.0  # ... when they are at most this far above it (points)
MIN_ROWS = 2
MAX_CELL_CHARS = 60  # a ruled table whose cells hold this many characters on average is a box around prose
SIGN_GAP = 40.0  # points between a "$" or "(" and its number, or a number and its ")" or "%"
SPREAD_GAP = 6.0  # points between a value and the parenthesized spread that belongs to it
X_TOLERANCE = 1.5  # pdfplumber's default (3) joins the words of tightly set papers
MIN_COLUMNS = 2
COLUMN_GAP = 12.0  # right edges of values closer than this (points) are one column
INDENT = 5.0  # a row label set in this far (points) or more under a line of only a label is that heading's
MAX_HEADING_WORDS = 12
SUBROW = " —"  # between a heading and a row under it: "Operating expenses — Cost of sales"
TITLE_GAP = 12.0  # a ruled table's title line ends at most this far (points) above its top border
MAX_TITLE_WORDS = 8


@dataclass
class Table:
    """One table: its caption (may be empty), one header per value column, and rows of (label, cells)."""

    bbox: tuple[float, float, float, float]  # x0, top, x1, bottom in pdfplumber's page coordinates (y down)
    headers: list[str]
    rows: list[tuple[str, list[str]]] = field(default_factory=list)
    caption: str = ""
    finder: str = "aligned"
    unit: str = ""  # the statement's note on its units, "(in thousands)", read above the rows


def _phrases(words: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Adjacent words of one line joined into phrases (cells), split where the gap is wide."""
    out: list[dict[str, Any]] = []
    for w in sorted(words, key=lambda w: w["x0"]):
        if out and w["x0"] - out[-1]["x1"] < PHRASE_GAP:
            out[-1] = {**out[-1], "text": f"{out[-1]['text']} {w['text']}", "x1": max(out[-1]["x1"], w["x1"])}
        else:
            out.append({"text": w["text"], "x0": w["x0"], "x1": w["x1"], "top": w["top"], "bottom": w["bottom"]})
    return out


def _lines(words: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    lines: list[list[dict[str, Any]]] = []
    for w in sorted(words, key=lambda w: (round(w["top"]), w["x0"])):
        if lines and abs(w["top"] - lines[-1][0]["top"]) < LINE_TOLERANCE:
            lines[-1].append(w)
        else:
            lines.append([w])
    return [sorted(line, key=lambda w: w["x0"]) for line in lines]


def _split_values(line: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """A line's label (its leading words) and its trailing run of value cells ("$" and ")" join their number)."""
    tokens = [dict(w) for w in line]
    merged: list[dict[str, Any]] = []
    for w in tokens:  # "$" before a number and ")" or "%" after it belong to the number
        if merged and (merged[-1]["text"] in _OPENERS or w["text"] in (")", "%")) and (
            w["x0"] - merged[-1]["x1"] < SIGN_GAP
        ):
            merged[-1] = {**merged[-1], "text": merged[-1]["text"] + w["text"], "x1": w["x1"]}
        elif merged and _SPREAD.match(w["text"]) and _is_value(merged[-1]["text"]) and (
            w["x0"] - merged[-1]["x1"] < SPREAD_GAP
        ):  # "66.4% (0.8%)": a spread set right after its value is part of the cell
            merged[-1] = {**merged[-1], "text": f"{merged[-1]['text']} {w['text']}", "x1": w["x1"]}
        else:
            merged.append(w)
    k = len(merged)
    while k > 0 and (_is_value(merged[k - 1]["text"]) or merged[k - 1]["text"] in _CURRENCY):
        k -= 1  # a currency sign set apart from its number is part of the run, not of the label
    label = " ".join(w["text"] for w in merged[:k]).strip()
    marker = 0 < k < len(merged) and _FOOTNOTE.match(merged[k]["text"])
    if marker and merged[k]["x0"] - merged[k - 1]["x1"] < PHRASE_GAP:
        k += 1  # "memberships (1)": the label's footnote marker, set against it, is no value column
    return label, [w for w in merged[k:] if w["text"] not in _CURRENCY]


def _is_value(text: str) -> bool:
    """A number cell; "2020)" (the end of a citation) is not one: its parentheses do not pair."""
    return bool(_VALUE.match(text)) and text.count("(") >= text.count(")")


def _is_year(value: dict[str, Any]) -> bool:
    """A value cell that is a year ("2015", "FY2015"): a column header, not an amount."""
    return bool(_YEAR.match(value["text"].strip("$(),;")))


def _columns(rows: list[list[dict[str, Any]]]) -> list[tuple[float, float]]:
    """Column x-ranges from where the rows' values end (numbers are right-aligned)."""
    ends = sorted((v["x1"], v["x0"]) for vals in rows for v in vals)
    cols: list[list[float]] = []  # [min x0, max x1, last x1]
    for x1, x0 in ends:
        if cols and x1 - cols[-1][2] < COLUMN_GAP:
            cols[-1] = [min(cols[-1][0], x0), max(cols[-1][1], x1), x1]
        else:
            cols.append([x0, x1, x1])
    return [(c[0], c[1]) for c in cols]


def _column_of(x0: float, x1: float, cols: list[tuple[float, float]]) -> int | None:
    best, best_overlap = None, 0.0
    for i, (c0, c1) in enumerate(cols):
        overlap = min(x1, c1) - max(x0, c0)
        if overlap > best_overlap:
            best, best_overlap = i, overlap
    if best is None:  # no overlap: the nearest column within a cell's width
        centre = (x0 + x1) / 2
        d, best = min((abs(centre - (c0 + c1) / 2), i) for i, (c0, c1) in enumerate(cols))
        if d > 30:
            return None
    return best


def _clean(text: str) -> str:
    return re.sub(r"\s+", " ", text or "").strip()


def _caption(lines: list[list[dict[str, Any]]], top: float, bottom: float) -> str:
    """The nearest "Table N ..." line above or below the table on its page."""
    best, best_d = "", float("inf")
    for line in lines:
        text = " ".join(w["text"] for w in line)
        if not _CAPTION.match(text):
            continue
        y = line[0]["top"]
        d = top - y if y < top else y - bottom if y > bottom else 0.0
        if d < best_d:
            best, best_d = text, d
    return _clean(best)[:200]


def _is_heading(label: str) -> bool:
    """A label-only line that heads the rows set in under it: it ends with a colon, as a statement writes it
    ("Current assets:", "Operating expenses:"); a line of a paragraph beside a table ("By comparison, fewer
    than") does not."""
    label = _LEADERS.sub("", label).rstrip()
    return label.endswith(":") and len(label.split()) <= MAX_HEADING_WORDS


def _title(lines: list[list[dict[str, Any]]], top: float) -> str:
    """A short line set right above a table ("Down button" over a manual's table of its presses): the table's
    title when no "Table N" caption names it. It opens with a capital, after a section number if any; a
    sentence, a sentence's middle, a long line or a chart's labels are the text before it, not a title."""
    # a line that starts above the border and ends at most TITLE_GAP above it (its glyph boxes may touch it)
    near = [line for line in lines if line[0]["top"] < top and top - max(w["bottom"] for w in line) <= TITLE_GAP]
    if not near:
        return ""
    text = _clean(" ".join(w["text"] for w in max(near, key=lambda line: line[0]["top"])))
    body = _SECTION_NO.sub("", text)  # "6.2 Cleaning intervals overview"
    if (len(text.split()) > MAX_TITLE_WORDS or text[-1:] in ".,;:" or not body[:1].isupper()
            or sum(any(c.isdigit() for c in w) for w in body.split()) > 1):  # fmt: skip
        # a sentence's end or its middle ("and those who identify as ..."), a long line, or a chart's labels
        # ("90 CoT (GPT-4) ...", "Ages 18-29 34 64") above the table
        return ""
    return text


def aligned_tables(words: list[dict[str, Any]]) -> list[Table]:
    """Tables drawn without borders: runs of lines that end in numbers aligned in columns (module docstring)."""
    lines = _lines(words)
    parsed = [_split_values(line) for line in lines]

    def is_row(i: int) -> bool:
        label, vals = parsed[i]
        # "2015 2014 2013" with no label is the header line, not a row
        return len(vals) >= MIN_COLUMNS and not (not label and all(_is_year(v) for v in vals))

    tables: list[Table] = []
    i = 0
    while i < len(lines):
        if not is_row(i):
            i += 1
            continue
        block = [i]
        j = i + 1
        while j < len(lines):
            if is_row(j):
                block.append(j)
            elif parsed[j][1] or not parsed[j][0] or j - block[-1] > 2:
                break  # a line of a few numbers, an empty line or two label lines in a row end the table
            j += 1
        i = block[-1] + 1
        if len(block) < MIN_ROWS:
            continue
        cols = _columns([parsed[r][1] for r in block])
        if len(cols) < MIN_COLUMNS:
            continue
        first_top = lines[block[0]][0]["top"]
        left = min(c0 for c0, _ in cols) - 20
        headers = [""] * len(cols)
        unit = ""
        lead: tuple[float, str] | None = None  # the heading right above the first row ("Current assets:")
        for h in range(block[0] - 1, max(block[0] - 1 - MAX_HEADER_LINES, -1), -1):
            if first_top - lines[h][0]["top"] > MAX_HEADER_GAP or is_row(h) or not all(map(_is_year, parsed[h][1])):
                break  # a row, or a line of amounts (a total above the table), is no header
            note = _clean(" ".join(w["text"] for w in lines[h]))
            if _UNIT_NOTE.match(note):  # "(in thousands)" between the years and the rows: the headers are above
                unit = unit or note
                continue
            placed: dict[int, str] = {}
            for ph in _phrases(lines[h]):
                if ph["x1"] < left:
                    continue
                c = _column_of(ph["x0"], ph["x1"], cols)
                if c is not None:
                    placed[c] = _clean(f"{placed.get(c, '')} {ph['text']}")
            if not placed and not parsed[h][1]:
                # a heading or a title over no value column ("Current assets:", "ASSETS"): the headers are above
                if h == block[0] - 1 and _is_heading(parsed[h][0]):
                    lead = (lines[h][0]["x0"], _LEADERS.sub("", parsed[h][0]).rstrip(":"))
                continue
            # a header line names most columns ("2015 2014 2013"); a line over one column of several is a
            # title spanning them ("Year ended December 31,") and ends the header
            if len(placed) < max(min(2, len(cols)), (len(cols) + 1) // 2):
                break
            for c, text in placed.items():
                headers[c] = _clean(f"{text} {headers[c]}")
        rows: list[tuple[str, list[str]]] = []
        section = ""
        heads: list[tuple[float, str]] = [lead] if lead else []  # (indent, label) of the open headings
        for r in range(block[0], block[-1] + 1):
            label, vals = parsed[r]
            heading = _is_heading(label)
            label = _LEADERS.sub("", label).rstrip(":")
            if label:  # "Cost of sales" set in under "Operating expenses:" is an operating expense
                x = lines[r][0]["x0"]
                while heads and heads[-1][0] > x - INDENT:
                    heads.pop()  # a line set no further in than a heading closes it
                if r not in block and heading:
                    heads.append((x, label))
                elif r in block and heads:
                    label = f"{heads[-1][1]}{SUBROW} {label}"
            if r not in block:
                section = label
                continue
            cells = [""] * len(cols)
            for v in vals:
                c = _column_of(v["x0"], v["x1"], cols)
                if c is not None:
                    cells[c] = _clean(f"{cells[c]} {v['text']}")
            rows.append((label or section, cells))
        x0 = min(w["x0"] for r in block for w in lines[r])
        x1 = max(w["x1"] for r in block for w in lines[r])
        bottom = max(w["bottom"] for w in lines[block[-1]])
        tables.append(Table((x0, first_top, x1, bottom), headers, rows, _caption(lines, first_top, bottom), unit=unit))
    return tables


def ruled_tables(page: Any, lines: list[list[dict[str, Any]]]) -> list[Table]:
    """Tables with cell borders, found by pdfplumber; the first row is the header, the caption a "Table N" line
    near it or else the short title line right above it."""
    out = []
    for t in page.find_tables():
        grid = [[_clean(c) for c in row] for row in t.extract()]
        grid = [row for row in grid if any(row)]
        if len(grid) < MIN_ROWS + 1 or max(len(r) for r in grid) < MIN_COLUMNS:
            continue
        header, body = grid[0], grid[1:]
        filled = [c for row in body for c in row if c]
        if sum(sum(1 for c in row if c) >= 2 for row in body) * 2 < len(body) or (
            sum(map(len, filled)) > MAX_CELL_CHARS * len(filled)
        ):
            continue  # a box around prose (one filled cell a row, or long cells), drawn like a table
        rows = [(row[0], row[1:]) for row in body]
        caption = _caption(lines, t.bbox[1], t.bbox[3]) or _title(lines, t.bbox[1])
        out.append(Table(tuple(t.bbox), header[1:], rows, caption, "ruled"))
    return out


def page_tables(page: Any) -> list[Table]:
    """The tables of one pdfplumber page: ruled ones first, then aligned ones outside them."""
    words = page.extract_words(x_tolerance=X_TOLERANCE)
    if not words:
        return []
    lines = _lines(words)
    ruled = ruled_tables(page, lines)

    def inside(w: dict[str, Any]) -> bool:
        return any(t.bbox[0] - 1 <= w["x0"] and w["x1"] <= t.bbox[2] + 1 and t.bbox[1] - 1 <= w["top"]
                   and w["bottom"] <= t.bbox[3] + 1 for t in ruled)  # fmt: skip

    return ruled + aligned_tables([w for w in words if not inside(w)])


def render(table: Table) -> list[str]:
    """One line per row: the caption's first words and the units' note, the row label, then ``header: value``
    per filled cell."""
    prefix = " ".join([*table.caption.split()[:10], *table.unit.split()])
    out = []
    for label, cells in table.rows:
        if not label and not any(table.headers):
            continue  # values that nothing labels say nothing a search could match
        parts = [f"{h}: {v}" if h else v for h, v in zip(table.headers + [""] * len(cells), cells, strict=False) if v]
        if not parts:
            continue
        head = CELL_SEP.join(p for p in (prefix, label) if p)
        out.append(CELL_SEP.join([head, *parts]) if head else CELL_SEP.join(parts))
    return out
