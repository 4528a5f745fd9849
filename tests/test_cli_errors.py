"""Every command's error path: one line on standard error, nothing on standard output, exit 2.

Usage errors (a bad option value, an unknown option, a missing argument) included: they used to be click's
framed box under the usage text. With ``--json`` the error is a JSON object on standard error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mmkg.cli import app


@pytest.fixture
def where(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty folder as the working directory (no mmkg.toml) and no MMKG_* variables."""
    for name in ("MMKG_DATA_ROOT", "MMKG_CORPUS_ROOT", "MMKG_LLM_MODEL", "MMKG_LLM_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


NOPE = "nope"  # a path that does not exist under the working directory
CASES = [
    (["query", "x", "--k", "-1"], "--k"),
    (["query", "x", "--index", NOPE], "no published index"),
    (["query", "x", "--index", NOPE], "build one with `mmkg index build`"),  # the CLI's words, not Dagster's
    (["query", "x", "--strategy", "bogus", "--index", NOPE], "unknown strategy"),  # arguments first, then the index
    (["query", "x", "--strategy", "mkg", "--param", "hops=abc", "--index", NOPE], "hops: abc is not a whole number"),
    (["query", "--video", "missing.mp4", "--index", NOPE], "not found"),
    (["query", "x", "--no-such-option"], "No such option"),
    (["ask"], "Missing argument"),
    (["ask", "x", "--backend", "openai"], "needs a model name"),
    (["ask", "x", "--backend", "nosuch"], "unknown generation backend"),
    (["ask", "x", "--k", "0"], "--k"),
    (["ask", "x", "--index", NOPE], "no published index"),
    (["serve", "--index", NOPE], "no published index"),
    (["serve", "--port", "0"], "--port"),
    (["strategies", "--bogus"], "No such option"),
    (["sql", "SELECT 1", "--data-root", NOPE], NOPE),
    (["graph", "export", "--out", "g.json", "--format", "nosuch"], "unknown format"),
    (["index", "build", "--corpus", NOPE], "corpus root"),
    (["index", "update", "--corpus", NOPE], "corpus root"),
    (["index", "status", "--corpus", NOPE], "corpus root"),
    (["index", "info", "--index", NOPE], "no published index"),
    (["index", "versions", "--index", NOPE], "no published version"),
    (["index", "verify", "--index", NOPE], "no published index"),
    (["index", "rollback", "v1", "--index", NOPE], "v1"),
    (["index", "gc", "--index", NOPE, "--grace", "5x"], "--grace"),
    (["index", "gc", "--index", NOPE], "no published index"),
    (["eval", "twowiki", "--corpus", NOPE], NOPE),
    (["eval", "mmlongbench", "--documents", NOPE], NOPE),
    (["eval", "sample", "--questions", NOPE], NOPE),
    (["eval", "compare", NOPE, NOPE], NOPE),
]


@pytest.mark.parametrize(("args", "expected"), CASES, ids=[" ".join(a) for a, _ in CASES])
def test_error_is_one_line_on_stderr_with_exit_2(where: Path, args: list[str], expected: str):
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2, (res.stdout, res.stderr)
    assert res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    assert expected in lines[0]


def test_init_refuses_an_existing_project(where: Path):
    assert CliRunner().invoke(app, ["init", "."]).exit_code == 0
    res = CliRunner().invoke(app, ["init", "."])
    assert res.exit_code == 2 and res.stdout == "" and res.stderr.startswith("error: ")
    assert len(res.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "args",
    [["query", "x", "--k", "-1", "--json"], ["query", "x", "--json", "--index", NOPE], ["index", "info", "--json"]],
)
def test_json_errors_are_a_json_object_on_stderr(where: Path, args: list[str]):
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2 and res.stdout == ""
    error = json.loads(res.stderr)
    assert set(error) == {"error"} and error["error"] and not error["error"].startswith("error:")


def test_no_arguments_prints_the_help(where: Path):
    res = CliRunner().invoke(app, [])
    assert "Usage" in res.stdout + res.stderr and "Traceback" not in res.stdout + res.stderr


@pytest.mark.parametrize(
    "args", [["ask", "x", "--backend", "openai"], ["query", "x", "--index", NOPE], ["serve", "--index", NOPE]]
)
def test_argument_errors_come_before_any_model_loads(where: Path, args: list[str]):
    """The check runs before torch (the index reader, the encoders, the generators) is imported."""
    code = (
        "import sys\nfrom mmkg.cli import app\n"
        f"try:\n    app({args!r})\nexcept SystemExit as e:\n    print(e.code, 'torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["2", "False"], out.stdout + out.stderr
    assert out.stderr.startswith("error: ")


def test_serve_on_a_busy_port_is_one_error_line_before_it_claims_to_serve(art):
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        out = subprocess.run([sys.executable, "-m", "mmkg.cli", "serve", "--index", str(art.data / "index"),
                              "--port", str(port)], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert "serving" not in out.stdout
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot listen on 127.0.0.1:") and "--port" in lines[0]


def test_eval_sample_runs_from_any_folder(where: Path, art):
    """From an `mmkg init` project (no sample_corpus/ there) the smoke eval still finds the bundled questions."""
    out = CliRunner().invoke(app, ["eval", "sample", "--index", str(art.data / "index"), "--answers", "only",
                                   "--out", str(where / "results")])  # fmt: skip
    assert out.exit_code == 0, out.output
    assert "file not found" not in out.output and (where / "results" / "answers.json").is_file()
    assert json.loads((where / "results" / "answers.json").read_text())["n"] == 10


def test_help_lists_the_commands_in_the_order_of_a_first_hour():
    from mmkg.cli.common import COMMAND_PANELS

    out = subprocess.run([sys.executable, "-m", "mmkg.cli", "--help"], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "COLUMNS": "100"})  # fmt: skip
    listed = [line.split()[1] for line in out.stdout.splitlines() if line.startswith("│ ") and line.split()[1:2]
              and line.split()[1] in COMMAND_PANELS]  # fmt: skip
    assert listed == list(COMMAND_PANELS), out.stdout
    headings = list(dict.fromkeys(COMMAND_PANELS.values()))
    assert [h for h in headings if f"─ {h} ─" in out.stdout] == headings
