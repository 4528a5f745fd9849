from __future__ import annotations

from pathlib import Path

from mmkg.settings import get_settings
from resources import (
    CorpusResource,
    EncoderResource,
    GeneratorResource,
    GraphIOManager,
    GroundingResource,
    IncidenceIOManager,
    PolarsParquetIOManager,
    SpacyResource,
    StorageResource,
)


def default_resources(
    corpus_root: Path | str | None = None,
    data_root: Path | str | None = None,
    grounding: GroundingResource | None = None,
    encoder: EncoderResource | None = None,
    generator: GeneratorResource | None = None,
    **spacy: object,
) -> dict:
    """Resources for one environment; ``MMKG_*`` variables supply the defaults."""
    s = get_settings()
    data = Path(data_root or s.data_root)
    return {
        "corpus": CorpusResource(root=str(corpus_root or s.corpus_root)),
        "storage": StorageResource(data_root=str(data)),
        "spacy": SpacyResource(**spacy),  # type: ignore[arg-type]
        "grounding": grounding or GroundingResource(),
        "encoder": encoder or EncoderResource(),
        "generator": generator or GeneratorResource(),
        "graph_io": GraphIOManager(base_dir=str(data / "graph")),
        "parquet_io": PolarsParquetIOManager(base_dir=str(data / "tables")),
        "incidence_io": IncidenceIOManager(base_dir=str(data / "incidence")),
    }
