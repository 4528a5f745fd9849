"""BM25 over chunk text: a lexical baseline and a seed channel for graph retrieval.

Exact words matter where a small sentence encoder is weak: figures, codes and rare terms in long
PDFs ("DPO", "FY2019", a product name OCR read off a slide). The same index serves the eval
harness's ``bm25`` baseline and the graph's lexical seeds, so both see identical scores. It is
built at publish time next to the version it belongs to (bm25s arrays + JSON vocab, no pickle).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from mmkg.atomic import write_bytes

IDS_FILE = "chunk_ids.json"


def _tokenize_corpus(texts: Sequence[str]):
    import bm25s

    return bm25s.tokenize(list(texts), stopwords="en", show_progress=False)


class LexicalIndex:
    """BM25 (bm25s, Lucene variant) over chunk texts, English stop words removed, lower-cased words."""

    def __init__(self, ids: list[str], bm25) -> None:
        self.ids = ids
        self._bm25 = bm25

    @classmethod
    def build(cls, ids: Sequence[str], texts: Sequence[str]) -> LexicalIndex:
        import bm25s

        if len(ids) != len(texts):
            raise ValueError(f"{len(ids)} ids but {len(texts)} texts")
        bm25 = bm25s.BM25()
        if ids:
            bm25.index(_tokenize_corpus(texts), show_progress=False)
        return cls(list(ids), bm25)

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        if self.ids:
            self._bm25.save(str(folder), show_progress=False)
        write_bytes(folder / IDS_FILE, json.dumps(self.ids).encode("utf-8"))  # last: marks the folder complete

    @classmethod
    def load(cls, folder: Path) -> LexicalIndex:
        import bm25s

        ids_path = folder / IDS_FILE
        if not ids_path.exists():
            raise FileNotFoundError(f"{folder}: no lexical index ({IDS_FILE} missing)")
        ids = json.loads(ids_path.read_text(encoding="utf-8"))
        bm25 = bm25s.BM25.load(str(folder), show_progress=False) if ids else bm25s.BM25()
        return cls(ids, bm25)

    def __len__(self) -> int:
        return len(self.ids)

    def query_terms(self, text: str) -> list[str]:
        """The query's words that occur in the corpus (stop words and unknown words dropped)."""
        import bm25s

        if not self.ids:
            return []
        words = bm25s.tokenize([text], stopwords="en", return_ids=False, show_progress=False)[0]
        return [w for w in words if w in self._bm25.vocab_dict]

    def scores(self, text: str, terms: list[str] | None = None) -> np.ndarray:
        """BM25 score of every chunk (in ``ids`` order); all zeros when no query word is known."""
        terms = self.query_terms(text) if terms is None else terms
        if not terms:
            return np.zeros(len(self.ids), dtype=np.float32)
        return np.asarray(self._bm25.get_scores(terms), dtype=np.float32)
