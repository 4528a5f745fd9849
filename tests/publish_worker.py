"""Publish an index from a built data root's partition tables, in a process of its own (for the safety tests).

    python tests/publish_worker.py DATA_ROOT INDEX_ROOT PARTITION[,PARTITION...] [--no-wait] [--keep=N]

Does what the ``graph`` and ``retrieval_index`` assets do, without Dagster, so tests can run several
publishes at once, kill one, or hold the lock. Exit code 0 on success; 3 when the lock was held and
``--no-wait`` was given (the message on stderr). ``--keep=N`` then applies retention as the asset does
(``keep_versions`` N: version folders, then the LanceDB history no kept version pins).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import polars as pl

TABLES = ("documents", "chunks", "sentences", "images", "objects", "entity_mentions", "document_entities",
          "relations", "cross_modal_links", "chunk_vectors", "sentence_vectors", "image_vectors", "object_vectors",
          "document_entity_vectors", "relation_vectors")  # fmt: skip


def publish_inputs(data: Path, partitions: list[str]) -> tuple:
    """``(graph, vectors, payload, mentions)`` for ``publish_index`` from the partitions' tables.

    A table some partition lacks (a data root built before cross-modal links) is published without it.
    """
    from mmkg.graph import build_graph
    from mmkg.index.publish import payload_tables

    paths = {n: [data / "tables" / n / f"{p}.parquet" for p in partitions] for n in TABLES}
    t = {n: pl.concat([pl.read_parquet(p) for p in ps], how="vertical_relaxed") if all(p.exists() for p in ps)
         else None for n, ps in paths.items()}  # fmt: skip
    graph = build_graph(t["chunks"], t["entity_mentions"], t["relations"], t["images"], t["objects"])
    payload = payload_tables(t["documents"], t["chunks"], t["sentences"], t["images"], t["objects"],
                             t["document_entities"], t["relations"], t["cross_modal_links"])  # fmt: skip
    vectors = {"chunks": t["chunk_vectors"], "sentences": t["sentence_vectors"], "images": t["image_vectors"],
               "objects": t["object_vectors"], "document_entities": t["document_entity_vectors"],
               "relations": t["relation_vectors"]}  # fmt: skip
    return graph, vectors, payload, t["entity_mentions"]


def text_encoder_spec() -> Any:
    """The manifest's spec of the default text encoder (what the assets publish with)."""
    from mmkg.encoders import load_encoder
    from mmkg.index.manifest import EncoderSpec

    info = load_encoder("text", "", "cpu").info
    return EncoderSpec.from_info(info)


def main(data: Path, root: Path, partitions: list[str], wait: bool, keep: int | None = None) -> int:
    from mmkg.index.lock import PublishLocked
    from mmkg.index.publish import publish_index
    from mmkg.retrieval.smoke import own_vector_probes

    graph, vectors, payload, mentions = publish_inputs(data, partitions)
    try:
        result = publish_index(root, text_encoder_spec(), graph, vectors, payload, mentions, wait=wait,
                               log=lambda m: print(m, file=sys.stderr, flush=True),
                               probe=own_vector_probes)  # fmt: skip
    except PublishLocked as exc:
        print(exc, file=sys.stderr)
        return 3
    if keep and not result.reused:
        from mmkg.index.gc import collect

        collect(root, keep=keep, wait=True)
    print(result.version)
    return 0


def killed_then_republished(
    data: Path,
    root: Path,
    point: str,
    first: str,
    second: str,
    question: str,
    keep: int | None = None,
    extra_env: dict[str, str] | None = None,
) -> dict:
    """Publish partitions ``first`` with ``point`` armed (the process kills itself there), then ``second``.

    ``keep`` runs retention after each publish (``--keep``), ``extra_env`` sets e.g. ``MMKG_COMPACT_FRAGMENTS``,
    so the points in compaction and retention are reached too.

    Returns what the safety test and ``benchmarks/failpoints.py`` check: return codes, ``CURRENT`` after
    each step, whether the second version verifies and answers from its own partitions only, and what
    was left lying around.
    """
    import os
    import subprocess

    from typer.testing import CliRunner

    from mmkg.cli import app
    from mmkg.index import Index
    from mmkg.index.manifest import CURRENT, MANIFEST, current_version
    from mmkg.retrieval import retrieve

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
           **(extra_env or {})}  # fmt: skip
    flags = [f"--keep={keep}"] if keep else []
    before = current_version(root)
    killed = subprocess.run([sys.executable, __file__, str(data), str(root), first, *flags], capture_output=True,
                            text=True, env={**env, "MMKG_FAILPOINTS": f"{point}=kill"}, timeout=600)  # fmt: skip
    after_kill = current_version(root)
    # CURRENT either stayed or moved to a whole version (a kill after the move, e.g. in retention)
    whole_after_kill = CliRunner().invoke(app, ["index", "verify", "--index", str(root)]).exit_code == 0
    opens_after_kill = True
    try:
        Index.open(root, encoder=False)
    except Exception:
        opens_after_kill = False
    again = subprocess.run([sys.executable, __file__, str(data), str(root), second, *flags], capture_output=True,
                           text=True, env=env, timeout=600)  # fmt: skip
    verified = CliRunner().invoke(app, ["index", "verify", "--index", str(root)])
    idx = Index.open(root)
    top = retrieve(idx, text=question, k=3)
    return {
        "killed_rc": killed.returncode, "current_before": before, "current_after_kill": after_kill,
        "opens_after_kill": opens_after_kill, "whole_after_kill": whole_after_kill,
        "second_rc": again.returncode, "second_err": again.stderr[-2000:],
        "second_version": again.stdout.strip(), "current": current_version(root), "verify_rc": verified.exit_code,
        "verify": verified.output, "sources": {c.source_path for c in top.chunks},
        "partitions": sorted(idx.manifest.partitions),
        "leftovers": [p.name for p in (root / "versions").iterdir() if not (p / MANIFEST).exists()]
        + [p.name for p in root.glob(f".{CURRENT}-*")] + [p.name for p in root.glob(".lance-pruning*")],
    }  # fmt: skip


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    keep = next((int(a.split("=", 1)[1]) for a in sys.argv[1:] if a.startswith("--keep=")), None)
    sys.exit(main(Path(args[0]), Path(args[1]), args[2].split(","), "--no-wait" not in sys.argv, keep))
