"""JSON and JSONL record readers: ``{id, title, text, images}`` per record.

A JSON file may hold one record, a list of records, or ``{"records": [...]}``. A bad record is
rejected on its own (with its index or id); the other records of the file are kept.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mmkg.ingest.base import ImageRef, Rejected, Rejection, SourceDocument
from mmkg.ingest.text import decode_text, image_target

RecordLinks = list[tuple[Path | str, ImageRef, int]]


def _iter_json(text: str) -> Iterator[tuple[int, Any]]:
    try:
        data = json.loads(text)
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
            yield lineno, json.loads(line)
        except json.JSONDecodeError as exc:
            yield lineno, Rejected(f"line {lineno} is not valid JSON: {exc.msg}")


def read_records(path: Path, data: bytes, rel: str) -> tuple[list[tuple[SourceDocument, RecordLinks]], list[Rejection]]:
    text = decode_text(data)
    jsonl = path.suffix.lower() == ".jsonl"
    items = _iter_jsonl(text) if jsonl else _iter_json(text)
    docs: list[tuple[SourceDocument, RecordLinks]] = []
    rejections: list[Rejection] = []
    seen: set[str] = set()
    for index, record in items:
        where = f"line {index}" if jsonl else f"record {index}"
        try:
            if isinstance(record, Rejected):
                raise record
            doc, links = _record(record, path, rel, where)
            if doc.record_key in seen:
                raise Rejected(f"{where}: duplicate record id {doc.record_key!r}")
            seen.add(doc.record_key)
            docs.append((doc, links))
        except Rejected as exc:
            key = str(record.get("id", index)) if isinstance(record, dict) else str(index)
            rejections.append(Rejection(rel, str(exc), record_key=key))
    return docs, rejections


def _record(record: Any, path: Path, rel: str, where: str) -> tuple[SourceDocument, RecordLinks]:
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
    canonical = json.dumps({"title": title, "text": text, "images": images}, sort_keys=True, ensure_ascii=False)
    digest = hashlib.sha256(canonical.encode()).hexdigest()
    key = str(record["id"]) if record.get("id") is not None else digest[:16]
    doc = SourceDocument(
        source_path=rel,
        record_key=key,
        kind="json",
        title=(title or "").strip() or key,
        text=text.strip(),
        content_sha256=digest,
        n_bytes=len(canonical.encode()),
    )
    links: RecordLinks = []
    for item in images:
        src, alt = (item, "") if isinstance(item, str) else (item.get("path", ""), item.get("alt", ""))
        if not src:
            raise Rejected(f"{where}: image entry {item!r} has no path")
        # Record images are figures of the whole record; they attach to its first chunk.
        links.append((image_target(str(src), path.parent), ImageRef(None, str(src), "linked", 0, None, str(alt)), 0))
    return doc, links
