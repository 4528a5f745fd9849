"""Partitioned tables on disk (``mmkg.partitioned``): what the publish reads its vectors through."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from mmkg import schemas
from mmkg.partitioned import FramePartitions, PartitionedParquet, partitioned, regroup


def _vectors(partition: str, n: int, seed: int) -> pl.DataFrame:
    vecs = np.random.default_rng(seed).normal(size=(n, 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return pl.DataFrame(
        {
            "chunk_id": [f"{seed:02x}{i:06x}" for i in range(n)],
            "partition": [partition] * n,
            "doc_id": [f"d{i // 3}" for i in range(n)],
            "vector": pl.Series(vecs, dtype=pl.Array(pl.Float32, 8)),
        },
        schema={"chunk_id": pl.String, "partition": pl.String, "doc_id": pl.String, "vector": pl.Array(pl.Float32, 8)},
    )


@pytest.fixture
def on_disk(tmp_path: Path) -> tuple[PartitionedParquet, pl.DataFrame]:
    sizes = {"p-a": 7, "p-b": 0, "p-c": 12, "p-d": 1}
    frames = [_vectors(p, n, seed) for seed, (p, n) in enumerate(sizes.items())]
    folder = tmp_path / "chunk_vectors"
    folder.mkdir()
    for (p, _), df in zip(sizes.items(), frames, strict=True):
        df.write_parquet(folder / f"{p}.parquet")
    return PartitionedParquet("chunk_vectors", {p: folder / f"{p}.parquet" for p in sizes}), pl.concat(frames)


def test_batches_cross_partitions_and_cut_large_ones_in_partition_order(on_disk):
    table, whole = on_disk
    assert table.partitions() == ["p-a", "p-b", "p-c", "p-d"]
    assert table.height == 20
    for rows in (1, 5, 7, 8, 100):
        batches = list(table.batches(rows))
        assert [b.height for b in batches[:-1]] == [rows] * (len(batches) - 1)
        assert 0 < batches[-1].height <= rows
        assert pl.concat(batches).equals(whole)
    assert table.read("p-c").equals(whole.filter(pl.col("partition") == "p-c"))
    assert table.select(["chunk_id"]).equals(whole.select("chunk_id"))


def test_a_partition_without_rows_reads_empty_with_the_table_columns(on_disk):
    table, whole = on_disk
    for key in ("p-b", "not-there"):
        empty = table.read(key)
        assert empty.is_empty() and empty.schema == whole.schema


def test_a_frame_in_memory_behaves_the_same(on_disk):
    table, whole = on_disk
    mem = partitioned(whole)
    assert isinstance(mem, FramePartitions) and partitioned(table) is table
    assert mem.height == table.height and set(mem.partitions()) == set(table.partitions()) - {"p-b"}
    assert pl.concat(list(mem.batches(6))).equals(pl.concat(list(table.batches(6))))
    assert [b.height for b in regroup(iter([whole.head(0), whole.head(4), whole.tail(9)]), 5)] == [5, 5, 3]


def test_a_partition_written_before_a_column_was_added_reads_with_nulls(tmp_path: Path):
    """The Parquet IO manager's rule: a column added to the schema later reads as nulls in older files."""
    added = schemas.ADDED_COLUMNS["chunks"]
    old = schemas.empty(schemas.TABLES["chunks"]).drop(added)
    new = schemas.empty(schemas.TABLES["chunks"])
    (tmp_path / "old.parquet").parent.mkdir(exist_ok=True)
    old.write_parquet(tmp_path / "old.parquet")
    new.write_parquet(tmp_path / "new.parquet")
    table = PartitionedParquet("chunks", {"a": tmp_path / "old.parquet", "b": tmp_path / "new.parquet"})
    assert table.read("a").columns == new.columns
    assert table.frame().schema == new.schema
