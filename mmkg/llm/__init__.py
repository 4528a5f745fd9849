"""Language-model backends: a prompt (system and user messages, optional pictures) in, text out.

The ground floor under everything that asks a model: answer generation (``mmkg.generation``), and the
LLM steps of retrieval strategies (R2AG's implicit relations, M3KG's triple filter) and of indexing
(cross-modal entity alignment). None of them imports another's layer to reach a model.

- ``base``: ``GenerationRequest``, ``Generation``, ``GenerationError``, the ``Generator`` protocol;
- ``prompts``: task templates as editable files (the ``prompts/`` folder of ``mmkg.generation``);
- backends: ``openai`` (any OpenAI-compatible endpoint), ``llamacpp`` (a GGUF in process),
  ``transformers`` (a local Hugging Face model). The model-free ``extractive`` backend reads answers
  out of retrieved evidence, so it is the answer layer's (``mmkg.generation.get_generator``).
"""

from __future__ import annotations

from typing import Any

from mmkg.llm.base import Evidence, Generation, GenerationError, GenerationRequest, Generator, approx_tokens
from mmkg.llm.prompts import PROMPTS_DIR, Template, load_template, tasks

#: the backends that run a language model
LLM_BACKENDS = ("openai", "llamacpp", "transformers")


def get_llm(backend: str, model: str | None = None, **options: Any) -> Generator:
    """A model backend by name; ``model`` is a model name (openai), a .gguf path (llamacpp) or a folder
    (transformers)."""
    if backend == "openai":
        from mmkg.llm.openai_backend import OpenAIGenerator

        return OpenAIGenerator(model=model, **options)
    if backend in ("llamacpp", "transformers"):
        if not model:
            raise GenerationError(f"the {backend} backend needs --model (a local path)")
        from mmkg.llm.local import LlamaCppGenerator, TransformersGenerator

        cls: Any = LlamaCppGenerator if backend == "llamacpp" else TransformersGenerator
        return cls(model, **options)
    raise GenerationError(f"unknown language-model backend {backend!r}; choose one of {list(LLM_BACKENDS)}")


__all__ = [
    "LLM_BACKENDS",
    "PROMPTS_DIR",
    "Evidence",
    "Generation",
    "GenerationError",
    "GenerationRequest",
    "Generator",
    "Template",
    "approx_tokens",
    "get_llm",
    "load_template",
    "tasks",
]
