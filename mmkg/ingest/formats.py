"""The document formats ingest reads whole, by name (``FORMATS``): Markdown, plain text, JSON records, PDF.

A format is a ``Format``: its file extensions and a reader ``(path, data, rel, limits) -> (documents, rejections)``
where each document comes with the picture links it holds (resolved by the partition reader, which stores the
pictures). Pictures, video and audio have readers of their own in ``mmkg.ingest.partition`` (decoded or
streamed, never read whole). A new format is one module and one ``@register_format``; entry points of the
group ``mmkg.formats`` add formats from installed packages (``mmkg.plugins``), and ``docs/extending.md``
adds one in a file of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mmkg.ingest.base import ImageRef, Limits, Rejection, SourceDocument
from mmkg.ingest.pdf import read_pdf
from mmkg.ingest.records import read_records
from mmkg.ingest.text import read_markdown, read_plain_text
from mmkg.plugins import Registry

#: the pictures a document links: (target as written or resolved, its reference, the line it is on)
Links = list[tuple[Path | str, ImageRef, int]]
ReadResult = tuple[list[tuple[SourceDocument, Links]], list[Rejection]]
Reader = Callable[[Path, bytes, str, Limits], ReadResult]


@dataclass(frozen=True)
class Format:
    """A document format: its extensions (lower case, with the dot) and its reader. ``text_like`` formats are
    refused past ``Limits.max_text_file_bytes`` before they are read (they are decoded whole)."""

    name: str
    extensions: tuple[str, ...]
    read: Reader
    text_like: bool = True

    def __call__(self, path: Path, data: bytes, rel: str, limits: Limits) -> ReadResult:
        return self.read(path, data, rel, limits)


FORMATS: Registry[Format] = Registry("document format", "mmkg.formats")


def register_format(name: str, extensions: tuple[str, ...], *, text_like: bool = True,
                    help: str = "") -> Callable[[Reader], Reader]:  # fmt: skip
    """Register the decorated reader as the format ``name`` for ``extensions``; an extension another format
    already reads is refused (which format reads a file must not depend on import order)."""
    exts = tuple(e.lower() if e.startswith(".") else f".{e.lower()}" for e in extensions)

    def add(read: Reader) -> Reader:
        taken = {e: f.name for f in (entry.factory for entry in FORMATS) if f.name != name for e in f.extensions}
        clash = sorted(e for e in exts if e in taken)
        if clash:
            raise ValueError(f"format {name!r}: {', '.join(clash)} already read by format {taken[clash[0]]!r}")
        FORMATS.register(name, Format(name, exts, read, text_like), help=help or (read.__doc__ or "").strip())
        return read

    return add


def format_for(extension: str) -> Format | None:
    """The format that reads files ending in ``extension`` (".md"), or None (installed plugins looked up once)."""
    ext = extension.lower()
    for loaded in (False, True):
        if loaded:
            FORMATS.load_plugins()
        for entry in FORMATS:
            if ext in entry.factory.extensions:
                return entry.factory
    return None


def extensions() -> set[str]:
    """Every extension a registered format reads."""
    return {e for entry in FORMATS for e in entry.factory.extensions}


@register_format("markdown", (".md", ".markdown"), help="Markdown: headings, paragraphs, tables, picture links")
def _markdown(path: Path, data: bytes, rel: str, limits: Limits) -> ReadResult:
    return [read_markdown(path, data, rel)], []


@register_format("text", (".txt",), help="plain text, paragraphs by blank lines")
def _text(path: Path, data: bytes, rel: str, limits: Limits) -> ReadResult:
    return [(read_plain_text(path, data, rel), [])], []


@register_format("records", (".json", ".jsonl"), help="JSON or JSON Lines records, one document each")
def _records(path: Path, data: bytes, rel: str, limits: Limits) -> ReadResult:
    return read_records(path, data, rel, limits)


@register_format("pdf", (".pdf",), text_like=False, help="PDF: text layer, tables, pictures, OCR of scanned pages")
def _pdf(path: Path, data: bytes, rel: str, limits: Limits) -> ReadResult:
    doc, rejections = read_pdf(data, rel, limits)
    return [(doc, [])], rejections
