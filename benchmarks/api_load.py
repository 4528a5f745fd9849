"""Load on ``mmkg serve``: latency percentiles and errors at 1, 4 and 16 concurrent clients, on localhost.

Starts the server as its own process over an index (the sample corpus's by default, built here when
missing), then each level sends a bounded number of ``POST /query`` requests (and ``POST /ask`` with the
extractive backend) from that many client threads, each client one request at a time. Counts and time
are bounded: ``--requests`` per level, ``--max-seconds`` per level.

    .venv/bin/python benchmarks/api_load.py [--index DIR] [--requests 200] [--levels 1,4,16]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = [
    "Who commanded STS-93?", "When was the Hubble Space Telescope launched?", "What does the placard read?",
    "Which rocket launched DSCOVR?", "Who designed the Harvard Mark I?", "What is COBOL?",
]  # fmt: skip


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url: str, payload: dict) -> int:
    req = urllib.request.Request(url, json.dumps(payload).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            resp.read()
            return resp.status
    except urllib.error.HTTPError as err:
        return err.code
    except OSError:
        return -1


def level(url: str, path: str, clients: int, n: int, max_s: float, body: dict) -> dict:
    latencies: list[float] = []
    codes: dict[int, int] = {}
    lock = threading.Lock()
    sent = [0]
    deadline = time.monotonic() + max_s

    def client(i: int) -> None:
        while time.monotonic() < deadline:
            with lock:
                if sent[0] >= n:
                    return
                sent[0] += 1
                q = QUESTIONS[sent[0] % len(QUESTIONS)]
            t0 = time.perf_counter()
            code = post(url + path, {**body, "text": q})
            ms = (time.perf_counter() - t0) * 1000
            with lock:
                latencies.append(ms)
                codes[code] = codes.get(code, 0) + 1

    t0 = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    lat = np.array(latencies) if latencies else np.zeros(1)
    return {
        "clients": clients, "requests": len(latencies), "p50_ms": float(np.percentile(lat, 50)),
        "p95_ms": float(np.percentile(lat, 95)), "errors": sum(v for k, v in codes.items() if k != 200),
        "codes": codes, "rps": len(latencies) / wall if wall else 0.0,
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--index", type=Path, default=None, help="index root (default: build the sample corpus)")
    ap.add_argument("--requests", type=int, default=200, help="requests per level")
    ap.add_argument("--max-seconds", type=float, default=120.0, help="time per level, at most")
    ap.add_argument("--levels", default="1,4,16")
    ap.add_argument("--workers", type=int, default=2, help="the server's query workers")
    args = ap.parse_args()

    index = args.index
    if index is None:
        from pipelines.build import build_index

        data = Path(tempfile.gettempdir()) / "mmkg-api-load"
        build_index(ROOT / "sample_corpus", data)
        index = data / "index"
    port = free_port()
    log = Path(tempfile.gettempdir()) / "mmkg-api-load.log"
    cmd = [str(Path(sys.executable).parent / "mmkg"), "serve", "--index", str(index), "--port", str(port),
           "--workers", str(args.workers)]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "YOLO_OFFLINE": "1"}
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(url + "/health", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"server did not start; see {log}") from None
                time.sleep(0.3)
        post(url + "/query", {"text": "warm up"})
        print(f"server: {url}, {args.workers} query workers, index {index}; {os.cpu_count()} CPUs on this machine")
        print(f"{'endpoint':<22} {'clients':>7} {'requests':>8} {'p50 ms':>8} {'p95 ms':>8} {'req/s':>7} {'errors':>6}")
        for path, body, name in (("/query", {"k": 5}, "POST /query (mg2)"),
                                 ("/ask", {"k": 5}, "POST /ask (extractive)")):  # fmt: skip
            for clients in (int(c) for c in args.levels.split(",")):
                r = level(url, path, clients, args.requests, args.max_seconds, body)
                codes = f"  codes {r['codes']}" if r["errors"] else ""
                print(f"{name:<22} {r['clients']:>7} {r['requests']:>8} {r['p50_ms']:>8.0f} {r['p95_ms']:>8.0f} "
                      f"{r['rps']:>7.1f} {r['errors']:>6}{codes}")  # fmt: skip
    finally:
        proc.terminate()
        proc.wait(timeout=30)


if __name__ == "__main__":
    main()
