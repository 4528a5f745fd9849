"""Incidence matrices and multimodal nodes on a hand-built example."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mmkg import schemas
from mmkg.incidence import Incidence, build_incidence
from mmkg.nodes import incidence_matrices, multimodal_nodes


def entity(key: str, label: str = "PERSON", relational: bool = True) -> dict:
    return {
        "entity_key": key,
        "name": key.title(),
        "label": label,
        "labels": [label],
        "relational": relational,
        "n_mentions": 1,
        "n_chunks": 1,
        "n_docs": 1,
        "partition": "p",
    }


def mention(sentence: str, key: str, relational: bool = True) -> dict:
    return {
        "mention_id": f"{sentence}-{key}",
        "partition": "p",
        "doc_id": "d",
        "chunk_id": "c",
        "sentence_id": sentence,
        "text": key,
        "label": "PERSON",
        "entity_key": key,
        "char_start": 0,
        "char_end": 1,
        "source": "ner",
        "relational": relational,
    }


def sentence(sid: str) -> dict:
    return {
        "sentence_id": sid,
        "partition": "p",
        "doc_id": "d",
        "chunk_id": "c",
        "sent_index": 0,
        "char_start": 0,
        "char_end": 1,
        "text": sid,
    }


def obj(oid: str, key: str, image: str, backend: str = "ocr") -> dict:
    return {
        "object_id": oid,
        "partition": "p",
        "image_id": image,
        "doc_id": "d",
        "chunk_id": "c",
        "entity_key": key,
        "entity_name": key,
        "backend": backend,
        "label": key,
        "x0": 0.0,
        "y0": 0.0,
        "x1": 1.0,
        "y1": 1.0,
        "polygons": [],
        "score": 0.9,
        "crop_id": "x",
        "crop_path": "x",
    }


@pytest.fixture
def example():
    # Sentences s1: Hopper, Harvard; s2: Hopper; s3: "three" (CARDINAL, not a node); s4: no entity.
    # Objects: o1 grounds Hopper in image i1 (ocr), o2 Hopper in i2 (ultralytics), o3 Harvard in i1.
    entities = schemas.frame(
        [entity("grace hopper"), entity("harvard", "ORG"), entity("three", "CARDINAL", relational=False)],
        schemas.PARTITION_ENTITIES,
    )
    mentions = schemas.frame(
        [
            mention("s1", "grace hopper"),
            mention("s1", "harvard"),
            mention("s2", "grace hopper"),
            mention("s2", "grace hopper"),
            mention("s3", "three", relational=False),
        ],
        schemas.MENTIONS,
    )
    sentences = schemas.frame([sentence(s) for s in ("s1", "s2", "s3", "s4")], schemas.SENTENCES)
    objects = schemas.frame(
        [obj("o1", "grace hopper", "i1"), obj("o2", "grace hopper", "i2", "ultralytics"), obj("o3", "harvard", "i1")],
        schemas.OBJECTS,
    )
    return entities, mentions, sentences, objects


def test_multimodal_nodes(example):
    entities, mentions, _, objects = example
    nodes = multimodal_nodes("p", entities, mentions, objects)
    assert nodes["entity_key"].to_list() == ["grace hopper", "harvard"]  # CARDINAL is not a node
    hopper = nodes.row(0, named=True)
    assert (hopper["n_sentences"], hopper["n_objects"], hopper["n_images"]) == (2, 2, 2)
    assert hopper["backends"] == ["ocr", "ultralytics"] and hopper["multimodal"]
    no_objects = multimodal_nodes("p", entities, mentions, objects.head(0))
    assert not no_objects["multimodal"].any()


def test_incidence_entries(example):
    entities, mentions, sentences, objects = example
    nodes = multimodal_nodes("p", entities, mentions, objects)
    m = incidence_matrices(nodes, sentences, mentions, objects)
    smi, omi = m["m_smi"], m["m_omi"]
    assert smi.row_ids.tolist() == ["s1", "s2", "s3", "s4"]
    assert smi.col_ids.tolist() == ["grace hopper", "harvard"]
    np.testing.assert_array_equal(smi.matrix.toarray(), [[1, 1], [1, 0], [0, 0], [0, 0]])  # binary, not counts
    assert omi.row_ids.tolist() == ["o1", "o2", "o3"]
    np.testing.assert_array_equal(omi.matrix.toarray(), [[1, 0], [1, 0], [0, 1]])
    assert smi.matrix.dtype == np.float32 and smi.matrix.indices.dtype == np.int32


def test_roundtrip_without_pickle(tmp_path: Path, example):
    entities, mentions, sentences, objects = example
    nodes = multimodal_nodes("p", entities, mentions, objects)
    m = incidence_matrices(nodes, sentences, mentions, objects)
    smi = m["m_smi"]
    smi.save(tmp_path / "m_smi.npz")
    m["m_omi"].save(tmp_path / "m_omi.npz")
    with np.load(tmp_path / "m_smi.npz", allow_pickle=False) as z:
        assert set(z.files) == {"version", "shape", "data", "indices", "indptr", "row_ids", "col_ids"}
    back = Incidence.load(tmp_path / "m_smi.npz")
    assert back.row_ids.tolist() == smi.row_ids.tolist() and back.col_ids.tolist() == smi.col_ids.tolist()
    assert (back.matrix != smi.matrix).nnz == 0
    # the entity keys come back as Python strings, and a matrix over the same entities shares them
    assert back.col_ids.dtype == object
    omi = Incidence.load(tmp_path / "m_omi.npz", columns_like=back)
    assert omi.col_ids is back.col_ids and (omi.matrix != m["m_omi"].matrix).nnz == 0
    other = build_incidence([], ["someone else"], [])
    assert Incidence.load(tmp_path / "m_omi.npz", columns_like=other).col_ids.tolist() == smi.col_ids.tolist()
    assert not list(tmp_path.glob(".*"))  # no temp file left behind


def test_empty_and_unknown_ids(tmp_path: Path):
    empty = build_incidence([], ["a"], [])
    empty.save(tmp_path / "e.npz")
    assert Incidence.load(tmp_path / "e.npz").shape == (0, 1)
    with pytest.raises(KeyError, match="missing from the row or column list"):
        build_incidence(["s1"], ["a"], [("s1", "b")])
    with pytest.raises(ValueError, match="unique"):
        build_incidence(["s1", "s1"], ["a"], [])
