"""The document's structure as edges of the PPR graph, on a built MMLongBench-Doc index: does it lift page recall?

    python benchmarks/structure_edges.py --data-root /tmp/ev_mbo --sections 1 --parts 1          # dev
    python benchmarks/structure_edges.py --data-root /tmp/ev_mbo --next 0.3                      # reading order
    python benchmarks/structure_edges.py --data-root /tmp/ev_mbvo --next 0.3 \\
        --documents ../shared/datasets/mmlongbench-val/documents \\
        --questions ../shared/datasets/mmlongbench-val/questions_val.json                       # validation

Copies the data root's published index, adds to its graph

- ``--sections W``: a node per heading (``mmkg.sections.section_table`` over the build's chunks and documents),
  an edge of weight W to each chunk that begins under it and to its parent heading;
- ``--parts W``: a node per labelled part (``mmkg.parts.part_table``), an edge of weight W to every chunk that
  names it (its caption's chunk among them);
- ``--next W``: an edge of weight W from each chunk to the next chunk of its document (reading order);

rewrites the copy's graph files and its manifest's sums, then runs ``mmkg eval mmlongbench --methods mg2
--answers off`` on the copy and on the original, in this process, and prints both R@k rows. MG2's activation
covers chunk, image and entity nodes only; while structure nodes are present it is padded with zeros (they get
no seed mass of their own). Measured in docs/results/mmlongbench.md (seventh session): not kept.
"""

from __future__ import annotations

import itertools
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Annotated

import numpy as np
import polars as pl
import scipy.sparse as sp
import typer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mmkg.graph import Graph
from mmkg.index.integrity import digest
from mmkg.index.manifest import CURRENT, MANIFEST, _self_digest
from mmkg.parts import mentions, part_table
from mmkg.sections import section_table

DATASET = Path(__file__).resolve().parent.parent.parent / "shared/datasets/mmlongbench-dev"


def _table(data_root: Path, name: str) -> pl.DataFrame:
    files = sorted((data_root / "tables" / name).glob("*.parquet"))
    return pl.concat([pl.read_parquet(f) for f in files], how="diagonal_relaxed")


def structured(graph: Graph, chunks: pl.DataFrame, documents: pl.DataFrame, w_sections: float, w_parts: float,
               w_next: float) -> Graph:  # fmt: skip
    """``graph`` with section and part nodes (after every other node) and reading-order edges added."""
    chunk_node = graph.index_of("chunk")
    kinds, keys, partitions = [], [], []
    edges: list[tuple[int, int, float]] = []

    def node(kind: str, key: str, partition: str) -> int:
        kinds.append(kind), keys.append(key), partitions.append(partition)
        return graph.n + len(kinds) - 1

    if w_sections > 0:
        sections = section_table(chunks, documents)
        ids = {r["section_id"]: node("section", r["section_id"], r["partition"])
               for r in sections.iter_rows(named=True)}  # fmt: skip
        for r in sections.iter_rows(named=True):
            u = ids[r["section_id"]]
            edges += [(u, chunk_node[c], w_sections) for c in r["chunk_ids"] or [] if c in chunk_node]
            if r["parent_id"] in ids:
                edges.append((u, ids[r["parent_id"]], w_sections))
    if w_parts > 0:
        parts = part_table(chunks, documents)
        ids = {(r["doc_id"], r["kind"], r["label"].upper()): node("part", r["part_id"], r["partition"])
               for r in parts.iter_rows(named=True)}  # fmt: skip
        for doc, chunk, text in chunks.select("doc_id", "chunk_id", "text").iter_rows():
            for kind, label, _, _ in mentions(text or ""):
                if (u := ids.get((doc, kind, label.upper()))) is not None and chunk in chunk_node:
                    edges.append((u, chunk_node[chunk], w_parts))
    if w_next > 0:
        for _, group in chunks.sort("doc_id", "chunk_index").group_by("doc_id", maintain_order=True):
            order = [chunk_node[c] for c in group["chunk_id"].to_list() if c in chunk_node]
            edges += [(a, b, w_next) for a, b in itertools.pairwise(order)]
    n = graph.n + len(kinds)
    old = graph.adjacency.tocoo()
    u, v, w = (np.array(x) for x in zip(*edges, strict=True)) if edges else (np.array([], int),) * 3
    rows = np.concatenate([old.row, u, v])
    cols = np.concatenate([old.col, v, u])
    data = np.concatenate([old.data, w, w]).astype(np.float32)
    adjacency = sp.coo_array((data, (rows, cols)), shape=(n, n)).tocsr()
    adjacency.sum_duplicates()
    adjacency.sort_indices()
    added = pl.DataFrame({"node": range(graph.n, n), "kind": kinds, "key": keys, "partition": partitions},
                         schema=graph.nodes.schema)  # fmt: skip
    return Graph(adjacency, pl.concat([graph.nodes, added]))


def _rewrite(index: Path, graph: Graph) -> None:
    """Save ``graph`` into the copy's current version and update its manifest's sums of the two graph files."""
    version = (index / CURRENT).read_text().strip()
    folder = index / "versions" / version
    graph.save(folder)
    manifest = json.loads((folder / MANIFEST).read_text())

    def fix(obj: object) -> None:
        if isinstance(obj, dict):
            for key, value in obj.items():
                if isinstance(key, str) and key.endswith(("graph.npz", "nodes.parquet")) and isinstance(value, list):
                    obj[key] = [(index / key).stat().st_size, digest(index / key)]
                else:
                    fix(value)

    fix(manifest)
    manifest["checksum"] = _self_digest(manifest)
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2))


def _recall_rows(out: Path) -> list[str]:
    return [line for line in (out / "report.md").read_text().splitlines() if line.startswith("| mg2 | 0")][:2]


def main(
    data_root: Annotated[Path, typer.Option(help="A data root built by `mmkg eval mmlongbench` (tables/ and index/).")],
    documents: Annotated[Path, typer.Option()] = DATASET / "documents",
    questions: Annotated[Path, typer.Option()] = DATASET / "questions_dev.json",
    sections: Annotated[float, typer.Option(help="Weight of heading edges (0: none).")] = 0.0,
    parts: Annotated[float, typer.Option(help="Weight of labelled-part edges (0: none).")] = 0.0,
    next_chunk: Annotated[float, typer.Option("--next", help="Weight of reading-order edges (0: none).")] = 0.0,
) -> None:
    from mmkg.cli import app
    from mmkg.retrieval import mg2, propagation

    chunks, docs = _table(data_root, "chunks"), _table(data_root, "documents")
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "index"
        shutil.copytree(data_root / "index", copy)
        version = (copy / CURRENT).read_text().strip()
        graph = Graph.load(copy / "versions" / version)
        bigger = structured(graph, chunks, docs, sections, parts, next_chunk)
        _rewrite(copy, bigger)
        print(f"nodes {graph.n} -> {bigger.n}, edges {graph.adjacency.nnz // 2} -> {bigger.adjacency.nnz // 2}")

        def padded(*args: object) -> np.ndarray:
            u = propagation.activation(*args)
            return np.pad(u, (0, bigger.n - len(u))) if len(u) < bigger.n else u

        rows = {}
        for name, index in (("as built", data_root / "index"), ("with structure", copy)):
            out = Path(tmp) / name.replace(" ", "_")
            mg2.activation = padded if index == copy else propagation.activation
            app(["eval", "mmlongbench", "--index", str(index), "--documents", str(documents), "--questions",
                 str(questions), "--methods", "mg2", "--answers", "off", "--out", str(out)], standalone_mode=False)
            rows[name] = _recall_rows(out)
        mg2.activation = propagation.activation
    print("method | R@1 | R@2 | R@5 | R@8 | R@10 | ... (first row: across the corpus; second: within the document)")
    for name, lines in rows.items():
        for line in lines:
            print(f"{name:15} {line}")


if __name__ == "__main__":
    typer.run(main)
