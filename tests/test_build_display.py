"""The live display of ``mmkg index build``/``update`` driven with events directly (no build, no Dagster run).

What a user saw before: no step until the partition had finished, a frozen timer, LanceDB's WARN
lines in the middle of the display and lines cut mid-word at 80 columns. Each test pins one of them.
"""

from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
import time
import types
import warnings
from pathlib import Path

import pytest
from rich.cells import cell_len
from rich.console import Console

from mmkg.build_display import BuildDisplay, build_display, fit, output_to_log
from pipelines.progress import StepEvent


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def screen(width: int = 80) -> Console:
    return Console(record=True, width=width, file=io.StringIO(), force_terminal=True, color_system=None)


def render(display: BuildDisplay) -> list[str]:
    console = display.console
    console.print(display)
    return console.export_text(clear=True).splitlines()


LONG_LOG = ("sentences: 2,300 vectors in 4.1s (561/s; 1,200 unchanged, from cache) with text:all-MiniLM-L6-v2 "
            "publishing nothing yet")  # fmt: skip


def test_the_running_step_is_shown_before_the_partition_finishes():
    clock = Clock()
    display = BuildDisplay(screen(), clock=clock)
    display.start("space", 0, 2)
    display.event(StepEvent("step_start", "parse", 'Started execution of step "parse".'))
    clock.t += 2
    shown = "\n".join(render(display))
    assert "partition space" in shown and "0/2" in shown
    assert "step parse, 0:00:02" in shown  # the step and how long it has run, while the partition still runs
    assert "✓" not in shown  # nothing finished yet

    display.event(StepEvent("log", "parse", "parsed 6 chunks in 1.3s"))
    display.event(StepEvent("step_success", "parse", "", seconds=1.3))
    display.event(StepEvent("step_start", "embed", ""))
    shown = "\n".join(render(display))
    assert "step embed" in shown and "1 step done" in shown
    assert "parsed 6 chunks" not in shown  # the last log line belongs to the step that wrote it


def test_the_bar_moves_with_the_steps_of_the_running_run():
    """It stayed at 0/2 through a whole partition run: now each step done moves it, short of the run's end."""
    display = BuildDisplay(screen(), clock=Clock())
    display.start("space", 0, 2, steps=4)
    assert display.progress() == (0.0, 2)
    for step in ("ingest", "parse", "embed", "index"):
        display.event(StepEvent("step_start", step, ""))
        display.event(StepEvent("step_success", step, "", seconds=1.0))
    assert display.progress() == (0.99, 2)  # every step done, the run not yet ended: not shown whole
    display.done("space", 4.0)
    assert display.progress() == (1.0, 2)
    display.start("publish_index", 1, 2, steps=2)
    display.event(StepEvent("step_success", "graph", "", seconds=1.0))
    assert display.progress() == (1.5, 2)
    display.done("publish_index", 2.0)
    assert display.progress() == (2, 2)
    # the live rows end with the last run: no frame shows "✓ published" under a step that still seems to run
    said = display.console.export_text(clear=True)  # what done() printed: the ✓ lines
    assert "✓ published in 0:02.0" in said
    assert not "".join(render(display)).strip()


def test_the_timers_advance_without_new_events():
    clock = Clock()
    display = BuildDisplay(screen(), clock=clock)
    display.start("space", 0, 2)
    display.event(StepEvent("step_start", "ground_images", ""))
    first = render(display)
    clock.t += 75  # a long step: no event for 75 s
    second = render(display)
    assert first != second
    assert first[0].endswith("0:00:00") and second[0].endswith("0:01:15")  # the build's elapsed time
    assert first[1] == "  step ground_images, 0:00:00" and second[1] == "  step ground_images, 0:01:15"
    assert first[0][0] != second[0][0]  # the spinner's frame moved too


def test_the_live_display_redraws_from_its_own_thread_while_the_main_thread_waits():
    out = io.StringIO()
    display = BuildDisplay(Console(file=out, width=80, force_terminal=True, color_system=None))
    display.start("space", 0, 2)
    with display.live():
        display.event(StepEvent("step_start", "ground_images", ""))
        time.sleep(1.3)  # a step that computes: no event, the main thread busy elsewhere
    frames = out.getvalue().count("step ground_images")
    assert frames >= 5  # 8 redraws a second, not one per event
    assert "0:00:01" in out.getvalue()


def test_every_line_fits_80_columns_and_cuts_only_between_words():
    clock = Clock()
    display = BuildDisplay(screen(80), clock=clock)
    states = [render(display)]  # loading the pipelines
    display.start("a-partition-with-a-rather-long-folder-name-from-some-archive", 0, 12)
    display.event(StepEvent("step_start", "retrieval_index_smoke_retrieval_with_a_long_check_name", ""))
    display.event(StepEvent("log", "embed", LONG_LOG))
    states.append(render(display))
    display.event(StepEvent("log", "ingest", "[12/400] " + "/".join(["a-very-long-folder"] * 8) + "/file.pdf"))
    states.append(render(display))
    display.done("a-partition-with-a-rather-long-folder-name-from-some-archive", 1234.5)
    display.start("publish_index", 12, 13)
    states.append(render(display))
    for lines in states:
        assert lines, "the display drew nothing"
        for line in lines:
            assert cell_len(line) <= 80, line
    log_row = states[1][-1].strip()
    assert log_row.endswith("…")
    kept = log_row[:-1]
    assert LONG_LOG.startswith(kept) and LONG_LOG[len(kept)] == " "  # cut at a word: "published", never "publishin…"
    done, top = states[3][0], states[3][1]
    assert done.startswith("✓ partition a-partition-with") and done.endswith("… in 20:34.5")  # the name gives way
    assert "publishing the index" in top and "12/13" in top


def test_fit_keeps_short_text_and_cuts_long_text_at_a_word():
    assert fit("embed: 6 vectors", 80) == "embed: 6 vectors"
    assert fit("retrieval_index: published v2026 (changed: ['space'])", 30) == "retrieval_index: published…"
    assert cell_len(fit("x" * 200, 40)) == 40  # one long token: cut where it must be


def test_library_output_lands_in_the_log_file_not_on_the_console(tmp_path: Path, capfd: pytest.CaptureFixture,
                                                                 monkeypatch: pytest.MonkeyPatch):  # fmt: skip
    monkeypatch.chdir(tmp_path)  # a project folder: the data root is relative, ".mmkg"
    # not a terminal: the live rows are not drawn (their cursor moves do not record), the printed lines are
    console = Console(record=True, width=80, file=io.StringIO(), force_terminal=False)
    with build_display(console, Path(".mmkg"), screen=console) as display:
        display.start("space", 0, 2)
        display.event(StepEvent("step_start", "embed", ""))
        display.event(StepEvent("log", "embed", "a message\nof three\nlines"))  # the build's own, not counted
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.warn("a Python warning from a library", UserWarning, stacklevel=1)
        # what LanceDB's Rust logger does: a line on descriptor 2, here from a child process
        subprocess.run([sys.executable, "-c", "import sys; sys.stderr.write('WARN lance::dataset No existing "
                        "dataset\\n'); print('a child on stdout')"], check=True)  # fmt: skip
        os.write(2, b"a raw write to fd 2\n")
        handler = logging.StreamHandler(sys.stderr)  # as Dagster's console logger, made when a run starts
        log = logging.getLogger("test_build_display.library")
        log.addHandler(handler)
        try:
            log.warning("a logging warning")
        finally:
            log.removeHandler(handler)
        print("a print")
        display.done("space", 3.0)
    logs = list(Path(".mmkg", "logs").glob("build-*.log"))
    assert len(logs) == 1
    text = logs[0].read_text(encoding="utf-8")
    noise = ["a Python warning from a library", "WARN lance::dataset No existing dataset", "a child on stdout",
             "a raw write to fd 2", "a logging warning", "a print"]  # fmt: skip
    for line in noise:
        assert line in text
    assert "embed started" in text  # the build's own events, around them
    shown = console.export_text()
    captured = capfd.readouterr()
    for line in noise:
        assert line not in shown and line not in captured.out and line not in captured.err
    assert str(logs[0]) in shown  # the display says where the log is ...
    # ... and how much the libraries wrote there: 2 lines for the warning (message, source line), 1 for each other
    assert "7 lines of library output in .mmkg/logs/build-" in shown
    assert "✓ partition space in 0:03.0" in shown
    assert all(cell_len(line) <= 80 for line in shown.splitlines())


def test_descriptors_and_streams_are_put_back_after_an_error(tmp_path: Path, capfd: pytest.CaptureFixture):
    before = sys.stdout, sys.stderr, warnings.showwarning
    with pytest.raises(RuntimeError), output_to_log(tmp_path / "x.log"):
        raise RuntimeError("a failed build")
    assert (sys.stdout, sys.stderr, warnings.showwarning) == before
    os.write(2, b"after the build\n")
    assert "after the build" in capfd.readouterr().err


def test_the_cli_build_draws_the_display_and_keeps_library_output_off_the_screen(
    tmp_path: Path, capfd: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
):
    """``mmkg index build``'s wiring: the callbacks reach the display, the library's lines reach the log."""
    from mmkg.cli import index as cli

    def build_index(corpus, data_root, on_start, on_progress, on_event, **kwargs):
        on_start("space", 0, 2)
        on_event(StepEvent("step_start", "embed", ""))
        os.write(2, b"[WARN lance::dataset::write::insert] No existing dataset\n")
        on_event(StepEvent("step_success", "embed", "", 1.0))
        on_progress("space", 2.0)
        on_start("publish_index", 1, 2)
        on_progress("publish_index", 1.0)
        return "report"

    monkeypatch.setitem(sys.modules, "pipelines.build", types.SimpleNamespace(build_index=build_index))
    assert cli._build(tmp_path / "corpus", tmp_path / "data", "build") == "report"
    out = capfd.readouterr()
    assert "No existing dataset" not in out.out + out.err
    assert "✓ partition space in 0:02.0" in out.out and "✓ published in 0:01.0" in out.out
    (log,) = (tmp_path / "data" / "logs").glob("build-*.log")
    assert "No existing dataset" in log.read_text(encoding="utf-8")


def test_a_failed_build_names_the_step_and_the_error_reaches_the_terminal(
    tmp_path: Path, capfd: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
):
    import typer

    from mmkg.cli import index as cli

    def build_index(corpus, data_root, on_start, on_progress, on_event, **kwargs):
        on_start("space", 0, 2)
        on_event(StepEvent("step_start", "embed", ""))
        os.write(2, b"Traceback of a library, in the log\n")
        on_event(StepEvent("step_failure", "embed", "CUDA out of memory"))
        raise RuntimeError("partition space failed (step embed: CUDA out of memory)")

    monkeypatch.setitem(sys.modules, "pipelines.build", types.SimpleNamespace(build_index=build_index))
    with pytest.raises(typer.Exit) as exit_:
        cli._build(tmp_path / "corpus", tmp_path / "data", "build")
    assert exit_.value.exit_code == 1
    out = capfd.readouterr()
    assert "✗ partition space: step embed failed" in out.out
    assert "error: partition space failed (step embed: CUDA out of memory)" in out.err  # after the fds came back
    assert "Traceback of a library" not in out.out + out.err
    (log,) = (tmp_path / "data" / "logs").glob("build-*.log")
    assert "embed FAILED: CUDA out of memory" in log.read_text(encoding="utf-8")


def test_an_up_to_date_build_leaves_no_log(tmp_path: Path, capfd: pytest.CaptureFixture,
                                           monkeypatch: pytest.MonkeyPatch):  # fmt: skip
    from mmkg.cli import index as cli

    def build_index(corpus, data_root, on_start, on_progress, on_event, **kwargs):
        return "up to date"  # the published index covers the corpus: no run starts

    monkeypatch.setitem(sys.modules, "pipelines.build", types.SimpleNamespace(build_index=build_index))
    assert cli._build(tmp_path / "corpus", tmp_path / "data", "build") == "up to date"
    assert "Log" not in capfd.readouterr().out
    assert not (tmp_path / "data").exists()  # not even the folders the log would have gone in


def test_builds_started_in_the_same_second_write_their_own_logs(tmp_path: Path):
    import datetime as dt

    from mmkg.build_display import build_log_path

    now = dt.datetime(2026, 12, 2, 5, 30, 0)
    code = ("import datetime as dt, sys; from mmkg.build_display import build_log_path; "
            "print(build_log_path(sys.argv[1], dt.datetime(2026, 12, 2, 5, 30, 0)))")  # fmt: skip
    other = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True)
    mine = build_log_path(tmp_path, now)
    assert mine.name.startswith("build-20261202-053000-") and mine.suffix == ".log"
    assert Path(other.stdout.strip()) != mine and Path(other.stdout.strip()).parent == mine.parent
