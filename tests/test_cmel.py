"""MMGraphRAG's cross-modal entity linking: spectral candidates, alignment, image-side entities, link checks.

The spectral example is hand-built so that plain cosine picks the wrong text entity and the
relation-weighted clustering the right one. The end-to-end checks on the sample corpus (real assets,
real OCR, the hand-labelled links of ``tests/data/cmel_sample_gold.json``) are in ``test_index.py``.
"""

from __future__ import annotations

import re

import numpy as np
import polars as pl
import pytest

from mmkg import schemas
from mmkg.validation import check_cross_modal_links
from mmkg.vision.cmel import (
    CmelParams,
    align,
    compact,
    image_entities,
    link_partition,
    llm_chooser,
    ocr_similarity,
    spectral_clusters,
)


def _u(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float64)
    return v / np.linalg.norm(v)


# axis 0: what the picture shows; axis 1: a topic of X's group; axis 2: the topic of Y's group
X = _u(0.80, 0.60, 0.0, 0.0)  # closest to the picture by cosine, but not what it shows
P, Q = _u(0.05, 1.0, 0.0, 0.1), _u(0.05, 1.0, 0.0, -0.1)
Y = _u(0.78, 0.35, 0.52, 0.0)  # what it shows: related by triples to Z and W
Z, W = _u(0.55, 0.0, 1.0, 0.1), _u(0.55, 0.0, 1.0, -0.1)
TEXT = np.stack([X, P, Q, Y, Z, W])
PICTURE = _u(1.0, 0.0, 0.0, 0.0)
RELATED = [(3, 4), (3, 5)]  # Y–Z and Y–W are stated by triples in the context


def test_plain_cosine_picks_the_wrong_entity_and_relation_weighted_clustering_the_right_one():
    cos = TEXT @ PICTURE
    assert "XPQYZW"[int(np.argmax(cos))] == "X" and cos[0] > cos[3]  # plain cosine: X
    labels = spectral_clusters(TEXT, RELATED, CmelParams(relation_weight=2.0))
    assert labels[0] == labels[1] == labels[2] and labels[3] == labels[4] == labels[5] and labels[0] != labels[3]
    idx, score, _, size = align(PICTURE, TEXT, labels, threshold=0.5)
    assert "XPQYZW"[idx] == "Y" and score == pytest.approx(float(Y @ PICTURE)) and size == 3
    # without the triples, X is DBSCAN noise: a cluster of its own, and the picture goes to it
    plain = spectral_clusters(TEXT, [], CmelParams())
    assert (plain == plain[0]).sum() == 1
    idx, *_ = align(PICTURE, TEXT, plain, threshold=0.5)
    assert "XPQYZW"[idx] == "X"


def test_dbscan_noise_becomes_singleton_clusters_and_small_inputs_work():
    rng = np.random.default_rng(0)
    scattered = rng.standard_normal((6, 16))
    scattered /= np.linalg.norm(scattered, axis=1, keepdims=True)
    labels = spectral_clusters(scattered, [], CmelParams(dbscan_eps=1e-6))  # nothing is dense: all noise
    assert sorted(labels.tolist()) == list(range(6))
    assert spectral_clusters(np.zeros((0, 4))).tolist() == []
    assert spectral_clusters(X[None]).tolist() == [0]
    assert align(PICTURE, np.zeros((0, 4)), np.zeros(0, dtype=np.int64), 0.5) == (None, 0.0, -1, 0)
    idx, score, *_ = align(PICTURE, TEXT, np.zeros(6, dtype=np.int64), threshold=0.95)
    assert idx is None and score == pytest.approx(0.8)  # the best is below the threshold: no link


def test_glued_ocr_words_match_by_compact_form():
    assert compact("HUBBLE SPACE-TELESCOPE!") == "hubblespacetelescope"
    names = ["The Hubble Space Telescope", "NASA", "Hubble Space Telescope"]
    sims = ocr_similarity("HUBBLESPACETELESCOPE", names, np.array([0.74, 0.2, 0.7]))
    assert sims.tolist() == pytest.approx([0.9, 0.2, 1.0])  # contained in a longer name: 0.9; equal: 1
    assert ocr_similarity("NASA", ["NASA and ESA"], np.array([0.5])).tolist() == [0.5]  # under 8 characters


def test_image_entities_of_one_picture():
    ocr = pl.DataFrame(
        {"image_id": ["i"] * 5, "line_index": [0, 1, 2, 3, 4], "text": ["HUBBLE", "2012", "ab",
         "one two three four five six seven eight nine", "Credit: NASA"],
         "x0": [1.0] * 5, "y0": [2.0] * 5, "x1": [3.0] * 5, "y1": [4.0] * 5}
    )  # fmt: skip
    objects = pl.DataFrame({"image_id": ["i", "i"], "backend": ["ultralytics", "ocr"], "label": ["person", "HUBBLE"],
                            "x0": [0.0, 1.0], "y0": [0.0, 1.0], "x1": [5.0, 2.0], "y1": [5.0, 2.0]})  # fmt: skip
    ents = image_entities("i", "Hubble seen from the Shuttle", ocr, objects, CmelParams(),
                          lambda caption: ["Hubble", "Shuttle"])  # fmt: skip
    got = [(e.kind, e.text) for e in ents]
    # short, letterless and sentence-long OCR lines are no entities; a detector label is; OCR-grounded objects
    # repeat OCR lines; caption entities come from the callback; the global entity is the caption
    assert got == [("ocr", "HUBBLE"), ("ocr", "Credit: NASA"), ("label", "person"), ("caption", "Shuttle"),
                   ("global", "Hubble seen from the Shuttle")]  # fmt: skip
    assert ents[0].box == (1.0, 2.0, 3.0, 4.0)
    no_caption = image_entities("i", "", ocr, objects)
    assert no_caption[-1] == type(no_caption[-1])("HUBBLE Credit: NASA", "global")


def _encoder():
    from mmkg.encoders import load_encoder

    return load_encoder("text", "", "cpu")


def _hand_built_document() -> dict:
    """A document of four chunks with a picture in the second; candidates come from chunks 0..2 only."""
    return {
        "images": pl.DataFrame({"image_id": ["pic"], "doc_id": ["d"], "role": ["embedded"],
                                "alt_text": ["Grace Hopper in uniform"]}),
        "chunks": pl.DataFrame({"chunk_id": ["c0", "c1", "c2", "c3"], "doc_id": ["d"] * 4,
                                "chunk_index": [0, 1, 2, 3], "image_ids": [[], ["pic"], [], []]}),
        "entity_mentions": pl.DataFrame({"chunk_id": ["c0", "c1", "c2", "c3"],
                                         "entity_key": ["grace hopper", "navy", "harvard", "eniac"]}),
        "entities": pl.DataFrame({"entity_key": ["grace hopper", "navy", "harvard", "eniac"],
                                  "name": ["Grace Hopper", "United States Navy", "Harvard", "ENIAC"]}),
        "relations": pl.DataFrame({"chunk_id": ["c1"], "subject_key": ["grace hopper"], "object_key": ["navy"]}),
        "image_text": pl.DataFrame({"image_id": ["pic", "pic"], "line_index": [0, 1], "text": ["GRACEHOPPER", "ENIAC"],
                                    "x0": [0.0, 0.0], "y0": [0.0, 9.0], "x1": [9.0, 9.0], "y1": [5.0, 14.0]}),
        "objects": pl.DataFrame(schema={"image_id": pl.String, "backend": pl.String, "label": pl.String,
                                        "x0": pl.Float32, "y0": pl.Float32, "x1": pl.Float32, "y1": pl.Float32}),
    }  # fmt: skip


def _link(choose=None) -> pl.DataFrame:
    t = _hand_built_document()
    names = ("images", "chunks", "entity_mentions", "entities", "relations", "image_text", "objects")
    return link_partition("p", *(t[n] for n in names), _encoder().encode_text, CmelParams(),
                          lambda c: ["Grace Hopper"], choose)  # fmt: skip


def test_link_partition_on_a_hand_built_document(no_network):
    links = _link()
    assert links.schema == schemas.CROSS_MODAL_LINKS
    by_text = {(r["kind"], r["image_entity"]): r for r in links.iter_rows(named=True)}
    glued = by_text[("ocr", "GRACEHOPPER")]
    assert glued["entity_name"] == "Grace Hopper" and glued["method"] == "spectral" and glued["score"] == 1.0
    assert glued["x1"] == 9.0 and glued["chunk_id"] == "c1"
    assert by_text[("caption", "Grace Hopper")]["entity_key"] == "grace hopper"
    # ENIAC is named in chunk c3, two chunks away: not a candidate, so the line stays unaligned and described
    eniac = by_text[("ocr", "ENIAC")]
    assert eniac["entity_key"] is None and eniac["method"] == "unaligned" and "nearby:" in eniac["description"]
    assert by_text[("global", "Grace Hopper in uniform")]["entity_key"] == "grace hopper"
    assert check_cross_modal_links(links, "p").passed


def test_llm_alignment_step_through_an_openai_compatible_server(scripted_llm):
    """The model chooses within the cluster: a number links, 0 declines, an answer without a number falls back."""
    from mmkg.generation import get_generator

    def answer(body: dict) -> str:
        prompt = body["messages"][-1]["content"]
        numbered = dict(re.findall(r"^(\d+)\. (.+)$", prompt, re.MULTILINE))
        if "(ocr): GRACEHOPPER" in prompt:
            return next(n for n, name in numbered.items() if name == "Grace Hopper")
        if "(ocr): ENIAC" in prompt:
            return "0"
        return "I cannot tell."

    scripted_llm.answer = answer
    gen = get_generator("openai", "judge", base_url=scripted_llm.url, timeout=10, max_retries=0)
    links = _link(llm_chooser(gen))
    by_text = {(r["kind"], r["image_entity"]): r for r in links.iter_rows(named=True)}
    assert len(scripted_llm.asked) == 3 and all(a["model"] == "judge" for a in scripted_llm.asked)
    chosen = by_text[("ocr", "GRACEHOPPER")]
    assert chosen["method"] == "llm" and chosen["entity_name"] == "Grace Hopper" and chosen["score"] == 1.0
    assert by_text[("ocr", "ENIAC")]["method"] == "unaligned" and by_text[("ocr", "ENIAC")]["description"]
    fallback = by_text[("caption", "Grace Hopper")]  # no number in the answer: the argmax rule stands
    assert fallback["method"] == "spectral" and fallback["entity_name"] == "Grace Hopper"
    assert check_cross_modal_links(links, "p").passed


def test_the_links_check_names_what_is_inconsistent():
    row = {"link_id": "l1", "partition": "p", "image_id": "i", "doc_id": "d", "chunk_id": "c", "image_entity": "x",
           "kind": "ocr", "entity_key": None, "entity_name": None, "score": 0.9, "cluster": 0, "cluster_size": 1,
           "method": "spectral", "description": "", "x0": None, "y0": None, "x1": None, "y1": None}  # fmt: skip
    bad = pl.DataFrame([row, {**row, "link_id": "l2", "method": "new", "entity_key": "e"},
                        {**row, "link_id": "l3", "method": "guess", "entity_key": "e", "score": 3.0}],
                       schema=schemas.CROSS_MODAL_LINKS)  # fmt: skip
    r = check_cross_modal_links(bad, "p")
    assert not r.passed
    for part in ("1 aligned link(s) without an entity_key", "2 unaligned or new link(s) naming an entity",
                 "score(s) outside [-1, 1]", "unknown method(s) ['guess']"):  # fmt: skip
        assert part in r.description
