"""Language-model backends: a prompt (system and user messages, optional pictures) in, text out.

The ground floor under everything that asks a model: answer generation (``mmkg.generation``), and the
LLM steps of retrieval strategies (R2AG's implicit relations, M3KG's triple filter) and of indexing
(cross-modal entity alignment). None of them imports another's layer to reach a model.

- ``base``: ``GenerationRequest``, ``Generation``, ``GenerationError``, the ``Generator`` protocol;
- ``prompts``: task templates as editable files (the ``prompts/`` folder of ``mmkg.generation``);
- backends: ``openai`` (any OpenAI-compatible endpoint), ``llamacpp`` (a GGUF in process),
  ``transformers`` (a local Hugging Face model). The backends that read answers out of retrieved evidence
  (``READING_BACKENDS``: the model-free ``extractive``, and ``span-model``) are the answer layer's
  (``mmkg.generation.get_generator``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mmkg.llm.base import Evidence, Generation, GenerationError, GenerationRequest, Generator, approx_tokens
from mmkg.llm.prompts import PROMPTS_DIR, Template, load_template, tasks
from mmkg.plugins import Registry

#: the backends that run a language model
LLM_BACKENDS = ("openai", "llamacpp", "transformers")
#: the answer layer's backends (``mmkg.generation`` registers them): they read the answer out of the evidence and
#: write nothing, so no step that needs a model to write (an LLM choice, a prompt) can use them
READING_BACKENDS = ("extractive", "span-model")

#: generation backends by name: a factory ``(model, **options) -> Generator`` (``mmkg.plugins``; entry points of
#: the group ``mmkg.generators`` add more). The answer layer adds the model-free ``extractive`` one.
GENERATORS: Registry[Callable[..., Generator]] = Registry("generation backend", "mmkg.generators")


@GENERATORS.register("openai", help="any OpenAI-compatible chat endpoint (vLLM, SGLang, llama.cpp, Ollama, APIs)")
def _openai(model: str | None = None, **options: Any) -> Generator:
    from mmkg.llm.openai_backend import OpenAIGenerator

    return OpenAIGenerator(model=model, **options)


@GENERATORS.register("llamacpp", help="a local GGUF model in process (llama-cpp-python)")
def _llamacpp(model: str | None = None, **options: Any) -> Generator:
    if not model:
        raise GenerationError("the llamacpp backend needs --model (a local path)")
    from mmkg.llm.local import LlamaCppGenerator

    return LlamaCppGenerator(model, **options)


@GENERATORS.register("transformers", help="a local Hugging Face text or vision-language model by path; without "
                     "one, the installed SmolLM2-135M-Instruct writes")  # fmt: skip
def _transformers(model: str | None = None, **options: Any) -> Generator:
    from mmkg.llm.local import TransformersGenerator

    if not model:  # the installed reading model writes: the local writer out of the box
        from mmkg.llm.installed import reader_model
        from mmkg.llm.likelihood import converted

        choice = reader_model("")
        if choice.path is None:
            raise GenerationError(f"the transformers backend needs --model (a local path): {choice.reason}")
        model = str(converted(choice.path))

    return TransformersGenerator(model, **options)


def get_llm(backend: str, model: str | None = None, **options: Any) -> Generator:
    """A backend that writes text, by name (``GENERATORS``); ``model`` is a model name (openai), a .gguf path
    (llamacpp) or a folder (transformers). The backends that only read (``READING_BACKENDS``) are refused."""
    if backend in READING_BACKENDS:
        raise GenerationError(f"the {backend} backend reads answers out of the evidence and writes no text; this "
                              f"step needs a language model: {', '.join(LLM_BACKENDS)} or a plugin")  # fmt: skip
    try:
        factory = GENERATORS.get(backend)
    except ValueError as exc:
        raise GenerationError(str(exc)) from exc
    return factory(model, **options)


__all__ = [
    "GENERATORS",
    "LLM_BACKENDS",
    "PROMPTS_DIR",
    "READING_BACKENDS",
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
