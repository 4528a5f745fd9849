"""The same picture in many places: two partitions, twice in one document, a PDF, a Markdown file, a JSONL record.

Built through the real Dagster assets on a small corpus shaped like real ones (a placard photo that four
documents in two partitions show), then edited: documents are deleted and the index re-published. Every
version must open, cite each place the picture is shown, and answer the picture as an image query with the
documents that show it first.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import lancedb
import polars as pl
import pytest
from dagster import DagsterInstance
from indexing import build

from mmkg import validation
from mmkg.index import Index
from mmkg.index.manifest import current_version, list_versions
from mmkg.index.publish import PublishError, payload_tables, publish_index
from mmkg.index.units import collapse
from mmkg.ingest.images import hash_distance, perceptual_hash
from mmkg.partitioned import PartitionedParquet
from mmkg.retrieval import retrieve
from mmkg.retrieval.smoke import own_vector_probes, self_check

PLACARD = "hubble_placard.jpg"
HUBBLE_MD = """# The Hubble placard

The Hubble Space Telescope placard hangs in the museum hall below the deep field.

![The placard reading HUBBLE SPACE TELESCOPE](images/hubble_placard.jpg)

Visitors photograph the Hubble Space Telescope placard every day, so the museum shows it twice.

![The same placard, seen again](images/hubble_placard.jpg)
"""
ESPRESSO_MD = """# Espresso

An espresso machine forces hot water through finely ground coffee at high pressure.

![An espresso cup](images/espresso.jpg)
"""
VISIT_MD = """# Visiting the Hubble exhibit

The exhibit about the Hubble Space Telescope ends at its placard.

![The placard at the end of the exhibit](images/hubble_placard.jpg)
"""
CAT_MD = """# Chelsea the cat

Chelsea is a tabby cat who sleeps on the sofa all afternoon.

![Chelsea](images/chelsea.jpg)
"""


@dataclass
class Corpus:
    root: Path
    data: Path
    instance: DagsterInstance
    resources: dict


def _write_corpus(root: Path) -> None:
    from conftest import SAMPLE_CORPUS, write_pdf
    from PIL import Image

    alpha, beta = root / "alpha", root / "beta"
    for part in (alpha, beta):
        (part / "images").mkdir(parents=True)
    placard = SAMPLE_CORPUS / "space" / "images" / PLACARD
    shutil.copy(placard, alpha / "images" / PLACARD)
    shutil.copy(placard, beta / "images" / PLACARD)
    shutil.copy(SAMPLE_CORPUS / "nature_and_objects" / "images" / "espresso.jpg", alpha / "images")
    shutil.copy(SAMPLE_CORPUS / "nature_and_objects" / "images" / "chelsea.jpg", beta / "images")
    (alpha / "hubble.md").write_text(HUBBLE_MD)
    (alpha / "espresso.md").write_text(ESPRESSO_MD)
    record = {
        "id": "placard-1",
        "title": "Museum record of the Hubble placard",
        "text": "The museum keeps a record of the Hubble Space Telescope placard and its photograph.",
        "images": [f"images/{PLACARD}"],
    }
    (alpha / "records.jsonl").write_text(json.dumps(record) + "\n")
    # the PDF embeds the picture as a re-encoded bitmap: another content id, the same picture to the eye
    write_pdf(
        alpha / "report.pdf",
        ["Museum report. The Hubble Space Telescope placard was photographed for the annual report."],
        image=Image.open(placard).convert("RGB"),
    )
    (beta / "visit.md").write_text(VISIT_MD)
    (beta / "cat.md").write_text(CAT_MD)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    root = tmp_path_factory.mktemp("shared-corpus")
    _write_corpus(root)
    data = tmp_path_factory.mktemp("shared-data")
    instance = DagsterInstance.ephemeral()
    resources = build(root, data, instance)
    return Corpus(root, data, instance, resources)


def _placard_id(idx: Index) -> str:
    occ = idx.image_occurrences.filter(pl.col("source") == f"alpha/images/{PLACARD}")
    return occ["image_id"][0]


def _lance_rows(data: Path, version: str) -> dict[str, int]:
    index = Index.open(data / "index", version=version, encoder=False)
    db = lancedb.connect(str(data / "index" / "lance"))
    out = {}
    for name, pinned in index.manifest.lance_versions.items():
        tbl = db.open_table(name)
        tbl.checkout(pinned)
        out[name] = tbl.count_rows()
    return out


def _documents_first(res, n: int) -> list[str]:
    """The first ``n`` distinct documents of a result, in rank order."""
    return list(dict.fromkeys(c.source_path for c in res.chunks))[:n]


def test_one_unit_per_picture_and_every_occurrence_cited(corpus: Corpus):
    idx = Index.open(corpus.data / "index")
    assert self_check(idx) == []
    placard = _placard_id(idx)
    # one image row and one image node per content id, in the payload, in LanceDB and in the graph
    rows = _lance_rows(corpus.data, idx.version)
    image_nodes = idx.graph.counts()["image_nodes"]
    assert rows["images"] == image_nodes == idx.images.height == idx.images["image_id"].n_unique()
    assert rows["objects"] == idx.objects.height == idx.objects["object_id"].n_unique()
    # every place the placard JPEG is shown: twice in hubble.md, the JSONL record, visit.md in the other partition
    places = idx.image_occurrences.filter(pl.col("image_id") == placard).sort("source", "occurrence")
    docs = dict(idx.documents.select("doc_id", "source_path").iter_rows())
    cited = sorted((docs[d], o) for d, o in places.select("doc_id", "occurrence").iter_rows())
    assert cited == [
        ("alpha/hubble.md", 0),
        ("alpha/hubble.md", 1),
        ("alpha/records.jsonl", 0),
        ("beta/visit.md", 0),
    ]
    assert set(places["partition"]) == {"alpha", "beta"}
    # the PDF's copy is a re-encoded bitmap: its own content id, but the same perceptual hash within a few bits
    pdf_images = idx.image_occurrences.filter(pl.col("source").str.starts_with("alpha/report.pdf"))
    assert pdf_images.height == 1 and pdf_images["image_id"][0] != placard
    phash = dict(idx.images.select("image_id", "phash").iter_rows())
    assert hash_distance(phash[placard], phash[pdf_images["image_id"][0]]) <= 8


def test_image_query_ranks_every_document_that_shows_the_picture_first(corpus: Corpus):
    idx = Index.open(corpus.data / "index")
    placard = _placard_id(idx)
    query = corpus.root / "alpha" / "images" / PLACARD
    res = retrieve(idx, image=query, k=10)
    showing = {"alpha/hubble.md", "alpha/records.jsonl", "alpha/report.pdf", "beta/visit.md"}
    assert set(_documents_first(res, 4)) == showing
    assert placard in res.matched_images
    top = next(c for c in res.chunks if c.source_path == "beta/visit.md")
    hit = next(i for i in top.images if i.image_id == placard)
    assert hit.same_as_query and hit.source == f"beta/images/{PLACARD}"
    assert {o.source_path for o in hit.occurrences} == {"alpha/hubble.md", "alpha/records.jsonl", "beta/visit.md"}
    # the paper's presets keep their r0: no same-picture seeds
    assert retrieve(idx, image=query, k=5, preset="evqa").matched_images == []
    # filters: a picture is allowed by any document that shows it; the other partition's places drop out
    only_beta = retrieve(idx, image=query, k=5, filters={"partition": "beta"})
    assert only_beta.chunks[0].source_path == "beta/visit.md"
    assert {c.partition for c in only_beta.chunks} == {"beta"}


def test_shared_object_is_one_row_with_each_occurrence(corpus: Corpus):
    idx = Index.open(corpus.data / "index")
    placard = _placard_id(idx)
    objects = idx.objects.filter(pl.col("image_id") == placard)
    assert objects.height > 0, "OCR should ground the placard's text"
    occ = idx.object_occurrences.filter(pl.col("object_id").is_in(objects["object_id"].implode()))
    assert set(occ["partition"]) == {"alpha", "beta"}
    # evidence of a chunk in each partition lists the shared object
    res = retrieve(idx, image=corpus.root / "alpha" / "images" / PLACARD, k=10)
    for part in ("alpha", "beta"):
        chunk = next(c for c in res.chunks if c.partition == part and any(i.image_id == placard for i in c.images))
        assert {o.image_id for o in chunk.objects} >= {placard}, part


def test_deleting_documents_keeps_the_picture_until_the_last_one_goes(corpus: Corpus, tmp_path: Path):
    root, data = tmp_path / "corpus", tmp_path / "data"
    shutil.copytree(corpus.root, root)
    shutil.copytree(corpus.data, data)
    instance = DagsterInstance.ephemeral()
    first = current_version(data / "index")
    placard = _placard_id(Index.open(data / "index", encoder=False))

    (root / "beta" / "visit.md").unlink()
    (root / "beta" / "images" / PLACARD).unlink()  # else the unlinked file is a document of its own
    build(root, data, instance, keys=["beta", "alpha"])
    idx = Index.open(data / "index")
    assert idx.version != first and self_check(idx) == []
    places = idx.image_occurrences.filter(pl.col("image_id") == placard)
    assert set(places["partition"]) == {"alpha"}  # beta no longer shows it; alpha still does
    assert placard in set(idx.images["image_id"])
    res = retrieve(idx, image=root / "alpha" / "images" / PLACARD, k=10)
    assert set(_documents_first(res, 3)) == {"alpha/hubble.md", "alpha/records.jsonl", "alpha/report.pdf"}

    for name in ("hubble.md", "records.jsonl"):
        (root / "alpha" / name).unlink()
    (root / "alpha" / "images" / PLACARD).unlink()
    build(root, data, instance, keys=["alpha", "beta"])
    idx = Index.open(data / "index")
    assert self_check(idx) == []
    assert placard not in set(idx.images["image_id"]), "the last place that showed it is gone"
    assert placard not in set(idx.objects["image_id"])
    assert _lance_rows(data, idx.version)["images"] == idx.graph.counts()["image_nodes"]
    # the PDF still shows (a re-encoded copy of) the picture: an image query finds that page first
    res = retrieve(idx, image=corpus.root / "alpha" / "images" / PLACARD, k=5)
    assert res.chunks[0].source_path == "alpha/report.pdf"
    # every version ever published still opens and passes its own check
    for version in list_versions(data / "index"):
        assert self_check(Index.open(data / "index", version=version, encoder=False)) == [], version


def _publish_inputs(data: Path) -> dict:
    """The tables retrieval_index publishes, read back from the data root (all partitions)."""
    from mmkg.graph import build_graph

    def read(name: str) -> pl.DataFrame:
        return pl.concat([pl.read_parquet(p) for p in sorted((data / "tables" / name).glob("*.parquet"))])

    t = {n: read(n) for n in ("documents", "chunks", "sentences", "images", "objects", "entity_mentions", "relations")}
    vectors = {g: read(f"{g[:-1]}_vectors") for g in ("chunks", "sentences", "images", "objects")}
    graph = build_graph(t["chunks"], t["entity_mentions"], t["relations"], t["images"], t["objects"])
    payload = payload_tables(t["documents"], t["chunks"], t["sentences"], t["images"], t["objects"])
    return {"graph": graph, "vectors": vectors, "payload": payload, "mentions": t["entity_mentions"]}


def test_check_names_the_duplicated_ids_of_uncollapsed_vectors(corpus: Corpus):
    inputs = _publish_inputs(corpus.data)
    placard = _placard_id(Index.open(corpus.data / "index", encoder=False))
    raw = inputs["vectors"]
    nodes = inputs["graph"].nodes
    # what the index held before the fix: one image row per partition that embeds the picture
    r = validation.check_index_units(
        {"images": raw["images"]["image_id"].to_list()},
        {"images": nodes.filter(pl.col("kind") == "image")["key"].to_list()},
    )
    assert not r.passed and placard in r.description and "more than one vector row" in r.description
    units = collapse(raw, inputs["payload"])
    assert units.vectors["images"].height == nodes.filter(pl.col("kind") == "image").height
    norms = (units.vectors["images"]["vector"].to_numpy() ** 2).sum(axis=1)
    assert abs(norms - 1).max() < 1e-5


def test_publish_never_moves_current_to_a_version_that_does_not_open(
    corpus: Corpus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    import mmkg.index.publish as publish

    data = tmp_path / "data"
    shutil.copytree(corpus.data, data)
    root = data / "index"
    before = current_version(root)
    spec = Index.open(root, encoder=False).manifest.encoder
    inputs = _publish_inputs(data)
    graph = inputs["graph"]
    graph.adjacency.data *= 2.0  # a change, so the publish has a new version to write

    def no_collapse(vectors, payload):
        units = collapse(vectors, payload)
        units.vectors = dict(vectors)  # the behaviour before the fix: one image row per partition that embeds it
        return units

    monkeypatch.setattr(publish, "collapse", no_collapse)
    # 1. the unit check refuses the uncollapsed rows, naming the picture, before anything is written
    placard = _placard_id(Index.open(root, encoder=False))
    with pytest.raises(validation.ValidationError, match="more than one vector row") as err:
        publish_index(
            root, spec, graph, inputs["vectors"], inputs["payload"], inputs["mentions"], probe=own_vector_probes
        )
    assert placard in str(err.value)
    assert current_version(root) == before and not (root / "failed").exists()

    # 2. with that check out of the way too, the version written cannot be opened: CURRENT must not move to it
    ok = validation.CheckResult("index_units", True, "skipped by the test")
    monkeypatch.setattr(publish, "check_units", lambda *a, **k: ok)
    with pytest.raises(PublishError, match="CURRENT stays at") as err:
        publish_index(
            root, spec, graph, inputs["vectors"], inputs["payload"], inputs["mentions"], probe=own_vector_probes
        )
    assert "cannot reshape" in str(err.value) or "rows" in str(err.value)
    assert current_version(root) == before
    assert self_check(Index.open(root, encoder=False)) == []
    failed = list((root / "failed").iterdir())
    assert len(failed) == 1 and failed[0].name in str(err.value)
    assert failed[0].name not in list_versions(root)

    # 3. the next honest publish starts from the tables CURRENT pins, not from what the failed one left
    monkeypatch.undo()
    inputs = _publish_inputs(data)
    inputs["graph"].adjacency.data *= 2.0
    result = publish_index(
        root, spec, inputs["graph"], inputs["vectors"], inputs["payload"], inputs["mentions"], probe=own_vector_probes
    )
    assert not result.reused and current_version(root) == result.version
    assert self_check(Index.open(root, encoder=False)) == []


def test_perceptual_hash_finds_the_same_picture_and_only_it(photo):
    import io

    from conftest import SAMPLE_CORPUS
    from PIL import Image

    def reencoded(img: Image.Image, size: tuple[int, int], fmt: str, **kw) -> Image.Image:
        buf = io.BytesIO()
        img.resize(size).save(buf, format=fmt, **kw)
        return Image.open(io.BytesIO(buf.getvalue()))

    base = perceptual_hash(photo)
    assert len(base) == 16
    assert hash_distance(base, perceptual_hash(reencoded(photo, (200, 300), "JPEG", quality=40))) <= 8
    assert hash_distance(base, perceptual_hash(reencoded(photo, photo.size, "PNG"))) <= 8
    others = [p for p in sorted(SAMPLE_CORPUS.glob("*/images/*.jpg")) if p.name != "grace_hopper.jpg"]  # the photo
    assert others
    for path in others:
        with Image.open(path) as img:
            assert hash_distance(base, perceptual_hash(img)) > 8, path.name
    flat = Image.new("RGB", (64, 64), (200, 30, 30))
    assert perceptual_hash(flat) == "" and hash_distance("", perceptual_hash(flat)) == 64


def test_r2ag_image_query_matches_the_pictures_image_side_entities(corpus: Corpus):
    """R2AG's query entity set for a picture: the corpus copies' grounded objects and what OCR reads in it."""
    from mmkg.retrieval import Query, get_strategy

    idx = Index.open(corpus.data / "index")
    query = corpus.root / "alpha" / "images" / PLACARD
    qe = get_strategy("r2ag").query_entities(idx, Query(image=query))
    assert {"picture", "ocr"} <= set(qe.sources.values())
    placard_objects = idx.objects.filter(pl.col("image_id") == _placard_id(idx))
    assert set(placard_objects["entity_key"].drop_nulls()) <= set(qe.keys)
    res = retrieve(idx, image=query, k=10, strategy="r2ag")
    showing = {"alpha/hubble.md", "alpha/records.jsonl", "alpha/report.pdf", "beta/visit.md"}
    assert set(_documents_first(res, 4)) == showing
    assert res.entities and any("Hubble" in e.name for e in res.entities)


def _on_disk(data: Path, asset: str) -> PartitionedParquet:
    return PartitionedParquet(asset, {p.stem: p for p in sorted((data / "tables" / asset).glob("*.parquet"))})


def _lance(root: Path, version: str) -> dict[str, dict[str, tuple]]:
    """Every LanceDB table of a version: id -> (owner partition, owner document, vector)."""
    manifest = Index.open(root, version=version, encoder=False).manifest
    db = lancedb.connect(str(root / "lance"))
    out = {}
    for name, pinned in manifest.lance_versions.items():
        tbl = db.open_table(name)
        tbl.checkout(pinned)
        rows = tbl.to_arrow().to_pylist()
        out[name] = {r["id"]: (r["partition"], r["doc_id"], tuple(round(x, 6) for x in r["vector"])) for r in rows}
    return out


def test_vectors_read_from_the_partition_files_a_batch_at_a_time_publish_the_same_index(
    corpus: Corpus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The asset hands the publish its vectors as files (``mmkg.partitioned``); with batches of 3 rows, each
    crossing partitions and the shared picture's rows, the index is the one the in-memory frames publish."""
    import mmkg.index.publish as publish

    inputs = _publish_inputs(corpus.data)
    spec = Index.open(corpus.data / "index", encoder=False).manifest.encoder
    in_memory = publish_index(
        tmp_path / "a",
        spec,
        inputs["graph"],
        inputs["vectors"],
        inputs["payload"],
        inputs["mentions"],
        probe=own_vector_probes,
    )
    written: list[int] = []
    arrow = publish._arrow
    monkeypatch.setattr(publish, "WRITE_ROWS", 3)
    monkeypatch.setattr(publish, "_arrow", lambda df, *a: written.append(df.height) or arrow(df, *a))
    files = {g: _on_disk(corpus.data, f"{g[:-1]}_vectors") for g in ("chunks", "sentences", "images", "objects")}
    assert len(files["chunks"].partitions()) == 2
    on_disk = publish_index(
        tmp_path / "b", spec, inputs["graph"], files, inputs["payload"], inputs["mentions"], probe=own_vector_probes
    )

    assert on_disk.manifest.partitions == in_memory.manifest.partitions
    assert on_disk.manifest.counts == in_memory.manifest.counts
    a, b = _lance(tmp_path / "a", in_memory.version), _lance(tmp_path / "b", on_disk.version)
    assert set(a) == set(b) >= {"chunks", "sentences", "images", "objects", "documents"}
    for name in a:
        assert b[name] == a[name], name
    assert max(written) == 3 and len(written) > 10  # every table went through in batches of at most 3 rows
    # the files publish is reused by an identical second publish, and the picture is still one unit
    again = publish_index(
        tmp_path / "b", spec, inputs["graph"], files, inputs["payload"], inputs["mentions"], probe=own_vector_probes
    )
    assert again.reused
    assert self_check(Index.open(tmp_path / "b", encoder=False)) == []
