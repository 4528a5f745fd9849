"""Write-then-rename (``mmkg.atomic``): what a writer killed mid-write leaves is invisible to every reader.

The writer is a real process SIGKILLed inside ``atomic_path`` (as the out-of-memory killer would), so no
``finally`` runs and its temporary stays on disk beside the partition tables that DuckDB and the IO
managers read by glob.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
import scipy.sparse as sp

from mmkg.atomic import STALE_AFTER_S, atomic_path
from mmkg.incidence import Incidence
from mmkg.tables import connect

KILLED_WRITER = """
import os, signal, sys
from pathlib import Path
import polars as pl
from mmkg.atomic import atomic_path

target = Path(sys.argv[1])
with atomic_path(target) as tmp:
    pl.DataFrame({"chunk_id": ["x"] * 1000}).write_parquet(tmp)
    with open(tmp, "r+b") as fh:  # half a file, as a write cut short leaves it
        fh.truncate(os.path.getsize(tmp) // 2)
    os.kill(os.getpid(), signal.SIGKILL)
"""


def _killed_write(target: Path) -> list[Path]:
    run = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(target)], capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    assert run.returncode == -signal.SIGKILL, run.stderr
    return sorted(p for p in target.parent.iterdir() if p.name.startswith(f".{target.name}-"))


def test_a_writer_killed_mid_write_leaves_nothing_a_reader_takes_for_a_table(tmp_path: Path):
    folder = tmp_path / "tables" / "chunks"
    folder.mkdir(parents=True)
    pl.DataFrame({"chunk_id": ["a", "b"]}).write_parquet(folder / "p1.parquet")
    left = _killed_write(folder / "p2.parquet")
    assert len(left) == 1 and left[0].suffix == ".tmp" and left[0].stat().st_size > 0  # the half-written file
    assert sorted(p.name for p in folder.glob("*.parquet")) == ["p1.parquet"]
    con = connect(tmp_path)  # the views `mmkg sql` queries: the dead writer's half file is no partition
    assert con.execute("SELECT count(*) FROM chunks").fetchone() == (2,)

    # a matrix written the same way (np.savez through an open file) keeps the name it was given
    inc = Incidence(sp.csr_array(np.eye(2, dtype=np.float32)), ["r1", "r2"], ["c1", "c2"])
    inc.save(tmp_path / "m" / "M_SMI.npz")
    assert [p.name for p in (tmp_path / "m").iterdir()] == ["M_SMI.npz"]
    assert list(Incidence.load(tmp_path / "m" / "M_SMI.npz").row_ids) == ["r1", "r2"]


def test_a_dead_writers_temporary_is_swept_by_the_next_write_after_a_day(tmp_path: Path):
    """The first write into a folder (per process) removes temporaries killed writers left there a day ago."""
    target = tmp_path / "p1.parquet"
    old = _killed_write(target)[0]
    fresh = _killed_write(target)
    fresh.remove(old)
    day_ago = time.time() - STALE_AFTER_S - 60
    os.utime(old, (day_ago, day_ago))
    theirs = tmp_path / ".notes.tmp"  # a hidden file of someone else's, as old: not ours to remove
    theirs.write_text("draft", encoding="utf-8")
    os.utime(theirs, (day_ago, day_ago))
    with atomic_path(target) as tmp:
        pl.DataFrame({"chunk_id": ["a"]}).write_parquet(tmp)
    assert not old.exists()  # a killed writer's, a day old
    assert fresh[0].exists()  # maybe another process's write in progress: kept
    assert theirs.exists()
    assert pl.read_parquet(target)["chunk_id"].to_list() == ["a"]


def test_a_failed_write_keeps_the_old_file_and_removes_its_temporary(tmp_path: Path):
    target = tmp_path / "p1.parquet"
    pl.DataFrame({"chunk_id": ["old"]}).write_parquet(target)
    try:
        with atomic_path(target) as tmp:
            tmp.write_bytes(b"PAR1 half")
            raise RuntimeError("disk full")
    except RuntimeError:
        pass
    assert [p.name for p in tmp_path.iterdir()] == ["p1.parquet"]
    assert pl.read_parquet(target)["chunk_id"].to_list() == ["old"]
