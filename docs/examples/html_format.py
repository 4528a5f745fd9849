"""A document format: HTML pages, read with the standard library's parser (``docs/extending.md``).

The title is the ``<title>`` (else the first heading); the text is the page's headings, paragraphs, list
items and table cells, one paragraph each, without scripts, styles and navigation; ``<img src>`` links are
returned so the partition reader stores the pictures like a Markdown document's. A page that is not valid
UTF-8 (or BOM-marked UTF-16) or holds no text is rejected with the reason (the partition goes on).
"""

from __future__ import annotations

import hashlib
from html.parser import HTMLParser
from pathlib import Path

from mmkg.ingest.base import ImageRef, Limits, Rejected, SourceDocument
from mmkg.ingest.formats import ReadResult, register_format
from mmkg.ingest.text import decode_text, image_target

_BLOCKS = {"p", "h1", "h2", "h3", "h4", "h5", "h6", "li", "td", "th", "blockquote", "figcaption", "pre", "dd", "dt"}
_SKIP = {"script", "style", "nav", "noscript", "template", "svg"}


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.title, self.heading, self.paragraphs, self.images = "", "", [], []
        self._buf: list[str] = []
        self._skip = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self._skip += 1
        elif tag == "title":
            self._in_title = True
        elif tag in _BLOCKS:
            self._flush()
        elif tag == "img" and not self._skip:
            a = dict(attrs)
            if a.get("src"):  # where the picture sits in the text: after the paragraphs so far
                offset = sum(len(p) + 2 for p in self.paragraphs)
                self.images.append((a["src"], a.get("alt") or "", offset, self.getpos()[0]))

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self._skip = max(0, self._skip - 1)
        elif tag == "title":
            self._in_title = False
        elif tag in _BLOCKS:
            if tag.startswith("h") and not self.heading:
                self.heading = " ".join("".join(self._buf).split())
            self._flush()

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif not self._skip:
            self._buf.append(data)

    def _flush(self) -> None:
        text = " ".join("".join(self._buf).split())
        if text:
            self.paragraphs.append(text)
        self._buf = []


@register_format("html", (".html", ".htm"), help="HTML pages: title, headings, paragraphs, lists, tables, pictures")
def read_html(path: Path, data: bytes, rel: str, limits: Limits) -> ReadResult:
    html = decode_text(data)  # strict UTF-8 or BOM-marked UTF-16, else rejected with the byte offset
    page = _Page()
    page.feed(html)
    page.close()
    page._flush()
    if not page.paragraphs:
        raise Rejected("the page holds no text")
    title = " ".join(page.title.split()) or page.heading or path.stem
    text = "\n\n".join(page.paragraphs)
    doc = SourceDocument(source_path=rel, record_key="", kind="html", title=title, text=text,
                         content_sha256=hashlib.sha256(data).hexdigest(), n_bytes=len(data))
    links = [(image_target(src, path.parent), ImageRef(None, src, "linked", min(offset, len(text)), None, alt), line)
             for src, alt, offset, line in page.images]  # fmt: skip
    return [(doc, links)], []
