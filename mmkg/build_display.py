"""The live display of ``mmkg index build`` and ``update``, and the log file that takes the libraries' output.

The display draws from the Dagster events of the runs (``pipelines.progress``): which partition (or
the publish) runs, which step, for how long, and the asset's latest log line. It is a rich ``Live``
that redraws itself from a thread, so the spinner and the timers move while a step computes, not
only when an event arrives; every row fits the terminal's width (a long log line is cut at a word,
with an ellipsis).

While a build runs, the process's standard output and error (file descriptors 1 and 2, and
``sys.stdout``/``sys.stderr``) point at a log file, ``<data root>/logs/build-<time>.log``: LanceDB's
Rust ``WARN`` lines, Python ``warnings``, Dagster's console logger and anything a child process
prints land there, with the build's own events for context. The display writes to a copy of the
terminal's descriptor taken first. This also keeps the display alive during a run: Dagster captures
a run's output by pointing descriptors 1 and 2 at its compute-log files (and mirrors them back with
``tail``), and a rich ``Live`` whose file is no longer a terminal stops drawing until the run ends.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.live import Live
from rich.markup import escape
from rich.progress_bar import ProgressBar
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from pipelines.progress import StepEvent

LOG_DIR = "logs"
KEEP_LOGS = 20  # build logs kept under <data root>/logs; older ones are deleted when a build starts


def build_log_path(data_root: Path, now: dt.datetime | None = None) -> Path:
    """``<data root>/logs/build-<YYYYmmdd-HHMMSS>-<pid>.log`` for a build starting ``now`` in this process.

    The process id keeps two builds started in the same second (a scheduled update beside a manual one) from
    writing one log, and one that had nothing to do from deleting the other's."""
    stamp = (now or dt.datetime.now()).strftime("%Y%m%d-%H%M%S")
    return Path(data_root) / LOG_DIR / f"build-{stamp}-{os.getpid()}.log"


def prune_logs(folder: Path, keep: int = KEEP_LOGS) -> None:
    """Delete all but the ``keep`` newest ``build-*.log`` files of ``folder``."""
    logs = sorted(folder.glob("build-*.log"))
    for old in logs[: max(len(logs) - keep, 0)]:
        old.unlink(missing_ok=True)


def fit(text: str, width: int) -> str:
    """``text`` on one line of at most ``width`` cells, cut after a whole word and ended with an ellipsis."""
    text = " ".join(text.split())
    if cell_len(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    cut = text
    while cut and cell_len(cut) > width - 1:
        cut = cut[:-1]
    at = cut.rfind(" ")
    if at > width // 3:  # a word boundary not too far back; else one long token (a path) is cut where it must be
        cut = cut[:at]
    return cut.rstrip(" ,;:") + "…"


def _shorten(field: str, width: int) -> str:
    """``field`` whole, or its start and an ellipsis in ``width`` cells (a name, not prose: no word to keep)."""
    if cell_len(field) <= width:
        return field
    while field and cell_len(field) > max(width, 1) - 1:
        field = field[:-1]
    return field + "…"


def _hms(seconds: float) -> str:
    s = int(max(seconds, 0))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


@dataclass
class Redirect:
    """Where output goes during a build: ``screen`` is the terminal, ``log`` the log file (also fds 1 and 2)."""

    screen: TextIO
    log: TextIO
    path: Path


@contextlib.contextmanager
def output_to_log(path: Path) -> Iterator[Redirect]:
    """Point file descriptors 1 and 2 (and ``sys.stdout``/``sys.stderr``) at ``path`` while the block runs.

    Yields the terminal (a copy of descriptor 1, taken first) for the display, and the log file for
    lines of one's own. Output of C and Rust code, of child processes and of Python code all lands in
    the log; everything is put back, flushed, when the block ends, also on an exception.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    log = open(path, "a", buffering=1, encoding="utf-8", errors="backslashreplace")  # noqa: SIM115
    saved = os.dup(1), os.dup(2)
    screen = open(os.dup(1), "w", buffering=1, encoding="utf-8", errors="replace")  # noqa: SIM115
    old_streams, old_showwarning = (sys.stdout, sys.stderr), warnings.showwarning

    def show_in_log(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                    file: TextIO | None = None, line: str | None = None) -> None:  # fmt: skip
        log.write(warnings.formatwarning(message, category, filename, lineno, line))

    try:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        # Python-level writers follow the descriptors (also when a test runner replaced sys.stdout/stderr)
        sys.stdout = open(1, "w", buffering=1, encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", buffering=1, encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
        warnings.showwarning = show_in_log  # also where a test runner records warnings instead of printing them
        yield Redirect(screen, log, path)
    finally:
        for stream in (sys.stdout, sys.stderr, screen, log):
            with contextlib.suppress(Exception):
                stream.flush()
        for ours in (sys.stdout, sys.stderr):
            if ours not in old_streams:
                ours.close()  # closefd=False: the descriptor stays
        sys.stdout, sys.stderr = old_streams
        warnings.showwarning = old_showwarning
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)
        screen.close()
        log.close()


class BuildDisplay:
    """Progress of a build from its callbacks (``pipelines.build.build_index``'s ``on_start``,
    ``on_progress``, ``on_event``), drawn as a few rows that fit ``console``'s width::

        ⠼ partition space ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 0/2 0:00:14
          step embed, 0:00:03 (6 steps done)
          sentences: 24 vectors in 0.1s (240/s; 0 unchanged, from cache 0)

    Finished runs are printed above as ``✓ partition space in 0:18.2``. Elapsed times come from
    ``clock`` at render time, so they advance between events. ``log`` (optional) gets one timestamped
    line per event, around whatever the libraries wrote there.
    """

    def __init__(self, console: Console, log: TextIO | None = None, log_path: Path | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        self.console = console
        self.log = log
        self.log_path = log_path
        self.clock = clock
        self.t0 = clock()
        self._lock = threading.Lock()
        self.label = "loading the pipelines"
        self.position: tuple[int, int] | None = None  # (runs done, runs in all)
        self.step = ""
        self.step_t0 = self.t0
        self.steps_done = 0
        self.steps_in_run: int | None = None
        self.last_line = ""
        self.blocked: tuple[str, str] | None = None  # (step, message) of the pool wait last printed
        self.own_lines = 0  # lines this display wrote to the log (the rest came from the libraries)
        self._spinner = Spinner("dots", style="green")

    # -- the build's callbacks ------------------------------------------------------------------
    def start(self, what: str, i: int, n: int, steps: int | None = None) -> None:
        """A run starts: partition ``what`` (or ``publish_index``), the ``i``-th of ``n``, with ``steps`` steps (when
        known: the bar then moves as they end)."""
        if self.log_path is not None and self.position is None:  # the first run: something will be built
            _say_with_path(self.console, "[dim]Log (library warnings, Dagster):[/]", self.log_path)
        with self._lock:
            self.label = "publishing the index" if what == "publish_index" else f"partition {what}"
            self.position = (i, n)
            self.step, self.step_t0, self.steps_done, self.last_line = "", self.clock(), 0, "starting the run"
            self.steps_in_run = steps
        self._write(f"{self.label}: run {i + 1} of {n} starts")

    def waiting(self, message: str) -> None:
        """The build waits for another build of the same data root (``mmkg.index.lock.build_lock``)."""
        self.console.print(f"[yellow]{escape(message)}[/]")
        with self._lock:
            self.label = "waiting for the other build"
        self._write(message)

    def done(self, what: str, seconds: float) -> None:
        """A run ended after ``seconds``."""
        took = f" in {clock(seconds)}"
        if what == "publish_index":
            self.console.print(f"[green]✓[/] published{took}")
        else:  # a long folder name loses its end, with an ellipsis; the time stays on the line
            name = _shorten(what, self.console.width - cell_len(f"✓ partition {took}"))
            self.console.print(f"[green]✓[/] partition {escape(name)}{took}")
        with self._lock:
            if self.position:
                self.position = (self.position[0] + 1, self.position[1])
            self.step, self.last_line, self.steps_done = "", "", 0
        self._write(f"{'published' if what == 'publish_index' else 'partition ' + what} in {seconds:.1f}s")

    def event(self, ev: StepEvent) -> None:
        """A step started or ended, or an asset logged a line (``pipelines.progress.StepEvent``)."""
        with self._lock:
            if ev.kind == "step_start":
                self.step, self.step_t0, self.last_line = ev.step, self.clock(), ""
            elif ev.kind == "step_success":
                self.steps_done += 1
            elif ev.kind in ("log", "blocked"):
                self.step = self.step or ev.step
                self.last_line = ev.message
            label = self.label
            said_before, self.blocked = self.blocked, (ev.step, ev.message) if ev.kind == "blocked" else self.blocked
        if ev.kind in ("step_failure", "step_interrupted"):
            how = "failed" if ev.kind == "step_failure" else "interrupted"
            self.console.print(f"[red]✗[/] {escape(label)}: step {escape(ev.step)} {how}")
        if ev.kind == "blocked" and said_before != self.blocked:  # Dagster repeats it each minute: said once
            self.console.print(f"[yellow]{escape(label)}: step {escape(ev.step)} {escape(ev.message)}[/]")
        if ev.kind == "step_start":
            self._write(f"{label}: {ev.step} started")
        elif ev.kind == "step_success":
            self._write(f"{label}: {ev.step} done" + (f" in {ev.seconds:.1f}s" if ev.seconds is not None else ""))
        elif ev.kind == "step_failure":
            self._write(f"{label}: {ev.step} FAILED: {ev.message}")
        elif ev.kind == "step_interrupted":
            self._write(f"{label}: {ev.step} INTERRUPTED")
        else:
            self._write(f"{label}: {ev.step}: {ev.message}")

    def _write(self, line: str) -> None:
        if self.log is None:
            return
        stamp = dt.datetime.now().strftime("%H:%M:%S")
        text = f"[mmkg {stamp}] {line}\n"
        self.log.write(text)
        self.log.flush()
        self.own_lines += text.count("\n")  # an asset's message may span lines

    def progress(self) -> tuple[float, int | None]:
        """``(runs completed, runs in all)`` as the bar shows them: the running run counts by its steps done."""
        with self._lock:
            done, total = self.position if self.position else (0, None)
            return _completed(done, total, self.steps_done, self.steps_in_run), total

    # -- drawing --------------------------------------------------------------------------------
    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        now = self.clock()
        width = options.max_width
        with self._lock:
            label, position, step, steps_done = self.label, self.position, self.step, self.steps_done
            step_t0, last_line, steps_in_run = self.step_t0, self.last_line, self.steps_in_run
        top = Table.grid(padding=(0, 1))
        top.add_column(no_wrap=True)  # spinner
        top.add_column(no_wrap=True, overflow="ellipsis", ratio=1, min_width=8)  # what runs
        top.add_column(no_wrap=True, width=max(min(width - 40, 40), 10))  # bar
        top.add_column(no_wrap=True, justify="right")  # runs done / runs
        top.add_column(no_wrap=True, style="yellow")  # elapsed
        done, total = position if position else (0, None)
        if total and done >= total:  # every run ended: the ✓ lines say it all, no row of a step that is over
            yield Group()
            return
        top.add_row(self._spinner.render(now), Text(label, style="bold"),
                    ProgressBar(total=total, completed=_completed(done, total, steps_done, steps_in_run),
                                animation_time=now),
                    Text(f"{done}/{total}" if total else "", style="green"), _hms(now - self.t0))  # fmt: skip
        rows: list = [top]
        if step:
            done_note = f" ({steps_done} step{'s' if steps_done > 1 else ''} done)" if steps_done else ""
            rows.append(Text("  " + fit(f"step {step}, {_hms(now - step_t0)}{done_note}", width - 2), style="cyan"))
        if last_line:
            rows.append(Text("  " + fit(last_line, width - 2), style="dim"))
        yield Group(*rows)

    def live(self) -> Live:
        """A ``Live`` on ``console`` that redraws this display 8 times a second from its own thread."""
        return Live(self, console=self.console, refresh_per_second=8, transient=True,
                    redirect_stdout=False, redirect_stderr=False)  # fmt: skip

    def library_lines(self) -> int:
        """Lines in the log that the libraries wrote (all lines but the display's own)."""
        if self.log_path is None or not self.log_path.exists():
            return 0
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return max(sum(1 for _ in f) - self.own_lines, 0)


def _completed(done: int, total: int | None, steps_done: int, steps_in_run: int | None) -> float:
    """Runs done, and the share of the running one's steps done (when its step count is known), for the bar: it
    moves within a run, and never shows a run whole before the run ends."""
    part = min(steps_done / steps_in_run, 0.99) if steps_in_run and total and done < total else 0.0
    return done + part


def clock(seconds: float) -> str:
    """12.4 -> 0:12.4; 3725 -> 1:02:05.0: how the CLI, the build display and the steps' progress lines write a
    time (the one definition; ``mmkg.cli.common`` and ``assets.ingest`` import it)."""
    h, rest = divmod(float(seconds), 3600)
    m, s = divmod(rest, 60)
    return f"{int(h)}:{int(m):02d}:{s:04.1f}" if h else f"{int(m)}:{s:04.1f}"


@contextlib.contextmanager
def build_display(console: Console, data_root: Path, screen: Console | None = None) -> Iterator[BuildDisplay]:
    """Show a build's progress on ``console``'s terminal while its output goes to a new log file.

    Names the log when the first run starts; at the end, says how many lines the libraries wrote
    there. A build that ran nothing and heard nothing leaves no log. ``screen``
    (tests) is the console the display draws on; by default one on a copy of the terminal's descriptor.
    """
    path = build_log_path(data_root)
    made = [p for p in (path.parent, *path.parent.parents) if not p.exists()]  # removed again if nothing ran
    path.parent.mkdir(parents=True, exist_ok=True)
    prune_logs(path.parent, KEEP_LOGS - 1)
    width = None if (os.isatty(0) or "COLUMNS" in os.environ) else console.width  # see below
    with output_to_log(path) as out:
        # The display's own console on the terminal's copy: rich sizes it from the terminal (descriptor 0 or
        # COLUMNS; 1 and 2 now point at the log) and draws only while its file is a terminal.
        if screen is None:
            screen = Console(file=out.screen, width=width, force_terminal=console.is_terminal or None,
                             no_color=console.no_color)  # fmt: skip
        display = BuildDisplay(screen, log=out.log, log_path=path)
        try:
            with display.live():
                yield display
        finally:
            out.log.flush()
            n = display.library_lines()
            if n:
                _say_with_path(screen, f"[dim]{n} line{'s' if n != 1 else ''} of library output in[/]", path)
            elif display.position is None:  # nothing ran (the index was up to date) and nothing was said
                path.unlink(missing_ok=True)
                for folder in made:  # innermost first; only folders this build made, and only while empty
                    with contextlib.suppress(OSError):
                        folder.rmdir()


def _say_with_path(console: Console, words: str, path: Path) -> None:
    """``words`` and ``path`` on one line, or the path whole on a line of its own (never cut, never folded)."""
    if cell_len(Text.from_markup(words).plain) + 1 + cell_len(str(path)) <= console.width:
        console.print(f"{words} {escape(str(path))}")
    else:
        console.print(words)
        console.print(escape(str(path)), soft_wrap=True)  # one line to copy, even where the terminal folds it
