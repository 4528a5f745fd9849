"""Stopping the worker pools a process keeps for its life (spaCy's parsers, PDF tables' readers).

Both keep a ``ProcessPoolExecutor`` of spawned workers across partitions (``mmkg.nlp.parser_pool``,
``mmkg.ingest.pdf_table_workers.table_pool``) and stop it the same way, here.
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor


def stop_pool(pool: ProcessPoolExecutor) -> None:
    """Stop ``pool``, its queued work cancelled. The survivors of a broken pool (one worker died) are killed
    first: CPython stops them with SIGTERM and waits until they are gone, so one that does not die of it would
    hang the shutdown."""
    if getattr(pool, "_broken", False):
        for proc in list((getattr(pool, "_processes", None) or {}).values()):
            proc.kill()
    pool.shutdown(wait=True, cancel_futures=True)
