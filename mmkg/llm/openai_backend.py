"""Any OpenAI-compatible chat endpoint (vLLM, SGLang, llama.cpp server, Ollama, hosted APIs) via the ``openai`` client.

Base URL, model and key come from arguments or the environment (``MMKG_LLM_BASE_URL``,
``MMKG_LLM_MODEL``, ``MMKG_LLM_API_KEY``, then ``OPENAI_API_KEY``); timeouts and retries are the
client's. Pictures go to vision models as ``data:`` URLs in the user message. A server that is down
or too slow ends in a ``GenerationError`` naming the endpoint and what to check, within the timeout.
"""

from __future__ import annotations

import base64
import mimetypes
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mmkg.llm.base import Generation, GenerationError, GenerationRequest, approx_tokens


def data_url(path: Path) -> str:
    """A picture as a ``data:`` URL (what the OpenAI chat API takes for images in a message)."""
    mime = mimetypes.guess_type(path.name)[0] or "image/png"
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"


def messages(request: GenerationRequest) -> list[dict[str, Any]]:
    """Chat messages: the system prompt, then the user prompt with any pictures as image parts."""
    user: Any = request.user
    if request.images:
        user = [{"type": "text", "text": request.user}] + [
            {"type": "image_url", "image_url": {"url": data_url(p)}} for p in request.images
        ]
    out: list[dict[str, Any]] = []
    if request.system:
        out.append({"role": "system", "content": request.system})
    out.append({"role": "user", "content": user})
    return out


class OpenAIGenerator:
    """Chat completions from an OpenAI-compatible server."""

    name = "openai"

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
    ):
        from openai import OpenAI

        self.model = model or os.environ.get("MMKG_LLM_MODEL", "")
        if not self.model:
            raise GenerationError("the openai backend needs a model name: --model NAME or MMKG_LLM_MODEL")
        self.base_url = base_url or os.environ.get("MMKG_LLM_BASE_URL") or None
        key = api_key or os.environ.get("MMKG_LLM_API_KEY") or os.environ.get("OPENAI_API_KEY") or "none"
        # a local server (llama.cpp, vLLM, Ollama) takes any key; hosted APIs need a real one
        self.client = OpenAI(base_url=self.base_url, api_key=key, timeout=timeout, max_retries=max_retries)
        self.timeout = timeout

    def count_tokens(self, text: str) -> int:
        return approx_tokens(text)

    def _error(self, exc: Exception) -> GenerationError:
        import openai

        where = self.base_url or "the OpenAI API"
        if isinstance(exc, openai.APITimeoutError):
            return GenerationError(f"{where} did not answer within {self.timeout:.0f}s (model {self.model}); "
                                   "is the server overloaded? raise --timeout")  # fmt: skip
        if isinstance(exc, openai.APIConnectionError):
            return GenerationError(f"cannot reach {where} ({exc}); is the server running, and is the base URL "
                                   "right (it usually ends in /v1)?")  # fmt: skip
        if isinstance(exc, openai.APIStatusError):
            return GenerationError(f"{where} answered {exc.status_code} for model {self.model}: {exc.message}")
        return GenerationError(f"{where}: {exc}")

    def generate(self, request: GenerationRequest) -> Generation:
        import openai

        t0 = time.perf_counter()
        try:
            resp = self.client.chat.completions.create(
                model=self.model, messages=messages(request), max_tokens=request.max_tokens,
                temperature=request.temperature,
            )  # fmt: skip
        except openai.OpenAIError as exc:
            raise self._error(exc) from exc
        text = resp.choices[0].message.content or ""
        usage = resp.usage
        return Generation(
            text=text, backend=self.name, model=resp.model or self.model,
            prompt_tokens=usage.prompt_tokens if usage else approx_tokens(request.system + request.user),
            completion_tokens=usage.completion_tokens if usage else approx_tokens(text),
            latency_ms=(time.perf_counter() - t0) * 1e3,
        )  # fmt: skip

    def stream(self, request: GenerationRequest) -> Iterator[str]:
        import openai

        try:
            chunks = self.client.chat.completions.create(
                model=self.model, messages=messages(request), max_tokens=request.max_tokens,
                temperature=request.temperature, stream=True,
            )  # fmt: skip
            for chunk in chunks:
                if chunk.choices and chunk.choices[0].delta.content:
                    yield chunk.choices[0].delta.content
        except openai.OpenAIError as exc:
            raise self._error(exc) from exc
