"""Scale-out: the same definitions run on a real dask.distributed cluster (scheduler and workers as processes).

The cluster is started with the ``dask`` CLI, the way an operator would start one; the run goes through
``dagster-dask``'s executor against ``cluster: existing``, with a persistent Dagster instance, so every step
is rebuilt and executed inside a worker process and reports its events back through the instance.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
import pytest
from conftest import stop_process_group
from dagster import DagsterEventType, DagsterInstance, execute_job, reconstructable

from mmkg import schemas
from mmkg.ingest import list_partitions
from pipelines import executors

PROJECT = Path(__file__).resolve().parent.parent
SAMPLE_CORPUS = PROJECT / "sample_corpus"
N_WORKERS = 2


def _dask_cli() -> str | None:
    """The project venv's ``dask`` CLI (workers must import this project's code), else one on PATH."""
    local = Path(sys.executable).parent / "dask"
    return str(local) if local.exists() else shutil.which("dask")


@dataclass
class Cluster:
    address: str
    logs: Path
    worker_pids: dict[str, int]  # worker name -> pid of the process that runs its tasks
    procs: list[subprocess.Popen] = field(default_factory=list)


@contextlib.contextmanager
def _cluster(base: Path, extra_env: dict[str, str] | None = None) -> Iterator[Cluster]:
    """A scheduler and ``N_WORKERS`` workers started with the ``dask`` CLI, stopped on exit. ``extra_env`` goes to
    every process (a worker opens the Dagster instance, so it needs e.g. ``MMKG_DAGSTER_POSTGRES_URL``)."""
    cli = _dask_cli()
    if cli is None:
        pytest.skip("the dask CLI is not installed (pip install distributed); cannot start a dask cluster")
    from dask.distributed import Client

    scheduler_file = base / "scheduler.json"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(PROJECT), os.environ.get("PYTHONPATH")])),
        "HF_HUB_OFFLINE": "1",
        "YOLO_OFFLINE": "1",
        "OMP_NUM_THREADS": "1",
        **(extra_env or {}),
    }
    procs: list[subprocess.Popen] = []

    def start(name: str, *args: str) -> None:
        log = open(base / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process below
        procs.append(
            subprocess.Popen(
                [cli, *args], cwd=PROJECT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        )
        log.close()

    try:
        start("scheduler", "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
              "--scheduler-file", str(scheduler_file))  # fmt: skip
        deadline = time.monotonic() + 60
        while not scheduler_file.exists():
            if procs[0].poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"dask scheduler did not start; log:\n{(base / 'scheduler.log').read_text()}")
            time.sleep(0.2)
        for i in range(N_WORKERS):
            # worker 0 stands for a GPU machine: it offers the dask resource that steps of the "gpu" pool claim
            gpu = ["--resources", "GPU=1"] if i == 0 else []
            start(f"worker{i}", "worker", "--scheduler-file", str(scheduler_file), "--nthreads", "1",
                  "--nworkers", "1", "--no-dashboard", "--name", f"worker{i}", *gpu)  # fmt: skip
        address = json.loads(scheduler_file.read_text())["address"]
        with Client(address, timeout="30s") as client:
            client.wait_for_workers(N_WORKERS, timeout=120)
            names = {addr: w["name"] for addr, w in client.scheduler_info(n_workers=-1)["workers"].items()}
            pids = {names[addr]: pid for addr, pid in client.run(os.getpid).items()}
        yield Cluster(address, base, pids, procs)
    finally:
        for proc in reversed(procs):  # workers first, then the scheduler
            stop_process_group(proc, timeout=20)


@pytest.fixture(scope="module")
def dask_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with _cluster(tmp_path_factory.mktemp("dask")) as cluster:
        yield cluster


def _failures(instance: DagsterInstance, run_id: str, logs: Path) -> str:
    """The errors of a failed run, so a failing assertion says why (worker logs hold the rest)."""
    lines = [f"run {run_id} failed; dask logs in {logs}"]
    for entry in instance.all_logs(run_id, of_type={DagsterEventType.STEP_FAILURE, DagsterEventType.RUN_FAILURE}):
        error = getattr(entry.dagster_event.event_specific_data, "error", None)
        lines.append(f"{entry.step_key or 'run'}: {error.to_string() if error else entry.message}")
    return "\n".join(lines)


def test_gpu_steps_share_the_gpu_pool():
    """The speech, grounding and embedding steps claim the Dagster pool "gpu", whatever executor runs them."""
    job = executors.job_on("multiprocess")
    pools = {node.name: node.definition.pool for node in job.graph.nodes}
    assert pools["ground_images"] == "gpu" and pools["embed"] == "gpu"
    assert {name for name, pool in pools.items() if pool == "gpu"} == {"transcripts", "ground_images", "embed"}


def test_executor_names_are_checked(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(executors.ENV_VAR, "dask")
    assert executors.executor_from_env().name == "dask"
    monkeypatch.setenv(executors.ENV_VAR, "")
    assert executors.executor_from_env().name == "in_process"  # all of a run's steps in its one process
    with pytest.raises(ValueError, match=r"unknown executor 'spark'.*multiprocess, in_process, dask"):
        executors.load_executor("spark")


def test_partitions_run_on_dask_workers(dask_cluster: Cluster, tmp_path: Path):
    home = tmp_path / "dagster_home"
    home.mkdir()
    data = tmp_path / "data"
    keys = list_partitions(SAMPLE_CORPUS)
    assert len(keys) >= 3
    run_config = {
        **executors.resources_run_config(SAMPLE_CORPUS, data),
        "execution": {
            "config": {
                "cluster": {"existing": {"address": dask_cluster.address}},
                "pool_resources": {"gpu": {"GPU": 1}},
            }
        },
        "loggers": {"console": {"config": {"log_level": "WARNING"}}},
    }
    job = reconstructable(executors.index_partition_on_dask)
    with DagsterInstance.local_temp(str(home)) as instance:
        assert instance.is_persistent
        instance.add_dynamic_partitions("corpus", keys)
        seconds: dict[str, float] = {}
        for key in keys:
            t0 = time.perf_counter()
            with execute_job(job, instance, run_config=run_config, tags={"dagster/partition": key}) as result:
                assert result.success, _failures(instance, result.run_id, dask_cluster.logs)
                run_id = result.run_id
            seconds[key] = time.perf_counter() - t0
            steps = instance.all_logs(run_id, of_type=DagsterEventType.STEP_SUCCESS)
            pid_of = {e.dagster_event.step_key: e.dagster_event.pid for e in steps}
            assert set(pid_of) >= {"ingest", "chunks", "parse", "ground_images", "embed"}
            # every step ran inside a dask worker process, none in this (orchestrating) process
            assert set(pid_of.values()) <= set(dask_cluster.worker_pids.values()), (pid_of, dask_cluster.worker_pids)
            assert os.getpid() not in pid_of.values()
            # steps of the "gpu" pool went to the worker offering the GPU resource
            assert pid_of["ground_images"] == pid_of["embed"] == dask_cluster.worker_pids["worker0"]
        print(f"dask runs, seconds per partition: {json.dumps({k: round(v, 1) for k, v in seconds.items()})}")

    for key in keys:
        for name in ("documents", "chunks", "sentences", "entities", "relations", "objects", "chunk_vectors"):
            path = data / "tables" / name / f"{key}.parquet"
            assert path.exists(), f"{name} missing for {key}"
            frame = pl.read_parquet(path)
            if name in schemas.TABLES:
                assert dict(frame.schema) == dict(schemas.TABLES[name]), name
            assert frame["partition"].unique().to_list() in ([key], []), (name, key)
        assert pl.read_parquet(data / "tables" / "chunks" / f"{key}.parquet").height > 0
    # the workers' own logs show they loaded the project's definitions and ran the steps
    worker_logs = "".join((dask_cluster.logs / f"worker{i}.log").read_text() for i in range(N_WORKERS))
    assert "Traceback" not in worker_logs, worker_logs[-3000:]


@pytest.mark.production
def test_a_dask_run_on_the_postgres_instance_survives_a_killed_worker(tmp_path: Path):
    """The same executor on a Dagster instance kept in PostgreSQL (a throwaway cluster): one dask worker is
    killed while the partition's run goes on; dask runs its tasks elsewhere (its nanny starts it again), and the
    run's outcome and every step's events are recorded in PostgreSQL."""
    import signal
    import threading

    import postgres_cluster
    import psycopg2
    from dask.distributed import Client

    from pipelines.build import dagster_instance

    if why := postgres_cluster.available():
        pytest.skip(why)
    pg = postgres_cluster.Cluster()
    (tmp_path / "dask").mkdir()
    stack = contextlib.ExitStack()
    try:
        os.environ["MMKG_DAGSTER_POSTGRES_URL"] = pg.url
        dask_cluster = stack.enter_context(_cluster(tmp_path / "dask", {"MMKG_DAGSTER_POSTGRES_URL": pg.url}))
        data = tmp_path / "data"
        run_config = {
            **executors.resources_run_config(SAMPLE_CORPUS, data),
            "execution": {"config": {"cluster": {"existing": {"address": dask_cluster.address}},
                                     "pool_resources": {"gpu": {"GPU": 1}}}},
            "loggers": {"console": {"config": {"log_level": "WARNING"}}},
        }  # fmt: skip
        killed: list[int] = []

        def kill_worker1_once_a_step_runs(instance_url: str) -> None:
            deadline = time.monotonic() + 300
            with psycopg2.connect(postgres_cluster.libpq(instance_url)) as con:
                while time.monotonic() < deadline:
                    with con.cursor() as cur:
                        cur.execute("SELECT count(*) FROM event_logs WHERE dagster_event_type = 'STEP_SUCCESS'")
                        if cur.fetchone()[0] >= 1:
                            break
                    time.sleep(0.2)
            with Client(dask_cluster.address, timeout="30s") as client:  # the worker's pid now (a restart changes it)
                names = {addr: w["name"] for addr, w in client.scheduler_info(n_workers=-1)["workers"].items()}
                pids = {names[addr]: pid for addr, pid in client.run(os.getpid).items()}
            os.kill(pids["worker1"], signal.SIGKILL)
            killed.append(pids["worker1"])

        with dagster_instance(data) as instance:
            instance.add_dynamic_partitions("corpus", ["space"])
            killer = threading.Thread(target=kill_worker1_once_a_step_runs, args=(pg.url,), daemon=True)
            killer.start()
            job = reconstructable(executors.index_partition_on_dask)
            with execute_job(job, instance, run_config=run_config, tags={"dagster/partition": "space"}) as result:
                run_id, success = result.run_id, result.success
            killer.join(timeout=60)
            failures = "" if success else _failures(instance, run_id, dask_cluster.logs)
        assert killed, "the run ended before a worker could be killed"
        assert success, failures
        with psycopg2.connect(pg.dsn) as con, con.cursor() as cur:
            cur.execute("SELECT status FROM runs WHERE run_id = %s", (run_id,))
            assert cur.fetchone()[0] == "SUCCESS"
            cur.execute("SELECT count(DISTINCT step_key) FROM event_logs WHERE run_id = %s AND "
                        "dagster_event_type = 'STEP_SUCCESS'", (run_id,))  # fmt: skip
            assert cur.fetchone()[0] >= 10
        assert pl.read_parquet(data / "tables" / "chunk_vectors" / "space.parquet").height > 0
    finally:
        stack.close()  # the dask processes first: they hold connections to the database
        os.environ.pop("MMKG_DAGSTER_POSTGRES_URL", None)
        pg.remove()
