"""Stable content-hash identifiers.

Every row id is derived from content (and, where two copies must stay distinct, from where the
content sits), so re-materializing unchanged input yields identical ids and downstream joins,
graph nodes and vector rows stay put.
"""

from __future__ import annotations

import hashlib

_SEP = b"\x1f"


def content_id(*parts: str | bytes | int | None, size: int = 16) -> str:
    """Hex digest (2*size chars) of the given parts, unambiguously separated."""
    h = hashlib.blake2b(digest_size=size)
    for part in parts:
        if part is None:
            data = b"\x00"
        elif isinstance(part, bytes):
            data = part
        else:
            data = str(part).encode("utf-8")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
        h.update(_SEP)
    return h.hexdigest()


def bytes_id(data: bytes, size: int = 16) -> str:
    """Content address of a blob (images are stored once under this id)."""
    return hashlib.blake2b(data, digest_size=size).hexdigest()
