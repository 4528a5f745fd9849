"""What every generation backend shares, from ``mmkg.llm.base`` (the ground floor the LLM steps of retrieval
and indexing use too): the request a backend gets, what it returns, and the ``Generator`` protocol."""

from mmkg.llm.base import Evidence, Generation, GenerationError, GenerationRequest, Generator, approx_tokens

__all__ = ["Evidence", "Generation", "GenerationError", "GenerationRequest", "Generator", "approx_tokens"]
