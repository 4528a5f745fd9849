"""Index size after many publishes with and without retention, and what the safety steps cost a publish.

    python benchmarks/index_retention.py --data-root /tmp/sample_build --publishes 25

``--data-root`` is a built corpus (its ``tables/``). Three index roots get the same sequence of publishes
(each a different set of the corpus's partitions, so each publishes a new version; with
``--leave-one-out`` every partition but one, so two partitions change per publish, as in an incremental
re-index), interleaved so machine noise falls on all three alike:

- **bare**: the publish without its safety steps, as before issue 23: no re-open check of the new
  version, no checksums, no compaction, no retention (the lock is kept: it costs a file open);
- **checked**: today's publish with retention off;
- **retained**: today's publish followed by the retention the ``retrieval_index`` asset applies
  (``keep_versions``, default 10, then LanceDB history pruned to what the kept versions pin).

Prints the size of each root every five publishes and the median publish time of each, with ratios.
"""

from __future__ import annotations

import itertools
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated

import typer

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]


def _size(root: Path) -> tuple[float, int, int, int]:
    import lancedb

    files = [p for p in root.rglob("*") if p.is_file()]
    db = lancedb.connect(str(root / "lance"))
    table_versions = sum(len(db.open_table(n).list_versions()) for n in db.list_tables().tables)
    folders = sum(1 for p in (root / "versions").iterdir() if p.is_dir())
    return sum(p.stat().st_size for p in files) / 2**20, len(files), folders, table_versions


def main(
    data_root: Annotated[Path, typer.Option(help="Built corpus with tables/.")],
    publishes: Annotated[int, typer.Option(help="Publishes per root.")] = 25,
    keep: Annotated[int, typer.Option(help="keep_versions of the retained root.")] = 10,
    compact_fragments: Annotated[int | None, typer.Option(help="MMKG_COMPACT_FRAGMENTS (default 16).")] = None,
    leave_one_out: Annotated[
        bool, typer.Option(help="Publish i holds every partition but one (i mod n): two partitions change each time.")
    ] = False,
) -> None:
    import os

    if compact_fragments is not None:
        os.environ["MMKG_COMPACT_FRAGMENTS"] = str(compact_fragments)
    from publish_worker import publish_inputs, text_encoder_spec

    import mmkg.index.publish as publish
    from mmkg.index.gc import collect
    from mmkg.retrieval.smoke import own_vector_probes

    parts = sorted(p.stem for p in (data_root / "tables" / "chunks").glob("*.parquet"))
    if leave_one_out:
        subsets = [[p for p in parts if p != out] for out in parts]
    else:
        subsets = [list(c) for n in range(1, len(parts) + 1) for c in itertools.combinations(parts, n)]
    spec = text_encoder_spec()
    real = (publish.verify_version, publish.file_sums, publish.compact)
    times: dict[str, list[float]] = {"bare": [], "checked": [], "retained": []}
    with tempfile.TemporaryDirectory() as tmp:
        roots = {mode: Path(tmp) / mode for mode in times}
        print("| publishes | root | MiB | files | version folders | LanceDB table versions |")
        print("|---:|---|---:|---:|---:|---:|")
        for i in range(publishes):
            graph, vectors, payload, mentions = publish_inputs(data_root, subsets[i % len(subsets)])
            for mode, root in roots.items():
                if mode == "bare":
                    publish.verify_version = lambda *a, **k: []
                    publish.file_sums = lambda *a, **k: {}
                    publish.compact = lambda *a, **k: False
                t0 = time.perf_counter()
                publish.publish_index(root, spec, graph, vectors, payload, mentions, probe=own_vector_probes)
                if mode == "retained":
                    collect(root, keep=keep, wait=True)
                times[mode].append(time.perf_counter() - t0)
                publish.verify_version, publish.file_sums, publish.compact = real
            if (i + 1) % 5 == 0 or i == 0:
                for mode, root in roots.items():
                    mib, files, folders, tv = _size(root)
                    print(f"| {i + 1} | {mode} | {mib:.2f} | {files} | {folders} | {tv} |", flush=True)
        med = {m: statistics.median(v) for m, v in times.items()}
        print("\n| root | median publish s | ratio to bare |\n|---|---:|---:|")
        for m, v in med.items():
            print(f"| {m} | {v:.2f} | {v / med['bare']:.2f}x |")


if __name__ == "__main__":
    typer.run(main)
