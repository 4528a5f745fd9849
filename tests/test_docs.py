"""The documentation: the MkDocs site builds with no warning (strict: broken links and anchors fail), the README
stays short, and every relative link in the README and the results index points at a file that exists."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README_MAX_LINES = 220

LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def relative_links(path: Path) -> list[str]:
    """Targets of the Markdown links and images in a file, outside code, that point at local files."""
    text = re.sub(r"^(```|~~~).*?^\1", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)
    text = re.sub(r"`[^`\n]*`", "", text)
    targets = [m.group(1) for m in LINK.finditer(text)]
    return [t for t in targets if not re.match(r"^([a-z][a-z0-9+.-]*:|#|/)", t, flags=re.I)]


def test_mkdocs_builds_strict_without_warnings(tmp_path: Path):
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (the dev extra installs it)")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
         "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{out}"
    warnings = [ln for ln in out.splitlines() if re.match(r"^(WARNING|ERROR)\b", ln)]
    assert not warnings, "\n".join(warnings)
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "results" / "scale" / "index.html").is_file()


def test_mkdocs_config_makes_broken_links_fail():
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert re.search(r"^strict:\s*true\s*$", config, flags=re.M)
    for setting in ("not_found", "anchors", "absolute_links", "unrecognized_links", "omitted_files"):
        assert re.search(rf"^\s+{setting}:\s*warn\s*$", config, flags=re.M), f"validation {setting} is not 'warn'"


def test_readme_is_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; the reference belongs under docs/"


def test_readme_keeps_the_two_quick_start_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "bash scripts/demo.sh" in readme and "bash scripts/test.sh" in readme


@pytest.mark.parametrize("name", ["README.md", "benchmarks/RESULTS.md"])
def test_relative_links_resolve(name: str):
    path = ROOT / name
    links = relative_links(path)
    assert links, f"{name} has no relative links: the link pattern is broken"
    missing = [t for t in links if not (path.parent / t.split("#", 1)[0]).resolve().exists()]
    assert not missing, f"{name} links to files that do not exist: {missing}"


def test_link_pattern_sees_links_and_skips_code(tmp_path: Path):
    page = tmp_path / "p.md"
    page.write_text(
        '[a](docs/a.md) ![img](docs/x.png "title") [b](https://example.com) [c](#top) `[d](no.md)`\n'
        "```\n[e](no2.md)\n```\n[f](docs/b.md#part)\n",
        encoding="utf-8",
    )
    assert relative_links(page) == ["docs/a.md", "docs/x.png", "docs/b.md#part"]
