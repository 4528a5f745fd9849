"""Models run in this process: a GGUF file through llama-cpp-python, or a Hugging Face model through transformers.

Both take a local path (or, for transformers, an id already in the local cache); nothing is
downloaded at run time. Missing packages or files are a ``GenerationError`` that says what to install
or where the file was looked for.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mmkg.generation.base import Generation, GenerationError, GenerationRequest
from mmkg.generation.openai_backend import messages


class LlamaCppGenerator:
    """A local GGUF model in process (llama-cpp-python's ``Llama.create_chat_completion``)."""

    name = "llamacpp"

    def __init__(self, model: str, n_ctx: int = 4096, n_threads: int | None = None, seed: int = 0):
        path = Path(model)
        if not path.is_file():
            raise GenerationError(f"GGUF model {path} not found; give the path of a .gguf file (--model)")
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise GenerationError("the llamacpp backend needs llama-cpp-python: pip install llama-cpp-python") from exc
        self.model = path.name
        self.llm = Llama(model_path=str(path), n_ctx=n_ctx, n_threads=n_threads, seed=seed, verbose=False)

    def count_tokens(self, text: str) -> int:
        return len(self.llm.tokenize(text.encode("utf-8"), add_bos=False))

    def generate(self, request: GenerationRequest) -> Generation:
        t0 = time.perf_counter()
        out: Any = self.llm.create_chat_completion(
            messages=messages(request), max_tokens=request.max_tokens, temperature=request.temperature
        )
        usage = out.get("usage") or {}
        return Generation(
            text=out["choices"][0]["message"]["content"] or "", backend=self.name, model=self.model,
            prompt_tokens=int(usage.get("prompt_tokens", 0)), completion_tokens=int(usage.get("completion_tokens", 0)),
            latency_ms=(time.perf_counter() - t0) * 1e3,
        )  # fmt: skip

    def stream(self, request: GenerationRequest) -> Iterator[str]:
        for chunk in self.llm.create_chat_completion(
            messages=messages(request), max_tokens=request.max_tokens, temperature=request.temperature, stream=True
        ):
            delta: Any = chunk["choices"][0].get("delta", {})  # type: ignore[index]
            if delta.get("content"):
                yield delta["content"]


class TransformersGenerator:
    """A local Hugging Face chat model (text), through its chat template; loaded from a path, offline."""

    name = "transformers"

    def __init__(self, model: str, device: str = "cpu"):
        try:
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as exc:  # pragma: no cover - transformers is a dependency
            raise GenerationError("the transformers backend needs transformers") from exc
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(model, local_files_only=True)
            self.lm = AutoModelForCausalLM.from_pretrained(model, local_files_only=True).to(device).eval()
        except OSError as exc:
            raise GenerationError(
                f"cannot load the model {model!r} from local files ({exc}); give a folder written by "
                "save_pretrained, or an id already in the Hugging Face cache"
            ) from exc
        self.model = Path(model).name or model
        self.device = device

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _inputs(self, request: GenerationRequest) -> Any:
        if request.images:
            raise GenerationError("the transformers backend here runs text models; send pictures to a vision "
                                  "model through the openai backend (vLLM, llama.cpp server) instead")  # fmt: skip
        chat = messages(request)
        ids = self.tokenizer.apply_chat_template(chat, add_generation_prompt=True, return_tensors="pt")
        if not hasattr(ids, "shape"):  # newer tokenizers return a BatchEncoding
            ids = ids["input_ids"]
        return ids.to(self.device)

    def generate(self, request: GenerationRequest) -> Generation:
        import torch

        t0 = time.perf_counter()
        ids = self._inputs(request)
        with torch.no_grad():
            out = self.lm.generate(
                ids, max_new_tokens=request.max_tokens, do_sample=request.temperature > 0,
                pad_token_id=self.tokenizer.pad_token_id or self.tokenizer.eos_token_id,
            )  # fmt: skip
        new = out[0, ids.shape[1] :]
        text = self.tokenizer.decode(new, skip_special_tokens=True)
        return Generation(
            text=text, backend=self.name, model=self.model, prompt_tokens=int(ids.shape[1]),
            completion_tokens=int(new.shape[0]), latency_ms=(time.perf_counter() - t0) * 1e3,
        )  # fmt: skip

    def stream(self, request: GenerationRequest) -> Iterator[str]:
        from threading import Thread

        from transformers import TextIteratorStreamer

        ids = self._inputs(request)
        streamer = TextIteratorStreamer(self.tokenizer, skip_prompt=True, skip_special_tokens=True)
        kwargs = dict(input_ids=ids, max_new_tokens=request.max_tokens, streamer=streamer, do_sample=False,
                      pad_token_id=self.tokenizer.pad_token_id or self.tokenizer.eos_token_id)  # fmt: skip
        thread = Thread(target=self.lm.generate, kwargs=kwargs, daemon=True)
        thread.start()
        yield from streamer
        thread.join()
