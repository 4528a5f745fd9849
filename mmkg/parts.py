"""A document's named parts: "Figure 3", "Table 2", "Appendix C", "Exhibit P-10", where each is defined and mentioned.

A report names its parts and points at them: a caption opens a line with the label ("Figure 3: Revenue by
segment"), and the text refers to it elsewhere ("as Figure 3 shows", "see Exhibit P-10"). ``part_table``
lists each part of each document once, with the line that defines it (the first line its label opens: its
caption or heading, or a mention that a line break put first; "" when no line does) and every page that
names it, so a question about a part, or about how many parts a document holds, has the parts as data:
``mmkg sql "select kind, count(*) from parts where caption <> '' group by kind"``.

``PART`` is the one pattern for a part's label; ``mmkg.retrieval.references`` reads a question's references
to parts with it. A hand-written pattern, not a layout library: captions are lines of the text every reader
(PDF, OCR, Markdown) already produces.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import polars as pl

from mmkg import schemas
from mmkg.ids import content_id

#: the kinds of part a document labels with a number or a letter
KINDS = r"figure|fig\.|table|appendix|exhibit|section|chapter|annex|schedule|note|chart"
#: "Figure 1", "Fig. 2b", "Table 3", "Appendix C", "Exhibit P-10", "Section 2.1": the kind and the label
PART = re.compile(rf"\b({KINDS})\s*((?:[A-Z]-?)?\d+(?:\.\d+)*[a-z]?|[A-Z]\b)", re.IGNORECASE)
#: the same label where it opens a line: a caption or a heading, where the part is defined
DEFINES = re.compile(r"(?:^|\n)[ \t]*" + PART.pattern, re.IGNORECASE)
_CANONICAL = {"fig.": "figure"}
MAX_CAPTION = 200  # characters of a caption line kept


def kind_of(word: str) -> str:
    """The canonical kind of a part's kind word ("Fig." -> "figure")."""
    return _CANONICAL.get(word.lower(), word.lower())


def mentions(text: str) -> Iterator[tuple[str, str, int, bool]]:
    """``(kind, label, offset, defines)`` of every part label in ``text`` (the label as written); ``defines``
    where it opens a line."""
    opening = {m.start(1) for m in DEFINES.finditer(text)}
    for m in PART.finditer(text):
        label = m.group(2)
        if len(label) == 1 and label.isalpha() and not label.isupper():
            continue  # "note a", "a table b": a lone small letter is no label
        yield kind_of(m.group(1)), label, m.start(), m.start(1) in opening


def _line_at(text: str, at: int) -> str:
    end = text.find("\n", at)
    return " ".join(text[at : end if end >= 0 else len(text)].split())[:MAX_CAPTION]


def part_table(chunks: pl.DataFrame, documents: pl.DataFrame) -> pl.DataFrame:
    """The ``PARTS`` table: one row per (document, kind, label) its chunks name, with the caption line that defines
    it (the first line the label opens; "" when none does), that line's page and chunk (else the first mention's),
    and the pages that name it, in the order the parts first appear."""
    partitions = dict(documents.select("doc_id", "partition").iter_rows()) if "partition" in documents.columns else {}
    key = next((c for c in ("chunk_index", "char_start") if c in chunks.columns), None)
    ordered = chunks.sort("doc_id", key) if key else chunks
    found: dict[tuple[str, str, str], dict[str, Any]] = {}
    for doc_id, chunk_id, page, text in ordered.select("doc_id", "chunk_id", "page", "text").iter_rows():
        for kind, label, at, defines in mentions(text or ""):
            part = found.setdefault((doc_id, kind, label.upper()), {  # "Fig. 2b" and "Figure 2B" are one part
                "part_id": content_id(doc_id, kind, label.upper()), "partition": partitions.get(doc_id, ""),
                "doc_id": doc_id, "kind": kind, "label": label, "caption": "", "page": page, "chunk_id": chunk_id,
                "pages": set(), "n_mentions": 0,
            })  # fmt: skip
            part["n_mentions"] += 1
            if page is not None:
                part["pages"].add(page)
            if defines and not part["caption"]:
                part.update(caption=_line_at(text, at), page=page, chunk_id=chunk_id)
    rows = [{**p, "pages": sorted(p["pages"])} for p in found.values()]
    return schemas.frame(rows, schemas.PARTS)
