"""The production topology of a project, as separate processes: ``mmkg deploy up``, ``status`` and ``down``.

``up`` starts, each in a process group of its own with its log under ``<data root>/logs/deploy-<name>.log``:

- ``code_server``: a gRPC code server for ``pipelines.definitions`` (``dagster code-server start``), with
  ``MMKG_AUTOMATION=on``, so the corpus sensor, the publish sensor and the nightly schedule start on;
- ``daemon``: ``dagster-daemon run``, which ticks the sensors and launches and monitors the runs;
- ``webserver``: ``dagster-webserver``, the Dagster UI;
- ``serve``: ``mmkg serve`` on the published index, which follows each new version without a restart.

The daemon and the webserver load the code server through ``<data root>/deploy/workspace.yaml``. All of them read
the data root's Dagster instance (``DAGSTER_HOME``): SQLite files by default, PostgreSQL when
``MMKG_DAGSTER_POSTGRES_URL`` is set (``pipelines.build.instance_config``). What was started is recorded in
``<data root>/deploy/state.json``; ``up`` refuses while a recorded process still runs, so two daemons are never
started on one data root by mistake. ``down`` sends each group SIGTERM and, after ``timeout`` seconds, SIGKILL.

This module starts and stops processes and reads the instance; the pipelines' code runs in the code server only.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from mmkg.atomic import write_bytes
from mmkg.processes import alive as running_now
from mmkg.processes import stop_groups

FOLDER = "deploy"
STATE = "state.json"
ORDER = ("code_server", "daemon", "webserver", "serve")  # started in this order, stopped in the reverse one
CODE_LOCATION = "pipelines.definitions"


class DeployError(RuntimeError):
    """A deployment that cannot start or is not there; the message says what to do."""


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _port_free(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def state_path(data_root: Path) -> Path:
    return Path(data_root) / FOLDER / STATE


def read_state(data_root: Path) -> dict | None:
    try:
        return json.loads(state_path(data_root).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False


def _tcp_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def _workspace(folder: Path, host: str, grpc_port: int) -> Path:
    path = folder / "workspace.yaml"
    text = (f"# written by `mmkg deploy up`: the daemon and the webserver load the code server on this port\n"
            f"load_from:\n  - grpc_server:\n      host: {host}\n      port: {grpc_port}\n"
            f"      location_name: \"{CODE_LOCATION}\"\n")  # fmt: skip
    write_bytes(path, text.encode())
    return path


def up(
    corpus_root: Path,
    data_root: Path,
    *,
    host: str = "127.0.0.1",
    webserver_port: int = 3000,
    serve_port: int = 8000,
    grpc_port: int | None = None,
    sensor_interval_s: int = 30,
    timeout_s: float = 300.0,
    say: Callable[[str], None] = print,
) -> dict:
    """Start the four processes for ``corpus_root`` and ``data_root``; returns the recorded state once each one
    answers (the code server on its port, the daemon's heartbeat, the UI's and the server's pages).

    A data root without a published index gets its first one from the daemon's sensors; ``mmkg serve`` starts
    once that is published (within ``timeout_s``, else everything started is stopped again)."""
    from pipelines.build import dagster_home

    corpus_root, data_root = Path(corpus_root).resolve(), Path(data_root).resolve()
    running = read_state(data_root)
    alive = {n for n, p in (running or {}).get("processes", {}).items() if running_now(p["pid"])}
    if running and alive:
        if alive == set(ORDER):
            raise DeployError(f"a deployment of {data_root} is running (pids "
                              f"{', '.join(str(p['pid']) for p in running['processes'].values())}): `mmkg deploy "
                              "status` shows it, `mmkg deploy down` stops it")  # fmt: skip
        return _restart(running, data_root, alive, timeout_s, say)
    for what, port in (("the Dagster UI", webserver_port), ("mmkg serve", serve_port)):
        if not _port_free(host, port):
            raise DeployError(f"cannot listen on {host}:{port} for {what}: the port is in use; pick another")
    grpc_port = grpc_port or _free_port(host)
    folder = data_root / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    logs = data_root / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    home = dagster_home(data_root)
    workspace = _workspace(folder, host, grpc_port)
    env = {**os.environ, "DAGSTER_HOME": str(home), "MMKG_CORPUS_ROOT": str(corpus_root),
           "MMKG_DATA_ROOT": str(data_root), "MMKG_AUTOMATION": "on",
           "MMKG_CORPUS_SENSOR_INTERVAL": str(sensor_interval_s)}  # fmt: skip
    for offline in ("HF_HUB_OFFLINE", "YOLO_OFFLINE"):
        env.setdefault(offline, "1")
    py = sys.executable
    quiet = ["-W", "ignore::FutureWarning"]  # Dagster's supersession notices
    commands = {
        "code_server": [py, *quiet, "-m", "dagster", "code-server", "start", "-h", host, "-p", str(grpc_port),
                        "-m", CODE_LOCATION, "-d", str(Path.cwd()), "--location-name", CODE_LOCATION],
        "daemon": [py, *quiet, "-m", "dagster._daemon", "run", "-w", str(workspace)],
        "webserver": [py, *quiet, "-m", "dagster_webserver", "-h", host, "-p", str(webserver_port), "-w",
                      str(workspace)],
        "serve": [py, "-m", "mmkg.cli", "serve", "--index", str(data_root / "index"), "--host", host, "--port",
                  str(serve_port), "--corpus", str(corpus_root), "--no-reindex"],
    }  # fmt: skip
    urls = {"code_server": f"grpc://{host}:{grpc_port}", "webserver": f"http://{host}:{webserver_port}",
            "serve": f"http://{host}:{serve_port}", "daemon": ""}  # fmt: skip
    state = {"data_root": str(data_root), "corpus_root": str(corpus_root), "home": str(home),
             "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
             "storage": "postgres" if os.environ.get("MMKG_DAGSTER_POSTGRES_URL") else "sqlite",
             "host": host, "grpc_port": grpc_port, "cwd": str(Path.cwd()), "env": _own_env(env),
             "processes": {n: {"pid": 0, "url": urls[n], "log": str(logs / f"deploy-{n}.log"), "command": commands[n]}
                           for n in ORDER}}  # fmt: skip
    try:
        _start(state, data_root, list(ORDER), env, time.monotonic() + timeout_s, say)
    except BaseException:
        down(data_root, say=lambda _: None)
        raise
    return state


def _own_env(env: dict[str, str]) -> dict[str, str]:
    """The variables ``up`` set or needs again to start a process anew (never a password-bearing URL: that one
    comes from the environment of whoever restarts it)."""
    keys = ("DAGSTER_HOME", "MMKG_CORPUS_ROOT", "MMKG_DATA_ROOT", "MMKG_AUTOMATION", "MMKG_CORPUS_SENSOR_INTERVAL",
            "HF_HUB_OFFLINE", "YOLO_OFFLINE")  # fmt: skip
    return {k: env[k] for k in keys if k in env}


def _ready(name: str, state: dict, data_root: Path, started: float) -> bool:
    host, url = state["host"], state["processes"][name]["url"]
    if name == "code_server":
        return _tcp_open(host, state["grpc_port"])
    if name == "daemon":  # a heartbeat of its own, not one a killed daemon left
        return _daemon_heartbeat(data_root, since=started) is not None
    return _http_ok(f"{url}/server_info" if name == "webserver" else f"{url}/health")


def _start(state: dict, data_root: Path, names: list[str], env: dict[str, str], deadline: float,
           say: Callable[[str], None]) -> None:  # fmt: skip
    """Start ``names`` (in ``ORDER``) as recorded in ``state``, each once the one before it answers."""
    for name in names:
        if name == "serve":
            _wait_for_index(data_root, deadline, say)
        p = state["processes"][name]
        log = Path(p["log"])
        started = time.time()
        with log.open("ab") as out:
            out.write(f"\n== {datetime.now(UTC).isoformat(timespec='seconds')} {' '.join(p['command'])}\n".encode())
            out.flush()
            proc = subprocess.Popen(p["command"], env=env, stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True, cwd=state["cwd"])  # fmt: skip
        p["pid"] = proc.pid
        write_bytes(state_path(data_root), json.dumps(state, indent=2).encode())
        while not _ready(name, state, data_root, started):
            if proc.poll() is not None:
                raise DeployError(f"{name} exited with {proc.returncode} while starting; its log: {log}\n"
                                  + _tail(log))  # fmt: skip
            if time.monotonic() > deadline:
                raise DeployError(f"{name} did not answer in time; its log: {log}\n" + _tail(log))
            time.sleep(0.5)
        say(f"{name} up" + (f" at {p['url']}" if p["url"] else "") + f" (pid {proc.pid})")


def _restart(state: dict, data_root: Path, alive: set[str], timeout_s: float, say: Callable[[str], None]) -> dict:
    """Start again the recorded processes that are gone (a crash, ``kill -9``), as they were started; the ones
    still running are left alone, so a second daemon is never started beside the first."""
    gone = [n for n in ORDER if n not in alive]
    say(f"still running: {', '.join(n for n in ORDER if n in alive)}; starting again: {', '.join(gone)}")
    env = {**os.environ, **state["env"]}
    _start(state, data_root, gone, env, time.monotonic() + timeout_s, say)
    return state


def _tail(log: Path, lines: int = 12) -> str:
    try:
        return "\n".join(log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _wait_for_index(data_root: Path, deadline: float, say: Callable[[str], None]) -> None:
    """Until the data root has a published version (the daemon's sensors build the first one)."""
    current = data_root / "index" / "CURRENT"
    if current.exists():
        return
    say("no published index yet: waiting for the daemon's sensors to build and publish the first one")
    while not current.exists():
        if time.monotonic() > deadline:
            raise DeployError(f"no index was published under {data_root / 'index'} in time; `mmkg deploy status` "
                              "and the Dagster UI show the runs")  # fmt: skip
        time.sleep(1)


def _daemon_heartbeat(data_root: Path, since: float = 0.0) -> float | None:
    """When the daemon's sensor loop last said it was alive (a Unix time), or None (also when that was before
    ``since``: a heartbeat a killed daemon left)."""
    from pipelines.build import dagster_instance

    with dagster_instance(data_root) as instance:
        beats = instance.get_daemon_heartbeats()
    beat = beats.get("SENSOR")
    return float(beat.timestamp) if beat is not None and beat.timestamp >= since else None


def status(data_root: Path) -> dict:
    """Each recorded process (alive or not, its URL and log), the daemon's last heartbeat and each sensor's last
    tick (its time, status and the runs it asked for)."""
    from dagster._core.definitions.run_request import InstigatorType

    from pipelines.build import dagster_instance

    data_root = Path(data_root).resolve()
    state = read_state(data_root)
    if state is None:
        raise DeployError(f"no deployment of {data_root} is recorded: start one with `mmkg deploy up`")
    procs = {n: {**p, "alive": running_now(p["pid"])} for n, p in state["processes"].items()}
    ticks = []
    with dagster_instance(data_root) as instance:
        beats = instance.get_daemon_heartbeats()
        for st in instance.all_instigator_state(instigator_type=InstigatorType.SENSOR):
            last = instance.get_ticks(st.instigator_origin_id, st.selector_id, limit=1)
            if last:
                t = last[0]
                # a tick that asked for nothing and gave no reason: Dagster says "Sensor function returned an empty
                # result"; the corpus sensor returns that when no folder changed
                skip = t.skip_reason or ""
                skip = "no change" if skip.startswith("Sensor function returned an empty result") else skip
                ticks.append({"sensor": st.instigator_name, "at": datetime.fromtimestamp(t.timestamp, UTC)
                              .isoformat(timespec="seconds"), "status": t.status.value, "runs": len(t.run_ids),
                              "skip": skip})  # fmt: skip
    beat = beats.get("SENSOR")
    return {**state, "processes": procs,
            "daemon_heartbeat": datetime.fromtimestamp(beat.timestamp, UTC).isoformat(timespec="seconds")
            if beat else None, "sensor_ticks": sorted(ticks, key=lambda t: t["sensor"])}  # fmt: skip


def down(data_root: Path, timeout_s: float = 7.0, say: Callable[[str], None] = print) -> dict[str, str]:
    """Stop every recorded process group: SIGTERM, then SIGKILL to what is left after ``timeout_s``; returns each
    process's outcome ("stopped", "killed", "left" when SIGKILL did not end it within 2 s, "was not running") and
    forgets the deployment."""
    data_root = Path(data_root).resolve()
    state = read_state(data_root)
    if state is None:
        raise DeployError(f"no deployment of {data_root} is recorded: nothing to stop")
    procs = state["processes"]
    by_group = stop_groups([procs[n]["pid"] for n in reversed(ORDER) if n in procs],
                           [(signal.SIGTERM, timeout_s), (signal.SIGKILL, 2.0)])  # fmt: skip
    outcome = {name: by_group[p["pid"]] for name, p in procs.items()}
    for name, said in outcome.items():
        if said != "was not running":
            say(f"{name}: {said}")
    state_path(data_root).unlink(missing_ok=True)
    return outcome
