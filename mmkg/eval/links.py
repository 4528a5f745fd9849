"""Precision and recall of cross-modal entity links against a hand-labelled set (``tests/data/cmel_*_gold.json``).

A gold item names a picture (its source path, or a prefix of it), the image-side entity's kind and
the start of its text, and the text entity it refers to (by name) or null. A predicted link counts
as right when it names that entity; an aligned link to another entity is a false positive; a gold
entity the linker missed (unaligned, new, or never extracted) is a false negative. Names compare with
their whitespace collapsed (names read by OCR keep line breaks).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import polars as pl


@dataclass(frozen=True)
class LinkScore:
    precision: float
    recall: float
    true_positives: int
    false_positives: int
    false_negatives: int
    labelled: int
    errors: list[str]


def _norm(name: str) -> str:
    return " ".join(name.split())


def score_links(links: pl.DataFrame, images: pl.DataFrame, gold_path: Path) -> LinkScore:
    """Score ``links`` (cross_modal_links rows) against the gold file; ``images`` maps image ids to sources."""
    gold = json.loads(gold_path.read_text())["links"]
    source = images.select("image_id", "source").unique("image_id")
    rows = links.join(source, on="image_id", how="left").to_dicts()
    tp = fp = fn = 0
    errors = []
    for g in gold:
        match = [r for r in rows if r["source"] and r["source"].startswith(g["picture"]) and r["kind"] == g["kind"]
                 and r["image_entity"].startswith(g["text"])]  # fmt: skip
        predicted = {_norm(r["entity_name"]) for r in match if r["entity_name"]}
        want = _norm(g["entity"]) if g["entity"] is not None else None
        if want is not None and want in predicted:
            tp += 1
        elif want is not None:
            fn += 1
            errors.append(f"missed {g['kind']} {g['text']!r} -> {want!r} (got {sorted(predicted) or None})")
        wrong = predicted - ({want} if want else set())
        if wrong:
            fp += 1
            errors.append(f"wrong {g['kind']} {g['text']!r} -> {sorted(wrong)} (gold {want!r})")
    n_gold = sum(1 for g in gold if g["entity"] is not None)
    return LinkScore(tp / (tp + fp) if tp + fp else 0.0, tp / n_gold if n_gold else 0.0, tp, fp, fn, len(gold), errors)
