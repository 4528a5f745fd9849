"""spaCy, imported without thinc's optional PyTorch support: every module of mmkg takes spaCy from here.

thinc (spaCy's machine-learning layer) imports ``torch`` whenever it is installed, to offer PyTorch-backed
layers. The pipelines mmkg runs (``en_core_web_sm`` and its kind: CNN pipelines on thinc's NumPy ops) never
use them, yet the import cost ``mmkg ask`` about 1.6 s and more than half its memory (5.7 s and 1.06 GB
against 4.1 s and 0.47 GB on the sample project). So while thinc is first imported, ``torch`` is made unimportable
(``sys.modules["torch"] = None``, Python's documented way to block an import), which thinc reads as "not
installed"; the entry is removed right after, so any later ``import torch`` (a torch encoder, a grounder)
works as usual.

Left alone when it would matter: when ``torch`` is already imported, when thinc already is, when a package of
transformer pipelines is installed (``spacy-transformers``, ``spacy-curated-transformers``: they run on PyTorch
through thinc), or when ``MMKG_SPACY_TORCH=1`` asks for thinc's PyTorch support. The block lasts only while
thinc's first import runs, at the first import of spaCy in the process.
"""

from __future__ import annotations

import importlib.util
import os
import sys

TORCH_PIPELINES = ("spacy_transformers", "spacy_curated_transformers")


def _thinc_without_torch() -> None:
    if {"torch", "thinc"} & set(sys.modules) or os.environ.get("MMKG_SPACY_TORCH", "") in ("1", "true", "yes"):
        return
    if any(importlib.util.find_spec(name) is not None for name in TORCH_PIPELINES):
        return
    sys.modules["torch"] = None  # type: ignore[assignment]
    try:
        import thinc.compat  # noqa: F401  (reads has_torch once, here)
    finally:
        del sys.modules["torch"]


_thinc_without_torch()

import spacy  # noqa: E402
from spacy.lang.en.stop_words import STOP_WORDS  # noqa: E402
from spacy.language import Language  # noqa: E402
from spacy.tokens import Doc, Span, Token  # noqa: E402

__all__ = ["STOP_WORDS", "Doc", "Language", "Span", "Token", "spacy"]
