"""Incidence matrices between granular units (sentences, objects) and graph nodes (entities).

MG2-RAG aggregates sentence and object scores onto entity nodes through M_SMI (sentences x nodes)
and M_OMI (objects x nodes). They are stored as scipy CSR arrays in ``.npz`` files that load with
``allow_pickle=False``, together with the id lists that name their rows and columns, so a matrix
can never be read against the wrong table order.

Format 2 stores each id list as its UTF-8 bytes and Arrow-style offsets (``*_utf8``, ``*_offsets``).
Format 1 stored them as NumPy fixed-width unicode, 4 bytes times the longest id for every id: M_SMI's
entity keys at 302k chunks took 220 MB (497k keys padded to 111 characters) against 35 MB of UTF-8,
and reading the two matrices took 1.0 s of a 3.8 s ``Index.open`` (0.48 s in format 2). Both load.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import scipy.sparse as sp

from mmkg.atomic import atomic_path

FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)


@dataclass
class Incidence:
    matrix: sp.csr_array  # float32, rows x cols
    row_ids: np.ndarray  # ids of the rows (sentence_id / object_id), an object array of Python strings
    col_ids: np.ndarray  # ids of the columns (entity_key), likewise

    @cached_property
    def column_degree(self) -> np.ndarray:
        """Units per column (row sums of M^T): the D of MG2-RAG's eq. 2 mean pooling, computed once."""
        return column_degree(self.matrix)

    @property
    def shape(self) -> tuple[int, int]:
        return self.matrix.shape  # type: ignore[return-value]

    def save(self, path: Path | str) -> None:
        """Atomic write of a pickle-free npz (format 2: ids as UTF-8 bytes and offsets), uncompressed.

        Uncompressed because zlib cost more than the bytes: at 302k chunks M_SMI wrote in 3.2 s compressed
        against 0.05 s plain and read in 0.32 s against 0.05 s, for 33 MB against 90 MB beside 8.6 GB of
        vectors."""
        m = self.matrix.tocsr()
        row_offsets, row_utf8 = pack_ids(self.row_ids)
        col_offsets, col_utf8 = pack_ids(self.col_ids)
        with atomic_path(Path(path)) as tmp, open(tmp, "wb") as fh:
            np.savez(
                fh,
                version=np.int32(FORMAT_VERSION),
                shape=np.asarray(m.shape, dtype=np.int64),
                data=m.data.astype(np.float32),
                indices=m.indices.astype(np.int32),
                indptr=m.indptr.astype(np.int64),
                row_offsets=row_offsets,
                row_utf8=row_utf8,
                col_offsets=col_offsets,
                col_utf8=col_utf8,
            )

    @classmethod
    def load(cls, path: Path | str, columns_like: Incidence | None = None) -> Incidence:
        """Read a matrix of either format; its ids come back as object arrays of Python strings.

        ``columns_like``: a matrix over the same entities (M_SMI for M_OMI), whose column array is then
        shared instead of held twice.
        """
        with np.load(path, allow_pickle=False) as z:
            version = int(z["version"])
            if version not in READABLE_VERSIONS:
                raise ValueError(
                    f"{path}: incidence format {version}; this mmkg reads formats {list(READABLE_VERSIONS)}: "
                    "upgrade mmkg, or publish the index again with this one"
                )
            shape = tuple(int(x) for x in z["shape"])
            m = sp.csr_array((z["data"], z["indices"], z["indptr"]), shape=shape)
            if version == 1:
                rows, cols = z["row_ids"].astype(object), z["col_ids"].astype(object)
            else:
                rows = unpack_ids(z["row_offsets"], z["row_utf8"], path, "row")
                cols = unpack_ids(z["col_offsets"], z["col_utf8"], path, "column")
        if (len(rows), len(cols)) != shape:
            raise ValueError(f"{path}: {len(rows)} row and {len(cols)} column ids for a matrix of shape {shape}")
        if columns_like is not None and np.array_equal(cols, columns_like.col_ids):
            cols = columns_like.col_ids
        return cls(m, rows, cols)


def pack_ids(ids: Sequence[str] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ids in Arrow's large-string layout: int64 offsets (one more than the ids) and the UTF-8 bytes."""
    values = ids.tolist() if isinstance(ids, np.ndarray) else list(ids)
    arr = pa.array(values, type=pa.large_string())
    if arr.null_count:
        raise ValueError("incidence ids must not be null")
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64, count=len(arr) + 1).copy()
    data = arr.buffers()[2]
    utf8 = np.frombuffer(data, dtype=np.uint8, count=int(offsets[-1])).copy() if data else np.zeros(0, np.uint8)
    return offsets, utf8


def unpack_ids(offsets: np.ndarray, utf8: np.ndarray, path: Path | str, what: str) -> np.ndarray:
    """The inverse of ``pack_ids``: an object array of Python strings, the bytes checked as UTF-8 first."""
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    utf8 = np.ascontiguousarray(utf8, dtype=np.uint8)
    ordered = offsets.ndim == 1 and offsets.size > 0 and not (np.diff(offsets) < 0).any()
    if not ordered or offsets[0] != 0 or offsets[-1] != utf8.size:
        raise ValueError(f"{path}: the {what} id offsets do not index the id bytes; the file is damaged")
    arr = pa.LargeStringArray.from_buffers(offsets.size - 1, pa.py_buffer(offsets), pa.py_buffer(utf8))
    try:
        arr.validate(full=True)
    except pa.ArrowInvalid as exc:
        raise ValueError(f"{path}: the {what} ids are not valid UTF-8 ({exc}); the file is damaged") from exc
    return arr.to_numpy(zero_copy_only=False)


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
    return Incidence(m, np.asarray(rows.to_list(), dtype=object), np.asarray(cols.to_list(), dtype=object))
