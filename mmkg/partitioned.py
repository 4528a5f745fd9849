"""A table stored as one Parquet file per partition, read a partition, a batch or a few columns at a time.

The publish is the one step that sees every partition at once, and vectors are most of what it
reads: 1.5 KB a row at 384 dimensions, 2.6 GB for the 1.7M vectors of 100k chunks. Given the files
instead of one concatenated frame (``PartitionedParquet``), it holds one batch of vectors at a time
and reads ids alone where ids are all it needs. ``FramePartitions`` gives a frame already in memory
the same interface, so callers (tests, benchmarks, the Python API) may pass either.

Reading follows the Parquet IO manager's rules (``read_parquet_files``): a column added to a table's
schema after a file was written reads as nulls (``schemas.ADDED_COLUMNS``), and files concatenate in
partition order.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

import polars as pl
import pyarrow.parquet as pq

from mmkg import schemas


def read_parquet_files(table: str, paths: Sequence[Path], columns: Sequence[str] | None = None) -> pl.DataFrame:
    """The files of one table concatenated (``columns`` only when given); an empty frame of its schema for none."""
    schema = schemas.TABLES.get(table)
    cols = list(columns) if columns else None
    if not paths:
        empty = schemas.empty(schema) if schema else pl.DataFrame()
        return empty.select(cols) if cols and schema else empty
    frames = [pl.read_parquet(p, columns=_present(p, cols)) for p in paths]
    if table in schemas.ADDED_COLUMNS:  # partitions written before a column was added read with nulls in it
        frames = [schemas.with_added_columns(f, table) for f in frames]
    if cols:
        frames = [f.select(cols) for f in frames]
    return pl.concat(frames, how="vertical") if len(frames) > 1 else frames[0]


def _present(path: Path, columns: list[str] | None) -> list[str] | None:
    """Of ``columns``, those the file holds (a column added to the schema later is filled in after)."""
    if not columns:
        return None
    have = pl.read_parquet_schema(path)
    return [c for c in columns if c in have]


@runtime_checkable
class Partitioned(Protocol):
    """What the publish needs of a table that spans partitions (rows carry a ``partition`` column)."""

    def partitions(self) -> list[str]:
        """The partitions that hold rows, in the order rows are read."""
        ...

    def read(self, partition: str, columns: Sequence[str] | None = None) -> pl.DataFrame:
        """One partition's rows."""
        ...

    def select(self, columns: Sequence[str]) -> pl.DataFrame:
        """Every partition's rows, these columns only."""
        ...

    def batches(self, rows: int) -> Iterator[pl.DataFrame]:
        """Every row in partition order, at most ``rows`` at a time (a larger partition comes in slices)."""
        ...

    def frame(self) -> pl.DataFrame:
        """Every row and column in memory: for the small tables (pictures, objects)."""
        ...

    @property
    def height(self) -> int: ...


def regroup(frames: Iterator[pl.DataFrame], rows: int) -> Iterator[pl.DataFrame]:
    """Regroup a stream of frames into frames of at most ``rows`` rows (only the last may be shorter)."""
    held: list[pl.DataFrame] = []
    n = 0
    for frame in frames:
        while frame.height:
            take = frame.slice(0, rows - n)
            frame = frame.slice(take.height)
            held.append(take)
            n += take.height
            if n == rows:
                yield pl.concat(held, how="vertical")
                held, n = [], 0
    if n:
        yield pl.concat(held, how="vertical")


@dataclass(frozen=True)
class PartitionedParquet:
    """A partitioned table on disk: ``paths`` maps each partition key to its Parquet file."""

    table: str  # the asset's name (``chunk_vectors``): which schema rules apply
    paths: Mapping[str, Path]
    _heights: dict[str, int] = field(default_factory=dict, repr=False, compare=False)

    def partitions(self) -> list[str]:
        return sorted(self.paths)

    def read(self, partition: str, columns: Sequence[str] | None = None) -> pl.DataFrame:
        if partition not in self.paths:  # no rows there: an empty frame with the table's columns
            first = self.partitions()[:1]
            return read_parquet_files(self.table, [self.paths[p] for p in first], columns).clear()
        return read_parquet_files(self.table, [self.paths[partition]], columns)

    def select(self, columns: Sequence[str]) -> pl.DataFrame:
        return read_parquet_files(self.table, [self.paths[p] for p in self.partitions()], columns)

    def frame(self) -> pl.DataFrame:
        return read_parquet_files(self.table, [self.paths[p] for p in self.partitions()])

    def batches(self, rows: int) -> Iterator[pl.DataFrame]:
        return regroup((self.read(p) for p in self.partitions()), rows)

    @property
    def height(self) -> int:
        for p in self.partitions():
            if p not in self._heights:  # from the footer: no row is read
                self._heights[p] = pq.ParquetFile(self.paths[p]).metadata.num_rows
        return sum(self._heights[p] for p in self.partitions())


@dataclass(frozen=True)
class FramePartitions:
    """A frame already in memory, behind the ``Partitioned`` interface."""

    df: pl.DataFrame

    def partitions(self) -> list[str]:
        if "partition" not in self.df.columns or self.df.is_empty():
            return []
        return self.df["partition"].unique(maintain_order=True).to_list()

    def read(self, partition: str, columns: Sequence[str] | None = None) -> pl.DataFrame:
        out = self.df.filter(pl.col("partition") == partition)
        return out.select(columns) if columns else out

    def select(self, columns: Sequence[str]) -> pl.DataFrame:
        return self.df.select(columns)

    def frame(self) -> pl.DataFrame:
        return self.df

    def batches(self, rows: int) -> Iterator[pl.DataFrame]:
        return regroup(iter([self.df]), rows)

    @property
    def height(self) -> int:
        return self.df.height


def partitioned(table: pl.DataFrame | Partitioned) -> Partitioned:
    """``table`` behind the ``Partitioned`` interface (a frame is wrapped, a partitioned table returned as is)."""
    return FramePartitions(table) if isinstance(table, pl.DataFrame) else table


def frame(table: pl.DataFrame | Partitioned) -> pl.DataFrame:
    """``table`` in memory, every row and column (for the small tables that are collapsed or joined whole)."""
    if isinstance(table, pl.DataFrame):
        return table
    return table.frame()
