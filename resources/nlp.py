from __future__ import annotations

import polars as pl
from dagster import ConfigurableResource
from pydantic import Field

from mmkg.nlp import ParseCache, ParseResult, Progress, parse_chunks
from mmkg.settings import get_settings

_S = get_settings()


class SpacyResource(ConfigurableResource):
    """The spaCy pipeline that parses chunks; model and parallelism are configuration."""

    model: str = Field(default=_S.spacy_model, description="Installed spaCy pipeline name or path (MMKG_SPACY_MODEL).")
    n_process: int = Field(default=_S.spacy_processes, description="Parser worker processes (MMKG_SPACY_PROCESSES).")
    batch_size: int = Field(default=_S.spacy_batch_size, description="nlp.pipe batch size.")

    def parse(
        self,
        chunks: pl.DataFrame,
        titles: dict[str, str],
        progress: Progress | None = None,
        cache: ParseCache | None = None,
        partition: str | None = None,
    ) -> ParseResult:
        return parse_chunks(chunks, titles, self.model, self.n_process, self.batch_size, progress, cache, partition)
