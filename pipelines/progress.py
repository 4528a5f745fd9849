"""A Dagster logger that hands step events and asset log lines to a callback in this process.

``mmkg index build`` and ``update`` run the real jobs in-process and draw their progress from what
Dagster itself reports: a step started, a step finished (with its duration), an asset logged a line
(``[120/400] file.pdf``, ``sentences: 2,300 vectors in 4.1s``). The same events are what the UI shows
for the run. The logger is part of the definitions but only instantiated when a run's config names
it (``loggers: {mmkg_progress: {}}``), and only forwards while a listener is set with ``listening``.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from dagster import InitLoggerContext, logger

LOGGER_KEY = "mmkg_progress"


@dataclass(frozen=True)
class StepEvent:
    kind: str  # step_start | step_success | step_failure | step_interrupted | log | blocked
    step: str  # the step key: the asset (or asset check) being computed
    message: str  # blocked: the pool whose slots are all held (the step waits for one)
    seconds: float | None = None  # step_success: the step's duration


Listener = Callable[[StepEvent], None]
_listeners: list[Listener] = []


@contextlib.contextmanager
def listening(listener: Listener) -> Iterator[None]:
    """Send the progress logger's events to ``listener`` while the block runs."""
    _listeners.append(listener)
    try:
        yield
    finally:
        _listeners.remove(listener)


_KINDS = {"STEP_START": "step_start", "STEP_SUCCESS": "step_success", "STEP_FAILURE": "step_failure"}


class _Forward(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        if not _listeners:
            return
        meta = getattr(record, "dagster_meta", None) or {}
        step = meta.get("step_key") or ""
        event = meta.get("dagster_event")
        if event is not None and (pool := _blocked_on(event)):
            out = StepEvent("blocked", step, pool)  # Dagster says so when the step starts waiting, then once a minute
        elif event is not None:
            kind = _KINDS.get(event.event_type_value)
            if kind is None:
                return
            if kind == "step_failure" and interrupted(getattr(event.event_specific_data, "error", None)):
                kind = "step_interrupted"  # Ctrl-C or SIGTERM, which Dagster raises inside the running step
            seconds = None
            if kind == "step_success":
                seconds = getattr(event.event_specific_data, "duration_ms", 0) / 1000
            out = StepEvent(kind, step, meta.get("orig_message", ""), seconds)
        elif record.levelno >= logging.INFO and step:
            out = StepEvent("log", step, str(meta.get("orig_message", record.getMessage())))
        else:
            return
        for listener in list(_listeners):
            listener(out)


def interrupted(error) -> bool:
    """Whether a step's error (Dagster's ``SerializableErrorInfo``) is Ctrl-C or SIGTERM, which Dagster raises inside
    the running step as ``DagsterExecutionInterruptedError``, under its wrappers or not."""
    while error is not None:
        if error.cls_name == "DagsterExecutionInterruptedError":
            return True
        error = error.cause
    return False


def _blocked_on(event) -> str:
    """The pool a step waits for, when ``event`` is Dagster's "Step blocked by limit for pool" engine event."""
    if event.event_type_value != "ENGINE_EVENT" or not str(event.message or "").startswith(
        ("Step blocked by limit for pool", "Step still blocked by limit for pool")
    ):
        return ""
    pool = (getattr(event.event_specific_data, "metadata", None) or {}).get("pool")
    return str(getattr(pool, "value", pool) or "")


@logger(description="Forwards step starts and ends and asset log lines to the mmkg CLI's progress display.")
def progress_logger(init_context: InitLoggerContext) -> logging.Logger:
    # DEBUG: Dagster logs its step events (step start, step success) at DEBUG and hands a @logger only
    # the records its level lets through; at INFO only asset log lines and failures arrived, so the display
    # learnt the running step from its first log line. _Forward keeps events and INFO lines only.
    log = logging.Logger(LOGGER_KEY, level=logging.DEBUG)
    log.addHandler(_Forward())
    return log
