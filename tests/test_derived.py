"""Derived data of an open index (``mmkg.index.derived``) and the models shared by queries
(``mmkg.retrieval.query_media``): built once, under concurrency too, and freed with their index."""

from __future__ import annotations

import gc
import threading
import time
import weakref

from mmkg.index.derived import derived
from mmkg.retrieval import query_media


class _Version:  # stands for an Index: hashable, weakly referable
    pass


class _Rows(dict):  # a derived table (a plain dict cannot be weakly referenced)
    pass


def test_derived_data_is_built_once_per_index_and_freed_with_it():
    calls: list[str] = []
    index = _Version()

    def slow() -> _Rows:
        calls.append("slow")
        time.sleep(0.05)
        return _Rows(rows=1)

    def ask() -> None:
        results.append(derived(index, "t.rows", slow))

    results: list[_Rows] = []
    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == ["slow"] and all(r is results[0] for r in results)  # eight requests, one build
    # a build may ask for other derived data of the same index (the lock is re-entrant)
    assert derived(index, "t.outer", lambda: derived(index, "t.inner", lambda: 2) + 1) == 3
    assert derived(_Version(), "t.rows", lambda: _Rows(rows=2)) == {"rows": 2}  # per index
    held = _derive_and_drop()
    gc.collect()
    assert held() is None  # the index gone, what was derived from it is gone too


def _derive_and_drop() -> weakref.ref:
    index = _Version()
    return weakref.ref(derived(index, "t.rows", lambda: _Rows(rows=3)))


def test_query_models_are_shared_by_the_process():
    made: list[int] = []
    key = ("test-model", "tiny")
    out = [query_media.shared(key, lambda: made.append(1) or object()) for _ in range(3)]
    assert len(made) == 1 and out[0] is out[1] is out[2]
    # a model made of another shared one (M3KG's OCR grounder of the process's OCR engine) does not deadlock
    got: list = []
    worker = threading.Thread(target=lambda: got.append(query_media.shared(
        ("test-outer",), lambda: ("outer", query_media.shared(("test-inner",), object)))), daemon=True)
    worker.start()
    worker.join(10)
    assert got, "a nested shared() deadlocked"
    assert got[0][1] is query_media.shared(("test-inner",), object)
