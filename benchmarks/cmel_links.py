"""Cross-modal entity linking (MMGraphRAG's CMEL) on a built corpus: cost per partition, and precision/recall.

    python benchmarks/cmel_links.py --tables /tmp/ev_mb/tables --gold benchmarks/data/cmel_mmlb_gold.json

Runs ``mmkg.vision.cmel.link_partition`` on every partition's tables as the ``cross_modal_links``
asset does (same encoder, same spaCy pipeline for captions), prints the time and counts per
partition, writes the links to ``--out``, and scores them against a hand-labelled gold file
(``mmkg.eval.links``). ``--relation-weight 1`` and ``--plain`` give the ablations: no relation
weights, and plain cosine argmax over all candidates (no clustering).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated

import typer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

NAMES = ("images", "chunks", "entity_mentions", "entities", "relations", "image_text", "objects")


def main(
    tables: Annotated[Path, typer.Option(help="<data_root>/tables of a built corpus.")],
    gold: Annotated[Path | None, typer.Option(help="Hand-labelled links (JSON) to score against.")] = None,
    out: Annotated[Path, typer.Option(help="Where to write the links.")] = Path("/tmp/cmel_links.parquet"),
    relation_weight: Annotated[float, typer.Option(help="weight(r_pq) of related pairs.")] = 2.0,
    plain: Annotated[bool, typer.Option(help="Ablation: one cluster, i.e. plain cosine argmax.")] = False,
) -> None:
    import polars as pl

    from mmkg.encoders import load_encoder
    from mmkg.eval.links import score_links
    from mmkg.nlp import load_pipeline
    from mmkg.settings import Settings
    from mmkg.vision.cmel import CmelParams, link_partition

    enc = load_encoder("text", "", "cpu")
    nlp = load_pipeline(Settings().spacy_model)
    # plain: DBSCAN with an eps no two rows exceed puts every candidate in one cluster
    params = CmelParams(relation_weight=relation_weight, dbscan_eps=10.0 if plain else CmelParams.dbscan_eps)
    parts = sorted(p.stem for p in (tables / "images").glob("*.parquet"))
    found, all_images = [], []
    total = 0.0
    print("| partition | pictures | image entities | linked | s |\n|---|---:|---:|---:|---:|")
    for part in parts:
        t = {n: pl.read_parquet(tables / n / f"{part}.parquet") for n in NAMES}
        t0 = time.perf_counter()
        links = link_partition(part, *(t[n] for n in NAMES), enc.encode_text, params,
                               lambda c: [e.text for e in nlp(c).ents])  # fmt: skip
        dt = time.perf_counter() - t0
        total += dt
        linked = links.filter(pl.col("entity_key").is_not_null()).height
        print(f"| {part[:40]} | {links['image_id'].n_unique()} | {links.height} | {linked} | {dt:.2f} |")
        found.append(links)
        all_images.append(t["images"])
    links = pl.concat(found)
    links.write_parquet(out)
    print(f"total {total:.1f}s for {len(parts)} partitions; {links.height} image entities, "
          f"{links.filter(pl.col('entity_key').is_not_null()).height} linked; written to {out}")  # fmt: skip
    if gold is not None:
        s = score_links(links, pl.concat(all_images), gold)
        print(f"precision {s.precision:.3f} recall {s.recall:.3f} (TP {s.true_positives}, FP {s.false_positives}, "
              f"FN {s.false_negatives}; {s.labelled} labelled)")  # fmt: skip
        for e in s.errors:
            print(f"  {e}")


if __name__ == "__main__":
    typer.run(main)
