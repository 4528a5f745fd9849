"""Quiet native loggers: what the command line and the quick start hide from a person's terminal.

LanceDB's Rust logger (lancedb's env_logger, read when lancedb is imported) warns on every table it creates ("No
existing dataset ... it will be created"); it reads ``LANCEDB_LOG``, and pylance's reads ``LANCE_LOG``. Model
loading prints per-tensor progress bars. Each is set only where the user has not set it, and before the libraries
are imported (child processes inherit it).
"""

from __future__ import annotations

import os

QUIET = {"HF_HUB_DISABLE_PROGRESS_BARS": "1", "TRANSFORMERS_VERBOSITY": "error", "LANCEDB_LOG": "error",
         "LANCE_LOG": "error"}  # fmt: skip


def quiet_native_logs() -> None:
    """Set the variables of ``QUIET`` that the environment does not set already."""
    for name, value in QUIET.items():
        os.environ.setdefault(name, value)
