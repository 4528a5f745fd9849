"""pdfplumber's reading of a PDF's table pages, in worker processes beside pdfium's reading of the same file.

pdfplumber (pdfminer) interprets a page's content stream in pure Python, one core at a time: on MMLongBench-Doc
dev its 115 table pages took about 28 s of a 50 s ``ingest``, while the reading process sat on pdfium's side of
the same pages. ``TableRows`` hands the pages ``mmkg.ingest.pdf_table_pages`` lets through to worker processes
in pairs as the reading finds them, so pdfplumber runs beside pdfium and on every core given to it.
Each batch carries the file's bytes (the workers share no state with the reading process and each other; a worker
keeps the file it read last open, so the next pair of its pages costs no second walk of its page tree), and a
worker answers with the rows ``mmkg.ingest.pdf_tables`` renders, or the reason a page's tables were not read:
the text is the same as the reading process would give, page for page (``tests/test_pdf_table_workers.py``).

``processes=0`` reads every page in the reading process, as soon as it is let through. A pool that breaks (a
worker killed) costs only time: the pages it held are read in the reading process. The pool is kept for the life
of the process (spawned workers take about a second to start), like the spaCy parser's
(``mmkg.nlp.parser_pool``); ``shutdown_table_workers`` stops it.
"""

from __future__ import annotations

import hashlib
import io
import logging
import multiprocessing as mp
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from mmkg.ingest.base import Rejection
from mmkg.pools import stop_pool

log = logging.getLogger(__name__)

BATCH = 2  # pages a task reads: small enough to spread a document's table pages over the workers early
_POOLS: dict[int, ProcessPoolExecutor] = {}

#: (page index, rows, why its tables were not read or "") for each page of a batch
PageRows = tuple[int, list[str], str]


def open_plumber(data: bytes) -> Any:
    """The PDF opened by pdfplumber. pdfminer logs every odd font descriptor ("Could not get FontBBox ...") as a
    warning on stderr, through the build display; the text comes from pdfium, so such fonts cost nothing worth
    a line, and its logger is quietened."""
    import pdfplumber

    logging.getLogger("pdfminer").setLevel(logging.ERROR)
    return pdfplumber.open(io.BytesIO(data))


def page_rows(plumber: Any, index: int, tables: Callable[[Any], list] | None = None) -> PageRows:
    """Rows (with headers) of the tables on page ``index`` of an open pdfplumber PDF, or why none were read."""
    from mmkg.ingest.pdf_tables import page_tables, render

    tables = tables or page_tables
    try:
        page = plumber.pages[index]
        try:
            return index, [line for table in tables(page) for line in render(table)], ""
        finally:
            page.close()
    except Exception as exc:  # a damaged content stream: the page's text is still read by pdfium
        return index, [], f"{type(exc).__name__}: {exc}"


_OPEN: dict[str, Any] = {}  # in a worker: the PDF its last batch read, by content key, kept for the next batch


def read_batch(key: str, data: bytes, indices: list[int]) -> list[PageRows] | str:
    """A worker's task: the rows of each page of ``indices``, or why pdfplumber cannot open the file. The file
    stays open in the worker for the next batch of the same file (``key``: its content hash), whose pages the
    reading finds next; opening it again would walk its page tree again."""
    plumber = _OPEN.get(key)
    if plumber is None:
        for old in _OPEN.values():
            old.close()
        _OPEN.clear()
        try:
            plumber = open_plumber(data)
        except Exception as exc:  # pdfminer raises its own and builtin errors for damaged files
            return str(exc)
        _OPEN[key] = plumber
    return [page_rows(plumber, i) for i in indices]


def table_pool(processes: int) -> ProcessPoolExecutor:
    """Worker processes kept for the life of this process (spawned: fork is unsafe under Dagster's threads)."""
    from mmkg.worker_init import terminable

    pool = _POOLS.get(processes)
    if pool is None or getattr(pool, "_broken", False):
        pool = ProcessPoolExecutor(max_workers=processes, mp_context=mp.get_context("spawn"), initializer=terminable)
        _POOLS[processes] = pool
    return pool


def shutdown_table_workers() -> None:
    """Stop the kept workers (``table_pool``; ``mmkg.pools.stop_pool``); the next PDF with table pages starts new
    ones."""
    while _POOLS:
        stop_pool(_POOLS.popitem()[1])


class TableRows:
    """The table rows of one PDF's pages, read in ``processes`` workers (0: here) as pages are ``add``-ed;
    ``collect`` waits for them. Failures go to ``rejections`` as the reading process would record them."""

    def __init__(self, data: bytes, rel: str, processes: int, rejections: list[Rejection],
                 tables: Callable[[Any], list] | None = None):  # fmt: skip
        self.data, self.rel, self.processes, self.rejections = data, rel, processes, rejections
        self.key = hashlib.sha256(data).hexdigest() if processes > 0 else ""
        self._tables = tables  # the reading process's page_tables (tests replace it there)
        self._plumber: Any = None
        self._opened = False
        self._open_failed = False
        self._pending: list[int] = []
        self._tasks: list[tuple[list[int], Future]] = []
        self.rows: dict[int, list[str]] = {}

    def _here(self) -> Any:
        """pdfplumber's PDF in this process, opened once; None (recorded) where pdfminer cannot parse it."""
        if not self._opened:
            self._opened = True
            try:
                self._plumber = open_plumber(self.data)
            except Exception as exc:  # pdfminer raises its own and builtin errors for damaged files
                self._cannot_open(str(exc))
        return self._plumber

    def _cannot_open(self, why: str) -> None:
        if self._open_failed:
            return
        self._open_failed = True
        self.rejections.append(Rejection(self.rel, f"tables not read: pdfplumber cannot open the file ({why})",
                                         stage="tables"))  # fmt: skip

    def _keep(self, found: PageRows) -> None:
        index, rows, why = found
        if why:
            self.rejections.append(Rejection(self.rel, f"page {index + 1}: tables not read ({why})",
                                             f"page {index + 1}", stage="tables"))  # fmt: skip
        elif rows:
            self.rows[index] = rows

    def _read_here(self, indices: list[int]) -> None:
        plumber = self._here()
        for index in indices if plumber is not None else ():
            self._keep(page_rows(plumber, index, self._tables))

    def add(self, index: int) -> None:
        """Page ``index`` (0-based) may hold a table: read it now (no workers) or queue it for the workers."""
        if self.processes <= 0:
            self._read_here([index])
            return
        self._pending.append(index)
        if len(self._pending) >= BATCH:
            self._submit()

    def _submit(self) -> None:
        batch, self._pending = self._pending, []
        try:
            self._tasks.append((batch, table_pool(self.processes).submit(read_batch, self.key, self.data, batch)))
        except (BrokenProcessPool, RuntimeError) as exc:  # a pool broken or shut down under us
            log.warning("table workers unavailable (%s); reading pages of %s here", exc, self.rel)
            self._read_here(batch)

    def collect(self, timeout: float | None = None) -> dict[int, list[str]]:
        """Every added page's rows, by page index; ``timeout`` seconds at most for the workers, after which the
        pages not read are recorded against the file's time budget."""
        if self._pending:
            self._submit()
        deadline = None if timeout is None else time.monotonic() + max(timeout, 0.0)
        tasks, self._tasks = self._tasks, []
        late: list[int] = []
        for batch, future in tasks:
            try:
                left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
                found = future.result(timeout=left)
            except TimeoutError:
                future.cancel()
                late.extend(batch)
                continue
            except BrokenProcessPool as exc:
                log.warning("a table worker died (%s); reading pages of %s here", exc, self.rel)
                self._read_here(batch)
                continue
            if isinstance(found, str):
                self._cannot_open(found)
                continue
            for page in found:
                self._keep(page)
        if late:
            pages = ", ".join(str(i + 1) for i in sorted(late)[:10]) + (" ..." if len(late) > 10 else "")
            self.rejections.append(Rejection(self.rel, f"tables of {len(late)} page(s) not read ({pages}): reading "
                                                       "took over its time budget (MMKG_MAX_FILE_SECONDS)",
                                             stage="budget"))  # fmt: skip
        return self.rows

    def close(self) -> None:
        for _, future in self._tasks:
            future.cancel()
        self._tasks = []
        if self._plumber is not None:
            self._plumber.close()
            self._plumber = None
