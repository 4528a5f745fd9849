"""The API's requests, validated at one boundary: types, ranges, lengths and valid Unicode.

A request that passes here is safe to hand to a strategy: ``k`` is an integer in range (a string
or a float is refused, not coerced), text is valid Unicode within a length bound, filters name
known columns with string values, and strategy parameters are scalars. The text rule and the
checks of k, filter values and pictures are the reader's own (``mmkg.query``,
``mmkg.retrieval.search``), so the CLI, Python callers and the API refuse the same things the same way.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, field_validator, model_validator

from mmkg.query import MAX_QUERY_CHARS, clean_text

MAX_FILTER_VALUES = 1_000
Scalar = StrictBool | StrictInt | float | str


class Filters(BaseModel):
    """Only chunks of documents whose column is one of the values (a string is one value)."""

    model_config = ConfigDict(extra="forbid")

    partition: list[Annotated[str, Field(max_length=512)]] | None = Field(None, max_length=MAX_FILTER_VALUES)
    doc_id: list[Annotated[str, Field(max_length=512)]] | None = Field(None, max_length=MAX_FILTER_VALUES)
    source_path: list[Annotated[str, Field(max_length=2048)]] | None = Field(None, max_length=MAX_FILTER_VALUES)

    @field_validator("partition", "doc_id", "source_path", mode="before")
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value

    def as_dict(self) -> dict[str, list[str]] | None:
        out = {k: v for k, v in self.model_dump().items() if v}
        return out or None


class QueryRequest(BaseModel):
    """``POST /query``: a text query (with an optional uploaded picture, video or audio file)."""

    model_config = ConfigDict(extra="forbid")

    text: str | None = Field(None, max_length=MAX_QUERY_CHARS, description="The question or search text.")
    k: StrictInt = Field(10, ge=1, le=100, description="Chunks to return.")
    strategy: str = Field("mg2", max_length=64, description="A strategy, optionally NAME:PRESET (GET /strategies).")
    preset: str | None = Field(None, max_length=64)
    params: dict[Annotated[str, Field(max_length=64)], Scalar] = Field(
        default_factory=dict, max_length=50, description="Strategy parameter overrides."
    )
    filters: Filters | None = None

    @field_validator("text", mode="before")
    @classmethod
    def _text(cls, value: object) -> object:
        return clean_text(value, "text") if isinstance(value, str) else value


class AskRequest(QueryRequest):
    """``POST /ask``: a question answered from retrieved evidence, with citations."""

    text: str | None = Field(None, max_length=MAX_QUERY_CHARS, description="The question.")
    k: StrictInt = Field(8, ge=1, le=50, description="Chunks retrieved as evidence.")
    backend: str | None = Field(None, max_length=64, description="A generation backend the server has (GET /index).")
    task: str | None = Field(None, max_length=64, description="Prompt task: qa, vqa, mkg_graph, ...")
    max_tokens: StrictInt = Field(512, ge=1, le=4096)
    stream: StrictBool = Field(False, description="Stream the answer as server-sent events.")

    @model_validator(mode="after")
    def _task_is_a_name(self) -> AskRequest:
        if self.task is not None and not self.task.replace("_", "").isalnum():
            raise ValueError("task must be a prompt name such as qa or vqa (files are not read over the API)")
        return self


class SubgraphRequest(BaseModel):
    """``POST /subgraph``: the graph around some chunks (their entities, pictures, and the links among them)."""

    model_config = ConfigDict(extra="forbid")

    chunk_ids: list[Annotated[str, Field(max_length=64)]] = Field(..., min_length=1, max_length=50)
    max_entities: StrictInt = Field(40, ge=0, le=500)


class ExpandRequest(BaseModel):
    """``POST /graph/expand``: a drawn node's neighbours that are not drawn yet, with their edges."""

    model_config = ConfigDict(extra="forbid")

    node: str = Field(..., max_length=600, description="The node to expand: KIND:KEY as /subgraph names it.")
    known: list[Annotated[str, Field(max_length=600)]] = Field(
        default_factory=list, max_length=2_000, description="Nodes already drawn (not returned again)."
    )
    limit: StrictInt = Field(20, ge=1, le=200, description="Neighbours to return at most.")
