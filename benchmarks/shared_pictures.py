"""The same picture in two partitions: does the published index open, and does an image query find its pages?

    python benchmarks/shared_pictures.py --work-dir /tmp/shared_pictures

Builds the corpus of the bug report through the Dagster jobs (``pipelines.build.build_index``): the
sample corpus, plus ``hubble_deep_field.jpg`` copied into ``computing_history/images/`` with a
Markdown file there that shows it. Then opens the index, counts image rows against image nodes, and
queries with the picture itself (with the default preset, and with its same-picture seeds off) to
print where the documents that show it rank.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PROJECT = Path(__file__).resolve().parent.parent
PICTURE = "hubble_deep_field.jpg"
EXTRA = "# Deep fields in computing\n\nAstronomers process the Hubble Deep Field with computers.\n\n" \
        f"![The Hubble Deep Field](images/{PICTURE})\n"  # fmt: skip


def main(work_dir: Annotated[Path, typer.Option(help="Where the corpus copy and the index are written.")]) -> None:
    import lancedb

    from mmkg.index import Index
    from mmkg.retrieval import retrieve
    from mmkg.retrieval.smoke import self_check
    from pipelines.build import build_index

    shutil.rmtree(work_dir, ignore_errors=True)
    corpus = work_dir / "corpus"
    shutil.copytree(PROJECT / "sample_corpus", corpus)
    shutil.copy(corpus / "space" / "images" / PICTURE, corpus / "computing_history" / "images" / PICTURE)
    (corpus / "computing_history" / "deep_field.md").write_text(EXTRA)
    t0 = time.perf_counter()
    build_index(corpus, work_dir / "data", reuse=False)
    print(f"built in {time.perf_counter() - t0:.1f}s")
    idx = Index.open(work_dir / "data" / "index")
    db = lancedb.connect(str(work_dir / "data" / "index" / "lance"))
    tbl = db.open_table("images")
    tbl.checkout(idx.manifest.lance_versions["images"])
    shown = idx.image_occurrences.filter(idx.image_occurrences["source"].str.ends_with(PICTURE))
    print(f"index opens: version {idx.version}; self-check problems: {self_check(idx) or 'none'}")
    print(f"image rows in LanceDB {tbl.count_rows()}, image nodes {idx.graph.counts()['image_nodes']}, "
          f"occurrences of {PICTURE}: {shown.height} in {shown['partition'].n_unique()} partitions")  # fmt: skip
    showing = {"space/hubble_space_telescope.md", "computing_history/deep_field.md"}
    for label, overrides in (("default preset", {}), ("same-picture seeds off", {"same_picture_weight": 0.0})):
        res = retrieve(idx, image=corpus / "space" / "images" / PICTURE, k=5, **overrides)
        rows = [
            f"{c.rank}. {c.source_path} {c.score:.4f}{' *' if c.source_path in showing else ''}" for c in res.chunks
        ]
        first = min((c.rank for c in res.chunks if c.source_path in showing), default=None)
        print(f"\n{label}: first document that shows it at rank {first}; * = shows it\n  " + "\n  ".join(rows))


if __name__ == "__main__":
    typer.run(main)
