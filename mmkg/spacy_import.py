"""spaCy, imported without thinc's optional PyTorch support: every module of mmkg takes spaCy from here.

thinc (spaCy's machine-learning layer) imports ``torch`` whenever it is installed, to offer PyTorch-backed
layers. The pipelines mmkg runs (``en_core_web_sm`` and its kind: CNN pipelines on thinc's NumPy ops) never
use them, yet the import cost ``mmkg ask`` 1.6 s and more than half its memory (5.7 s and 1.06 GB against
4.4 s and 0.47 GB on the sample project). So while thinc is first imported, ``torch`` is made unimportable
(``sys.modules["torch"] = None``, Python's documented way to block an import), which thinc reads as "not
installed"; the entry is removed right after, so any later ``import torch`` (a torch encoder, a grounder)
works as usual.

Left alone when it would matter: when ``torch`` is already imported, when thinc already is, or when
``spacy-transformers`` is installed (transformer pipelines run on PyTorch through thinc).
"""

from __future__ import annotations

import importlib.util
import sys


def _thinc_without_torch() -> None:
    if {"torch", "thinc"} & set(sys.modules) or importlib.util.find_spec("spacy_transformers") is not None:
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
