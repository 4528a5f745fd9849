"""Freshness and faults of `mmkg deploy` on a throwaway PostgreSQL cluster, repeated as issue 77's targets ask.

An `mmkg init` project is built, then deployed (`mmkg deploy up --sensor-interval 5`). Then:

- ``--edits`` times: a new sentence is appended to a document, and the time from the write to the first served
  query whose chunks hold it is measured (freshness);
- ``--repeats`` times each fault, during a partition run that an edit started: the daemon killed with SIGKILL
  (then `mmkg deploy up` starts it again), the run worker killed with SIGKILL, and PostgreSQL stopped for 10 s
  (then started, and `mmkg deploy up` run). After each: the change must be served, `mmkg index verify` clean, and
  exactly one version published for it (counted after two more sensor intervals).

    .venv/bin/python benchmarks/freshness.py [--edits 5] [--repeats 3]

The cluster comes from ``tests/postgres_cluster.py`` (Debian's postgresql programs). Prints a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]
MMKG = str(Path(sys.executable).parent / "mmkg")
WORDS = ["Aurelio", "Brisca", "Calloway", "Dunmore", "Eskeland", "Farrago", "Gundersen", "Hallorann", "Ingeborg",
         "Jorunn", "Kessler", "Lindqvar", "Morwenna", "Nyhavn", "Ottavio", "Pellinore", "Quenby", "Rasmusen"]


class Deployment:
    def __init__(self, project: Path, env: dict[str, str], port: int):
        self.project, self.env, self.url = project, env, f"http://127.0.0.1:{port}"

    def mmkg(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        out = subprocess.run([MMKG, *args], cwd=self.project, env=self.env, capture_output=True, text=True,
                             timeout=900)  # fmt: skip
        if check and out.returncode:
            raise RuntimeError(f"mmkg {' '.join(args)}: {out.returncode}\n{out.stdout}\n{out.stderr}")
        return out

    def state(self) -> dict:
        return json.loads((self.project / ".mmkg" / "deploy" / "state.json").read_text())

    def served(self, word: str) -> bool:
        body = json.dumps({"text": f"{word} telescope", "k": 5}).encode()
        req = urllib.request.Request(f"{self.url}/query", data=body, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return any(word in c["text"] for c in json.loads(resp.read())["chunks"])
        except OSError:
            return False

    def versions(self) -> list[str]:
        folder = self.project / ".mmkg" / "index" / "versions"
        return sorted(p.name for p in folder.iterdir() if (p / "manifest.json").exists())


def edit(d: Deployment, word: str) -> float:
    doc = d.project / "corpus" / "space" / "hubble_space_telescope.md"
    doc.write_text(doc.read_text(encoding="utf-8") + f"\n\nA plaque by {word} hangs in the telescope's hall.\n")
    return time.monotonic()


def wait_served(d: Deployment, word: str, t0: float, timeout: float = 400) -> float:
    while time.monotonic() - t0 < timeout:
        if d.served(word):
            return time.monotonic() - t0
        time.sleep(1)
    raise RuntimeError(f"{word} not served in {timeout} s:\n{d.mmkg('deploy', 'status').stdout}")


def run_started(url: str, seen: int, timeout: float = 120) -> None:
    import postgres_cluster
    import psycopg2

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with psycopg2.connect(postgres_cluster.libpq(url)) as con, con.cursor() as cur:
            cur.execute("SELECT count(*) FROM runs WHERE status = 'STARTED' AND id > %s", (seen,))
            if cur.fetchone()[0]:
                return
        time.sleep(0.3)
    raise RuntimeError("no run started")


def max_run_id(url: str) -> int:
    import postgres_cluster
    import psycopg2

    with psycopg2.connect(postgres_cluster.libpq(url)) as con, con.cursor() as cur:
        cur.execute("SELECT coalesce(max(id), 0) FROM runs")
        return int(cur.fetchone()[0])


def run_worker(code_server: int) -> int:
    from test_production import _run_workers

    workers = _run_workers(code_server)
    if len(workers) != 1:
        raise RuntimeError(f"expected one run worker, found {workers}")
    return workers[0]


def main() -> None:
    import postgres_cluster

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--edits", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if why := postgres_cluster.available():
        sys.exit(why)
    words = iter(WORDS)  # each word once: a repeated one would be "served" at once
    cluster = postgres_cluster.Cluster()
    out: dict = {"edits": [], "faults": {}}
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MMKG_", "DAGSTER_"))}
        env["MMKG_DAGSTER_POSTGRES_URL"] = cluster.url
        subprocess.run([MMKG, "init", "kb"], cwd=tmp, env=env, check=True, capture_output=True)
        from conftest import free_port

        d = Deployment(Path(tmp) / "kb", env, free_port())
        try:
            d.mmkg("index", "build")
            d.mmkg("deploy", "up", "--ui-port", str(free_port()), "--serve-port", d.url.rsplit(":", 1)[1],
                   "--sensor-interval", "5")  # fmt: skip
            for _ in range(args.edits):
                word = next(words)
                out["edits"].append(round(wait_served(d, word, edit(d, word)), 1))
            for fault in ("daemon", "run_worker", "postgres"):
                outcomes = []
                for _ in range(args.repeats):
                    word, seen, before = next(words), max_run_id(cluster.url), d.versions()
                    t0 = edit(d, word)
                    run_started(cluster.url, seen)
                    if fault == "daemon":
                        os.kill(d.state()["processes"]["daemon"]["pid"], signal.SIGKILL)
                        d.mmkg("deploy", "up")
                    elif fault == "run_worker":
                        os.kill(run_worker(d.state()["processes"]["code_server"]["pid"]), signal.SIGKILL)
                    else:
                        cluster.stop()
                        time.sleep(10)
                        cluster.start()
                        d.mmkg("deploy", "up", check=False)  # restarts what died; refuses when all run
                    took = wait_served(d, word, t0)
                    time.sleep(12)  # two more sensor intervals: a second publish of the same change would show
                    new = [v for v in d.versions() if v not in before]
                    verified = "all as published" in d.mmkg("index", "verify").stdout
                    outcomes.append({"served_s": round(took, 1), "versions": len(new), "verified": verified})
                out["faults"][fault] = outcomes
            t0 = time.monotonic()
            d.mmkg("deploy", "down")
            out["down_s"] = round(time.monotonic() - t0, 1)
        finally:
            if (d.project / ".mmkg" / "deploy" / "state.json").exists():
                d.mmkg("deploy", "down", check=False)
            cluster.remove()
    out["freshness_p50_s"] = statistics.median(out["edits"])
    out["freshness_max_s"] = max(out["edits"])
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
