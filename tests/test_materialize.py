"""Integration: materialize the bundled sample corpus with Dagster and check the Parquet outputs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl
import pytest
from dagster import DagsterInstance, materialize

from assets import graph_inputs, ingest, text, vision
from mmkg import schemas
from mmkg.incidence import Incidence
from mmkg.ingest import list_partitions
from pipelines.definitions import defs
from pipelines.resources import default_resources

PARTITIONED = [
    ingest.transcripts, ingest.ingest, text.chunks, text.parse, text.entities, vision.ground_images,
    vision.cross_modal_links,
    graph_inputs.build_nodes,
]  # fmt: skip


@dataclass
class Built:
    data: Path
    keys: list[str]
    instance: DagsterInstance
    resources: dict
    results: dict


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    from conftest import SAMPLE_CORPUS

    data = tmp_path_factory.mktemp("data")
    instance = DagsterInstance.ephemeral()
    keys = list_partitions(SAMPLE_CORPUS)
    instance.add_dynamic_partitions("corpus", keys)
    resources = default_resources(SAMPLE_CORPUS, data)
    results = {key: materialize(PARTITIONED, partition_key=key, instance=instance, resources=resources) for key in keys}
    return Built(data, keys, instance, resources, results)


def table(data: Path, name: str) -> pl.DataFrame:
    return pl.read_parquet(data / "tables" / name / "*.parquet")


def test_every_partition_materializes(built):
    assert built.keys == ["computing_history", "nature_and_objects", "space"]
    for key in built.keys:
        assert built.results[key].success
        for name in schemas.TABLES:
            if name in schemas.GLOBAL_TABLES:
                continue
            path = built.data / "tables" / name / f"{key}.parquet"
            assert path.exists(), path
            assert pl.read_parquet_schema(path) == dict(schemas.TABLES[name]), name


def test_counts_are_plausible(built):
    docs = table(built.data, "documents")
    by_kind = dict(docs.group_by("kind").len().iter_rows())
    assert by_kind["markdown"] == 9 and by_kind["pdf"] == 1 and by_kind["json"] == 4 and by_kind["image"] == 1
    assert table(built.data, "rejected_files").is_empty()
    images = table(built.data, "images")
    assert set(images["role"]) == {"linked", "embedded", "standalone"}
    assert images.filter(pl.col("role") == "embedded")["page"].to_list() == [1]
    chunks = table(built.data, "chunks")
    assert chunks["n_tokens"].max() <= 200
    # every document with text has chunks; linked/embedded images sit in a chunk
    assert set(docs.filter(pl.col("text") != "")["doc_id"]) == set(chunks["doc_id"])
    attached = set(chunks["image_ids"].explode().drop_nulls())
    assert attached == set(images.filter(pl.col("role") != "standalone")["image_id"])
    mentions = table(built.data, "entity_mentions")
    assert {"PERSON", "ORG", "GPE", "TITLE"} <= set(mentions["label"])
    rel = table(built.data, "relations")
    assert rel.height >= 30
    assert ("Grace Hopper", "work_at", "Harvard University") in set(rel.select("subject", "predicate", "object").rows())


def test_referential_integrity(built):
    con = duckdb.connect()
    tables = built.data / "tables"

    def q(sql: str) -> int:
        return con.execute(sql.replace("T/", f"{tables}/")).fetchone()[0]

    def orphans(child: str, parent: str, key: str) -> int:
        return q(f"select count(*) from 'T/{child}/*.parquet' anti join 'T/{parent}/*.parquet' using ({key})")

    assert orphans("sentences", "chunks", "chunk_id") == 0
    assert orphans("chunks", "documents", "doc_id") == 0
    assert orphans("entity_mentions", "sentences", "sentence_id") == 0
    assert orphans("relations", "sentences", "sentence_id") == 0
    assert orphans("images", "documents", "doc_id") == 0
    # sentences lie inside their chunk, and their text is the document text at their offsets
    bad = q(
        """select count(*) from 'T/sentences/*.parquet' s join 'T/chunks/*.parquet' c using (chunk_id)
           join 'T/documents/*.parquet' d on d.doc_id = s.doc_id
           where s.char_start < c.char_start or s.char_end > c.char_end
              or substr(d.text, s.char_start + 1, s.char_end - s.char_start) != s.text"""
    )
    assert bad == 0
    # every NER mention's text is the document text at its offsets
    assert (
        q(
            """select count(*) from 'T/entity_mentions/*.parquet' m join 'T/documents/*.parquet' d using (doc_id)
           where m.source = 'ner' and substr(d.text, m.char_start + 1, m.char_end - m.char_start) != m.text"""
        )
        == 0
    )
    # every chunk of a document carries its title as a mention
    assert (
        q(
            """select count(*) from 'T/chunks/*.parquet' c anti join
           (select chunk_id from 'T/entity_mentions/*.parquet' where source = 'title') t using (chunk_id)"""
        )
        == 0
    )
    # image blobs exist, stored once
    images = table(built.data, "images")
    for blob in images["blob_path"].unique():
        assert (built.data / blob).is_file()


def test_entity_catalog_merges_partitions(built):
    result = defs.resolve_job_def("build_catalog").execute_in_process(
        instance=built.instance, resources=built.resources
    )
    assert result.success
    catalog = pl.read_parquet(built.data / "tables" / "entity_catalog.parquet")
    per_partition = table(built.data, "entities")
    assert catalog["entity_key"].is_unique().all()
    assert set(catalog["entity_key"]) == set(per_partition["entity_key"])
    assert catalog["n_mentions"].sum() == table(built.data, "entity_mentions").height
    hopper = catalog.filter(pl.col("entity_key") == "grace hopper").row(0, named=True)
    assert hopper["label"] == "PERSON" and hopper["n_docs"] >= 3
    nasa = catalog.filter(pl.col("entity_key") == "nasa").row(0, named=True)
    assert nasa["relational"]
    shared = catalog.filter(pl.col("partitions").list.len() > 1)
    assert shared.height > 0


def test_rematerializing_is_idempotent(built):
    before = pl.read_parquet(built.data / "tables" / "chunks" / "space.parquet")
    assert materialize(PARTITIONED, partition_key="space", instance=built.instance, resources=built.resources).success
    after = pl.read_parquet(built.data / "tables" / "chunks" / "space.parquet")
    assert before.equals(after)


def test_materialization_metadata_is_reported(built):
    from dagster import AssetKey

    event = built.instance.get_latest_materialization_event(AssetKey("relations"))
    meta = event.asset_materialization.metadata
    assert (
        meta["dagster/row_count"].value
        == table(built.data, "relations").filter(pl.col("partition") == event.asset_materialization.partition).height
        > 0
    )
    assert "doc_id" in {c.name for c in meta["dagster/column_schema"].schema.columns}
    assert "| subject |" in meta["preview"].value
    assert "by_rule" in meta
    docs = built.instance.get_latest_materialization_event(AssetKey("documents")).asset_materialization.metadata
    assert docs["seconds"].value > 0 and docs["files_read"].value > 0


def test_table_metadata_keeps_one_row_count_rounded_floats_and_described_columns(built):
    """What the asset page shows: one row count (Dagster's, the one it plots), floats without float32
    noise, a preview that fits, and each column's meaning from ``mmkg.schemas.DESCRIPTIONS``."""
    import re

    from dagster import AssetKey, FloatMetadataValue

    from assets._metadata import PREVIEW_COLUMNS, PREVIEW_WIDTH

    noise = re.compile(r"\d\.\d{7,}")  # 0.9824000000953674, not 0.9824
    for name in schemas.TABLES:
        if name in schemas.GLOBAL_TABLES:
            continue
        mat = built.instance.get_latest_materialization_event(AssetKey(name)).asset_materialization
        meta = mat.metadata
        assert [k for k in meta if ("row" in k and "count" in k) or k == "rows"] == ["dagster/row_count"], name
        on_disk = pl.read_parquet(built.data / "tables" / name / f"{mat.partition}.parquet")
        assert meta["dagster/row_count"].value == on_disk.height, name
        for key, value in meta.items():
            if isinstance(value, FloatMetadataValue):
                assert not noise.search(repr(value.value)), (name, key, value.value)
        columns = meta["dagster/column_schema"].schema.columns
        assert [c.name for c in columns] == list(schemas.TABLES[name]), name
        assert all(c.description == schemas.DESCRIPTIONS[name][c.name] for c in columns), name
        shown = meta["preview"].value
        assert not noise.search(shown), (name, shown)
        for line in shown.splitlines():
            if line.startswith("| "):
                cells = line.strip("| ").split(" | ")
                assert len(cells) <= PREVIEW_COLUMNS and max(len(c) for c in cells) <= PREVIEW_WIDTH, line

    objects = built.instance.get_latest_materialization_event(AssetKey("objects")).asset_materialization.metadata
    described = {c.name: c.description for c in objects["dagster/column_schema"].schema.columns}
    assert described["crop_path"] == "the crop, relative to the data root"
    assert described["partition"].startswith("corpus partition")
    scores = re.findall(r"\| (0\.\d+) \|", objects["preview"].value)
    assert scores and all(len(s) <= 6 for s in scores)  # float32 scores as 0.9824
    chunks = built.instance.get_latest_materialization_event(AssetKey("chunks")).asset_materialization.metadata
    described = {c.name: c.description for c in chunks["dagster/column_schema"].schema.columns}
    assert described["text_source"].startswith("document (the text layer")


def test_ocr_grounds_printed_names_and_keeps_text(built):
    objects = table(built.data, "objects")
    images = table(built.data, "images")
    placard = images.filter(pl.col("source").str.ends_with("hubble_placard.jpg"))["image_id"][0]
    found = objects.filter(pl.col("image_id") == placard)
    # the placard reads "HUBBLE SPACE TELESCOPE / eXtreme Deep Field, 2012 / Credit: NASA and ESA"
    assert {"nasa", "esa", "extreme deep field"} <= set(found["entity_key"])
    assert (found["score"] > 0.5).all() and (found["backend"] == "ocr").all()
    for row in found.iter_rows(named=True):
        assert (built.data / row["crop_path"]).is_file()
        assert 0 <= row["x0"] < row["x1"] and 0 <= row["y0"] < row["y1"]
    text = table(built.data, "image_text")
    assert "HUBBLE" in "".join(text.filter(pl.col("image_id") == placard)["text"]).upper()
    assert table(built.data, "grounding_failures").is_empty()
    # an overlay PNG per partition with objects, next to the tables
    assert list((built.data / "overlays" / "space").glob("*.png"))


def test_incidence_lines_up_with_tables(built):
    for key in built.keys:
        folder = built.data / "incidence" / "incidence_matrices" / key
        smi = Incidence.load(folder / "m_smi.npz")
        omi = Incidence.load(folder / "m_omi.npz")
        sentences = pl.read_parquet(built.data / "tables" / "sentences" / f"{key}.parquet")
        objects = pl.read_parquet(built.data / "tables" / "objects" / f"{key}.parquet")
        nodes = pl.read_parquet(built.data / "tables" / "multimodal_nodes" / f"{key}.parquet")
        mentions = pl.read_parquet(built.data / "tables" / "entity_mentions" / f"{key}.parquet")
        assert smi.row_ids.tolist() == sentences["sentence_id"].to_list()
        assert omi.row_ids.tolist() == objects["object_id"].to_list()
        assert smi.col_ids.tolist() == omi.col_ids.tolist() == nodes["entity_key"].to_list()
        # every relational mention is a 1 in its sentence's row, nothing else is
        expected = set(mentions.filter(pl.col("relational")).select("sentence_id", "entity_key").iter_rows())
        coo = smi.matrix.tocoo()
        got = {(smi.row_ids[i], smi.col_ids[j]) for i, j in zip(coo.row, coo.col, strict=True)}
        assert got == expected
        coo = omi.matrix.tocoo()
        assert {(omi.row_ids[i], omi.col_ids[j]) for i, j in zip(coo.row, coo.col, strict=True)} == set(
            objects.select("object_id", "entity_key").iter_rows()
        )
        multimodal = set(nodes.filter(pl.col("multimodal"))["entity_key"])
        assert multimodal == set(objects["entity_key"])


def test_both_backends_ground_the_sample_partition(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """OCR plus a YOLO-seg checkpoint (random weights, COCO names, tiny conf): the whole path runs."""
    import torch
    from conftest import SAMPLE_CORPUS
    from test_detector import coco_names

    from mmkg.vision.detector import import_ultralytics
    from resources import GroundingResource

    monkeypatch.setenv("YOLO_CONFIG_DIR", str(tmp_path / "yolo"))
    torch.manual_seed(0)
    model = import_ultralytics().YOLO("yolov8n-seg.yaml")
    model.model.names = coco_names()
    model.save(tmp_path / "random-seg.pt")
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("corpus", ["computing_history"])
    grounding = GroundingResource(
        backends=["ocr", "ultralytics"], ultralytics_model=str(tmp_path / "random-seg.pt"), ultralytics_conf=1e-6,
        ultralytics_imgsz=320, tau=0.0, device="cpu",
    )  # fmt: skip
    resources = default_resources(SAMPLE_CORPUS, tmp_path, grounding=grounding)
    result = materialize(PARTITIONED, partition_key="computing_history", instance=instance, resources=resources)
    assert result.success
    objects = pl.read_parquet(tmp_path / "tables" / "objects" / "computing_history.parquet")
    by_backend = dict(objects.group_by("backend").len().iter_rows())
    assert by_backend.get("ocr", 0) > 0 and by_backend.get("ultralytics", 0) > 0
    yolo = objects.filter(pl.col("backend") == "ultralytics")
    # closed-vocabulary matching: only the COCO "person" class, assigned to PERSON entities of the chunk
    assert set(yolo["label"]) == {"person"}
    persons = set(pl.read_parquet(tmp_path / "tables" / "entities" / "computing_history.parquet").filter(
        pl.col("label") == "PERSON")["entity_key"])  # fmt: skip
    assert set(yolo["entity_key"]) <= persons
    assert (yolo["polygons"].list.len() > 0).all()
    nodes = pl.read_parquet(tmp_path / "tables" / "multimodal_nodes" / "computing_history.parquet")
    assert nodes.filter(pl.col("multimodal"))["backends"].explode().unique().sort().to_list() == ["ocr", "ultralytics"]


def test_any_asset_materializes_alone_from_the_dagster_cli(tmp_path: Path):
    """`dagster asset materialize --select documents` used to fail (the ingest multi-asset could not be subset).

    Each output of a multi-asset is now selectable alone: the step writes only what was selected, and
    runs in one process with its checks (the in-process executor is the default).
    """
    import os
    import subprocess
    import sys

    from conftest import SAMPLE_CORPUS

    home = tmp_path / "home"
    home.mkdir()
    data = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MMKG_", "DAGSTER_"))}
    env.update(DAGSTER_HOME=str(home), MMKG_DATA_ROOT=str(data), MMKG_CORPUS_ROOT=str(SAMPLE_CORPUS))
    register = "from dagster import DagsterInstance; DagsterInstance.get().add_dynamic_partitions('corpus', ['space'])"
    subprocess.run([sys.executable, "-c", register], env=env, check=True)
    dagster = str(Path(sys.executable).parent / "dagster")
    repo = Path(__file__).resolve().parents[1]

    def select(selection: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [dagster, "asset", "materialize", "-m", "pipelines.definitions", "--select", selection,
             "--partition", "space"], env=env, cwd=repo, capture_output=True, text=True, timeout=600,
        )  # fmt: skip

    for selection, written in (("documents", {"documents"}), ("images", {"documents", "images"}),
                               ("chunks", {"documents", "images", "chunks"})):  # fmt: skip
        proc = select(selection)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        assert {p.name for p in (data / "tables").iterdir()} == written
        assert "STEP_WORKER_STARTING" not in proc.stderr  # no process per step


def test_dg_cli_loads_the_same_definitions():
    """The current `dg` CLI ([tool.dg] in pyproject.toml) sees the definitions workspace.yaml loads."""
    import json
    import os
    import subprocess
    import sys

    dg = Path(sys.executable).parent / "dg"
    repo = Path(__file__).resolve().parents[1]
    proc = subprocess.run([str(dg), "list", "defs", "--json"], cwd=repo, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    listed = json.loads(proc.stdout)
    assert len(listed["jobs"]) == len(list(defs.resolve_all_job_defs())) - 1  # less Dagster's implicit asset job
    assert len(listed["assets"]) == len(list(defs.resolve_all_asset_specs()))
    assert len(listed["asset_checks"]) == len(defs.resolve_asset_graph().asset_check_keys)


def test_preview_fits_and_rounds():
    from assets._metadata import PREVIEW_COLUMNS, preview, rounded

    wide = pl.DataFrame(
        {f"c{i}": ["x" * 200] for i in range(PREVIEW_COLUMNS + 3)}
        | {"score": pl.Series([0.9824], dtype=pl.Float32), "quad": [[0.1, 0.2]]}
    )
    md = preview(wide).value
    assert md.splitlines()[0].count(" | ") == PREVIEW_COLUMNS - 1
    assert "5 more columns: c6, c7, c8, score, quad" in md and "x" * 41 not in md
    assert "| 0.9824 |" in preview(wide, ["score"]).value and "0.98240" not in preview(wide, ["score"]).value
    assert "[0.1, 0.2]" in preview(wide.with_columns(pl.col("quad").cast(pl.List(pl.Float32))), ["quad"]).value
    assert rounded(0.9824000000953674) == 0.9824 and rounded(0.000123456) == 0.0001235
    assert rounded(1234.56789) == 1234.5679


def test_every_declared_column_is_described():
    for name, schema in schemas.TABLES.items():
        assert list(schemas.DESCRIPTIONS[name]) == list(schema), name
        assert all(d.strip() for d in schemas.DESCRIPTIONS[name].values()), name
