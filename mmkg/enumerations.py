"""A document's enumerations: numbered steps and bulleted lists, each with the heading line that introduces it.

Manuals, guidebooks and syllabi say much of what they say as lists: "To replace the grille: 1. Line up the tabs.
2. Push firmly. 3. Close the doors.", "Quality levels 1 ... 7", "SWBAT TO ANSWER THESE LEARNING OUTCOMES: • ...".
A question such as "How many steps are required to replace the grille?" is answered by the list's length, which
no sentence states. ``enumerations`` finds them in a document's lines (its chunks in order, so a list that runs
on over a chunk or a page boundary stays one list):

- **numbered**: lines that open with 1, 2, 3, ... in order ("1.", "1)", "1:", "1 " or "Step 1:"), starting at 1,
  all in the style of the first (a list nested in an item, "1) red" under "1. Plug in.", is a list of its own);
  up to ``MAX_GAP`` lines of an item's own text may fall between two numbers, and the list ends at the first
  line after that gap or at a new "1" of its style;
- **bulleted**: lines that open with a bullet glyph ("•", "●", "▪", "-", the private-use glyphs of the Symbol
  and Wingdings fonts, and the "l" that Wingdings' bullet becomes when a PDF maps it to text), with at most
  ``MAX_BULLET_GAP`` continuation lines between two bullets; a numbered line or a line that ends in a colon
  (the next list's heading) ends them.

Each list keeps the line right before its first item (its heading: "To replace the grille:") and the line before
that (often the section title: "Removing the base grille"). Hand-written: list markers are lines of the text the PDF,
OCR and Markdown readers produce (the Markdown reader keeps each item's marker), and no maintained library finds
lists in plain text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

MAX_GAP = 6  # lines of one numbered item's own text before the next number must come
MAX_BULLET_GAP = 3  # continuation lines between two bullets of one list
MIN_ITEMS = 2
MAX_HEADING = 160  # characters of a heading line kept
# "1. ", "1) ", "1: ", "1 " and "Step 1: ": the number and the marker's style (a list keeps one style, so "1) red"
# under "1. Plug in." is a list of its own)
_NUMBERED = re.compile(r"^\s*(?P<step>step\s+)?(?P<n>\d{1,2})(?:(?P<mark>[.):])(?!\d)\s*|\s+)(?=\S)", re.IGNORECASE)
# glyphs that are only ever bullets: the usual ones and the private-use bullets of the Symbol and Wingdings fonts
BULLET_GLYPH = r"[•●▪◦■□➢►▶✓✔\uf0a7\uf0b7\uf076\uf0d8\uf0fc]"
# what a value or a span may open with and is no part of it ("• Power", "\x99 Switch"): the bullet glyphs, the
# middle dot and the triangular bullet, and the C0 and C1 control characters a PDF maps a font's bullet to
LEADING_MARK = re.compile(rf"^(?:(?:[\x00-\x1f\x7f-\x9f·‣]|{BULLET_GLYPH})\s*)+")
# a marker alone on its line ("2." at a chunk's end): it belongs to the line after it
_LONE = re.compile(rf"^\s*(?:(?:step\s+)?\d{{1,2}}[.):]|{BULLET_GLYPH})\s*$", re.IGNORECASE)
# a glyph that is only ever a bullet may touch its text; "-", "*" and "–" need a space and a word after them (not
# a page footer's "– 2 –"), and Wingdings' "l" a space and a capital ("l Wash", not "l 5 mm")
_BULLET = re.compile(rf"^\s*(?:{BULLET_GLYPH}\s*(?=\S)|[*–-]\s+(?=[^\W\d_])|l\s+(?=[A-Z]))")


@dataclass(frozen=True)
class Enumeration:
    """One list: its items as written (first line of each), the pages it spans, its heading and the line above."""

    style: str  # "numbered" or "bulleted"
    items: tuple[str, ...]
    pages: tuple[int, ...]  # the pages of its items, in order, without repeats (empty where pages are unknown)
    heading: str  # the line right before the first item ("" at the start of the document)
    context: str  # the line before the heading: often the section's title

    @property
    def page(self) -> int | None:
        """The page of the first item."""
        return self.pages[0] if self.pages else None


def _pages(lines: Sequence[tuple[int | None, str]], at: Iterable[int]) -> tuple[int, ...]:
    out: list[int] = []
    for i in at:
        page = lines[i][0]
        if page is not None and page not in out:
            out.append(page)
    return tuple(out)


def _make(style: str, lines: Sequence[tuple[int | None, str]], items: list[int]) -> Enumeration:
    first = items[0]
    heading = lines[first - 1][1] if first >= 1 else ""
    context = lines[first - 2][1] if first >= 2 else ""
    marker = _NUMBERED if style == "numbered" else _BULLET
    texts = tuple(marker.sub("", lines[i][1], count=1).strip() for i in items)
    return Enumeration(style, texts, _pages(lines, range(first, items[-1] + 1)), heading[:MAX_HEADING],
                       context[:MAX_HEADING])  # fmt: skip


def _style(m: re.Match[str]) -> tuple[bool, str]:
    """A numbered item's marker style: "Step" or not, and the mark after the number ("." ")" ":" or none)."""
    return bool(m.group("step")), m.group("mark") or ""


def _numbered(lines: Sequence[tuple[int | None, str]]) -> list[Enumeration]:
    found = []
    for i, (_, line) in enumerate(lines):
        m = _NUMBERED.match(line)
        if m is None or int(m.group("n")) != 1:
            continue
        style = _style(m)
        items, want, gap, j = [i], 2, 0, i + 1
        while j < len(lines) and gap <= MAX_GAP:
            n = _NUMBERED.match(lines[j][1])
            number = int(n.group("n")) if n is not None and _style(n) == style else None
            if number == want:
                items.append(j)
                want, gap = want + 1, 0
            elif number == 1:
                break  # a new list of the same style starts
            else:
                gap += 1  # the item's own text, or a list nested in it ("1) red" under "1. Plug in.")
            j += 1
        if len(items) >= MIN_ITEMS:
            found.append(_make("numbered", lines, items))
    return found


def _bulleted(lines: Sequence[tuple[int | None, str]]) -> list[Enumeration]:
    found, i = [], 0
    while i < len(lines):
        if not _BULLET.match(lines[i][1]):
            i += 1
            continue
        items, gap, j = [i], 0, i + 1
        while j < len(lines) and gap <= MAX_BULLET_GAP:
            if _BULLET.match(lines[j][1]):
                items.append(j)
                gap = 0
            elif _NUMBERED.match(lines[j][1]) or lines[j][1].endswith(":"):
                break  # a numbered step or a heading ("After use:") ends the bullets: what follows is another list
            else:
                gap += 1
            j += 1
        if len(items) >= MIN_ITEMS:
            found.append(_make("bulleted", lines, items))
        i = items[-1] + 1
    return found


def _joined(lines: Sequence[tuple[int | None, str]]) -> list[tuple[int | None, str]]:
    """Lines with a marker standing alone ("2." or "•" at the end of a chunk) joined to the line after it, unless
    that line is a lone marker too. A bare number alone ("7") is no marker: a page number or a chart's axis."""
    out: list[tuple[int | None, str]] = []
    i = 0
    while i < len(lines):
        page, line = lines[i]
        if _LONE.match(line) and i + 1 < len(lines) and not _LONE.match(lines[i + 1][1]):
            out.append((page, f"{line} {lines[i + 1][1]}"))
            i += 2
            continue
        out.append((page, line))
        i += 1
    return out


def enumerations(lines: Sequence[tuple[int | None, str]]) -> list[Enumeration]:
    """The numbered and bulleted lists of a document given as ``(page, line)`` pairs in reading order (blank
    lines left out)."""
    lines = _joined([(page, line.strip()) for page, line in lines if line and line.strip()])
    return _numbered(lines) + _bulleted(lines)


def document_lines(rows: Iterable[tuple[int | None, str | None]]) -> list[tuple[int | None, str]]:
    """``(page, line)`` pairs of a document's chunks ``(page, text)`` in reading order, blank lines left out."""
    return [(page, line.strip()) for page, text in rows for line in (text or "").split("\n") if line.strip()]
