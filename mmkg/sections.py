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

Hand-written rather than a layout library: the chunks are what every reader (PDF, Markdown, text) has
in common, and the rules above read them in one pass; PDF outlines and font sizes are not read here.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator

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


def chunk_sections(chunks: pl.DataFrame, documents: pl.DataFrame) -> list[str]:
    """The section path of every chunk, in ``chunks`` row order ("" where none is open or the kind has none)."""
    out = [""] * chunks.height
    kinds = dict(documents.select("doc_id", "kind").iter_rows()) if "kind" in documents.columns else {}
    if not any(kind in KINDS for kind in kinds.values()):
        return out
    # chunks in document order: by chunk_index, else by offset, else as given
    key = next((c for c in ("chunk_index", "char_start") if c in chunks.columns), "_row")
    order = chunks.with_row_index("_row").select("_row", "doc_id", "text", *([key] if key != "_row" else []))
    for (doc_id,), group in order.sort("doc_id", key).group_by("doc_id", maintain_order=True):
        if kinds.get(doc_id) not in KINDS:
            continue
        for row, path in zip(group["_row"].to_list(), sections(group["text"].to_list()), strict=True):
            out[row] = path
    return out
