"""The BM25 chunk index published with each version: scores, persistence, empty corpora."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mmkg.lexical import IDS_FILE, LexicalIndex

TEXTS = [
    "Grace Hopper found a moth in a relay of the Harvard Mark II in 1947.",
    "The Falcon 9 rocket launched DSCOVR from Space Launch Complex 40.",
    "Operating margin rose to 12 percent; DPO fell to 41 days in FY2019.",
]


def test_scores_rank_exact_terms_and_survive_a_round_trip(tmp_path: Path):
    lex = LexicalIndex.build(["a", "b", "c"], TEXTS)
    s = lex.scores("What was the DPO in FY2019?")
    assert s.shape == (3,) and s.dtype == np.float32
    assert int(np.argmax(s)) == 2 and s[0] == 0 and s[1] == 0
    assert lex.query_terms("What was the DPO in FY2019?") == ["dpo", "fy2019"]  # stop words and unknown words gone
    lex.save(tmp_path / "bm25")
    again = LexicalIndex.load(tmp_path / "bm25")
    assert again.ids == ["a", "b", "c"]
    np.testing.assert_array_equal(again.scores("moth relay Harvard"), lex.scores("moth relay Harvard"))
    assert not any(p.suffix == ".pkl" for p in (tmp_path / "bm25").iterdir())


def test_no_known_word_and_empty_corpus(tmp_path: Path):
    lex = LexicalIndex.build(["a", "b", "c"], TEXTS)
    np.testing.assert_array_equal(lex.scores("zzz qqq"), np.zeros(3))
    empty = LexicalIndex.build([], [])
    empty.save(tmp_path / "e")
    assert len(LexicalIndex.load(tmp_path / "e")) == 0 and empty.scores("moth").shape == (0,)
    with pytest.raises(FileNotFoundError, match=IDS_FILE):
        LexicalIndex.load(tmp_path / "missing")
    with pytest.raises(ValueError, match="2 ids but 3 texts"):
        LexicalIndex.build(["a", "b"], TEXTS)
