"""Grounded generation: any strategy's result becomes a prompt, a backend writes the answer, citations point at
the evidence it used.

- ``base``: ``GenerationRequest``, ``Generation``, the ``Generator`` protocol (``mmkg.llm``'s);
- ``context``: numbered evidence within a token budget, and citations parsed back;
- ``prompts/`` + ``prompts.py``: task templates as editable files (``--task``);
- backends: ``extractive`` (offline default, no model: the reader's short answer), ``span-model`` (``span_model``:
  a local extractive QA model reads the span the reader did not compute), and the model backends of ``mmkg.llm``:
  ``openai`` (any OpenAI-compatible endpoint), ``llamacpp`` (a GGUF in process), ``transformers`` (a local
  Hugging Face model);
- ``question``: what a question asks for (answer type, relation, names, options, bridge), from spaCy's parse;
- ``reader``: the short answer read out of the evidence without a model, with support spans and graph path;
- ``answer``: the ``Answer`` object and ``answer(index, question, generator)``.
"""

from __future__ import annotations

from typing import Any

from mmkg.generation.answer import Answer, Citation, answer, answer_stream, prepare
from mmkg.generation.base import Evidence, Generation, GenerationError, GenerationRequest, Generator
from mmkg.generation.context import Context, build_context, cited_labels
from mmkg.generation.extractive import ExtractiveGenerator
from mmkg.generation.prompts import load_template, tasks
from mmkg.llm import GENERATORS, LLM_BACKENDS


@GENERATORS.register("extractive", help="no model: the reader's short answer with its cited sentence (default)")
def _extractive(model: str | None = None, **options: Any) -> Generator:
    return ExtractiveGenerator()


@GENERATORS.register("span-model", help="a local extractive QA model (SQuAD-style) by path: the span it reads")
def _span_model(model: str | None = None, **options: Any) -> Generator:
    if not model:
        raise GenerationError("the span-model backend needs --model (a local folder of a question-answering model)")
    from mmkg.generation.span_model import SpanModelGenerator

    return SpanModelGenerator(model, **options)


#: the built-in backends (``GENERATORS.names()`` also lists those plugins registered)
BACKENDS = ("extractive", "span-model", *LLM_BACKENDS)


def get_generator(backend: str = "extractive", model: str | None = None, **options: Any) -> Generator:
    """A backend by name (``GENERATORS``); ``model`` is a model name (openai), a .gguf path (llamacpp) or a
    folder (transformers)."""
    try:
        factory = GENERATORS.get(backend)
    except ValueError as exc:
        raise GenerationError(str(exc)) from exc
    return factory(model, **options)


__all__ = [
    "BACKENDS",
    "GENERATORS",
    "Answer",
    "Citation",
    "Context",
    "Evidence",
    "ExtractiveGenerator",
    "Generation",
    "GenerationError",
    "GenerationRequest",
    "Generator",
    "answer",
    "answer_stream",
    "build_context",
    "cited_labels",
    "get_generator",
    "load_template",
    "prepare",
    "tasks",
]
