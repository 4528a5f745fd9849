"""A generation backend: the reader's short answer as one cited sentence, no model (``docs/extending.md``).

Where the built-in ``extractive`` backend quotes its supporting sentence, this one writes a headline:
"Uppsala [2]." It shows the three things every backend provides (``generate``, ``stream``,
``count_tokens``) and what a request carries besides the prompt: the evidence shown and the reader's
``reading`` (short answer, support, path), so a backend never needs to re-read the evidence itself.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from mmkg.llm import GENERATORS, Generation, GenerationRequest, approx_tokens


class HeadlineGenerator:
    name = "headline"
    model = "none"

    def count_tokens(self, text: str) -> int:
        return approx_tokens(text)

    def generate(self, request: GenerationRequest) -> Generation:
        t0 = time.perf_counter()
        reading = request.reading
        if reading is None or reading.abstained or not reading.support:
            text = "The evidence does not say."
            used: list[int] = []
        else:
            label = reading.support[0].label
            text, used = f"{reading.text} [{label}].", [label]
        return Generation(text, self.name, self.model, approx_tokens(request.system + request.user),
                          approx_tokens(text), (time.perf_counter() - t0) * 1e3, extractive=True, used=used)

    def stream(self, request: GenerationRequest) -> Iterator[str]:
        yield self.generate(request).text


@GENERATORS.register("headline", help="the reader's short answer as one cited sentence, no model")
def headline_generator(model: str | None = None, **options: Any) -> HeadlineGenerator:
    return HeadlineGenerator()
