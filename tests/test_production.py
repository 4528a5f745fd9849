"""The production topology with its real parts: PostgreSQL as the Dagster instance's storage, and `mmkg deploy up`'s
separate processes (a gRPC code server, dagster-daemon with the sensors on, dagster-webserver, mmkg serve).

A throwaway PostgreSQL cluster (``postgres_cluster``) holds the instance of an `mmkg init` project. The CLI builds the
first index into it; then a document added to the corpus is re-indexed, published and served by the daemon alone,
the daemon killed with SIGKILL mid-run is started again by `mmkg deploy up` and the change is published once, and
`mmkg deploy down` leaves no process behind. What each test measured goes to test-artifacts/production.json
(docs/results/operating.md quotes it).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import postgres_cluster
import pytest

from mmkg.processes import group_members

pytestmark = pytest.mark.production

MMKG = str(Path(sys.executable).parent / "mmkg")
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
QUESTION = "Which lighthouse keeper painted the STS-93 mission patch?"
FACT = "\n\nThe lighthouse keeper Aurelio Brandvik of Tromso painted the STS-93 mission patch.\n"


@dataclass
class Deployed:
    project: Path
    env: dict[str, str]
    cluster: postgres_cluster.Cluster
    serve: str = ""
    measured: dict = field(default_factory=dict)

    def mmkg(self, *args: str, check: bool = True, timeout: float = 900) -> subprocess.CompletedProcess:
        out = subprocess.run([MMKG, *args], cwd=self.project, env=self.env, capture_output=True, text=True,
                             timeout=timeout)  # fmt: skip
        if check:
            assert out.returncode == 0, f"mmkg {' '.join(args)}: {out.returncode}\n{out.stdout}\n{out.stderr}"
        assert "Traceback" not in out.stdout + out.stderr
        return out

    def state(self) -> dict:
        return json.loads((self.project / ".mmkg" / "deploy" / "state.json").read_text(encoding="utf-8"))

    def answer(self, query: str = QUESTION, k: int = 3) -> str:
        """The text of the chunks the server returns for ``query`` (not the result's echo of the query)."""
        from test_api import Server

        srv = Server(self.serve, None, Path("/dev/null"))  # type: ignore[arg-type]
        code, res = srv.json("POST", "/query", {"text": query, "k": k})
        return " ".join(c["text"] for c in res["chunks"]) if code == 200 else ""

    def wait_served(self, word: str, query: str, present: bool = True, k: int = 3, timeout: float = 300) -> float:
        """Seconds until the served chunks for ``query`` do (or no longer do) hold ``word``."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if (word in self.answer(query, k)) == present:
                return time.monotonic() - t0
            time.sleep(1)
        raise AssertionError(f"the served index did not {'gain' if present else 'lose'} {word!r} in {timeout} s; "
                             f"deploy status:\n{self.mmkg('deploy', 'status').stdout}")  # fmt: skip


def _runs(url: str) -> list[tuple[str, str, str]]:
    """(job name, status, trigger tag) of every run in the PostgreSQL instance, oldest first."""
    import psycopg2

    with psycopg2.connect(postgres_cluster.libpq(url)) as con, con.cursor() as cur:
        cur.execute("SELECT run_id, pipeline_name, status FROM runs ORDER BY id")
        runs = cur.fetchall()
        cur.execute("SELECT run_id, value FROM run_tags WHERE key = 'mmkg/trigger'")
        tags = dict(cur.fetchall())
    return [(job, status, tags.get(run_id, "")) for run_id, job, status in runs]


def _versions(project: Path) -> list[str]:
    folder = project / ".mmkg" / "index" / "versions"
    return sorted(p.name for p in folder.iterdir() if (p / "manifest.json").exists())


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployed]:
    if why := postgres_cluster.available():
        pytest.skip(why)
    cluster = postgres_cluster.Cluster()
    try:
        folder = tmp_path_factory.mktemp("prod")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MMKG_", "DAGSTER_"))}
        env["MMKG_DAGSTER_POSTGRES_URL"] = cluster.url
        subprocess.run([MMKG, "init", "kb"], cwd=folder, env=env, check=True, capture_output=True, timeout=120)
        d = Deployed(folder / "kb", env, cluster)
        d.mmkg("index", "build")
        yield d
    finally:
        if (folder / "kb" / ".mmkg" / "deploy" / "state.json").exists():
            subprocess.run([MMKG, "deploy", "down"], cwd=folder / "kb", env=env, capture_output=True, timeout=60)
        cluster.remove()
        ARTIFACTS.mkdir(exist_ok=True)
        if "d" in locals() and d.measured:
            (ARTIFACTS / "production.json").write_text(json.dumps(d.measured, indent=2), encoding="utf-8")


def test_the_instance_is_in_postgres_and_the_cli_reads_it(deployed: Deployed):
    home = deployed.project / ".mmkg" / "dagster_home"
    assert "env: MMKG_DAGSTER_POSTGRES_URL" in (home / "dagster.yaml").read_text(encoding="utf-8")
    assert not (home / "history" / "runs.db").exists()  # nothing went to SQLite
    runs = _runs(deployed.cluster.url)
    assert [(job, status) for job, status, _ in runs] == [("index_partition", "SUCCESS"), ("publish_index", "SUCCESS")]
    status = json.loads(deployed.mmkg("index", "status", "--json").stdout)
    assert [(r["partition"], r["state"], r["published"]) for r in status["partitions"]] == [("space", "indexed", True)]
    assert "up to date" in deployed.mmkg("index", "update").stdout


def test_a_corpus_change_is_indexed_published_and_served_by_itself(deployed: Deployed):
    port = _free_port()
    out = deployed.mmkg("deploy", "up", "--ui-port", str(_free_port()), "--serve-port", str(port),
                        "--sensor-interval", "5", timeout=400)  # fmt: skip
    assert "serve up" in out.stdout and "postgres instance" in out.stdout, out.stdout
    deployed.serve = f"http://127.0.0.1:{port}"
    assert "Brandvik" not in deployed.answer()
    again = deployed.mmkg("deploy", "up", check=False)  # a second deployment (and daemon) of the data root: refused
    assert again.returncode == 2 and "is running" in again.stderr
    before = len(_versions(deployed.project))
    note = deployed.project / "corpus" / "space" / "patch.md"
    note.write_text("# The STS-93 mission patch" + FACT, encoding="utf-8")
    fresh_add = deployed.wait_served("Brandvik", QUESTION)
    note.unlink()
    fresh_delete = deployed.wait_served("Brandvik", QUESTION, present=False)
    deployed.measured["freshness_s"] = {"add": round(fresh_add, 1), "delete": round(fresh_delete, 1),
                                        "sensor_interval_s": 5}  # fmt: skip
    triggers = {trigger for job, _, trigger in _runs(deployed.cluster.url)[2:]}
    assert triggers == {"sensor"}  # the daemon's sensors ran them, no command
    assert len(_versions(deployed.project)) >= before + 2
    status = deployed.mmkg("deploy", "status").stdout
    assert "corpus_partition_sensor: last tick" in status and "daemon heartbeat: 20" in status, status


def test_the_daemon_killed_mid_run_is_started_again_and_the_change_published_once(deployed: Deployed):
    import psycopg2

    daemon = deployed.state()["processes"]["daemon"]["pid"]
    doc = deployed.project / "corpus" / "space" / "eileen_collins.md"
    before = _versions(deployed.project)
    seen = len(_runs(deployed.cluster.url))
    doc.write_text(doc.read_text(encoding="utf-8") + FACT, encoding="utf-8")
    deadline = time.monotonic() + 120
    while not any(s == "STARTED" for _, s, _ in _runs(deployed.cluster.url)[seen:]):  # the partition run is going
        assert time.monotonic() < deadline, "no run started"
        time.sleep(0.5)
    os.kill(daemon, signal.SIGKILL)
    out = deployed.mmkg("deploy", "up", timeout=300)  # starts the daemon again, and only it
    assert "starting again: daemon" in out.stdout and deployed.state()["processes"]["daemon"]["pid"] != daemon
    took = deployed.wait_served("Brandvik", QUESTION)
    deployed.measured["daemon_killed"] = {"served_after_s": round(took, 1)}
    new = [v for v in _versions(deployed.project) if v not in before]
    time.sleep(12)  # two more sensor intervals: no second publish of the same change
    assert [v for v in _versions(deployed.project) if v not in before] == new and len(new) == 1, new
    assert "all as published" in deployed.mmkg("index", "verify").stdout
    with psycopg2.connect(deployed.cluster.dsn) as con, con.cursor() as cur:
        cur.execute("SELECT count(*) FROM runs WHERE status IN ('STARTED', 'QUEUED', 'STARTING')")
        assert cur.fetchone()[0] == 0  # nothing left hanging


def _started_run(deployed: Deployed, seen: int, timeout: float = 120) -> str:
    """The id of the first run after the first ``seen`` that is STARTED."""
    import psycopg2

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with psycopg2.connect(deployed.cluster.dsn) as con, con.cursor() as cur:
            cur.execute("SELECT run_id, status FROM runs ORDER BY id OFFSET %s", (seen,))
            started = [run_id for run_id, status in cur.fetchall() if status == "STARTED"]
        if started:
            return started[0]
        time.sleep(0.5)
    raise AssertionError("no run started")


def _edit(deployed: Deployed, sentence: str) -> None:
    doc = deployed.project / "corpus" / "space" / "hubble_space_telescope.md"
    doc.write_text(doc.read_text(encoding="utf-8") + f"\n\n{sentence}\n", encoding="utf-8")


def _gpu_slot_holder(deployed: Deployed, run_id: str, timeout: float = 300) -> str:
    """The step of run ``run_id`` that holds the ``gpu`` pool's slot, once one does (transcripts, ground_images or
    embed: the pool's steps claim a slot in the instance's concurrency table while they run)."""
    import psycopg2

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with psycopg2.connect(deployed.cluster.dsn) as con, con.cursor() as cur:
            cur.execute("SELECT step_key FROM concurrency_slots WHERE concurrency_key = 'gpu' AND run_id = %s",
                        (run_id,))
            held = [step for (step,) in cur.fetchall()]
        if held:
            return held[0]
        time.sleep(0.1)
    raise AssertionError(f"run {run_id} never held the gpu pool's slot")


def test_a_run_worker_killed_mid_step_fails_and_the_sensor_asks_again(deployed: Deployed):
    """Run monitoring fails the run whose worker got SIGKILL while a step of the ``gpu`` pool ran; the slot it held
    is freed (else the pool, limited to one step, would wait for it forever, and every later run with it); the
    corpus sensor asks for the partition again (its files did not change since its last look, so it would not
    otherwise), and the change is served."""
    import psycopg2

    seen = len(_runs(deployed.cluster.url))
    _edit(deployed, "The telescope's spare mirror was polished by Quillon Varga in Danbury.")
    run_id = _started_run(deployed, seen)
    step = _gpu_slot_holder(deployed, run_id)
    workers = _run_workers(deployed.state()["processes"]["code_server"]["pid"])
    assert len(workers) == 1, workers
    os.kill(workers[0], signal.SIGKILL)
    took = deployed.wait_served("Quillon", "Quillon telescope", k=5, timeout=400)
    runs = _runs(deployed.cluster.url)[seen:]
    assert ("index_partition", "FAILURE", "sensor") in runs and ("index_partition", "SUCCESS", "sensor") in runs, runs
    with psycopg2.connect(deployed.cluster.dsn) as con, con.cursor() as cur:
        cur.execute("SELECT count(*) FROM concurrency_slots WHERE run_id = %s", (run_id,))
        assert cur.fetchone()[0] == 0  # the killed run's slot went back to the pool
    deployed.measured["run_worker_killed"] = {"killed_in_step": step, "served_after_s": round(took, 1)}
    assert "all as published" in deployed.mmkg("index", "verify").stdout


def test_postgres_stopped_during_a_run_then_started_again(deployed: Deployed):
    """The database goes away mid-run and comes back: the deployment recovers (`mmkg deploy up` starts again
    whatever died of it) and the change is published and served; the index verifies."""
    seen = len(_runs(deployed.cluster.url))
    _edit(deployed, "Its sunshade was stitched by Ottoline Brask of Kiruna.")
    _started_run(deployed, seen)
    deployed.cluster.stop()
    time.sleep(10)
    deployed.cluster.start()
    out = deployed.mmkg("deploy", "up", check=False, timeout=300)
    assert out.returncode == 0 or "is running" in out.stderr, out.stdout + out.stderr
    took = deployed.wait_served("Ottoline", "Ottoline telescope", k=5, timeout=400)
    deployed.measured["postgres_outage"] = {"outage_s": 10, "served_after_restart_s": round(took, 1),
                                            "restarted": out.stdout.strip().splitlines()[:1]}  # fmt: skip
    assert "all as published" in deployed.mmkg("index", "verify").stdout


def _run_workers(code_server: int) -> list[int]:
    """The processes running a run: the code server's gRPC API process starts each run in a process of its own
    (multiprocessing's spawn), beside multiprocessing's resource tracker."""
    from mmkg.processes import cmdline, parent

    members = group_members(code_server)
    api = [pid for pid in members if parent(pid) == code_server and "dagster api grpc" in cmdline(pid)]
    return [pid for pid in members if parent(pid) in api and "spawn_main" in cmdline(pid)]


def test_down_stops_every_process_it_started(deployed: Deployed):
    pids = [p["pid"] for p in deployed.state()["processes"].values()]
    t0 = time.monotonic()
    out = deployed.mmkg("deploy", "down")
    took = time.monotonic() - t0
    deployed.measured["down_s"] = round(took, 1)
    said = dict(line.split(": ", 1) for line in out.stdout.splitlines() if ": " in line)
    assert took <= 10 and set(said) == {"code_server", "daemon", "webserver", "serve"}, out.stdout
    assert set(said.values()) <= {"stopped", "killed"}, out.stdout  # SIGTERM, or SIGKILL after 7 s
    left = [pid for pid in pids if group_members(pid)]
    assert left == [], left
    assert not (deployed.project / ".mmkg" / "deploy" / "state.json").exists()


def _free_port() -> int:
    from conftest import free_port

    return free_port()
