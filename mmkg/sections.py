"""The section a chunk sits in: headings read off a document's lines, carried across chunks and pages.

A long document's pages rarely repeat the heading they sit under: the third page of "4.2 Results" or of
"Item 7. Management's Discussion and Analysis" says neither. ``chunk_sections(chunks, documents)`` gives
each chunk the path of headings open where it starts ("4 Experiments > 4.2 Results"), and
``mmkg.embedding.chunk_texts`` puts that path after the document title in what the dense encoder and
BM25 see, so a question about a section reaches all of its pages. The chunk's own text, which answers
quote, is unchanged. Opt-in (``MMKG_CHUNK_SECTIONS``): on MMLongBench-Doc it moved page recall by less
than 0.011 either way (docs/results/mmlongbench.md).

A heading is a line of at most ``MAX_WORDS`` words without a closing sentence mark that is

- a Markdown heading (``#``, ``##``: its level);
- numbered like a section ("4", "4.2", "4.2.1" then a capitalized word: one level per number), or opened
  by Part / Chapter / Item / Section / Appendix / Annex and a number or letter (level 1);
- written in capitals ("CONSOLIDATED STATEMENTS OF OPERATIONS": level 2, under the numbered heading
  before it);

and that is mostly letters, and neither ends in a number (a contents line "Item 16. Summary 76", a table
row "1 Samsung 24%") nor holds dot leaders or a cell separator.

A candidate line found on more than ``RUNNING_PAGES`` chunks of its document is a running header or
footer ("NETFLIX, INC.", a paper's title on every page), not a heading. Only documents of the kinds in
``KINDS`` (PDF, Markdown, text) get sections: records and transcripts have no headings to read.

A PDF that states its outline (its bookmarks, ``documents.outline``, read at ingest) gets its sections from
the outline instead: each heading is placed where its page first says its title (else at the page's start),
in the outline's order, and a chunk's path is the headings open at its first line. The rules above are for
documents without one; font sizes are not read.

Hand-written rather than a layout library: the chunks are what every reader (PDF, Markdown, text) has
in common, and the rules above read them in one pass.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import polars as pl

MAX_WORDS = 10
RUNNING_PAGES = 2
KINDS = frozenset({"pdf", "markdown", "text"})
SEPARATOR = " > "
_NUMBERED = re.compile(r"^(\d{1,2}(?:\.\d{1,2}){0,3})\.?\s+[A-Z]")
_KEYWORD = re.compile(r"^(?:part|chapter|item|section|appendix|annex)\s+(?:\d{1,3}|[ivxlc]{1,5}|[a-z])\b[.:]?",
                      re.IGNORECASE)  # fmt: skip
_MARKDOWN = re.compile(r"^(#{1,6})\s+\S")
_CLOSING = frozenset(".,;!?")
_LEADER = re.compile(r"\.{4,}|…{2,}|_{4,}")
LETTER_SHARE = 0.6  # a title is mostly letters


def heading_level(line: str) -> int | None:
    """The heading level of one line (1 is the top), or None when it is no heading (module docstring)."""
    s = line.strip()
    if len(s) < 3:
        return None
    if m := _MARKDOWN.match(s):
        return len(m.group(1))
    words = s.split()
    if len(words) > MAX_WORDS:
        return None
    keyword = _KEYWORD.match(s)
    if s[-1] in _CLOSING and not (keyword and keyword.end() == len(s)):  # "Item 7." alone is a heading
        return None
    letters = [c for c in s if c.isalpha()]
    if len(letters) < 3 or len(letters) < LETTER_SHARE * sum(not c.isspace() for c in s):
        return None  # "1 2 3 4 5", "2015 2014 2013", "LABEL = REFUTES": numbers and symbols, not titles
    if _LEADER.search(s) or (any(c.isdigit() for c in words[-1]) and not (keyword and keyword.end() == len(s))):
        return None  # a contents line ("Item 16. Summary 76", "Appendix A ....... 4") or a table row
    if keyword:
        return 1
    if "|" in s:
        return None  # a table row as the PDF reader writes it ("Net income | 2015: ...")
    if m := _NUMBERED.match(s):
        return m.group(1).count(".") + 1
    if len(words) >= 2 and all(c.isupper() for c in letters):
        return 2
    return None


def _lines(text: str) -> Iterator[str]:
    for line in text.splitlines():
        if line.strip():
            yield line.strip()


def sections(texts: list[str]) -> list[str]:
    """The heading path of each chunk of one document (``texts`` in chunk order): the headings open where the
    chunk starts, and those its own first lines open, without titles the chunk's first line already says."""
    counts = Counter(line for t in texts for line in set(_lines(t)) if heading_level(line) is not None)
    running = {line for line, n in counts.items() if n > RUNNING_PAGES}
    stack: list[tuple[int, str]] = []
    out = []
    for text in texts:
        lines = list(_lines(text))
        leading = True
        path = ""
        for i, line in enumerate(lines):
            level = heading_level(line) if line not in running else None
            if level is None:
                if leading:
                    said = {x.lstrip("#").strip() for x in lines[:i]}
                    path = SEPARATOR.join(t for _, t in stack if t not in said)
                    leading = False
                continue
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, line.lstrip("#").strip()))
        if leading:  # the chunk is headings only
            said = {x.lstrip("#").strip() for x in lines}
            path = SEPARATOR.join(t for _, t in stack if t not in said)
        out.append(path)
    return out


def _place(text: str, page_starts: Sequence[int], outline: Sequence[dict[str, Any]]) -> list[tuple[int, int, int, str]]:
    """Each outline heading as (page, offset, level, title): where a line of its page opens with the title (after
    a section number, if any; words matched across line breaks and case), else where the page first says it,
    else the page's start; never before the heading before it."""
    placed: list[tuple[int, int, int, str]] = []
    last = (0, 0)
    for h in outline:
        page, title = int(h["page"]), str(h["title"])
        if not 1 <= page <= len(page_starts):
            continue
        start = page_starts[page - 1]
        end = page_starts[page] if page < len(page_starts) else len(text)
        words = r"\s+".join(map(re.escape, title.split()))
        m = re.compile(r"(?m)^(?:[\dA-Z][\d.]*\.?\s+)?" + words, re.IGNORECASE).search(text, start, end)
        m = m or re.compile(words, re.IGNORECASE).search(text, start, end)
        at = max((page, m.start() if m else start), last)
        placed.append((*at, int(h["level"]), title))
        last = at
    return placed


def outline_sections(
    chunks: Sequence[tuple[int | None, int, str]], text: str, page_starts: Sequence[int], outline: Sequence[dict]
) -> list[str]:
    """The heading path of each chunk ``(page, char_start, text)`` of one document from its PDF outline (module
    docstring): the headings placed at or before the chunk's first line, without the title that line says. An
    OCR page's chunks start after the text layer, so a heading of their page, placed at its start, opens them."""
    placed = _place(text, page_starts, outline)
    out = []
    for page, start, body in chunks:
        first = next(_lines(body), "")
        at = (page or 0, start + len(first))
        stack: list[tuple[int, str]] = []
        for key_page, key_at, level, title in placed:
            if (key_page, key_at) > at:
                break
            while stack and stack[-1][0] >= level:
                stack.pop()
            if not stack or stack[-1][1] != title:  # a heading and its first subheading of the same name
                stack.append((level, title))
        said = " ".join(first.split()).casefold()
        out.append(SEPARATOR.join(t for _, t in stack if t.casefold() != said))
    return out


def chunk_sections(chunks: pl.DataFrame, documents: pl.DataFrame) -> list[str]:
    """The section path of every chunk, in ``chunks`` row order ("" where none is open or the kind has none)."""
    out = [""] * chunks.height
    kinds = dict(documents.select("doc_id", "kind").iter_rows()) if "kind" in documents.columns else {}
    if not any(kind in KINDS for kind in kinds.values()):
        return out
    outlines = {
        d: (text, starts, outline)
        for d, text, starts, outline in documents.select("doc_id", "text", "page_starts", "outline").iter_rows()
        if outline
    } if {"outline", "text", "page_starts"} <= set(documents.columns) else {}  # fmt: skip
    # chunks in document order: by chunk_index, else by offset, else as given
    key = next((c for c in ("chunk_index", "char_start") if c in chunks.columns), "_row")
    located = {"page", "char_start"} <= set(chunks.columns)
    cols = ["_row", "doc_id", "text", *([key] if key != "_row" else []), *(["page", "char_start"] if located else [])]
    order = chunks.with_row_index("_row").select(list(dict.fromkeys(cols)))
    for (doc_id,), group in order.sort("doc_id", key).group_by("doc_id", maintain_order=True):
        if kinds.get(doc_id) not in KINDS:
            continue
        if located and doc_id in outlines:
            text, starts, outline = outlines[doc_id]
            where = list(zip(group["page"].to_list(), group["char_start"].to_list(), group["text"].to_list(),
                             strict=True))  # fmt: skip
            paths = outline_sections(where, text, starts, outline)
        else:
            paths = sections(group["text"].to_list())
        for row, path in zip(group["_row"].to_list(), paths, strict=True):
            out[row] = path
    return out
