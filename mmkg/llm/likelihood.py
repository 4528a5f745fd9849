"""A language model that scores text instead of writing it: the log-likelihood of short continuations after one
shared prompt, and of a question after each of several passages.

The reader (``mmkg.generation.model_reader``) asks "how likely is *answer: X* after this question and these
sentences?" for each candidate span X, and the page re-ranker asks "how likely is this question after this page?"
(query likelihood, as in UPR). Both need the model's token log-probabilities, not its text.

**Runtime: transformers on torch, from the GGUF file converted once.** mmkg already installs torch and
transformers (the encoders run on them), and transformers reads GGUF files (with ``gguf`` and ``accelerate``),
de-quantizing the weights to float32. That conversion takes about 15 s, so its result is written once to a cache
folder (``MMKG_MODEL_CACHE``, default ``~/.cache/mmkg/models``) keyed by the file's SHA-256, and later loads take
about 2 s. llama-cpp-python was the other candidate: PyPI has only its source (a 5-minute compile on 2 cores,
beyond the quick start's budget), and the build of its 0.3.36 on this machine's CPU (AMX, AVX-512) crashed with a
segmentation fault on the first evaluation of SmolLM2's Q4_1 file. It stays the ``llamacpp`` writing backend.

**Precision: bfloat16 where the CPU computes it natively** (AVX-512 BF16 or AMX: ``bf16_native``), float32
elsewhere. On this project's 2-core machine a 300-token prompt takes 0.14 s in bfloat16 against 0.37 s in float32
(AMX); the log-likelihoods move in the second decimal. ``MMKG_READER_DTYPE`` (float32 / bfloat16) overrides it.

Continuations share the prompt's key/value cache: the prompt runs once, and every continuation runs as one
batch on top of a copy of it, so scoring twenty candidate answers costs about one more prompt of their length.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from mmkg.llm.base import GenerationError
from mmkg.model_files import cache_root, new_folder, sha256_of

log = logging.getLogger(__name__)

DTYPE_ENV = "MMKG_READER_DTYPE"
#: files of a converted model folder; the marker is written last, so a half-written folder is never used
_DONE = "mmkg-converted.json"


@dataclass(frozen=True)
class Continuation:
    """One continuation's log-likelihood: the sum over its tokens (the end-of-turn token included where asked),
    the token count, and the first token's log-probability."""

    text: str
    logprob: float
    tokens: int
    first: float

    @property
    def mean(self) -> float:
        return self.logprob / max(self.tokens, 1)


def bf16_native() -> bool:
    """Whether this CPU multiplies bfloat16 natively (AVX-512 BF16 or AMX), so bfloat16 is faster, not slower."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return " avx512_bf16" in flags or " amx_bf16" in flags


def reader_dtype() -> str:
    """The precision the model runs in: ``MMKG_READER_DTYPE``, else bfloat16 where native, else float32."""
    value = os.environ.get(DTYPE_ENV, "").strip().lower()
    if value in ("float32", "bfloat16"):
        return value
    if value:
        raise GenerationError(f"{DTYPE_ENV}={value!r}: expected float32 or bfloat16")
    return "bfloat16" if bf16_native() else "float32"


def converted(gguf: Path, root: Path | None = None) -> Path:
    """A transformers folder (config, tokenizer, float32 safetensors) made from ``gguf`` once and reused; written
    in a temporary folder and renamed into place, so a crash mid-way leaves nothing half-written behind."""
    digest = sha256_of(gguf)
    root = root or cache_root()
    target = root / f"{gguf.stem}-{digest[:16]}"
    if (target / _DONE).is_file():
        return target
    try:
        from safetensors.torch import save_file
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:  # pragma: no cover - core dependencies
        raise GenerationError(f"reading {gguf} needs transformers and safetensors: {exc}") from exc
    log.info("converting %s for transformers once (about 15 s), into %s", gguf.name, target)
    try:
        tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    except (ImportError, ValueError, OSError) as exc:
        raise GenerationError(f"cannot read {gguf} as a GGUF model ({exc}); transformers needs the gguf and "
                              "accelerate packages (bash scripts/setup.sh installs them)") from exc  # fmt: skip
    with new_folder(target, _DONE) as tmp:
        tok.save_pretrained(tmp)
        config = model.config.to_dict()
        config.pop("quantization_config", None)  # the weights below are plain float32, not GGUF blocks
        (tmp / "config.json").write_text(json.dumps(config, indent=1))
        tied = getattr(model.config, "tie_word_embeddings", False)
        state = {k: v.contiguous() for k, v in model.state_dict().items() if not (tied and k == "lm_head.weight")}
        save_file(state, str(tmp / "model.safetensors"), metadata={"format": "pt"})
        (tmp / _DONE).write_text(json.dumps({"gguf": gguf.name, "sha256": digest}))
    return target


class LikelihoodModel:
    """A causal language model (a local GGUF file, or a transformers folder) that scores continuations."""

    def __init__(self, path: Path, name: str = "", threads: int | None = None):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # "Loading weights: 100%" on every ask is noise on a user's terminal
        folder = converted(path) if path.is_file() else path
        try:
            self.tokenizer: Any = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
            self.dtype = reader_dtype()
            self.lm: Any = AutoModelForCausalLM.from_pretrained(str(folder), local_files_only=True,
                                                                dtype=getattr(torch, self.dtype)).eval()  # fmt: skip
        except (OSError, ValueError) as exc:
            raise GenerationError(f"cannot load the reading model from {folder} ({exc}); remove that folder to "
                                  "convert the GGUF file again") from exc  # fmt: skip
        if threads:
            torch.set_num_threads(threads)
        self.name = name or path.name
        self.end = self.tokenizer.eos_token or ""  # the end of an assistant turn (<|im_end|> in ChatML)
        self._lock = threading.Lock()  # one forward pass at a time: the server answers from several threads

    def prompt_ids(self, system: str, user: str) -> list[int]:
        """The chat prompt up to the start of the assistant's turn, as token ids."""
        msgs = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        ids = self.tokenizer.apply_chat_template(msgs, add_generation_prompt=True, tokenize=True)
        if not isinstance(ids, list):  # a BatchEncoding in newer tokenizers
            ids = ids["input_ids"]
        return list(ids)

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def continuations(self, system: str, user: str, options: Sequence[str], end: bool = True) -> list[Continuation]:
        """The log-likelihood of each of ``options`` as the assistant's whole reply (``end``: followed by the
        end-of-turn token, so a continuation that stops early is not favoured over the full answer)."""
        if not options:
            return []
        import torch

        prefix = self.prompt_ids(system, user)
        seqs = [self.tokenizer(o + (self.end if end else ""), add_special_tokens=False)["input_ids"] or
                [self.tokenizer.eos_token_id] for o in options]  # fmt: skip
        width = max(len(s) for s in seqs)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        batch = torch.tensor([s + [pad] * (width - len(s)) for s in seqs])
        with self._lock, torch.inference_mode():
            head = self.lm(torch.tensor([prefix]), use_cache=True, logits_to_keep=1)
            cache = head.past_key_values
            cache.batch_repeat_interleave(len(seqs))
            mask = torch.ones(len(seqs), len(prefix) + width, dtype=torch.long)
            out = self.lm(batch, past_key_values=cache, attention_mask=mask, use_cache=False)
            first = torch.log_softmax(head.logits[0, -1].float(), dim=-1)  # the distribution of each first token
            rest = torch.log_softmax(out.logits[:, :-1].float(), dim=-1)  # of tokens 2.. given the ones before
        scores = []
        for i, (text, s) in enumerate(zip(options, seqs, strict=True)):
            lp0 = float(first[s[0]])
            lps = [lp0] + [float(rest[i, j - 1, s[j]]) for j in range(1, len(s))]
            scores.append(Continuation(text, sum(lps), len(s), lp0))
        return scores

    def text_likelihood(self, contexts: Sequence[tuple[str, str]], text: str, batch_size: int = 8) -> list[float]:
        """The mean log-probability per token of ``text`` as the reply to each (system, user) prompt: for query
        likelihood, ``text`` is the question and each prompt shows one page."""
        import torch

        target = self.tokenizer(text + self.end, add_special_tokens=False)["input_ids"]
        out: list[float] = []
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        for i in range(0, len(contexts), batch_size):
            part = [self.prompt_ids(s, u) for s, u in contexts[i:i + batch_size]]
            width = max(len(p) for p in part) + len(target)
            # left padding: every prompt's question ends at the same position
            ids = torch.tensor([[pad] * (width - len(p) - len(target)) + p + target for p in part])
            mask = torch.tensor([[0] * (width - len(p) - len(target)) + [1] * (len(p) + len(target)) for p in part])
            with self._lock, torch.inference_mode():
                logits = self.lm(ids, attention_mask=mask, logits_to_keep=len(target) + 1).logits
            lp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
            tgt = torch.tensor(target)
            picked = lp.gather(2, tgt.view(1, -1, 1).expand(len(part), -1, 1)).squeeze(-1)
            out.extend(float(x) for x in picked.mean(dim=1))
        return out


@lru_cache(maxsize=2)
def load(path: Path, name: str = "") -> LikelihoodModel:
    """The model at ``path``, loaded once per process."""
    return LikelihoodModel(path, name)
