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
        ids = {"row_offsets", "row_utf8", "col_offsets", "col_utf8"}
        assert set(z.files) == {"version", "shape", "data", "indices", "indptr", *ids}
        assert int(z["version"]) == 2 and z["row_utf8"].dtype == np.uint8 and z["row_offsets"].dtype == np.int64
    back = Incidence.load(tmp_path / "m_smi.npz")
    assert back.row_ids.tolist() == smi.row_ids.tolist() and back.col_ids.tolist() == smi.col_ids.tolist()
    assert (back.matrix != smi.matrix).nnz == 0
    # the ids come back as Python strings, and a matrix over the same entities shares its column array
    assert back.col_ids.dtype == object and back.row_ids.dtype == object
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


def _write_v1(path: Path, inc: Incidence) -> None:
    """A matrix as format 1 wrote it: ids as NumPy fixed-width unicode (indexes published before format 2)."""
    m = inc.matrix.tocsr()
    np.savez_compressed(path, version=np.int32(1), shape=np.asarray(m.shape, dtype=np.int64), data=m.data,
                        indices=m.indices, indptr=m.indptr.astype(np.int64), row_ids=inc.row_ids.astype(str),
                        col_ids=inc.col_ids.astype(str))  # fmt: skip


def test_ids_keep_any_text_in_both_formats(tmp_path: Path):
    rows = ["s1", "Zoë's café", "北京 sentence", "emoji 🙂", ""]
    cols = ["grace hopper", "münchen", "東京", "x" * 300]
    inc = build_incidence(rows, cols, [("Zoë's café", "münchen"), ("北京 sentence", "東京"), ("", "x" * 300)])
    inc.save(tmp_path / "v2.npz")
    _write_v1(tmp_path / "v1.npz", inc)
    for name in ("v2.npz", "v1.npz"):
        back = Incidence.load(tmp_path / name)
        assert back.row_ids.tolist() == rows and back.col_ids.tolist() == cols, name
        assert back.row_ids.dtype == object and back.col_ids.dtype == object
        np.testing.assert_array_equal(back.matrix.toarray(), inc.matrix.toarray())
    # format 2 holds each key's bytes once; format 1 padded every key to the 300-character one, 4 bytes each
    with np.load(tmp_path / "v2.npz") as v2, np.load(tmp_path / "v1.npz") as v1:
        assert v2["col_utf8"].nbytes == sum(len(c.encode()) for c in cols) == 326
        assert v1["col_ids"].nbytes == 4 * 300 * len(cols)


def test_damaged_ids_are_refused_with_the_file_named(tmp_path: Path):
    inc = build_incidence(["s1", "s2"], ["a", "b"], [("s1", "a")])
    inc.save(tmp_path / "good.npz")
    with np.load(tmp_path / "good.npz") as z:
        parts = {k: z[k] for k in z.files}

    def damaged(name: str, **changes) -> Path:
        path = tmp_path / name
        np.savez_compressed(path, **{**parts, **changes})
        return path

    bad_utf8 = parts["row_utf8"].copy()
    bad_utf8[0] = 0xFF
    with pytest.raises(ValueError, match=r"utf8\.npz: the row ids are not valid UTF-8.*damaged"):
        Incidence.load(damaged("utf8.npz", row_utf8=bad_utf8))
    with pytest.raises(ValueError, match=r"offsets\.npz: the column id offsets do not index the id bytes"):
        Incidence.load(damaged("offsets.npz", col_offsets=np.asarray([0, 5, 2], np.int64)))
    with pytest.raises(ValueError, match=r"short\.npz: 1 row and 2 column ids for a matrix of shape \(2, 2\)"):
        Incidence.load(damaged("short.npz", row_offsets=np.asarray([0, 2], np.int64),
                               row_utf8=np.frombuffer(b"s1", np.uint8)))  # fmt: skip
    with pytest.raises(ValueError, match=r"future\.npz: incidence format 9; this mmkg reads formats \[1, 2\]"):
        Incidence.load(damaged("future.npz", version=np.int32(9)))
