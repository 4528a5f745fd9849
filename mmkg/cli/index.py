"""``mmkg init``, ``mmkg index ...`` (build, update, status, info, versions, verify, rollback, gc) and
``mmkg ui``: making and keeping an index."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from mmkg.build_display import clock
from mmkg.cli.common import (
    CorpusOption,
    DataRootOption,
    IndexPath,
    Processes,
    app,
    console,
    current_settings,
    environ,
    err_console,
    index_app,
    index_root,
    root_env,
    roots,
)


@index_app.command("info")
def index_info(index: IndexPath = None, as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Version, counts, encoder, ANN-indexed tables and size on disk of the current index."""
    from mmkg.index.integrity import describe

    try:
        info = describe(index_root(index))  # the manifest only: no vectors, graph or model
    except (FileNotFoundError, ValueError) as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    if as_json:
        print(json.dumps(info, indent=2))
        return
    t = Table(show_header=False, title=f"mmkg index at {info['root']}")
    t.add_row("version", info["version"])
    t.add_row("created", info["created_at"])
    t.add_row("versions kept", str(len(info["versions"])))
    t.add_row("encoder", info["encoder"])
    t.add_row("partitions", ", ".join(info["partitions"]))
    for key, value in info["counts"].items():
        t.add_row(key, f"{value:,}")
    t.add_row("ANN-indexed tables", ", ".join(info["ann_indexed"]) or "none: all searched exactly, in memory")
    t.add_row("size on disk", f"{info['size_bytes'] / 2**20:.1f} MiB")
    console.print(t)


@index_app.command("versions")
def index_versions(index: IndexPath = None) -> None:
    """The published versions under the index root, oldest first; the current one is marked."""
    from mmkg.index.manifest import CURRENT, current_version, list_versions

    root = index_root(index)
    versions = list_versions(root)
    if not versions:
        err_console.print(f"[red]error:[/] no published version under {root}")
        raise typer.Exit(2)
    try:
        current = current_version(root)
    except (FileNotFoundError, ValueError) as exc:
        current = None
        console.print(f"[yellow]{CURRENT}:[/] {exc}")
    for v in versions:
        console.print(f"{'*' if v == current else ' '} {v}")


@index_app.command("verify")
def index_verify(
    index: IndexPath = None,
    version: Annotated[str | None, typer.Option(help="Version to verify (default: the current one).")] = None,
) -> None:
    """Read every file of a version and compare it with the checksums its manifest recorded; exit 2 on damage."""
    from mmkg.index.integrity import open_version, verify

    root = index_root(index)
    try:
        name, manifest = open_version(root, version, check_sizes=False)  # verify reports sizes with the digests
    except (FileNotFoundError, ValueError) as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    problems = verify(root, manifest)
    if problems:
        for line in problems:
            console.print(f"[red]damaged:[/] {line}")
        console.print(f"version {name}: {len(problems)} problem(s); `mmkg index rollback VERSION` points CURRENT at "
                      "another version, or publish again")  # fmt: skip
        raise typer.Exit(2)
    console.print(f"version {name}: {len(manifest.files):,} files verified, all as published")


@index_app.command("rollback")
def index_rollback(version: Annotated[str, typer.Argument(help="A version name from `mmkg index versions`.")],
                   index: IndexPath = None) -> None:  # fmt: skip
    """Point CURRENT at an earlier (or later) published version, atomically, after checking it opens."""
    from mmkg.index.lock import PublishLocked, publish_lock
    from mmkg.index.manifest import check_version_name, list_versions, set_current
    from mmkg.index.publish import verify_version
    from mmkg.retrieval.smoke import own_vector_probes

    root = index_root(index)
    try:
        check_version_name(version, "the version asked for")
        if version not in list_versions(root):
            raise ValueError(f"no published version {version} under {root}; versions: {list_versions(root)}")
        with publish_lock(root, wait=False):
            problems = verify_version(root, version, own_vector_probes)
            if problems:
                raise ValueError(f"version {version} does not open cleanly: {'; '.join(problems)}")
            set_current(root, version)
    except (ValueError, PublishLocked) as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    console.print(f"CURRENT -> {version}")


def _duration(text: str | None, what: str):
    """``90s``, ``30m``, ``12h``, ``7d`` as a timedelta (None passes through)."""
    import re
    from datetime import timedelta

    if text is None:
        return None
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd])\s*", text)
    if not m:
        raise typer.BadParameter(f"{text!r}: write a number and a unit, e.g. 90s, 30m, 12h or 7d", param_hint=what)
    unit = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}[m.group(2)]
    return timedelta(**{unit: float(m.group(1))})


@index_app.command("gc")
def index_gc(
    index: IndexPath = None,
    keep: Annotated[
        int | None,
        typer.Option(help="Versions to keep, the current one included (default: keep_versions, MMKG_KEEP_VERSIONS)."),
    ] = None,
    older_than: Annotated[
        str | None, typer.Option(help="Only remove versions older than this (90s, 30m, 12h, 7d).")
    ] = None,
    grace: Annotated[str, typer.Option(help="Keep a version a reader opened within this long.")] = "10m",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would go; remove nothing.")] = False,
    compact: Annotated[
        bool, typer.Option("--compact", help="Compact every LanceDB table first, so all of them are pruned now.")
    ] = False,
) -> None:
    """Remove old published versions (never CURRENT, the newest --keep, or one opened within --grace)."""
    from mmkg.index.gc import collect
    from mmkg.index.lock import PublishLocked

    keep = keep if keep is not None else (current_settings().keep_versions or 10**9)
    try:
        report = collect(index_root(index), keep=keep, older_than=_duration(older_than, "--older-than"),
                         grace=_duration(grace, "--grace"), dry_run=dry_run, compact=compact)  # fmt: skip
    except (FileNotFoundError, ValueError, PublishLocked) as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    verb = "would remove" if dry_run else "removed"
    for v in report.removed:
        console.print(f"{verb} {v}")
    for v, why in report.kept.items():
        console.print(f"[dim]kept {v}: {why}[/]")
    n_pruned = report.lance_files_removed
    pruned = f" and {n_pruned} LanceDB file(s) no kept version reads" if n_pruned else ""
    console.print(f"{verb} {len(report.removed)} version(s){pruned}, {report.bytes_freed / 2**20:.1f} MiB")


@app.command()
def init(
    folder: Annotated[
        Path, typer.Argument(help="Project folder to create (may exist, if it holds no project).")
    ] = Path("."),
    example: Annotated[bool, typer.Option(help="Copy one sample partition into corpus/.")] = True,
) -> None:
    """Create a project: corpus/ (one sub-folder per partition), a commented mmkg.toml and a .gitignore."""
    from mmkg.project import NEXT_STEPS, init_project

    try:
        written = init_project(folder, example=example)
    except FileExistsError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    for path in written:
        console.print(f"[green]created[/] {path}")
    question = "Which mission did the first woman to command a Space Shuttle lead?"
    print(NEXT_STEPS.format(folder=folder, question=question))  # commands to copy: never wrapped


def _build(corpus: Path, data_root: Path, trigger: str, **kwargs) -> object:
    """Run ``build_index`` under the live display (``mmkg.build_display``); library output goes to a log file.

    The roots are in this process's environment while the pipelines load, as `mmkg ui` hands them to its code
    location: the jobs the build runs then are the very jobs the UI loads (same snapshot), so the UI can
    re-execute the build's runs as they are. Every run is tagged with ``trigger`` and this command line.
    """
    from mmkg.build_display import build_display

    try:
        with environ(root_env(corpus, data_root)), build_display(console, data_root) as display:
            try:
                from pipelines.build import build_index  # Dagster: imported while the display already runs
                from pipelines.tags import COMMAND_TAG, TRIGGER_TAG
            except ImportError as exc:
                raise _NoPipelines(str(exc)) from exc
            tags = {TRIGGER_TAG: trigger, COMMAND_TAG: shlex.join(["mmkg", *sys.argv[1:]])[:1000]}
            return build_index(
                corpus,
                data_root,
                on_start=display.start,
                on_progress=display.done,
                on_event=display.event,
                on_wait=display.waiting,
                tags=tags,
                **kwargs,
            )
    except _NoPipelines as exc:
        err_console.print(f"[red]error:[/] building an index needs the project's Dagster pipelines ({exc})")
        raise typer.Exit(2) from exc
    except (RuntimeError, ValueError, FileNotFoundError) as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(getattr(exc, "exit_code", 1)) from exc  # 130 for a build stopped by Ctrl-C or SIGTERM


class _NoPipelines(Exception):
    pass


def _up_to_date(corpus: Path, data_root: Path, partitions: list[str] | None, stale_only: bool) -> bool:
    """Say so and return True when the build or update would change nothing: decided before the display starts and
    Dagster loads (``pipelines.status.nothing_to_build``), so the answer takes as long as `mmkg index status`."""
    from mmkg.ingest.files import list_partitions

    try:
        from pipelines.status import nothing_to_build
    except ImportError:
        return False  # _build names the missing pipelines
    keys = partitions or list_partitions(corpus)
    version = nothing_to_build(corpus, data_root, keys, stale_only) if keys else None
    if version:
        rest = "nothing to update" if stale_only else "nothing to build (--force builds anyway)"
        console.print(f"[green]up to date[/]: index {version} covers the corpus as it is; {rest}")
    return version is not None


def _build_summary(report, data_root: Path) -> None:
    import polars as pl

    for note in report.notes:
        err_console.print(f"[yellow]note:[/] {note}")
    if report.reused:
        console.print(f"[green]up to date[/]: index {report.index_version} covers the corpus as it is; "
                      "nothing to build (--force builds anyway)")  # fmt: skip
        return
    t = Table(show_header=False, title=f"index {report.index_version}")
    t.add_row("partitions built", f"{len(report.partitions)}" + (f" (up to date: {len(report.skipped)})"
                                                                if report.skipped else ""))  # fmt: skip
    t.add_row("documents / pages / chunks", f"{report.documents:,} / {report.pages:,} / {report.chunks:,}")
    t.add_row("time", f"{clock(report.load_s + report.wall_s)} (loading the pipelines {clock(report.load_s)}, "
                      f"publish {clock(report.publish_s)}), peak memory "
                      f"{report.peak_bytes / 2**30:.1f} GiB")  # fmt: skip
    files = [data_root / "tables" / "rejected_files" / f"{k}.parquet" for k in report.partitions]
    files = [f for f in files if f.exists()]
    if files:
        rejected = pl.concat([pl.read_parquet(f) for f in files], how="diagonal_relaxed")
        if rejected.height:
            by = dict(rejected.group_by("stage").len().iter_rows())
            t.add_row("rejected or cut", ", ".join(f"{n} {stage}" for stage, n in sorted(by.items())) +
                      "  (mmkg sql \"SELECT * FROM rejected_files\")")  # fmt: skip
    console.print(t)


@index_app.command("build")
def index_build(
    corpus: CorpusOption = None,
    data_root: DataRootOption = None,
    partition: Annotated[
        list[str] | None, typer.Option("--partition", "-p", help="Only these partitions (repeat the flag).")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Build even when the index matches the corpus.")] = False,
    cold: Annotated[bool, typer.Option("--cold", help="Clear the parse, vector and OCR caches first.")] = False,
    processes: Processes = None,
) -> None:
    """Index every partition of the corpus through the Dagster jobs (in this process) and publish a version.

    The runs land in the data root's Dagster instance, so `mmkg ui` shows them afterwards.
    """
    corpus, data_root = roots(corpus, data_root)
    missing = sorted(set(partition or []) - {p.name for p in corpus.iterdir() if p.is_dir()})
    if missing:
        err_console.print(f"[red]error:[/] no partition folder {', '.join(missing)} under {corpus}")
        raise typer.Exit(2)
    if not (force or cold) and _up_to_date(corpus, data_root, partition, stale_only=False):
        return
    console.print(f"Indexing [bold]{corpus}[/] into [bold]{data_root}[/]")
    report = _build(corpus, data_root, "build", partitions=partition or None, reuse=not (force or cold), cold=cold,
                    processes=processes)  # fmt: skip
    _build_summary(report, data_root)


@index_app.command("update")
def index_update(
    corpus: CorpusOption = None,
    data_root: DataRootOption = None,
    processes: Processes = None,
    trigger: Annotated[
        str, typer.Option("--trigger", hidden=True, help="Why it runs (tags the runs): update, or upload (mmkg serve).")
    ] = "update",
) -> None:
    """Re-index only the partitions that changed (or are new, or whose last run failed), then publish."""
    if trigger not in ("update", "upload"):
        raise typer.BadParameter(f"{trigger!r}: update or upload", param_hint="--trigger")
    corpus, data_root = roots(corpus, data_root)
    if _up_to_date(corpus, data_root, None, stale_only=True):
        return
    report = _build(corpus, data_root, trigger, stale_only=True, processes=processes)
    for key, why in report.stale.items():
        console.print(f"  {key}: {why}")
    _build_summary(report, data_root)


@index_app.command("status")
def index_status(corpus: CorpusOption = None, data_root: DataRootOption = None,
                 as_json: Annotated[bool, typer.Option("--json")] = False) -> None:  # fmt: skip
    """Each partition's fingerprint and whether it is indexed, changed or new; the published version."""
    corpus, data_root = roots(corpus, data_root)
    try:
        from pipelines.status import index_status as status_of
    except ImportError as exc:
        err_console.print(f"[red]error:[/] index status reads the Dagster instance; the project's pipelines are "
                      f"missing ({exc})")  # fmt: skip
        raise typer.Exit(2) from exc
    try:
        status = status_of(corpus, data_root)
    except ValueError as exc:  # the instance's configuration (a bad MMKG_DAGSTER_POSTGRES_URL) or its records
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    if as_json:
        print(json.dumps(status, indent=2, default=str))
        return
    t = Table(title=f"{corpus} -> {data_root}")
    for col in ("partition", "fingerprint", "state", "last ingest", "in the index"):
        t.add_column(col)
    colour = {"indexed": "green", "changed": "yellow", "never indexed": "yellow", "incomplete": "red",
              "removed": "red"}  # fmt: skip
    for row in status["partitions"]:
        state = row["state"]
        t.add_row(row["partition"], row["fingerprint"][:12], f"[{colour.get(state, 'white')}]{state}[/]",
                  row["last_ingest"] or "", "yes" if row["published"] else "no")  # fmt: skip
    console.print(t)
    pub = status["published"]
    console.print(f"published: {pub['version']} at {pub['created_at']}" if pub else "published: nothing yet")
    console.print(status["advice"])


@app.command()
def ui(
    port: Annotated[int, typer.Option("--port", "-p", min=1, max=65535, help="Port of the web server.")] = 3000,
    host: Annotated[
        str, typer.Option("--host", help="Address to listen on (0.0.0.0: every interface; the UI has no login).")
    ] = "127.0.0.1",
    corpus: CorpusOption = None,
    data_root: DataRootOption = None,
) -> None:
    """Open the Dagster UI (dagster dev) on this project: the runs `mmkg index build` and `update` made.

    It loads the installed pipelines.definitions on the data root's Dagster home, where the CLI's builds write.
    Its daemon runs the sensors and schedules switched on. Ctrl-C stops it.
    """
    import socket

    corpus, data_root = roots(corpus, data_root)
    try:
        from pipelines.build import CODE_LOCATION, dagster_home
    except ImportError as exc:
        err_console.print(f"[red]error:[/] the Dagster UI needs the project's Dagster pipelines ({exc})")
        raise typer.Exit(2) from exc
    with socket.socket() as s:  # one line now rather than dagster dev's traceback later
        try:
            s.bind((host, port))
        except OSError as exc:
            err_console.print(f"[red]error:[/] cannot listen on {host}:{port} ({exc.strerror}); pass --port")
            raise typer.Exit(2) from exc
    home = dagster_home(data_root)
    env = {**os.environ, "DAGSTER_HOME": str(home), **root_env(corpus, data_root)}
    for offline in ("HF_HUB_OFFLINE", "YOLO_OFFLINE"):  # runs read local models, as scripts/ui.sh had them
        env.setdefault(offline, "1")
    # -d: this folder, so an `mmkg init` project loads the installed pipelines (the checkout's own, there)
    # the module's name is the location's: the one the CLI's runs name (pipelines.build.code_location_origin)
    # -W: `dagster dev` warns that it is superseded by `dg dev`, which needs a dg project layout this one has not
    cmd = [sys.executable, "-W", "ignore:Function `dev_command` is superseded:FutureWarning", "-m", "dagster", "dev",
           "-m", CODE_LOCATION, "-d", str(Path.cwd()), "-h", host, "-p", str(port)]  # fmt: skip
    console.print(f"Dagster UI on [bold]http://{host}:{port}[/] (DAGSTER_HOME={home}); Ctrl-C stops it")
    sys.stdout.flush()
    sys.stderr.flush()
    raise typer.Exit(_supervise(cmd, env))


class _Stop(Exception):
    pass


def _supervise(cmd: list[str], env: dict[str, str], grace_s: float = 10.0) -> int:
    """Run ``cmd`` (dagster dev: a webserver, a daemon and their code servers) in a process group of its own until
    it ends, or until this process gets SIGINT, SIGTERM or SIGHUP: then the whole group gets SIGINT (dagster dev's
    own shutdown), SIGTERM after ``grace_s``, SIGKILL after as long again (``mmkg.processes.stop_groups``), so no
    process is left behind.

    Not exec'd in place: started in the background (``mmkg ui &``), a shell has SIGINT ignored, and dagster dev
    then ignored SIGINT and SIGTERM alike, leaving five processes to kill one by one. The handlers are set before
    the child starts, so it gets the default dispositions rather than the ignored one."""
    import signal
    import subprocess

    def stop(signum: int, frame: object) -> None:
        raise _Stop(signal.Signals(signum).name)

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)
    proc = subprocess.Popen(cmd, env=env, start_new_session=True)
    try:
        return proc.wait()
    except _Stop as why:
        from mmkg.processes import stop_groups

        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)  # a second Ctrl-C must not cut the shutdown short
        stop_groups([proc.pid], [(signal.SIGINT, grace_s), (signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)])
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)  # reap dagster dev itself
        err_console.print(f"stopped the Dagster UI ({why})")
        return 0
