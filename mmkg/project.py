"""``mmkg init``: a project folder a data engineer can start from.

A project is a folder holding ``corpus/`` (one sub-folder per partition), ``mmkg.toml`` (every
setting, commented, with its default; ``mmkg.settings`` reads it from the current folder) and a
``.gitignore`` for the data root. Run the CLI from that folder and every command finds the corpus,
the data root (``.mmkg/``) and the index without flags.
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

from mmkg.settings import CONFIG_FILE, SAMPLE_CORPUS, Settings

COMMENT_WIDTH = 100  # mmkg.toml's comment lines are wrapped to this many characters

# The sample partition copied into a new project, so `mmkg index build` has something to index at once.
EXAMPLE_PARTITION = "space"

NEXT_STEPS = """Next:
  cd {folder}
  mmkg index build     # index corpus/ into .mmkg/, with progress
  mmkg query "{question}"
  mmkg index status    # the partitions changed since the last build
  mmkg index update    # re-index only those, then publish
Add a folder of documents under corpus/ for each partition; settings: mmkg.toml."""


def config_text(corpus_root: str = "corpus", data_root: str = ".mmkg") -> str:
    """The commented ``mmkg.toml``: the two roots set, every other setting listed with its default."""
    lines = [
        "# mmkg project settings. mmkg reads this file from the folder it runs in.",
        "# An MMKG_<NAME> environment variable overrides a value here; a command-line flag overrides both.",
        "# Relative paths are relative to this folder.",
        "",
    ]
    for name, field in Settings.model_fields.items():
        lines += textwrap.wrap(f"{field.description or name} (MMKG_{name.upper()})", COMMENT_WIDTH,
                               initial_indent="# ", subsequent_indent="# ", break_on_hyphens=False)  # fmt: skip
        if name == "corpus_root":
            lines.append(f'{name} = "{corpus_root}"')
        elif name == "data_root":
            lines.append(f'{name} = "{data_root}"')
        else:
            default = field.default
            value = (
                f'"{default}"'
                if isinstance(default, str | Path)
                else str(default).lower()
                if isinstance(default, bool)
                else repr(default)
            )
            lines.append(f"# {name} = {value}")
        lines.append("")
    return "\n".join(lines)


def init_project(folder: Path | str, example: bool = True) -> list[Path]:
    """Create the project files under ``folder``; never overwrites: a file already there is an error."""
    folder = Path(folder)
    config = folder / CONFIG_FILE
    if config.exists():
        raise FileExistsError(f"{config} already exists: {folder} is already an mmkg project")
    corpus = folder / "corpus"
    if corpus.exists() and any(corpus.iterdir()):
        raise FileExistsError(f"{corpus} exists and is not empty; choose another folder or remove it")
    corpus.mkdir(parents=True, exist_ok=True)
    written = [config]
    config.write_text(config_text(), encoding="utf-8")
    ignore = folder / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# mmkg data root: tables, blobs, index versions, Dagster runs\n.mmkg/\n", encoding="utf-8")
        written.append(ignore)
    if example and (SAMPLE_CORPUS / EXAMPLE_PARTITION).is_dir():
        shutil.copytree(SAMPLE_CORPUS / EXAMPLE_PARTITION, corpus / EXAMPLE_PARTITION)
        written.append(corpus / EXAMPLE_PARTITION)
    return written
