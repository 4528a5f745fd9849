"""Prompt templates: plain text files a user can copy and edit, chosen with ``--task`` (or a path).

A template has ``[System]``, optional ``[Instructions]`` and ``[User]`` sections; leading ``#`` lines
are comments. ``${question}``, ``${context}`` (numbered evidence), ``${graph}`` (entities and triples),
``${triples}`` (triples with entity descriptions), ``${hints}`` (the reader's answer type, typed
candidates and graph path) and ``${image_note}`` are filled in with
``string.Template`` (a ``$`` that is not a placeholder is left as it is). Instructions join the
system message, as the MG2-RAG prompts of its appendix A.3 put them before the user input.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from pathlib import Path

#: the bundled templates: package data of ``mmkg.generation`` (a folder of text files, read here, never imported)
PROMPTS_DIR = Path(__file__).parents[1] / "generation" / "prompts"
_SECTION = re.compile(r"^\[(System|Instructions|User)\]\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Template:
    name: str
    system: str
    user: str
    path: Path

    def render(self, **values: str) -> tuple[str, str]:
        """(system, user) with the placeholders filled in."""
        return (
            string.Template(self.system).safe_substitute(values).strip(),
            string.Template(self.user).safe_substitute(values).strip(),
        )


def tasks() -> list[str]:
    """The bundled task names (``qa``, ``vqa``, ``mg2_reasoning``, ...)."""
    return sorted(p.stem for p in PROMPTS_DIR.glob("*.txt"))


def load_template(task: str | Path) -> Template:
    """A bundled task by name, or a template file by path."""
    path = Path(task)
    if not path.suffix:
        path = PROMPTS_DIR / f"{task}.txt"
        if not path.is_file():
            raise ValueError(f"unknown task {task!r}; choose one of {tasks()} or give a template file's path")
    elif not path.is_file():
        raise ValueError(f"prompt template {path} not found")
    text = "\n".join(line for line in path.read_text(encoding="utf-8").splitlines() if not line.startswith("#"))
    parts = _SECTION.split(text)
    sections = {parts[i]: parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}
    if "User" not in sections:
        raise ValueError(f"prompt template {path} has no [User] section")
    system = "\n\n".join(s for s in (sections.get("System", ""), sections.get("Instructions", "")) if s)
    return Template(path.stem, system, sections["User"], path)
