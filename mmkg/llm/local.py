"""Models run in this process: a GGUF file through llama-cpp-python, or a Hugging Face model through transformers.

Both take a local path (or, for transformers, an id already in the local cache); nothing is
downloaded at run time. Missing packages or files are a ``GenerationError`` that says what to install
or where the file was looked for.

A GGUF names its prompt format in ``tokenizer.chat_template``. One without it (a base model, an older
conversion) would get llama-cpp-python's fallback, Llama 2's ``[INST] <<SYS>>`` format, which other models echo
back: Gemma 3 270M, run so, answered with "<<SYS>>" and the evidence copied. ``chat_format`` (``--chat-format``,
the ``generator`` resource's ``chat_format``) or ``MMKG_LLM_CHAT_FORMAT`` names the format instead, and without
either such a file is loaded with a warning that says so.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mmkg.llm.base import Generation, GenerationError, GenerationRequest
from mmkg.llm.openai_backend import messages

log = logging.getLogger(__name__)


class LlamaCppGenerator:
    """A local GGUF model in process (llama-cpp-python's ``Llama.create_chat_completion``)."""

    name = "llamacpp"

    def __init__(
        self, model: str, n_ctx: int = 4096, n_threads: int | None = None, seed: int = 0, chat_format: str | None = None
    ):
        path = Path(model)
        if not path.is_file():
            raise GenerationError(f"GGUF model {path} not found; give the path of a .gguf file (--model)")
        try:
            from llama_cpp import Llama
            from llama_cpp.llama_chat_format import (
                LlamaChatCompletionHandlerNotFoundException,
                LlamaChatCompletionHandlerRegistry,
            )
        except ImportError as exc:
            raise GenerationError("the llamacpp backend needs llama-cpp-python: pip install llama-cpp-python") from exc
        chat_format = chat_format or os.environ.get("MMKG_LLM_CHAT_FORMAT") or None
        if chat_format is not None:
            try:
                LlamaChatCompletionHandlerRegistry().get_chat_completion_handler_by_name(chat_format)
            except LlamaChatCompletionHandlerNotFoundException as exc:  # its message lists the formats it knows
                raise GenerationError(f"chat format (--chat-format, MMKG_LLM_CHAT_FORMAT): {exc}") from exc
        self.model = path.name
        self.llm = Llama(
            model_path=str(path), n_ctx=n_ctx, n_threads=n_threads, seed=seed, chat_format=chat_format, verbose=False
        )
        if chat_format is None and "tokenizer.chat_template" not in (self.llm.metadata or {}):
            log.warning(
                "%s carries no chat template (tokenizer.chat_template), so its prompts are written in %s's format, "
                "which a model trained on another one repeats or ignores; name the model's own format with "
                "--chat-format or MMKG_LLM_CHAT_FORMAT (gemma, chatml, llama-3, mistral-instruct, qwen, ...)", path,
                self.chat_format,
            )  # fmt: skip

    @property
    def chat_format(self) -> str:
        """The prompt format in use: the one named, the file's own template, or llama-cpp-python's fallback."""
        return self.llm.chat_format or ""

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
    """A local Hugging Face model, loaded from a path, offline: a text chat model, or a vision-language model.

    A model whose config is an image-text-to-text architecture (LLaVA, Qwen2-VL, Idefics, SmolVLM,
    Gemma 3, ...) loads with its processor, and the question's picture goes in as an image part of the
    user message; any other loads as a causal LM with its tokenizer and takes text only.
    """

    name = "transformers"

    def __init__(self, model: str, device: str = "cpu"):
        from transformers import (
            AutoConfig,
            AutoModelForCausalLM,
            AutoModelForImageTextToText,
            AutoProcessor,
            AutoTokenizer,
        )
        from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

        try:
            config = AutoConfig.from_pretrained(model, local_files_only=True)
            self.vision = config.model_type in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES
            if self.vision:
                self.processor: Any = AutoProcessor.from_pretrained(model, local_files_only=True)
                self.tokenizer: Any = self.processor.tokenizer
                self.lm: Any = AutoModelForImageTextToText.from_pretrained(model, local_files_only=True)
            else:
                self.processor = None
                self.tokenizer = AutoTokenizer.from_pretrained(model, local_files_only=True)
                self.lm = AutoModelForCausalLM.from_pretrained(model, local_files_only=True)
        except (OSError, ValueError) as exc:
            raise GenerationError(
                f"cannot load the model {model!r} from local files ({exc}); give a folder written by "
                "save_pretrained, or an id already in the Hugging Face cache"
            ) from exc
        self.lm = self.lm.to(device).eval()
        self.model = Path(model).name or model
        self.device = device

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _inputs(self, request: GenerationRequest) -> dict[str, Any]:
        if not self.vision:
            if request.images:
                raise GenerationError(f"{self.model} is a text model and cannot see the picture; give a "
                                      "vision-language model (e.g. a LLaVA or Qwen2-VL folder) or use the openai "
                                      "backend with a vision model")  # fmt: skip
            ids = self.tokenizer.apply_chat_template(messages(request), add_generation_prompt=True, return_tensors="pt")
            if not hasattr(ids, "shape"):  # newer tokenizers return a BatchEncoding
                ids = ids["input_ids"]
            return {"input_ids": ids.to(self.device)}
        from PIL import Image

        chat: list[dict[str, Any]] = []
        if request.system:
            chat.append({"role": "system", "content": [{"type": "text", "text": request.system}]})
        parts = [{"type": "image"} for _ in request.images] + [{"type": "text", "text": request.user}]
        chat.append({"role": "user", "content": parts})
        prompt = self.processor.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
        images = [Image.open(p).convert("RGB") for p in request.images] or None
        inputs = self.processor(text=prompt, images=images, return_tensors="pt")
        return {k: v.to(self.device) for k, v in inputs.items()}

    def _pad_id(self) -> int:
        return self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id

    def generate(self, request: GenerationRequest) -> Generation:
        import torch

        t0 = time.perf_counter()
        inputs = self._inputs(request)
        n_prompt = int(inputs["input_ids"].shape[1])
        with torch.no_grad():
            out = self.lm.generate(**inputs, max_new_tokens=request.max_tokens, do_sample=request.temperature > 0,
                                   pad_token_id=self._pad_id())  # fmt: skip
        new = out[0, n_prompt:]
        text = self.tokenizer.decode(new, skip_special_tokens=True)
        return Generation(
            text=text, backend=self.name, model=self.model, prompt_tokens=n_prompt,
            completion_tokens=int(new.shape[0]), latency_ms=(time.perf_counter() - t0) * 1e3,
        )  # fmt: skip

    def stream(self, request: GenerationRequest) -> Iterator[str]:
        from threading import Thread

        from transformers import TextIteratorStreamer

        inputs = self._inputs(request)
        streamer = TextIteratorStreamer(self.tokenizer, skip_prompt=True, skip_special_tokens=True)
        kwargs = dict(**inputs, max_new_tokens=request.max_tokens, streamer=streamer, do_sample=False,
                      pad_token_id=self._pad_id())  # fmt: skip
        thread = Thread(target=self.lm.generate, kwargs=kwargs, daemon=True)
        thread.start()
        yield from streamer
        thread.join()
