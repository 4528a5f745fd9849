"""JSON and JSONL record readers: ``{id, title, text, images}`` per record.

A JSON file may hold one record, a list of records, or ``{"records": [...]}``. A bad record is
rejected on its own (with its index or id); the other records of the file are kept.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mmkg.ingest.base import ImageRef, Limits, Rejected, Rejection, SourceDocument
from mmkg.ingest.text import decode_text, image_target

RecordLinks = list[tuple[Path | str, ImageRef, int]]
_SURROGATE = re.compile("[\ud800-\udfff]")  # JSON may escape half a UTF-16 pair ("\\ud800"); no file can store it


def _loads(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except RecursionError as exc:
        raise Rejected(f"{where}: JSON is nested too deeply to read (over about 1,000 levels)") from exc


def _iter_json(text: str) -> Iterator[tuple[int, Any]]:
    try:
        data = _loads(text, "file")
    except json.JSONDecodeError as exc:
        raise Rejected(f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from exc
    if isinstance(data, dict) and isinstance(data.get("records"), list):
        data = data["records"]
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise Rejected('JSON must be a record object, a list of records or {"records": [...]}')
    yield from enumerate(data)


def _iter_jsonl(text: str) -> Iterator[tuple[int, Any]]:
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            yield lineno, _loads(line, f"line {lineno}")
        except json.JSONDecodeError as exc:
            yield lineno, Rejected(f"line {lineno} is not valid JSON: {exc.msg}")
        except Rejected as exc:
            yield lineno, exc


def read_records(
    path: Path, data: bytes, rel: str, limits: Limits | None = None
) -> tuple[list[tuple[SourceDocument, RecordLinks]], list[Rejection]]:
    limits = limits or Limits()
    text = decode_text(data)
    jsonl = path.suffix.lower() == ".jsonl"
    items = _iter_jsonl(text) if jsonl else _iter_json(text)
    docs: list[tuple[SourceDocument, RecordLinks]] = []
    rejections: list[Rejection] = []
    seen: set[str] = set()
    deadline = time.monotonic() + limits.max_file_seconds
    for index, record in items:
        where = f"line {index}" if jsonl else f"record {index}"
        if time.monotonic() > deadline:
            rejections.append(
                Rejection(
                    rel,
                    f"reading took over {limits.max_file_seconds:g} s; stopped before {where} "
                    "(budget MMKG_MAX_FILE_SECONDS)",
                    stage="budget",
                )
            )
            break
        try:
            if isinstance(record, Rejected):
                raise record
            doc, links, repaired = _record(record, path, rel, where)
            if repaired:
                rejections.append(
                    Rejection(
                        rel,
                        f"{where}: {repaired} lone UTF-16 surrogate escape(s) (like \\ud800) in id, title or text "
                        "replaced with U+FFFD",
                        doc.record_key,
                        stage="repaired",
                    )
                )
            if doc.record_key in seen:
                raise Rejected(f"{where}: duplicate record id {doc.record_key!r}")
            seen.add(doc.record_key)
            docs.append((doc, links))
        except Rejected as exc:
            key = str(record.get("id", index)) if isinstance(record, dict) else str(index)
            rejections.append(Rejection(rel, str(exc), record_key=_SURROGATE.sub("\ufffd", key)))
    return docs, rejections


def _valid(value: str) -> tuple[str, int]:
    """``value`` with lone surrogates replaced by U+FFFD (Parquet stores UTF-8 only), and how many there were."""
    return _SURROGATE.subn("\ufffd", value)


def _record(record: Any, path: Path, rel: str, where: str) -> tuple[SourceDocument, RecordLinks, int]:
    """The record's document, its image links and how many lone surrogates were replaced in it."""
    if not isinstance(record, dict):
        raise Rejected(f"{where}: expected an object with 'title' and 'text', got {type(record).__name__}")
    text = record.get("text")
    title = record.get("title")
    if not isinstance(text, str) or not text.strip():
        raise Rejected(f"{where}: field 'text' is missing or empty")
    if title is not None and not isinstance(title, str):
        raise Rejected(f"{where}: field 'title' must be a string")
    images = record.get("images") or []
    if not isinstance(images, list):
        raise Rejected(f"{where}: field 'images' must be a list of paths or {{path, alt}} objects")
    text, n_text = _valid(text)
    title, n_title = _valid(title) if title is not None else (None, 0)
    canonical = json.dumps({"title": title, "text": text, "images": images}, sort_keys=True, ensure_ascii=False)
    digest = hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()
    key, n_key = _valid(str(record["id"])) if record.get("id") is not None else (digest[:16], 0)
    doc = SourceDocument(
        source_path=rel,
        record_key=key,
        kind="json",
        title=(title or "").strip() or key,
        text=text.strip(),
        content_sha256=digest,
        n_bytes=len(canonical.encode("utf-8", "surrogatepass")),
    )
    links: RecordLinks = []
    for item in images:
        if not isinstance(item, str | dict):
            raise Rejected(f"{where}: image entry {item!r} must be a path or a {{path, alt}} object")
        src, alt = (item, "") if isinstance(item, str) else (item.get("path", ""), item.get("alt", ""))
        if not isinstance(src, str) or not isinstance(alt, str):
            raise Rejected(f"{where}: image entry {item!r}: 'path' and 'alt' must be strings")
        if not src:
            raise Rejected(f"{where}: image entry {item!r} has no path")
        # Record images are figures of the whole record; they attach to its first chunk.
        links.append((image_target(str(src), path.parent), ImageRef(None, str(src), "linked", 0, None, str(alt)), 0))
    return doc, links, n_text + n_title + n_key
