"""Build (or re-use) a published index for a corpus through the Dagster jobs, timing every stage.

``build_index`` runs ``index_partition`` for each corpus partition and then ``publish_index``, on a
persistent Dagster instance under the data root (so ``mmkg ui`` shows the runs). The runs execute in this
process but are created as the UI's own would be: with the origin of the ``pipelines.definitions`` code
location (``launch_in_process``), so the UI lists them under their jobs and can re-execute them. It reports
seconds per asset step (Dagster step events, summed over partitions), documents and pages per
second, and the peak memory of the process tree. The quick start and ``mmkg eval`` both use it.

A build is skipped when the data root already holds an index published from exactly these corpus
files (``build_state.json`` records every partition's content fingerprint, the one the corpus sensor
keeps, and the version published).
A ``cold`` build first deletes the data root's model caches (parses, vectors, OCR), so its stage
times are what a fresh machine pays rather than what an edit costs.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import socket
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mmkg.atomic import write_bytes
from mmkg.ingest import list_partitions
from mmkg.ingest.fingerprint import partition_fingerprint
from mmkg.processes import alive
from pipelines.progress import LOGGER_KEY, Listener, StepEvent, interrupted, listening
from pipelines.status import BUILD_STATE, nothing_to_build
from pipelines.tags import TRIGGER_TAG

STATE = BUILD_STATE
_log = logging.getLogger(__name__)
RUN_PID_TAG, RUN_HOST_TAG = "mmkg/pid", "mmkg/host"  # on the runs an mmkg process runs in-process

INSTANCE_CONFIG = Path(__file__).with_name("dagster.yaml")  # shipped: gpu pool limit, run monitoring, no telemetry
# Under the data root: what a warm build reuses (``mmkg.nlp.ParseCache``, ``mmkg.embedding.VectorCache``, OCR).
MODEL_CACHES = ("cache/parse", "cache/vectors", "blobs/ocr")
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
# The code location `mmkg ui` loads (`dagster dev -m pipelines.definitions`): Dagster names it after the module.
CODE_LOCATION = "pipelines.definitions"


@dataclass
class BuildReport:
    """What a build cost: seconds per asset step and per partition, throughput and peak memory."""

    corpus_root: str
    data_root: str
    index_version: str
    partitions: dict[str, float] = field(default_factory=dict)  # partition -> seconds of its index_partition run
    steps: dict[str, float] = field(default_factory=dict)  # asset step -> seconds (summed over partitions)
    publish_s: float = 0.0
    wall_s: float = 0.0  # the runs and the publish (docs/s and pages/s are of this)
    load_s: float = 0.0  # loading the pipelines' code and the Dagster instance before the first run
    peak_bytes: int = 0
    documents: int = 0
    pages: int = 0  # PDF pages, plus one per non-PDF document
    chunks: int = 0
    reused: bool = False  # nothing was built: the published index matches the corpus
    skipped: list[str] = field(default_factory=list)  # stale_only: partitions already up to date
    stale: dict[str, str] = field(default_factory=dict)  # stale_only: partition -> why it ran
    cold: bool = False  # the model caches were cleared first: stage times of a fresh build
    notes: list[str] = field(default_factory=list)  # what the user should act on (an own instance config lacking ...)

    @property
    def documents_per_s(self) -> float:
        return self.documents / self.wall_s if self.wall_s else float("nan")

    @property
    def pages_per_s(self) -> float:
        return self.pages / self.wall_s if self.wall_s else float("nan")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "documents_per_s": self.documents_per_s, "pages_per_s": self.pages_per_s}


def dagster_home(data_root: Path) -> Path:
    """The data root's Dagster home, ``<data_root>/dagster_home`` (absolute), created if missing.

    A home without a ``dagster.yaml`` (or with an empty one) gets the shipped ``pipelines/dagster.yaml``:
    at most one step at a time in the ``gpu`` pool, queued runs one per corpus partition at a time, run
    monitoring on, no telemetry. A home whose config is a copy an earlier release shipped, never edited, gets
    the current one (an old data root would otherwise miss the limits added since); a config a user edited is
    kept, with a warning naming what the shipped one sets that it lacks.
    """
    home = (data_root / "dagster_home").resolve()
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    shipped = instance_config()
    marker = home / SHIPPED_MARKER
    current = config.read_bytes() if config.exists() else b""
    if not current.strip() or (current != shipped and _sha256(current) in _shipped_before(marker)):
        write_bytes(config, shipped)  # a user's own config is never replaced
        # every variant written here (SQLite, PostgreSQL) stays recognised as mmkg's, so either replaces the other
        recorded = [h for h in _shipped_before(marker) - _SHIPPED_BEFORE if h != _sha256(shipped)]
        write_bytes(marker, "".join(f"{h}\n" for h in [_sha256(shipped), *recorded]).encode())
        if current.strip():
            _log.info("%s: replaced the instance config an earlier mmkg shipped with the current one", config)
    elif current == shipped:
        if _sha256(shipped) not in _shipped_before(marker):  # the shipped config, written by hand: untouched too
            write_bytes(marker, f"{_sha256(shipped)}\n".encode())
    elif note := instance_config_note(home):
        _log.warning("%s", note)
    return home


POSTGRES_URL_VAR = "MMKG_DAGSTER_POSTGRES_URL"
#: appended to the shipped config while MMKG_DAGSTER_POSTGRES_URL is set: runs, event logs and schedules in
#: PostgreSQL. The URL stays in the environment (it may hold a password), never in the file.
POSTGRES_STORAGE = f"""
# Storage: PostgreSQL, at the URL in ${POSTGRES_URL_VAR} (mmkg writes this block while that variable is set, and
# takes it out when it is not; every process of the data root needs the variable then)
storage:
  postgres:
    postgres_url:
      env: {POSTGRES_URL_VAR}
""".encode()


def instance_config() -> bytes:
    """The instance config mmkg ships for a data root: ``pipelines/dagster.yaml``, with PostgreSQL storage
    (``POSTGRES_STORAGE``) when ``MMKG_DAGSTER_POSTGRES_URL`` is set."""
    shipped = INSTANCE_CONFIG.read_bytes()
    url = os.environ.get(POSTGRES_URL_VAR, "").strip()
    if not url:
        return shipped
    scheme = url.split("://", 1)[0] if "://" in url else ""
    if scheme != "postgresql+psycopg2":
        # SQLAlchemy 2.1 reads postgresql:// as psycopg 3; dagster-postgres installs psycopg2
        raise ValueError(f"{POSTGRES_URL_VAR} starts with {scheme + '://' if scheme else 'no scheme'}: write it as "
                         "postgresql+psycopg2://USER[:PASSWORD]@HOST:PORT/DATABASE (the driver dagster-postgres uses)")
    return shipped + POSTGRES_STORAGE


def instance_config_note(home: Path) -> str:
    """What an instance config a user edited lacks of the shipped one, in words ("" when nothing, or when the
    config is the shipped one)."""
    config = home / "dagster.yaml"
    try:
        own = config.read_bytes()
    except OSError:
        return ""
    shipped = instance_config()
    missing = _missing_settings(own, shipped) if own != shipped else []
    if not missing:
        return ""
    return (f"{config} is your own and lacks what mmkg's shipped config ({INSTANCE_CONFIG}) sets: "
            f"{', '.join(missing)}; copy them over to get them")  # fmt: skip


#: beside a home's ``dagster.yaml``: the sha256 of the shipped config written there, so a later release knows the
#: copy is untouched and may replace it
SHIPPED_MARKER = ".mmkg-shipped-config"
#: the sha256 of each ``pipelines/dagster.yaml`` released before (commits c666fdc, 1b84469, 35ae4d7, and the one
#: before run monitoring looked every 20 s): an untouched copy of any of them is replaced by the current one
_SHIPPED_BEFORE = frozenset({
    "797db5281d57b3cb6c63875a40ed73d56e5b9574a8c96aa0c9abbc3c54ad5e12",
    "ec8eb1bd05a2a6baa31a38a5217be806c3b6143a33e92098b69bc8396c433ea9",
    "f81bf3e2d45c9a425aa4ffeecfd9a14d1818e19b19a6b0ff654b6b7631f29939",
    "ef5ffbeae1e305a10087847107e2706ec5cf3d0f9ae07e1b9b0ae37f0b0a870c",
})  # fmt: skip


def _sha256(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def _shipped_before(marker: Path) -> set[str]:
    """The hashes of configs mmkg shipped: the known releases and the one the marker records for this home."""
    try:
        recorded = marker.read_text(encoding="utf-8").split()
    except OSError:
        recorded = []
    return {*_SHIPPED_BEFORE, *recorded}


def _missing_settings(own: bytes, shipped: bytes) -> list[str]:
    """The dotted keys (two levels deep) the shipped config sets and ``own`` does not; [] when ``own`` is no
    YAML mapping (Dagster itself says what is wrong with it when the instance loads)."""
    import yaml

    try:
        mine, ours = yaml.safe_load(own), yaml.safe_load(shipped)
    except yaml.YAMLError:
        return []
    if not isinstance(mine, dict) or not isinstance(ours, dict):
        return []
    out = []
    for key, value in ours.items():
        if key not in mine:
            out.append(key)
        elif isinstance(value, dict) and isinstance(mine[key], dict):
            out += [f"{key}.{sub}" for sub in value if sub not in mine[key]]
    return out


def dagster_instance(data_root: Path):
    """The data root's own persistent instance, in ``dagster_home(data_root)``: what ``mmkg ui`` opens.

    One instance per data root: the global assets read every dynamic partition the instance knows,
    so two corpora must never share one.
    """
    from dagster import DagsterInstance
    from dagster._core.instance.ref import InstanceRef

    return DagsterInstance.from_ref(InstanceRef.from_dir(str(dagster_home(data_root))))


def code_location_origin(location: str = CODE_LOCATION, working_directory: Path | None = None):
    """The origin of the code location ``dagster dev -m pipelines.definitions -d <working_directory>`` loads.

    The UI files a run under a job by its repository label (``<repository>@<location>``), so a run created
    with this origin is listed on its job's page and in the timeline, and re-executes from the UI.
    """
    import sys

    from dagster._core.remote_origin import ManagedGrpcPythonEnvCodeLocationOrigin
    from dagster._core.types.loadable_target_origin import LoadableTargetOrigin

    target = LoadableTargetOrigin(executable_path=sys.executable, module_name=CODE_LOCATION,
                                  working_directory=str(working_directory or Path.cwd()))  # fmt: skip
    return ManagedGrpcPythonEnvCodeLocationOrigin(loadable_target_origin=target, location_name=location)


def launch_in_process(instance, job_name: str, run_config: dict, partition_key: str | None = None,
                      data_root: Path | None = None, tags: dict[str, str] | None = None):  # fmt: skip
    """Run the ``job_name`` job of ``pipelines.definitions`` in this process, as a run of its code location.

    What ``execute_in_process`` does, but the run is created with the job's code origin (``pipelines.definitions``,
    ``defs``) and the code location's origin (``code_location_origin``), as a run launched from the UI is, and
    with the definitions' own job (no ephemeral copy), so the UI files it under that job. Resources are the
    definitions'; ``run_config`` points them at a corpus and data root. The step executor is always in-process:
    the build's progress listener and parser workers live in this process.

    A partition's run claims its partition before a step runs (``_claim``, given the ``data_root`` for the
    message): it is marked starting, which the UI's queue counts, and then no other run may be writing the
    partition, else ``PartitionBusy`` and the run is marked canceled.
    """
    from dagster import in_process_executor
    from dagster._core.definitions.job_base import InMemoryJob
    from dagster._core.definitions.reconstruct import ReconstructableRepository
    from dagster._core.execution.api import execute_run
    from dagster._core.remote_origin import RemoteRepositoryOrigin

    from pipelines.definitions import defs

    job = defs.resolve_job_def(job_name)
    if job.executor_def is not in_process_executor:  # MMKG_EXECUTOR names another: the UI's runs use it, not these
        job = job.with_executor_def(in_process_executor)
    repository = defs.get_repository_def().name
    code = ReconstructableRepository.for_module(CODE_LOCATION, "defs", str(Path.cwd()))
    origin = RemoteRepositoryOrigin(code_location_origin(), repository)
    tags = {**job.run_tags, **(job.get_tags_for_partition_key(partition_key, None) if partition_key else {}),
            RUN_PID_TAG: str(os.getpid()), RUN_HOST_TAG: socket.gethostname(), **(tags or {})}  # fmt: skip
    run = instance.create_run_for_job(
        job_def=job,
        run_config=run_config,
        tags=tags,
        remote_job_origin=origin.get_job_origin(job_name),
        job_code_origin=code.get_reconstructable_job(job_name).get_python_origin(),
    )
    if partition_key is not None:
        run = _claim(instance, run, partition_key, data_root or Path("."))
    return execute_run(InMemoryJob(job), run, instance, raise_on_error=False)


def _claim(instance, run, partition_key: str, data_root: Path):
    """Mark ``run`` starting, then raise ``PartitionBusy`` (the run canceled) if another run writes its partition.

    The UI's queue launches at most one run per partition, counting runs that are starting or started; a run
    created here is neither until it is marked so. Marking it first and looking second leaves no gap in which a
    queued run could be launched unseen: one launched before the mark is found by the look, one after waits in
    the queue. Only the instant the queue's daemon takes between counting and launching remains, which no
    client of the run storage can close. Returns the run as the instance now records it.
    """
    from dagster._core.events import DagsterEvent, DagsterEventType

    instance.report_dagster_event(DagsterEvent(event_type_value=DagsterEventType.PIPELINE_STARTING.value,
                                               job_name=run.job_name), run_id=run.run_id)  # fmt: skip
    try:
        _clear_partitions(instance, [partition_key], data_root, own=run.run_id)
    except PartitionBusy as exc:
        instance.report_run_canceled(instance.get_run_by_id(run.run_id), message=str(exc))
        raise
    return instance.get_run_by_id(run.run_id)


class PartitionBusy(RuntimeError):
    """A run this build did not start is writing a partition the build would write (a run from the UI)."""


def _clear_partitions(instance, keys: list[str], data_root: Path, own: str | None = None) -> None:
    """Raise ``PartitionBusy`` when a run that is still going, other than the run ``own``, writes one of ``keys``.

    The UI's queue runs one run per partition at a time, counting the CLI's runs (they carry the partition tag),
    so a queued run waits for a build; a build, run in this process, does not queue, so it checks here: for all
    its partitions before any work, and for each as its run starts (``_claim``, which passes that run as ``own``).
    A run an mmkg process started (the pid and host tags) whose process is gone, killed mid-build, or is this one (a
    build it gave up, the lock held now), is marked failed and no longer counts; a run the UI, a sensor or a
    schedule started cannot be told dead from here, and is named with what to do.
    """
    from dagster import RunsFilter
    from dagster._core.storage.dagster_run import ACTIVE_RUN_STATUSES

    if not keys:
        return
    records = instance.get_run_records(RunsFilter(statuses=ACTIVE_RUN_STATUSES, tags={"dagster/partition": keys}))
    busy = []
    for record in records:
        run = record.dagster_run
        if run.run_id == own:
            continue
        if _gone(run):
            _fail_gone(instance, run)
        else:
            busy.append(record)
    if not busy:
        return
    run = busy[0].dagster_run
    at = busy[0].start_time or busy[0].create_timestamp.timestamp()
    started = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M UTC")
    pid = run.tags.get(RUN_PID_TAG)
    who = f"mmkg process {pid} on {run.tags.get(RUN_HOST_TAG)}" if pid else "the Dagster UI, a sensor or a schedule"
    more = f" and {len(busy) - 1} more run(s)" if len(busy) > 1 else ""
    raise PartitionBusy(
        f"partition {run.tags.get('dagster/partition')!r} is being written by run {run.run_id[:8]} ({run.job_name}, "
        f"started {started} by {who}){more}: two runs of one partition would write its tables at once. Wait for "
        f"it to finish, or terminate it in `mmkg ui --data-root {data_root}` (Runs, the run, Terminate), then "
        f"build again"
    )


def _gone(run) -> bool:
    """Whether ``run`` is an mmkg process's run (the pid and host tags) on this host whose process is gone, or is
    this process's own run left going by a build it gave up (it holds the build lock now)."""
    pid, host = run.tags.get(RUN_PID_TAG, ""), run.tags.get(RUN_HOST_TAG)
    return pid.isdigit() and host == socket.gethostname() and (int(pid) == os.getpid() or not alive(int(pid)))


def _fail_gone(instance, run) -> None:
    pid = run.tags.get(RUN_PID_TAG)
    instance.report_run_failed(run, f"mmkg process {pid} that ran it is gone or gave it up (found by a later build)")


def _free_slots_of_ended_runs(instance) -> list[str]:
    """Give back the pool slots that runs which have ended still hold; one line per run freed, for the report.

    A step of the ``gpu`` pool claims a slot in the instance while it runs and gives it back when it ends. A run
    whose process died inside such a step (killed, out of memory) never does, and the pool, one step at a time,
    would make every later step of it wait forever: the next build hung with no word. Under a daemon, run
    monitoring frees such slots (``free_slots_after_run_end_seconds`` in the shipped ``dagster.yaml``); a CLI
    build has none, so it frees them itself before any work, once ``_clear_partitions`` has marked its dead runs
    failed (a dead build's run of another partition is marked failed here). A slot of a run still going (a UI
    run, another host's build) is left alone: the step waits for it.
    """
    storage = instance.event_log_storage
    if not storage.supports_global_concurrency_limits:
        return []
    holders: dict[str, list[str]] = {}
    for key in sorted(storage.get_concurrency_keys()):
        info = storage.get_concurrency_info(key)
        for slot in info.claimed_slots:
            holders.setdefault(slot.run_id, []).append(f"{key} ({slot.step_key})")
        for pending in info.pending_steps:
            holders.setdefault(pending.run_id, [])
    freed = []
    for run_id, slots in holders.items():
        run = instance.get_run_by_id(run_id)
        if run is not None and not run.is_finished:
            if not _gone(run):
                continue
            _fail_gone(instance, run)
            run = instance.get_run_by_id(run_id)
        storage.free_concurrency_slots_for_run(run_id)
        if slots:
            state = run.status.value if run is not None else "deleted"
            freed.append(f"gave back the pool slot(s) {', '.join(slots)} that run {run_id[:8]} ({state}) held "
                         f"when its process died")  # fmt: skip
    return freed


def _naming_pool_holders(listener: Listener, instance) -> Listener:
    """``listener``, told for a step that waits for a pool slot which runs hold the slots and what to do, instead
    of Dagster's bare "Step blocked by limit for pool gpu" (a build waiting on a UI run's gpu step said nothing)."""

    def forward(ev: StepEvent) -> None:
        if ev.kind == "blocked":
            ev = StepEvent("blocked", ev.step, _pool_wait(instance, ev.message))
        listener(ev)

    return forward


def _pool_wait(instance, pool: str) -> str:
    """What a step that waits for a slot of ``pool`` waits for, said after the step's name: the runs that hold the
    slots, with their job, partition, status and step, and what to do."""
    info = instance.event_log_storage.get_concurrency_info(pool)
    held = []
    for slot in info.claimed_slots:
        run = instance.get_run_by_id(slot.run_id)
        if run is None:
            held.append(f"run {slot.run_id[:8]} (deleted) in step {slot.step_key}")
            continue
        partition = run.tags.get("dagster/partition")
        where = f", partition {partition!r}" if partition else ""
        held.append(f"run {slot.run_id[:8]} ({run.job_name}{where}, {run.status.value}) in step {slot.step_key}")
    slots = f"its {info.slot_count} slot is" if info.slot_count == 1 else f"its {info.slot_count} slots are"
    return (f"waits for a slot of pool {pool!r}: {slots} held{' by ' + ' and '.join(held) if held else ''}. "
            f"It starts when one is given back (`mmkg ui` shows the run; `dagster instance concurrency set {pool} N` "
            f"allows N steps at once)")  # fmt: skip


def _published(data_root: Path) -> tuple[str, set[str]] | None:
    from mmkg.index.manifest import Manifest, current_version

    root = data_root / "index"
    try:
        version = current_version(root)
        return version, set(Manifest.read(root / "versions" / version).partitions)
    except FileNotFoundError:
        return None


def _counts(data_root: Path, partitions: list[str]) -> tuple[int, int, int]:
    import polars as pl

    docs = pages = chunks = 0
    for key in partitions:
        dpath = data_root / "tables" / "documents" / f"{key}.parquet"
        if dpath.exists():
            df = pl.read_parquet(dpath, columns=["kind", "page_starts"])
            docs += df.height
            pages += int(
                df.select(
                    pl.when(pl.col("kind") == "pdf").then(pl.col("page_starts").list.len()).otherwise(1).sum()
                ).item()
                or 0
            )
        cpath = data_root / "tables" / "chunks" / f"{key}.parquet"
        if cpath.exists():
            chunks += pl.scan_parquet(cpath).select(pl.len()).collect().item()
    return docs, pages, chunks


@contextlib.contextmanager
def _build_workers() -> Iterator[None]:
    """Parser and PDF-table workers live across the build's partitions (``mmkg.nlp.parser_pool``,
    ``mmkg.ingest.pdf_table_workers.table_pool``) and stop at its end."""
    from mmkg.ingest.pdf_table_workers import shutdown_table_workers
    from mmkg.nlp import shutdown_parsers

    try:
        yield
    finally:
        shutdown_parsers()
        shutdown_table_workers()


def build_index(
    corpus_root: Path,
    data_root: Path,
    partitions: list[str] | None = None,
    processes: int | None = None,
    reuse: bool = True,
    on_progress: Callable[[str, float], None] | None = None,
    cold: bool = False,
    stale_only: bool = False,
    on_start: Callable[[str, int, int], None] | None = None,
    on_event: Listener | None = None,
    on_wait: Callable[[str], None] | None = None,
    tags: dict[str, str] | None = None,
) -> BuildReport:
    """Index ``partitions`` (default: every corpus folder) and publish; skipped when ``reuse`` and unchanged.

    ``tags`` go on every run it starts (``TRIGGER_TAG``, ``COMMAND_TAG``: why it ran); default: trigger
    ``update`` with ``stale_only``, else ``build``.

    ``cold`` clears the parse, vector and OCR caches first (a benchmark of the full cost); otherwise
    unchanged chunks, texts and images are taken from them.

    ``stale_only`` (``mmkg index update``) runs only the partitions whose folder changed since their
    last ingest, that were never indexed, or whose last run did not finish (the corpus sensor's rule,
    read from the data root's Dagster instance, so runs from the UI count too), then publishes when
    the index is behind. ``report.skipped`` lists the partitions left as they were.

    ``processes`` sets the spaCy parser workers (default: MMKG_SPACY_PROCESSES). ``on_start`` is
    called with the partition (or ``publish_index``) a run starts, its position, the number of
    runs (partitions and the publish) and the run's number of steps, ``on_progress`` with the partition and its
    seconds when it ends, and ``on_event`` with every step start, step end and asset log line
    (``pipelines.progress``).

    One build of a data root runs at a time (``mmkg.index.lock.build_lock``): a second one waits, and
    ``on_wait`` (default: standard error) is told once whose build it waits for.
    """
    from mmkg.index.lock import build_lock

    with build_lock(Path(data_root), on_wait=on_wait or _say_waiting):
        tags = {TRIGGER_TAG: "update" if stale_only else "build", **(tags or {})}
        return _build_index(corpus_root, data_root, partitions, processes, reuse, on_progress, cold, stale_only,
                            on_start, on_event, tags)  # fmt: skip


def _step_counts() -> dict[str, int]:
    """Steps in a run of each job the build launches (assets and their checks): the display's bar moves by step
    within a run, not only when a run ends (it stayed at 0/2 through a whole partition)."""
    from dagster._core.execution.api import create_execution_plan

    from pipelines.definitions import defs

    return {name: len(create_execution_plan(defs.resolve_job_def(name)).step_keys_to_execute)
            for name in ("index_partition", "publish_index")}  # fmt: skip


class BuildInterrupted(RuntimeError):
    """The build was stopped (Ctrl-C, SIGTERM): not a failure of its data or code."""

    exit_code = 130  # the shell's code for a command stopped by Ctrl-C: a scheduler tells a stop from a failure


def _interrupted_in(result) -> str:
    """The step a run was interrupted in (``pipelines.progress.interrupted``), or "" when it was not."""
    from dagster import DagsterEventType

    for ev in result.all_events:
        if ev.event_type == DagsterEventType.STEP_FAILURE and interrupted(ev.event_specific_data.error):
            return ev.step_key or "?"
    return ""


def _step_error(error) -> str:
    """What failed in a step, in one line: the exception under Dagster's wrappers ("Error occurred while executing op
    retrieval_index:" says only where), e.g. the ``PublishError`` that says why the version was refused."""
    while error.cause is not None and (error.cls_name or "").startswith("Dagster"):
        error = error.cause
    lines = error.message.strip().splitlines()
    return lines[-1] if lines else error.cls_name or "an error with no message"


def _say_waiting(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _build_index(
    corpus_root: Path,
    data_root: Path,
    partitions: list[str] | None,
    processes: int | None,
    reuse: bool,
    on_progress: Callable[[str, float], None] | None,
    cold: bool,
    stale_only: bool,
    on_start: Callable[[str, int, int], None] | None,
    on_event: Listener | None,
    tags: dict[str, str],
) -> BuildReport:
    corpus_root, data_root = Path(corpus_root), Path(data_root)
    keys = partitions or list_partitions(corpus_root)
    if not keys:
        raise ValueError(f"{corpus_root} has no partition folders to index")
    if reuse and (version := nothing_to_build(corpus_root, data_root, keys, stale_only)):
        docs, pages, chunks = _counts(data_root, keys)
        return BuildReport(str(corpus_root), str(data_root), version, documents=docs, pages=pages, chunks=chunks,
                           reused=True, skipped=list(keys) if stale_only else [])  # fmt: skip
    t_load = time.perf_counter()
    from dagster import DagsterEventType

    import pipelines.definitions  # noqa: F401  the jobs, with spaCy and the models' code: loaded before the clock
    from mmkg.eval.memory import PeakMemory  # imports the index reader: not for dagster_instance's users
    from pipelines.executors import resources_run_config
    from pipelines.records import asset_keys

    digest = {key: partition_fingerprint(corpus_root / key) for key in keys}  # what the corpus sensor compares
    state_path = data_root / STATE
    published = _published(data_root)

    if cold:
        for rel in MODEL_CACHES:
            shutil.rmtree(data_root / rel, ignore_errors=True)
    instance = dagster_instance(data_root)
    asset_keys(instance)  # cached in the instance's home for `mmkg index status` (pipelines.records)
    known = set(instance.get_dynamic_partitions("corpus"))
    if missing := [k for k in keys if k not in known]:
        instance.add_dynamic_partitions("corpus", missing)
    for gone in sorted(known - set(list_partitions(corpus_root))):  # folders removed since: not in the next publish
        instance.delete_dynamic_partition("corpus", gone)
    report = BuildReport(str(corpus_root), str(data_root), "", cold=cold)
    if note := instance_config_note((data_root / "dagster_home").resolve()):
        report.notes.append(note)
    run_keys = keys
    if stale_only:
        from pipelines.records import publish_check, stale_partitions

        stale = stale_partitions(instance, digest)
        run_keys = [k for k in keys if k in stale]
        report.skipped = [k for k in keys if k not in stale]
        report.stale = stale
        registered = sorted(instance.get_dynamic_partitions("corpus"))
        check = publish_check(instance, registered, data_root / "index")
        if not run_keys and not check.needed and published:
            report.index_version, report.reused = published[0], True
            report.documents, report.pages, report.chunks = _counts(data_root, keys)
            return report
        if not run_keys and check.needed:
            report.notes.append(f"publishing: {check.reason}")
    run_config: dict = {"loggers": {**QUIET["loggers"], LOGGER_KEY: {}}} if on_event else dict(QUIET)
    run_config["resources"] = resources_run_config(corpus_root.resolve(), data_root.resolve())["resources"]
    if processes:
        run_config["resources"]["spacy"] = {"config": {"n_process": processes}}

    def record(result, what: str) -> None:
        if not result.success:
            if stopped := _interrupted_in(result):
                raise BuildInterrupted(
                    f"{what}: interrupted (Ctrl-C or SIGTERM) in step {stopped}. A published index is never left "
                    f"half-written: `mmkg index status` shows where things stand, `mmkg index update` builds "
                    f"what is left"
                )
            failures = [
                f"step {ev.step_key}: {_step_error(ev.event_specific_data.error)}"
                for ev in result.all_events
                if ev.event_type == DagsterEventType.STEP_FAILURE and ev.event_specific_data.error
            ]
            raise RuntimeError(
                f"{what} failed ({'; '.join(failures) or 'see the log above'}); run {result.run_id} holds the "
                f"whole log: `mmkg ui --data-root {data_root}` shows it"
            )
        for ev in result.all_events:
            if ev.event_type == DagsterEventType.STEP_SUCCESS:
                secs = ev.event_specific_data.duration_ms / 1000
                report.steps[ev.step_key] = report.steps.get(ev.step_key, 0.0) + secs

    _clear_partitions(instance, run_keys, data_root)  # before any work; each partition's run claims it again
    report.notes.extend(_free_slots_of_ended_runs(instance))
    t_all = time.perf_counter()
    report.load_s = t_all - t_load
    steps = _step_counts() if on_start else {}
    with (
        PeakMemory() as mem,
        listening(_naming_pool_holders(on_event, instance)) if on_event else contextlib.nullcontext(),
        _build_workers(),
    ):
        for i, key in enumerate(run_keys):
            if on_start:
                on_start(key, i, len(run_keys) + 1, steps.get("index_partition"))
            t0 = time.perf_counter()
            result = launch_in_process(instance, "index_partition", run_config, partition_key=key, data_root=data_root,
                                       tags=tags)  # fmt: skip
            record(result, f"partition {key}")
            report.partitions[key] = time.perf_counter() - t0
            if on_progress:
                on_progress(key, report.partitions[key])
        if on_start:
            on_start("publish_index", len(run_keys), len(run_keys) + 1, steps.get("publish_index"))
        t0 = time.perf_counter()
        result = launch_in_process(instance, "publish_index", run_config, tags=tags)
        record(result, "publishing the index")
        report.publish_s = time.perf_counter() - t0
        if on_progress:
            on_progress("publish_index", report.publish_s)
    report.wall_s = time.perf_counter() - t_all
    report.peak_bytes = mem.peak_bytes
    report.documents, report.pages, report.chunks = _counts(data_root, keys)
    published = _published(data_root)
    if published is None:
        raise RuntimeError(f"publish_index succeeded but {data_root / 'index'} holds no current version")
    report.index_version = published[0]
    state = {"corpus_root": str(corpus_root), "partitions": digest, "index_version": report.index_version}
    write_bytes(state_path, json.dumps(state, indent=2).encode("utf-8"))
    from pipelines.status import cached_records

    cached_records(data_root, keys)  # what `mmkg index status` reads, while Dagster is loaded here anyway
    return report
