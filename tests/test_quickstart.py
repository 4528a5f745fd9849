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
