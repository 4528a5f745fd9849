"""A page's best sentence re-ranks MG2-RAG's candidate chunks (``page_sentence_weight``), on a real index built
from a real PDF and a Markdown note: the bonus, the pages it reaches, and the corpora it leaves alone."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from conftest import build_index

from mmkg.index import Index
from mmkg.retrieval.mg2 import MG2, PRESETS
from mmkg.retrieval.page_sentences import page_maps, rerank

PAGES = [
    "Harbour Review 2024\nAnnual report of the harbour board",
    "Shipping traffic grew as container vessels returned to the eastern quay.",
    "Dredging works deepened the channel so that larger ships can berth at low tide.",
    "The budget for next year funds a new crane and repairs to the breakwater.",
    "Contact the harbour office for copies of this review and earlier ones.",
]
ASKED = "Dredging works deepened the channel so that larger ships can berth at low tide."  # page 3, word for word


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    memo = "# Memo\n\nThe channel was dredged for larger ships last winter.\n"
    return build_index(tmp_path_factory, "ps", {"harbour/review.pdf": PAGES, "notes/memo.md": memo})


def _rows(index: Index) -> dict[tuple[str, int | None], int]:
    """(source path, page) -> chunk row; one chunk per page in this corpus."""
    located = index.chunks.select("chunk_id", "source_path", "page").iter_rows()
    where = {cid: (path, page) for cid, path, page in located}
    return {where[cid]: row for row, cid in enumerate(index.meta["chunks"]["id"].to_list())}


def _order(scores: np.ndarray) -> np.ndarray:
    return np.argsort(-scores, kind="stable")  # what MG2-RAG hands the step


def test_every_sentence_knows_its_page_and_page_less_ones_are_marked(index: Index):
    maps = page_maps(index)
    rows = _rows(index)
    memo = rows[("notes/memo.md", None)]
    assert maps.chunk_page[memo] == -1
    codes = [maps.chunk_page[rows[("harbour/review.pdf", p)]] for p in range(1, 6)]
    assert min(codes) >= 0 and len(set(codes)) == 5  # one code per page
    chunk_of = dict(index.sentences.select("sentence_id", "chunk_id").iter_rows())
    sentence_ids, chunk_ids = index.meta["sentences"]["id"].to_list(), index.meta["chunks"]["id"].to_list()
    for p, code in zip(range(1, 6), codes, strict=True):
        grouped = maps.sentence_rows[maps.offsets[code] : maps.offsets[code + 1]]
        on_page = chunk_ids[rows[("harbour/review.pdf", p)]]
        assert grouped.size and {chunk_of[sentence_ids[r]] for r in grouped} == {on_page}
    assert not {chunk_of[sentence_ids[r]] for r in maps.sentence_rows} & {chunk_ids[memo]}  # the memo's: no page


def test_a_lone_page_without_sentences_still_has_its_offsets(index: Index):
    """One page in the index (code 0) and none of its sentences: offsets still cover code 0, so a query reads an
    empty range instead of failing on an index past the end."""
    from types import SimpleNamespace

    from mmkg.retrieval.page_sentences import _page_maps

    one = index.chunks.filter(pl.col("page") == 3)
    view = SimpleNamespace(
        chunks=one, meta={"chunks": index.meta["chunks"].filter(pl.col("id").is_in(one["chunk_id"].implode())),
                          "sentences": index.meta["sentences"].clear()},
        sentences=index.sentences.clear(),
    )  # fmt: skip
    maps = _page_maps(view)
    assert maps.chunk_page.tolist() == [0] and maps.offsets.tolist() == [0, 0] and maps.sentence_rows.size == 0


def test_the_page_that_says_it_overtakes_a_slightly_better_chunk(index: Index):
    rows = _rows(index)
    q = index.encode_text(ASKED)
    scores = np.full(index.n_chunks, 0.1, np.float32)
    said, other, memo = rows[("harbour/review.pdf", 3)], rows[("harbour/review.pdf", 2)], rows[("notes/memo.md", None)]
    scores[other], scores[said], scores[memo] = 0.50, 0.49, 0.48
    top, out = rerank(index, scores, _order(scores), q, 0.3, k=3)
    assert top[0] == said
    assert out[said] == pytest.approx(0.49 + 0.3 * 0.50)  # the best sentence of all pages: the whole bonus
    assert out[said] > out[other] > scores[other]
    assert out[memo] == pytest.approx(0.48)  # no page, no bonus: its score is left as it was
    assert rerank(index, scores, _order(scores), q, 0.0, k=3)[1] is scores  # weight 0: nothing computed or changed
    # bonuses run from nothing (the page whose best sentence is the farthest) to the whole (the page that says it)
    bonus = [out[rows[("harbour/review.pdf", p)]] - scores[rows[("harbour/review.pdf", p)]] for p in range(1, 6)]
    assert min(bonus) == pytest.approx(0.0, abs=1e-6) and max(bonus) == pytest.approx(0.15) == bonus[2]


def test_chunks_outside_the_filters_stay_out(index: Index):
    rows = _rows(index)
    scores = np.full(index.n_chunks, -np.inf, np.float32)
    scores[rows[("harbour/review.pdf", 2)]] = 0.2
    top, out = rerank(index, scores, _order(scores), index.encode_text(ASKED), 0.3, k=3)
    kept = rows[("harbour/review.pdf", 2)]
    assert top == [kept] and np.isfinite(out).sum() == 1 and 0.2 <= out[kept] <= 0.2 * 1.3 + 1e-6


def test_longdoc_ranks_by_it_and_reports_its_time(index: Index):
    only = {"source_path": "harbour/review.pdf"}
    assert PRESETS["longdoc"].page_sentence_weight == 0.2 and PRESETS["default"].page_sentence_weight == 0.0
    on = MG2(PRESETS["longdoc"], preset="longdoc").run(index, ASKED, None, 5, only)
    off = MG2(PRESETS["longdoc"].override(page_sentence_weight=0.0), preset="x").run(index, ASKED, None, 5, only)
    assert "page_sentences" in on.timings_ms and "page_sentences" not in off.timings_ms
    assert on.chunks[0].page == 3
    moved = sum(a.chunk_id != b.chunk_id for a, b in zip(on.chunks, off.chunks, strict=True))
    said = [n for n in on.notes if "re-ranked by their best sentence" in n]
    assert said == ([f"{moved} of the top 5 chunks changed place when their pages were re-ranked by their best "
                     "sentence (page_sentence_weight 0.2)"] if moved else [])  # fmt: skip
    assert sorted(c.page for c in on.chunks) == sorted(c.page for c in off.chunks)  # re-ranked, none lost


def test_a_corpus_without_pages_ranks_exactly_as_before(index: Index):
    only = {"source_path": "notes/memo.md"}
    on = MG2(PRESETS["longdoc"], preset="longdoc").run(index, "Why was the channel dredged?", None, 3, only)
    off = MG2(PRESETS["longdoc"].override(page_sentence_weight=0.0), preset="x").run(
        index, "Why was the channel dredged?", None, 3, only
    )
    assert [(c.chunk_id, c.score) for c in on.chunks] == [(c.chunk_id, c.score) for c in off.chunks]
    assert not on.notes
