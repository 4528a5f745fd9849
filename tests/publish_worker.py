"""Publish an index from a built data root's partition tables, in a process of its own (for the safety tests).

    python tests/publish_worker.py DATA_ROOT INDEX_ROOT PARTITION[,PARTITION...] [--no-wait]

Does what the ``graph`` and ``retrieval_index`` assets do, without Dagster, so tests can run several
publishes at once, kill one, or hold the lock. Exit code 0 on success; 3 when the lock was held and
``--no-wait`` was given (the message on stderr).
"""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl

TABLES = ("documents", "chunks", "sentences", "images", "objects", "entity_mentions", "document_entities",
          "relations", "cross_modal_links", "chunk_vectors", "sentence_vectors", "image_vectors", "object_vectors",
          "document_entity_vectors", "relation_vectors")  # fmt: skip


def main(data: Path, root: Path, partitions: list[str], wait: bool) -> int:
    from mmkg.graph import build_graph
    from mmkg.index.lock import PublishLocked
    from mmkg.index.manifest import EncoderSpec
    from mmkg.index.publish import payload_tables, publish_index

    def table(name: str) -> pl.DataFrame:
        frames = [pl.read_parquet(data / "tables" / name / f"{p}.parquet") for p in partitions]
        return pl.concat(frames, how="vertical_relaxed")

    t = {n: table(n) for n in TABLES}
    graph = build_graph(t["chunks"], t["entity_mentions"], t["relations"], t["images"], t["objects"])
    payload = payload_tables(t["documents"], t["chunks"], t["sentences"], t["images"], t["objects"],
                             t["document_entities"], t["relations"], t["cross_modal_links"])  # fmt: skip
    vectors = {"chunks": t["chunk_vectors"], "sentences": t["sentence_vectors"], "images": t["image_vectors"],
               "objects": t["object_vectors"], "document_entities": t["document_entity_vectors"],
               "relations": t["relation_vectors"]}  # fmt: skip
    from mmkg.encoders import load_encoder

    info = load_encoder("text", "", "cpu").info
    spec = EncoderSpec(id=info.id(), backend=info.backend, model=info.model, dim=info.dim, normalized=info.normalized)
    try:
        result = publish_index(root, spec, graph, vectors, payload, t["entity_mentions"], wait=wait,
                               log=lambda m: print(m, file=sys.stderr, flush=True))  # fmt: skip
    except PublishLocked as exc:
        print(exc, file=sys.stderr)
        return 3
    print(result.version)
    return 0


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    sys.exit(main(Path(args[0]), Path(args[1]), args[2].split(","), "--no-wait" not in sys.argv))
