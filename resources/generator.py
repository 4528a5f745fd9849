from __future__ import annotations

import os
from functools import lru_cache

from dagster import ConfigurableResource
from pydantic import Field


@lru_cache(maxsize=4)
def _load(backend: str, model: str, base_url: str, api_key_env: str, timeout: float, device: str):
    from mmkg.generation import get_generator

    options: dict = {}
    if backend == "openai":
        options = {"base_url": base_url or None, "api_key": os.environ.get(api_key_env) or None, "timeout": timeout}
    elif backend == "transformers":
        options = {"device": device}
    return get_generator(backend, model or None, **options)


class GeneratorResource(ConfigurableResource):
    """The answer-writing backend of this environment: extractive (no model), openai, llamacpp or transformers."""

    backend: str = Field(default="extractive", description="extractive | openai | llamacpp | transformers")
    model: str = Field(default="", description="Model name (openai) or local path (llamacpp .gguf, transformers).")
    base_url: str = Field(default="", description="OpenAI-compatible endpoint, e.g. http://vllm:8000/v1.")
    api_key_env: str = Field(default="MMKG_LLM_API_KEY", description="Environment variable that holds the API key.")
    timeout: float = Field(default=60.0, gt=0, description="Seconds to wait for the openai backend.")
    device: str = Field(default="cpu", description="transformers: cpu | cuda")

    def get(self):
        """The backend, loaded once per process."""
        return _load(self.backend, self.model, self.base_url, self.api_key_env, self.timeout, self.device)
