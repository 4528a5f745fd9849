"""Incidence matrices between granular units (sentences, objects) and graph nodes (entities).

MG2-RAG aggregates sentence and object scores onto entity nodes through M_SMI (sentences x nodes)
and M_OMI (objects x nodes). They are stored as scipy CSR arrays in ``.npz`` files that load with
``allow_pickle=False``, together with the id lists that name their rows and columns, so a matrix
can never be read against the wrong table order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from mmkg.atomic import atomic_path

FORMAT_VERSION = 1


@dataclass
class Incidence:
    matrix: sp.csr_array  # float32, rows x cols
    row_ids: np.ndarray  # unicode ids of the rows (sentence_id / object_id)
    col_ids: np.ndarray  # ids of the columns (entity_key); Python strings once loaded

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


def build_incidence(row_ids: Sequence[str], col_ids: Sequence[str], pairs: Iterable[tuple[str, str]]) -> Incidence:
    """Binary matrix with a 1 where (row, col) appears in ``pairs``; unknown ids are an error."""
    rows = {r: i for i, r in enumerate(row_ids)}
    cols = {c: j for j, c in enumerate(col_ids)}
    if len(rows) != len(row_ids) or len(cols) != len(col_ids):
        raise ValueError("row and column ids must be unique")
    coords = set()
    for r, c in pairs:
        try:
            coords.add((rows[r], cols[c]))
        except KeyError as exc:
            raise KeyError(f"incidence pair ({r!r}, {c!r}) names an id missing from the row or column list") from exc
    if coords:
        i, j = (np.fromiter(x, dtype=np.int64, count=len(coords)) for x in zip(*sorted(coords), strict=True))
    else:
        i = j = np.zeros(0, dtype=np.int64)
    m = sp.csr_array((np.ones(len(i), dtype=np.float32), (i, j)), shape=(len(row_ids), len(col_ids)))
    m.indices = m.indices.astype(np.int32)
    return Incidence(m, np.asarray(row_ids, dtype=str), np.asarray(col_ids, dtype=str))
