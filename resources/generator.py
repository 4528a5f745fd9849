from __future__ import annotations

import os
from functools import lru_cache

from dagster import ConfigurableResource
from pydantic import Field


@lru_cache(maxsize=4)
def _load(backend: str, model: str, base_url: str, api_key_env: str, timeout: float, device: str, chat_format: str):
    from mmkg.generation import get_generator

    options: dict = {}
    if backend == "openai":
        options = {"base_url": base_url or None, "api_key": os.environ.get(api_key_env) or None, "timeout": timeout}
    elif backend in ("transformers", "span-model"):
        options = {"device": device}
    elif backend == "llamacpp" and chat_format:
        options = {"chat_format": chat_format}
    return get_generator(backend, model or None, **options)


class GeneratorResource(ConfigurableResource):
    """The answering backend of this environment: extractive (no model), span-model (a local extractive QA model),
    or one that writes: openai, llamacpp or transformers."""

    backend: str = Field(default="extractive",
                         description="extractive | span-model | openai | llamacpp | transformers")  # fmt: skip
    model: str = Field(default="", description="Model name (openai) or local path (llamacpp .gguf, transformers, "
                       "span-model).")  # fmt: skip
    base_url: str = Field(default="", description="OpenAI-compatible endpoint, e.g. http://vllm:8000/v1.")
    api_key_env: str = Field(default="MMKG_LLM_API_KEY", description="Environment variable that holds the API key.")
    timeout: float = Field(default=60.0, gt=0, description="Seconds to wait for the openai backend.")
    device: str = Field(default="cpu", description="transformers and span-model: cpu | cuda")
    chat_format: str = Field(default="", description="llamacpp: the GGUF's prompt format when the file names none "
                             "(gemma, chatml, llama-3, ...; empty: $MMKG_LLM_CHAT_FORMAT, else the file's template).")

    def get(self):
        """The backend, loaded once per process."""
        return _load(self.backend, self.model, self.base_url, self.api_key_env, self.timeout, self.device,
                     self.chat_format)

    @property
    def writes(self) -> bool:
        """Whether the backend writes text (a language model), not only reads spans out of the evidence."""
        from mmkg.llm import READING_BACKENDS

        return self.backend not in READING_BACKENDS
