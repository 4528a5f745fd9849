"""Markdown and plain-text readers.

Markdown is rendered to plain text with markdown-it (CommonMark plus tables) so that sentences
are clean prose, while every image link keeps the character offset where it appeared: that is
what later attaches the image to the chunk around it. A list's items keep their markers ("1. ",
"• "), one line each in a tight list, as a PDF's text keeps them.
"""

from __future__ import annotations

import codecs
import hashlib
import re
from pathlib import Path
from urllib.parse import unquote, urlparse

import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token

from mmkg.ingest.base import ImageRef, Rejected, SourceDocument

_MD = MarkdownIt("commonmark").enable("table")
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.S)


def decode_text(data: bytes) -> str:
    """Strict UTF-8 (BOM allowed) or BOM-marked UTF-16; anything else is rejected, never guessed."""
    if not data:
        raise Rejected("file is empty (0 bytes)")
    encoding = "utf-16" if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) else "utf-8-sig"
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        bad = data[exc.start : exc.start + 1].hex()
        raise Rejected(
            f"text is not valid {encoding.replace('-sig', '')} (byte 0x{bad} at offset {exc.start}); "
            "re-save the file as UTF-8"
        ) from exc
    if "\x00" in text:
        raise Rejected("text contains NUL characters; this looks like a binary file with a text extension")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def split_front_matter(text: str) -> tuple[dict, str]:
    m = _FRONT_MATTER.match(text)
    if not m:
        return {}, text
    try:
        meta = yaml.safe_load(m.group(1)) or {}
    except yaml.YAMLError as exc:
        raise Rejected(f"front matter is not valid YAML: {exc}") from exc
    if not isinstance(meta, dict):
        raise Rejected("front matter must be a YAML mapping (key: value lines)")
    return meta, text[m.end() :]


class _Renderer:
    """Walks markdown-it tokens and emits plain text plus image positions."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.length = 0
        self.images: list[tuple[int, str, str, int]] = []  # (offset, src, alt, line)
        self.first_heading: str | None = None
        self.headings: list[dict] = []  # the document's outline: level (1 for "#"), title, page 1

    def emit(self, s: str) -> None:
        if s:
            self.parts.append(s)
            self.length += len(s)

    def block_break(self) -> None:
        text = "".join(self.parts[-2:])
        if self.length and not text.endswith("\n\n"):
            self.emit("\n\n" if not text.endswith("\n") else "\n")

    def inline(self, tok: Token, line: int) -> str:
        start = self.length
        for child in tok.children or []:
            if child.type in {"text", "code_inline"}:
                self.emit(child.content)
            elif child.type == "softbreak":
                self.emit(" ")
            elif child.type == "hardbreak":
                self.emit("\n")
            elif child.type == "image":
                src = str(child.attrs.get("src", ""))
                alt = "".join(c.content for c in child.children or []) or child.content
                self.images.append((self.length, src, alt, line))
        return "".join(self.parts)[start:] if self.parts else ""

    def render(self, text: str) -> str:
        tokens = _MD.parse(text)
        in_heading, level = False, 0
        row: list[str] = []
        in_cell = False
        for tok in tokens:
            line = (tok.map[0] + 1) if tok.map else 0
            if tok.type == "heading_open":
                in_heading, level = True, int(tok.tag[1:])
            elif tok.type == "heading_close":
                in_heading = False
                self.block_break()
            elif tok.type in {"th_open", "td_open"}:
                in_cell = True
            elif tok.type in {"th_close", "td_close"}:
                in_cell = False
            elif tok.type == "tr_close":
                self.emit(" | ".join(c.strip() for c in row))
                self.emit("\n")
                row = []
            elif tok.type == "table_close":
                self.block_break()
            elif tok.type == "inline":
                if in_cell:
                    sub = _Renderer()
                    sub.inline(tok, line)
                    row.append("".join(sub.parts))
                    continue
                rendered = self.inline(tok, line)
                if in_heading and self.first_heading is None:
                    self.first_heading = rendered.strip()
                if in_heading and rendered.strip():
                    self.headings.append({"level": level, "title": " ".join(rendered.split())[:200], "page": 1})
            elif tok.type == "list_item_open":
                # the item's marker stays, as a PDF's text keeps it: "1. ", "2) " or a bullet, so a list reads
                # as one and its items can be counted (mmkg.enumerations)
                self.emit(f"{tok.info}{tok.markup} " if tok.info else "• ")
            elif tok.type == "paragraph_close" and tok.hidden:  # a tight list's item: one line each
                if self.parts and not self.parts[-1].endswith("\n"):
                    self.emit("\n")
            elif tok.type in {"paragraph_close", "bullet_list_close", "ordered_list_close"}:
                self.block_break()
            elif tok.type in {"fence", "code_block"}:
                self.emit(tok.content.rstrip("\n"))
                self.block_break()
        return "".join(self.parts).strip()


def image_target(src: str, base_dir: Path) -> Path | str:
    """Local path for an image link (relative to the linking file), or the URL when it is remote."""
    parsed = urlparse(src)
    if parsed.netloc or parsed.scheme not in {"", "file"}:
        return src
    path = Path(unquote(parsed.path))
    return path if path.is_absolute() else base_dir / path


def read_markdown(path: Path, data: bytes, rel: str) -> tuple[SourceDocument, list[tuple[Path | str, ImageRef, int]]]:
    """Markdown document plus the (target, ref, line) of each image link, resolved by the caller."""
    meta, body = split_front_matter(decode_text(data))
    r = _Renderer()
    text = r.render(body)
    title = str(meta.get("title") or r.first_heading or _title_from_stem(path))
    links = [
        (image_target(src, path.parent), ImageRef(None, src, "linked", min(off, len(text)), None, alt), line)
        for off, src, alt, line in r.images
    ]
    doc = _doc(rel, "markdown", title, text, data)
    doc.outline = r.headings
    return doc, links


def read_plain_text(path: Path, data: bytes, rel: str) -> SourceDocument:
    meta, body = split_front_matter(decode_text(data))
    text = body.strip()
    title = meta.get("title")
    if not title:
        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        title = first if 0 < len(first) <= 120 and "\n" in text else _title_from_stem(path)
    return _doc(rel, "text", str(title), text, data)


def _doc(rel: str, kind: str, title: str, text: str, data: bytes) -> SourceDocument:
    return SourceDocument(
        source_path=rel,
        record_key="",
        kind=kind,
        title=title.strip(),
        text=text,
        content_sha256=hashlib.sha256(data).hexdigest(),
        n_bytes=len(data),
    )


def _title_from_stem(path: Path) -> str:
    return re.sub(r"[_\-]+", " ", path.stem).strip() or path.name
