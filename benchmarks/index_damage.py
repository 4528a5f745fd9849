"""Damage a published index 28 ways and record what a reader and ``mmkg index verify`` make of each.

    python benchmarks/index_damage.py --data-root /tmp/sample_build --partitions computing_history,space \
        --question "What is a fundus photograph?"

``--data-root`` is a built corpus (its ``tables/``). The script publishes ``--partitions`` into a fresh
index (``tests/publish_worker.py``), then for each case copies that index, damages the copy and runs,
as a user would, ``mmkg query QUESTION --index COPY --json`` and ``mmkg index verify --index COPY``.

A reader's outcome is one of:
- **clear**: exit code 2, one message naming the damaged file and the way out (rollback, versions,
  publish again), no traceback;
- **names the file**: fails without a traceback and names the file, but gives no way out;
- **vague**: fails without a traceback and without naming the file;
- **traceback**: a Python traceback reaches the user;
- **served, same answer**: exit code 0 and the clean index's top 5 (the damage touched nothing read);
- **silent**: exit code 0 with a different top 5: damage served as if it were data.
``verify`` either names the file (exit code 2) or passes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

ROOT = Path(__file__).resolve().parent.parent
MMKG = [sys.executable, "-m", "mmkg.cli"]
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT), "COLUMNS": "400"}
WAY_OUT = ("rollback", "index versions", "publish again", "re-publish", "publish it again")


def _current(root: Path) -> Path:
    return root / "versions" / (root / "CURRENT").read_text().strip()


def _lance_data(root: Path, table: str = "chunks") -> Path:
    return sorted((root / "lance" / f"{table}.lance" / "data").glob("*.lance"))[0]


def _pinned_lance_manifest(root: Path, table: str = "chunks") -> Path:
    pinned = json.loads((_current(root) / "manifest.json").read_text())["lance_versions"][table]
    return root / "lance" / f"{table}.lance" / "_versions" / f"{2**64 - 1 - pinned}.manifest"


def _truncate(p: Path, keep: float = 0.5) -> None:
    p.write_bytes(p.read_bytes()[: int(p.stat().st_size * keep)])


def _flip(p: Path, n: int = 4096) -> None:
    raw = bytearray(p.read_bytes())
    start = max(0, len(raw) // 2 - n // 2)
    raw[start : start + n] = bytes(b ^ 0xFF for b in raw[start : start + n])
    p.write_bytes(bytes(raw))


def _junk(p: Path) -> None:
    p.write_bytes(os.urandom(p.stat().st_size))


def _manifest_edit(root: Path, edit: Callable[[dict], None]) -> None:
    path = _current(root) / "manifest.json"
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


def _bm25_file(root: Path) -> Path:
    return max((_current(root) / "bm25").iterdir(), key=lambda p: p.stat().st_size)


# (name, what a reader should name, damage)
CASES: list[tuple[str, str, Callable[[Path], Path | None]]] = [
    ("CURRENT deleted", "CURRENT", lambda r: (r / "CURRENT").unlink()),
    ("CURRENT empty", "CURRENT", lambda r: (r / "CURRENT").write_text("")),
    ("CURRENT binary junk", "CURRENT", lambda r: (r / "CURRENT").write_bytes(b"\xff\xfe\x00junk")),
    ("CURRENT a path outside the root", "CURRENT", lambda r: (r / "CURRENT").write_text("../../other/versions/v1\n")),
    (
        "CURRENT names a missing version",
        "v20000101T000000000000-00000000",
        lambda r: (r / "CURRENT").write_text("v20000101T000000000000-00000000\n"),
    ),
    ("version folder deleted", "/versions", lambda r: shutil.rmtree(_current(r))),
    ("manifest.json deleted", "manifest.json", lambda r: (_current(r) / "manifest.json").unlink()),
    ("manifest.json garbled", "manifest.json", lambda r: _truncate(_current(r) / "manifest.json", 0.4)),
    (
        "manifest.json missing a table key",
        "manifest.json",
        lambda r: _manifest_edit(r, lambda m: m["lance_versions"].pop("objects")),
    ),
    (
        "manifest.json with a wrong type",
        "manifest.json",
        lambda r: _manifest_edit(r, lambda m: m.__setitem__("counts", "many")),
    ),
    ("graph.npz truncated", "graph.npz", lambda r: _truncate(_current(r) / "graph.npz")),
    ("graph.npz deleted", "graph.npz", lambda r: (_current(r) / "graph.npz").unlink()),
    ("graph.npz flipped bytes", "graph.npz", lambda r: _flip(_current(r) / "graph.npz", 256)),
    ("chunks.parquet truncated", "chunks.parquet", lambda r: _truncate(_current(r) / "chunks.parquet")),
    ("chunks.parquet deleted", "chunks.parquet", lambda r: (_current(r) / "chunks.parquet").unlink()),
    ("chunks.parquet flipped bytes", "chunks.parquet", lambda r: _flip(_current(r) / "chunks.parquet", 1024)),
    ("entities.parquet random bytes", "entities.parquet", lambda r: _junk(_current(r) / "entities.parquet")),
    (
        "nodes.parquet swapped for another table",
        "nodes.parquet",
        lambda r: shutil.copy(_current(r) / "documents.parquet", _current(r) / "nodes.parquet"),
    ),
    ("BM25 file random bytes", "bm25", lambda r: _junk(_bm25_file(r))),
    ("BM25 file truncated", "bm25", lambda r: _truncate(_bm25_file(r))),
    ("m_smi.npz zero bytes", "m_smi.npz", lambda r: (_current(r) / "m_smi.npz").write_bytes(b"")),
    ("m_omi.npz flipped bytes", "m_omi.npz", lambda r: _flip(_current(r) / "m_omi.npz", 256)),
    ("LanceDB data file truncated", "data/", lambda r: _truncate(_lance_data(r))),
    ("LanceDB data file deleted", "data/", lambda r: _lance_data(r).unlink()),
    ("LanceDB data file flipped bytes (same size)", "data/", lambda r: _flip(_lance_data(r))),
    ("LanceDB pinned table version deleted", "_versions", lambda r: _pinned_lance_manifest(r).unlink()),
    ("LanceDB pinned table version random bytes", "_versions", lambda r: _junk(_pinned_lance_manifest(r))),
    ("LanceDB table folder deleted", "chunks.lance", lambda r: shutil.rmtree(r / "lance" / "chunks.lance")),
]


def _run(args: list[str]) -> tuple[int, str]:
    p = subprocess.run(args, capture_output=True, text=True, env=ENV, timeout=600)
    return p.returncode, p.stdout + p.stderr


def _top(out: str) -> list[str]:
    try:
        return [c["chunk_id"] for c in json.loads(out)["chunks"]]
    except (ValueError, KeyError, TypeError):
        return []


def reader_outcome(rc: int, out: str, needle: str, clean_top: list[str]) -> str:
    if "Traceback" in out:
        return "traceback"
    if rc == 0:
        return "served, same answer" if _top(out) == clean_top else "silent"
    named = needle in out.replace("\n", "")
    if named and rc == 2 and any(w in out for w in WAY_OUT):
        return "clear"
    return "names the file" if named else "vague"


def main(
    data_root: Annotated[Path, typer.Option(help="Built corpus with tables/.")],
    partitions: Annotated[str, typer.Option(help="Partitions to publish (comma list).")],
    question: Annotated[str, typer.Option(help="A question the partitions answer.")],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        clean = Path(tmp) / "clean"
        pub = subprocess.run([sys.executable, str(ROOT / "tests" / "publish_worker.py"), str(data_root), str(clean),
                              partitions], capture_output=True, text=True, env=ENV, timeout=600)  # fmt: skip
        if pub.returncode != 0:
            raise SystemExit(f"publishing the clean index failed:\n{pub.stderr}")
        query = [*MMKG, "query", question, "--k", "5", "--json", "--index"]
        rc, out = _run([*query, str(clean)])
        clean_top = _top(out)
        assert rc == 0 and clean_top, out
        print("| damage | reader (`mmkg query`) | exit | `mmkg index verify` | what the reader says (first 160 chars) |"
              .replace("  ", " "))  # fmt: skip
        print("|---|---|---:|---|---|")
        tally: Counter[str] = Counter()
        caught = 0
        for name, needle, damage in CASES:
            root = Path(tmp) / "case"
            shutil.rmtree(root, ignore_errors=True)
            shutil.copytree(clean, root)
            damage(root)
            t0 = time.perf_counter()
            rc, out = _run([*query, str(root)])
            outcome = reader_outcome(rc, out, needle, clean_top)
            vrc, vout = _run([*MMKG, "index", "verify", "--index", str(root)])
            verified = (
                "names it"
                if vrc == 2 and needle in vout.replace("\n", "") and "Traceback" not in vout
                else ("traceback" if "Traceback" in vout else ("passes" if vrc == 0 else f"exit {vrc}, not named"))
            )
            caught += verified == "names it"
            tally[outcome] += 1
            said = " ".join(out.split())[:160].replace("|", "\\|") if rc else ""
            print(f"| {name} | {outcome} | {rc} | {verified} | {said} |", flush=True)
            del t0
        print(f"\nreader: {dict(tally)}; verify named the file in {caught} of {len(CASES)} cases")


if __name__ == "__main__":
    typer.run(main)
