"""Incidence matrices between granular units (sentences, objects) and graph nodes (entities).

MG2-RAG aggregates sentence and object scores onto entity nodes through M_SMI (sentences x nodes)
and M_OMI (objects x nodes). They are stored as scipy CSR arrays in ``.npz`` files that load with
``allow_pickle=False``, together with the id lists that name their rows and columns, so a matrix
can never be read against the wrong table order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import polars as pl
import scipy.sparse as sp

from mmkg.atomic import atomic_path

FORMAT_VERSION = 1


@dataclass
class Incidence:
    matrix: sp.csr_array  # float32, rows x cols
    row_ids: np.ndarray  # unicode ids of the rows (sentence_id / object_id)
    col_ids: np.ndarray  # ids of the columns (entity_key); Python strings once loaded

    @cached_property
    def column_degree(self) -> np.ndarray:
        """Units per column (row sums of M^T): the D of MG2-RAG's eq. 2 mean pooling, computed once."""
        return column_degree(self.matrix)

    @property
    def shape(self) -> tuple[int, int]:
        return self.matrix.shape  # type: ignore[return-value]

    def save(self, path: Path | str) -> None:
        """Atomic write of a pickle-free npz."""
        m = self.matrix.tocsr()
        with atomic_path(Path(path), suffix=".npz") as tmp:
            np.savez_compressed(
                tmp,
                version=np.int32(FORMAT_VERSION),
                shape=np.asarray(m.shape, dtype=np.int64),
                data=m.data.astype(np.float32),
                indices=m.indices.astype(np.int32),
                indptr=m.indptr.astype(np.int64),
                row_ids=self.row_ids.astype(str),
                col_ids=self.col_ids.astype(str),
            )

    @classmethod
    def load(cls, path: Path | str, columns_like: Incidence | None = None) -> Incidence:
        """Read a matrix; its column ids (entity keys) come back as Python strings.

        Stored, they are fixed-width unicode: 4 bytes times the longest key for every entity (104 MB at
        103k chunks' 249k entities). ``columns_like``: a matrix over the same entities (M_SMI for M_OMI),
        whose column array is then shared instead of held twice.
        """
        with np.load(path, allow_pickle=False) as z:
            if int(z["version"]) != FORMAT_VERSION:
                raise ValueError(f"{path}: incidence format {int(z['version'])}, expected {FORMAT_VERSION}")
            shape = tuple(int(x) for x in z["shape"])
            m = sp.csr_array((z["data"], z["indices"], z["indptr"]), shape=shape)
            cols = z["col_ids"]
            if columns_like is not None and np.array_equal(cols, columns_like.col_ids):
                return cls(m, z["row_ids"], columns_like.col_ids)
            return cls(m, z["row_ids"], cols.astype(object))


def column_degree(matrix: sp.sparray) -> np.ndarray:
    """Column sums of a sparse matrix as a float64 vector."""
    m = sp.csr_array(matrix)
    return np.bincount(m.indices, weights=m.data, minlength=m.shape[1])


def build_incidence(
    row_ids: Sequence[str], col_ids: Sequence[str], pairs: Iterable[tuple[str, str]] | pl.DataFrame
) -> Incidence:
    """Binary matrix with a 1 where (row, col) appears in ``pairs``; unknown ids are an error.

    ``pairs`` is an iterable of (row id, column id) tuples or a frame whose first two columns hold them. Ids are
    placed by polars joins, not a Python loop over a set of tuples: at 1M chunks the sentence-entity pairs number
    about ten million, which the loop took minutes and gigabytes to place."""
    rows = pl.Series("row", row_ids, dtype=pl.String)
    cols = pl.Series("col", col_ids, dtype=pl.String)
    if rows.n_unique() != rows.len() or cols.n_unique() != cols.len():
        raise ValueError("row and column ids must be unique")
    if isinstance(pairs, pl.DataFrame):
        first, second = pairs.columns[:2]
        frame = pairs.select(pl.col(first).cast(pl.String).alias("row"), pl.col(second).cast(pl.String).alias("col"))
    else:
        listed = list(pairs)
        frame = pl.DataFrame(
            {"row": [r for r, _ in listed], "col": [c for _, c in listed]}, schema={"row": pl.String, "col": pl.String}
        )
    placed = frame.join(rows.to_frame().with_row_index("i"), on="row", how="left").join(
        cols.to_frame().with_row_index("j"), on="col", how="left"
    )
    unknown = placed.filter(pl.col("i").is_null() | pl.col("j").is_null())
    if unknown.height:
        r, c = unknown.row(0)[:2]
        raise KeyError(f"incidence pair ({r!r}, {c!r}) names an id missing from the row or column list")
    ij = placed.select("i", "j").unique().sort("i", "j")
    i, j = ij["i"].to_numpy().astype(np.int64), ij["j"].to_numpy().astype(np.int64)
    m = sp.csr_array((np.ones(len(i), dtype=np.float32), (i, j)), shape=(len(row_ids), len(col_ids)))
    m.indices = m.indices.astype(np.int32)
    return Incidence(m, np.asarray(row_ids, dtype=str), np.asarray(col_ids, dtype=str))
