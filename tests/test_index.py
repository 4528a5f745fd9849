"""End to end on the sample corpus: materialize, publish, open, query (API and CLI), versions."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from dagster import DagsterInstance, materialize
from typer.testing import CliRunner

from assets import embeddings, graph_inputs, index, ingest, text, vision
from mmkg.cli import app
from mmkg.encoders import EncoderMismatch
from mmkg.index import Index
from mmkg.ingest import list_partitions
from pipelines.resources import default_resources

PARTITIONED = [
    ingest.ingest,
    text.chunks,
    text.parse,
    text.entities,
    vision.ground_images,
    graph_inputs.build_nodes,
    embeddings.embed,
]
GLOBAL = [text.entity_catalog, index.graph, index.retrieval_index]


@dataclass
class Built:
    corpus: Path
    data: Path
    instance: DagsterInstance
    resources: dict


def build(corpus: Path, data: Path, instance: DagsterInstance, keys: list[str] | None = None) -> dict:
    resources = default_resources(corpus, data)
    keys = keys or list_partitions(corpus)
    known = set(instance.get_dynamic_partitions("corpus"))
    instance.add_dynamic_partitions("corpus", [k for k in keys if k not in known])
    for key in keys:
        assert materialize(PARTITIONED, partition_key=key, instance=instance, resources=resources).success
    assert materialize(PARTITIONED + GLOBAL, instance=instance, resources=resources, selection=GLOBAL).success
    return resources


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    from conftest import SAMPLE_CORPUS

    corpus = tmp_path_factory.mktemp("corpus")
    shutil.copytree(SAMPLE_CORPUS, corpus, dirs_exist_ok=True)
    data = tmp_path_factory.mktemp("data")
    instance = DagsterInstance.ephemeral()
    resources = build(corpus, data, instance)
    return Built(corpus, data, instance, resources)


def test_text_query_returns_the_expected_chunk_first(built: Built):
    idx = Index.open(built.data / "index")
    res = idx.retrieve(text="Which mission did the first woman to command a Space Shuttle lead?", k=5)
    assert res.chunks[0].source_path == "space/eileen_collins.md"
    top = res.chunks[0]
    assert top.sentences and top.sentences[0].score > 0
    assert res.seeds > 0 and res.timings_ms["total"] > 0
    res = idx.retrieve(text="Who found a moth in the Harvard Mark II relay?", k=5)
    assert res.chunks[0].source_path == "computing_history/first_computer_bug.md"


def test_image_query_returns_the_chunk_holding_that_image(built: Built):
    from conftest import SAMPLE_CORPUS

    idx = Index.open(built.data / "index")
    res = idx.retrieve(image=SAMPLE_CORPUS / "space" / "images" / "hubble_placard.jpg", k=5)
    top = res.chunks[0]
    assert top.source_path == "space/hubble_space_telescope.md"
    assert any(img.source.endswith("hubble_placard.jpg") for img in top.images)


def test_filters_restrict_results_safely(built: Built):
    idx = Index.open(built.data / "index")
    res = idx.retrieve(text="Grace Hopper", k=10, filters={"partition": "space"})
    assert res.chunks and {c.partition for c in res.chunks} == {"space"}
    hostile = "space' OR 1=1 --"
    assert idx.retrieve(text="Grace Hopper", k=10, filters={"partition": hostile}).chunks == []
    with pytest.raises(ValueError, match="unknown filter"):
        idx.retrieve(text="x", filters={"title": "x"})


def test_cli_matches_api(built: Built):
    idx = Index.open(built.data / "index")
    api = idx.retrieve(text="espresso machine", k=3)
    out = CliRunner().invoke(
        app, ["query", "espresso machine", "--k", "3", "--json", "--index", str(built.data / "index")]
    )
    assert out.exit_code == 0, out.output
    cli = json.loads(out.stdout)
    assert [c["chunk_id"] for c in cli["chunks"]] == [c.chunk_id for c in api.chunks]
    info = CliRunner().invoke(app, ["index", "info", "--index", str(built.data / "index")])
    assert info.exit_code == 0 and idx.version in info.output and "text:" in info.output


def test_wrong_encoder_is_a_clear_error(built: Built, tiny_clip):
    # a real (tiny, random) CLIP saved and loaded by path: not the encoder the index was built with
    with pytest.raises(EncoderMismatch, match=r"text:all-MiniLM-L6-v2:384 but the reader uses clip:"):
        Index.open(built.data / "index", encoder=tiny_clip)


def test_reader_keeps_its_version_while_a_new_one_is_published(built: Built):
    old = Index.open(built.data / "index")
    before = old.retrieve(text="Chelsea the cat", k=3)
    doc = built.corpus / "nature_and_objects" / "siamese_cat.md"
    doc.write_text(
        "# Siamese cat\n\nThe Siamese cat comes from Thailand. Chelsea is not a Siamese cat.\n", encoding="utf-8"
    )
    build(built.corpus, built.data, built.instance, ["nature_and_objects"])
    new = Index.open(built.data / "index")
    assert new.version != old.version
    assert new.manifest.counts["chunk_nodes"] == old.manifest.counts["chunk_nodes"] + 1
    # the old reader still answers from exactly what it opened
    again = old.retrieve(text="Chelsea the cat", k=3)
    assert [c.chunk_id for c in again.chunks] == [c.chunk_id for c in before.chunks]
    assert any(c.source_path.endswith("siamese_cat.md") for c in new.retrieve(text="Siamese cat Thailand", k=3).chunks)
    # publishing again with nothing changed keeps the version
    rerun = materialize(PARTITIONED + GLOBAL, instance=built.instance, resources=built.resources, selection=GLOBAL)
    assert rerun.success
    assert Index.open(built.data / "index").version == new.version
    doc.unlink()
