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

A document that states its outline (``documents.outline``, read at ingest: a PDF's bookmarks, a Markdown
file's ``#`` headings) gets its sections from the outline instead: each heading is placed where a line of its
page opens with the title (else where the page first says it, else at the page's start), in the outline's
order, and a chunk's path is the headings open at its first line. The rules above are for documents without
one; font sizes are not read. ``section_table`` lists the headings themselves (the ``sections`` asset), from
the same walk.

Hand-written rather than a layout library: the chunks are what every reader (PDF, Markdown, text) has
in common, and the rules above read them in one pass.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from mmkg import schemas
from mmkg.ids import content_id

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


@dataclass
class Heading:
    """One heading of a document: its level, title, the page where it opens and its parent."""

    level: int
    title: str
    page: int | None
    parent: int | None  # index of the enclosing heading in the document's list, None at the top
    source: str  # "outline" or "text"


@dataclass
class Walk:
    """A document read for its sections: its headings, each chunk's heading path (without the title its first
    line already says) and the heading each chunk begins under (None: before any)."""

    headings: list[Heading] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    owners: list[int | None] = field(default_factory=list)


def _push(walk: Walk, stack: list[int], level: int, title: str, page: int | None, source: str) -> None:
    while stack and walk.headings[stack[-1]].level >= level:
        stack.pop()
    if stack and walk.headings[stack[-1]].title == title:  # a heading and its first subheading of the same name
        return
    walk.headings.append(Heading(level, title, page, stack[-1] if stack else None, source))
    stack.append(len(walk.headings) - 1)


def _path(walk: Walk, stack: Sequence[int], said: set[str]) -> str:
    said = {s.casefold() for s in said}
    return SEPARATOR.join(walk.headings[i].title for i in stack if walk.headings[i].title.casefold() not in said)


def walk_text(texts: Sequence[str], pages: Sequence[int | None] | None = None) -> Walk:
    """A document's sections by the text rules (module docstring), ``texts`` its chunks in order."""
    counts = Counter(line for t in texts for line in set(_lines(t)) if heading_level(line) is not None)
    running = {line for line, n in counts.items() if n > RUNNING_PAGES}
    walk, stack = Walk(), []
    for c, text in enumerate(texts):
        lines = list(_lines(text))
        leading, said = True, set()
        for i, line in enumerate(lines):
            level = heading_level(line) if line not in running else None
            if level is None:
                if leading:
                    said = {x.lstrip("#").strip() for x in lines[:i]}
                    walk.paths.append(_path(walk, stack, said))
                    walk.owners.append(stack[-1] if stack else None)
                    leading = False
                continue
            _push(walk, stack, level, line.lstrip("#").strip(), pages[c] if pages else None, "text")
        if leading:  # the chunk is headings only
            walk.paths.append(_path(walk, stack, {x.lstrip("#").strip() for x in lines}))
            walk.owners.append(stack[-1] if stack else None)
    return walk


def sections(texts: list[str]) -> list[str]:
    """The heading path of each chunk of one document (``texts`` in chunk order): the headings open where the
    chunk starts, and those its own first lines open, without titles the chunk's first line already says."""
    return walk_text(texts).paths


def _place(text: str, page_starts: Sequence[int], outline: Sequence[dict[str, Any]]) -> list[tuple[int, int, int, str]]:
    """Each outline heading as (page, offset, level, title): where a line of its page opens with the title (after
    a section number, if any; words matched across line breaks and case), else where the page first says it,
    else the page's start; never before the heading before it."""
    placed: list[tuple[int, int, int, str]] = []
    last = (0, 0)
    for h in outline:
        page, title = h.get("page"), str(h.get("title") or "")
        if page is None or not title.strip() or not 1 <= page <= len(page_starts):
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


def walk_outline(
    chunks: Sequence[tuple[int | None, int, str]], text: str, page_starts: Sequence[int], outline: Sequence[dict]
) -> Walk:
    """A document's sections from its outline (module docstring), ``chunks`` its ``(page, char_start, text)``
    in order: a chunk sits under the headings placed at or before its first line. An OCR page's chunks start
    after the text layer, so a heading of their page, placed at its start, opens them."""
    placed = _place(text, page_starts, outline)
    walk, stack = Walk(), []
    nxt = 0
    for page, start, body in chunks:
        first = next(_lines(body), "")
        at = (page or 1, start + len(first))  # unpaged text (Markdown) is one page
        while nxt < len(placed) and placed[nxt][:2] <= at:
            _push(walk, stack, placed[nxt][2], placed[nxt][3], placed[nxt][0] if page else None, "outline")
            nxt += 1
        walk.paths.append(_path(walk, stack, {" ".join(first.split())}))
        walk.owners.append(stack[-1] if stack else None)
    return walk


def _walks(chunks: pl.DataFrame, documents: pl.DataFrame) -> Iterator[tuple[str, list[int], list[str], Walk]]:
    """``(doc_id, chunk rows, chunk ids, walk)`` of every document of a kind with sections, chunks in document
    order (by chunk_index, else by offset, else as given): from its outline where it has one, else its text."""
    kinds = dict(documents.select("doc_id", "kind").iter_rows()) if "kind" in documents.columns else {}
    if not any(kind in KINDS for kind in kinds.values()):
        return
    outlines = {
        d: (text, starts, outline)
        for d, text, starts, outline in documents.select("doc_id", "text", "page_starts", "outline").iter_rows()
        if outline
    } if {"outline", "text", "page_starts"} <= set(documents.columns) else {}  # fmt: skip
    key = next((c for c in ("chunk_index", "char_start") if c in chunks.columns), "_row")
    located = {"page", "char_start"} <= set(chunks.columns)
    ids = "chunk_id" in chunks.columns
    cols = ["_row", "doc_id", "text", key, *(["page", "char_start"] if located else []), *(["chunk_id"] if ids else [])]
    order = chunks.with_row_index("_row").select(list(dict.fromkeys(cols)))
    for (doc_id,), group in order.sort("doc_id", key).group_by("doc_id", maintain_order=True):
        if kinds.get(doc_id) not in KINDS:
            continue
        texts = group["text"].to_list()
        pages = group["page"].to_list() if located else None
        if located and doc_id in outlines:
            text, starts, outline = outlines[doc_id]
            walk = walk_outline(list(zip(pages, group["char_start"].to_list(), texts, strict=True)), text, starts,
                                outline)  # fmt: skip
        else:
            walk = walk_text(texts, pages)
        yield doc_id, group["_row"].to_list(), group["chunk_id"].to_list() if ids else [], walk


def chunk_sections(chunks: pl.DataFrame, documents: pl.DataFrame) -> list[str]:
    """The section path of every chunk, in ``chunks`` row order ("" where none is open or the kind has none)."""
    out = [""] * chunks.height
    for _, rows, _, walk in _walks(chunks, documents):
        for row, path in zip(rows, walk.paths, strict=True):
            out[row] = path
    return out


def section_table(chunks: pl.DataFrame, documents: pl.DataFrame) -> pl.DataFrame:
    """The ``SECTIONS`` table: one row per heading of every document with sections, in document order, with its
    parent, its path, where it opens and the chunks that begin under it."""
    partitions = dict(documents.select("doc_id", "partition").iter_rows()) if "partition" in documents.columns else {}
    rows: list[dict[str, Any]] = []
    for doc_id, _, chunk_ids, walk in _walks(chunks, documents):
        ids = [content_id(doc_id, i, h.title) for i, h in enumerate(walk.headings)]
        owned: dict[int, list[str]] = {}
        for chunk_id, owner in zip(chunk_ids, walk.owners, strict=True):
            if owner is not None:
                owned.setdefault(owner, []).append(chunk_id)
        for i, h in enumerate(walk.headings):
            chain, j = [], i
            while j is not None:
                chain.append(walk.headings[j].title)
                j = walk.headings[j].parent
            rows.append({
                "section_id": ids[i], "partition": partitions.get(doc_id, ""), "doc_id": doc_id, "ordinal": i,
                "level": h.level, "title": h.title, "path": SEPARATOR.join(reversed(chain)),
                "parent_id": ids[h.parent] if h.parent is not None else None, "page": h.page, "source": h.source,
                "chunk_ids": owned.get(i, []),
            })  # fmt: skip
    return schemas.frame(rows, schemas.SECTIONS)
