"""Start-up functions for worker processes; this module imports nothing heavy, so running one costs nothing.

A spawned worker unpickles its initializer before any task, importing the initializer's module:
anything this module imported would be loaded before the initializer could act.
"""

from __future__ import annotations

import signal
import sys


def without_torch() -> None:
    """Make ``import torch`` fail in this process, so spaCy's thinc runs on numpy alone.

    spaCy imports thinc, and thinc imports torch when it is installed, which a CPU pipeline never
    uses: a parser worker then starts in 3.1 s with 624 MiB resident instead of 1.3 s with 151 MiB.
    A module already imported (the parent's main module may have) is left alone.
    """
    sys.modules.setdefault("torch", None)  # type: ignore[arg-type]


def terminable() -> None:
    """Let the pool stop this worker: SIGTERM back to its default action.

    A spawned process inherits ignored signals from its parent. Under a parent that ignores SIGTERM
    (a background job of some shells and job runners), a ProcessPoolExecutor whose other worker was
    killed sends SIGTERM to the survivors and then waits for them forever (CPython's
    ``terminate_broken``): a parse after a worker died hung instead of retrying.
    """
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def parser_worker(light: bool) -> None:
    """The parser pool's initializer: terminable, and without torch for a CPU pipeline (``light``)."""
    terminable()
    if light:
        without_torch()
