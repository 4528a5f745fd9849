"""The quick start leaves a working ``mmkg``: the line it prints at the end puts the command on a new shell's PATH."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import PROJECT

from pipelines.demo import activation_line


def test_the_line_the_quick_start_prints_gives_a_new_shell_a_working_mmkg():
    line = activation_line()
    assert line.startswith("source ") and line.endswith("bin/activate")
    venv_bin = str(Path(sys.prefix) / "bin")
    # a new shell: the environment's bin folder is not on its PATH, and no venv is active
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p != venv_bin)
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"} | {"PATH": path}
    before = subprocess.run(["bash", "-c", "command -v mmkg"], capture_output=True, text=True, env=env, cwd=PROJECT)
    assert before.stdout.strip() != str(Path(venv_bin) / "mmkg")
    after = subprocess.run(["bash", "-c", f"{line} && command -v mmkg && mmkg --version"], capture_output=True,
                           text=True, env=env, cwd=PROJECT, timeout=120)  # fmt: skip
    assert after.returncode == 0, after.stderr
    assert after.stdout.splitlines()[0] == str(Path(venv_bin) / "mmkg") and "mmkg" in after.stdout


SCRIPT = """
import sys, tempfile
if sys.argv[1] == "quiet":
    from mmkg.quiet import quiet_native_logs
    quiet_native_logs()
import lance, lancedb, pyarrow as pa
# as a publish writes: a table through pylance, then one through lancedb with mode "overwrite", which lancedb's
# logger (LANCEDB_LOG) reports as "No existing dataset ... it will be created"
lance.write_dataset(pa.table({"a": [1, 2]}), tempfile.mkdtemp() + "/a.lance", mode="create")
lancedb.connect(tempfile.mkdtemp()).create_table("t", pa.table({"a": [1, 2]}), mode="overwrite")
"""


def test_the_quick_start_and_the_cli_hide_lancedb_table_creation_warnings():
    """Creating a table makes LanceDB's Rust logger warn "No existing dataset ... it will be created" on stderr
    (seven lines in a quick start); ``quiet_native_logs``, which the quick start and every CLI command call first,
    hides them, and a user's own LANCEDB_LOG setting still wins."""
    env = {k: v for k, v in os.environ.items() if k not in ("LANCEDB_LOG", "LANCE_LOG")}
    loud = subprocess.run([sys.executable, "-c", SCRIPT, "loud"], capture_output=True, text=True, env=env, timeout=120)
    quiet = subprocess.run([sys.executable, "-c", SCRIPT, "quiet"], capture_output=True, text=True, env=env,
                           timeout=120)  # fmt: skip
    assert loud.returncode == quiet.returncode == 0, (loud.stderr, quiet.stderr)
    assert "No existing dataset" in loud.stderr
    assert "No existing dataset" not in quiet.stderr
    own = subprocess.run([sys.executable, "-c", SCRIPT, "quiet"], capture_output=True, text=True,
                         env=env | {"LANCEDB_LOG": "warn"}, timeout=120)  # fmt: skip
    assert "No existing dataset" in own.stderr
