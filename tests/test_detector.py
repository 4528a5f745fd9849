"""The ultralytics grounding backend, run for real on CPU with randomly initialised models.

No weights can be downloaded here, so every model is built from ultralytics' packaged yaml with
random weights and a tiny ``conf``: the boxes mean nothing, but the whole path (loading, batched
prediction, class matching, masks, σ > τ, bad images, open-vocabulary prompt grouping) runs on
real photographs. Not covered offline: real YOLOE/YOLO-World text encoders (MobileCLIP/CLIP,
replaced by ``text_embedder``), detection quality of trained weights, and SAM 3 (gated weights).
"""

from __future__ import annotations

import atexit
import io
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image, UnidentifiedImageError

from mmkg.vision.base import EntityPrompt, GroundingTask
from mmkg.vision.detector import (
    ClassMatcher,
    ModelWeightsMissing,
    UltralyticsGrounder,
    import_ultralytics,
    load_bgr,
    normalize_term,
    resolve_device,
)

os.environ.setdefault("YOLO_OFFLINE", "1")  # ultralytics is imported lazily, after this line
if "YOLO_CONFIG_DIR" not in os.environ:  # ultralytics writes its settings there; removed when the run ends
    os.environ["YOLO_CONFIG_DIR"] = tempfile.mkdtemp(prefix="mmkg-yolo-")
    atexit.register(shutil.rmtree, os.environ["YOLO_CONFIG_DIR"], ignore_errors=True)

SAMPLE = Path(__file__).resolve().parent.parent / "sample_corpus"
HORSE = SAMPLE / "nature_and_objects" / "images" / "horse.jpg"
CAT = SAMPLE / "nature_and_objects" / "images" / "chelsea.jpg"
ASTRONAUT = SAMPLE / "space" / "images" / "astronaut.jpg"
IMGSZ = 320
CONF = 1e-6  # random weights score ~1e-5..1e-4

HOPPER = EntityPrompt("grace hopper", "Grace Hopper", "PERSON")
NAVY = EntityPrompt("us navy", "U.S. Navy", "ORG")
PERSON = EntityPrompt("person", "person")
HORSE_E = EntityPrompt("horse", "horses")
CAT_E = EntityPrompt("cat", "cat")


def coco_names() -> dict[int, str]:
    utils = import_ultralytics().utils
    return dict(enumerate(utils.YAML.load(utils.ROOT / "cfg/datasets/coco8.yaml")["names"].values()))


@pytest.fixture(scope="module")
def seg_pt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random yolov8n-seg with COCO class names, saved as a checkpoint (as trained weights would be)."""
    torch.manual_seed(0)
    model = import_ultralytics().YOLO("yolov8n-seg.yaml")
    model.model.names = coco_names()
    path = tmp_path_factory.mktemp("weights") / "random-yolov8n-seg.pt"
    model.save(path)
    return path


@pytest.fixture(scope="module")
def grounder(seg_pt: Path) -> UltralyticsGrounder:
    return UltralyticsGrounder(str(seg_pt), device="cpu", batch_size=2, imgsz=IMGSZ, conf=CONF)


def spy_predict(monkeypatch: pytest.MonkeyPatch, model) -> list[int]:
    """Record the batch size of every predict call."""
    calls: list[int] = []
    real = model.predict

    def predict(source, **kwargs):
        calls.append(len(source))
        return real(source, **kwargs)

    monkeypatch.setattr(model, "predict", predict)
    return calls


def check_geometry(outcome, path: Path) -> None:
    w, h = Image.open(path).size
    for d in outcome.detections:
        x0, y0, x1, y1 = d.box
        assert 0 <= x0 <= x1 <= w and 0 <= y0 <= y1 <= h
        assert d.backend == "ultralytics"
        for poly in d.polygons:
            assert len(poly) >= 6 and len(poly) % 2 == 0
            xs, ys = np.array(poly[0::2]), np.array(poly[1::2])
            assert xs.min() >= -1 and xs.max() <= w + 1 and ys.min() >= -1 and ys.max() <= h + 1


# -- closed vocabulary, end to end -----------------------------------------------------------------


def test_closed_vocabulary_end_to_end(grounder: UltralyticsGrounder, photo_path: Path, monkeypatch):
    tasks = [
        GroundingTask("hopper", photo_path, [HOPPER, NAVY]),
        GroundingTask("horse", HORSE, [HORSE_E, CAT_E]),
        GroundingTask("cat", CAT, [CAT_E]),
        GroundingTask("astronaut", ASTRONAUT, [PERSON]),
    ]
    calls = spy_predict(monkeypatch, grounder.model)
    outcomes = list(grounder.ground(tasks, 0.0))
    assert [o.image_id for o in outcomes] == ["hopper", "horse", "cat", "astronaut"]
    assert calls == [2, 2]
    assert grounder.kind == "closed" and not grounder.open_vocabulary
    allowed = {"hopper": {"person"}, "horse": {"horse", "cat"}, "cat": {"cat"}, "astronaut": {"person"}}
    for task, outcome in zip(tasks, outcomes, strict=True):
        assert outcome.error is None
        assert {d.label for d in outcome.detections} <= allowed[task.image_id]
        assert {d.entity_key for d in outcome.detections} <= {e.key for e in task.entities}
        assert all(d.score > 0.0 for d in outcome.detections)
        check_geometry(outcome, task.path)
    hopper, astronaut = outcomes[0], outcomes[3]
    assert hopper.detections and astronaut.detections  # random weights favour class 0 ("person")
    assert {(d.entity_key, d.label) for d in hopper.detections} == {("grace hopper", "person")}  # PERSON -> person
    assert all(d.polygons for d in hopper.detections)  # seg model: mask outlines


def test_batches_of_batch_size(grounder: UltralyticsGrounder, photo_path: Path, monkeypatch):
    tasks = [GroundingTask(str(i), p, [PERSON]) for i, p in enumerate([photo_path, HORSE, CAT])]
    calls = spy_predict(monkeypatch, grounder.model)
    outcomes = list(grounder.ground(tasks, 0.0))
    assert calls == [2, 1]
    assert [o.image_id for o in outcomes] == ["0", "1", "2"]


def test_images_without_matching_class_skip_the_model(grounder: UltralyticsGrounder, photo_path: Path, monkeypatch):
    tasks = [GroundingTask("a", photo_path, [NAVY]), GroundingTask("b", HORSE, []), GroundingTask("c", CAT, [CAT_E])]
    calls = spy_predict(monkeypatch, grounder.model)
    outcomes = list(grounder.ground(tasks, 0.0))
    assert calls == [1]
    assert [(o.image_id, o.detections, o.error) for o in outcomes[:2]] == [("a", [], None), ("b", [], None)]


def test_tau_filters_sigma(grounder: UltralyticsGrounder, photo_path: Path):
    task = GroundingTask("hopper", photo_path, [HOPPER])
    scores = sorted(d.score for d in next(grounder.ground([task], 0.0)).detections)
    assert len(scores) > 1
    tau = scores[len(scores) // 2]
    kept = next(grounder.ground([task], tau)).detections
    assert kept and all(d.score > tau for d in kept) and len(kept) < len(scores)
    everything = [task, GroundingTask("astronaut", ASTRONAUT, [PERSON])]
    assert all(o.detections == [] and o.error is None for o in grounder.ground(everything, 0.99))


def test_first_person_entity_wins(grounder: UltralyticsGrounder, photo_path: Path):
    aiken = EntityPrompt("howard aiken", "Howard Aiken", "PERSON")
    outcome = next(grounder.ground([GroundingTask("x", photo_path, [HOPPER, aiken])], 0.0))
    assert outcome.detections and {d.entity_name for d in outcome.detections} == {"Grace Hopper"}


def test_checkpoint_round_trip_matches_the_saved_model(seg_pt: Path, photo_path: Path):
    reloaded = UltralyticsGrounder(str(seg_pt), device="cpu", imgsz=IMGSZ, conf=CONF)
    assert reloaded.model.names == coco_names()
    ours = next(reloaded.ground([GroundingTask("x", photo_path, [PERSON])], 0.0)).detections
    theirs = (
        import_ultralytics()
        .YOLO(str(seg_pt))
        .predict(str(photo_path), imgsz=IMGSZ, conf=CONF, classes=[0], verbose=False)[0]
    )
    assert len(ours) == len(theirs.boxes)
    np.testing.assert_allclose([d.box for d in ours], theirs.boxes.xyxy.numpy(), atol=0.02)


def test_yaml_builds_random_weights(photo_path: Path):
    g = UltralyticsGrounder("yolov8n-seg.yaml", device="cpu", imgsz=IMGSZ, conf=CONF)
    assert g.kind == "closed" and g.model.names[0] == "0"  # no dataset: classes are named by index
    outcome = next(g.ground([GroundingTask("x", photo_path, [EntityPrompt("0", "0")])], 0.0))
    assert outcome.error is None and {d.label for d in outcome.detections} <= {"0"}


# -- class matching ----------------------------------------------------------------------------


def test_class_matching_rules():
    m = ClassMatcher(coco_names(), synonyms={"horse": ["steed"]})
    ids = {n: i for i, n in coco_names().items()}
    person, horse, cat, apple = ids["person"], ids["horse"], ids["cat"], ids["apple"]
    assert m.match([HOPPER]) == {person: HOPPER}  # NER label PERSON -> "person"
    assert m.classes_for(EntityPrompt("horses", "Horses")) == [horse]  # plural stripped
    assert m.classes_for(EntityPrompt("the cats", "The Cats", "WORK_OF_ART")) == [cat]
    assert m.classes_for(EntityPrompt("astronaut", "astronauts")) == [person]  # default synonym
    assert m.classes_for(EntityPrompt("women", "women")) == [person]  # irregular plural
    assert m.classes_for(EntityPrompt("steed", "steed")) == [horse]  # caller's synonym
    assert m.classes_for(EntityPrompt("apple", "Apple", "ORG")) == []  # a company is no apple
    assert m.classes_for(EntityPrompt("apple", "apples")) == [apple]
    assert m.classes_for(EntityPrompt("wine glass", "Wine Glasses")) == [ids["wine glass"]]
    assert m.classes_for(EntityPrompt("cell phones", "cell_phones")) == [ids["cell phone"]]
    assert m.classes_for(NAVY) == [] and m.classes_for(EntityPrompt("horse race", "horse race")) == []
    both = m.match([EntityPrompt("person", "person"), HOPPER])
    assert both[person].key == "person"  # first entity in task order wins


def test_normalize_term():
    assert [normalize_term(t) for t in ["Horses", "the Wine Glasses", "People", "batteries", "bus", "news"]] == [
        "horse",
        "wine glass",
        "person",
        "battery",
        "bus",
        "news",
    ]


# -- weights are never downloaded ------------------------------------------------------------------


@pytest.mark.parametrize("name", ["missing-yolo.pt", "sam3.pt", "yoloe-11s-seg.pt"])
def test_missing_checkpoint_raises(tmp_path: Path, name: str, no_network):
    path = tmp_path / "models" / name
    with pytest.raises(ModelWeightsMissing) as err:
        UltralyticsGrounder(str(path), device="cpu")
    assert str(path) in str(err.value) and "YOLO_OFFLINE" in str(err.value)


def test_remote_model_refused(no_network):
    with pytest.raises(ModelWeightsMissing, match="refusing to download"):
        UltralyticsGrounder("https://example.org/yolov8n.pt")


def test_bare_model_name_is_not_downloaded(no_network, tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ModelWeightsMissing, match="yolov8n"):
        UltralyticsGrounder("yolov8n")


def test_pillow_open_is_left_alone(tmp_path: Path, no_network):
    """ultralytics' import-time Image.open patch would pip-install pi-heif on unknown files; it is undone."""
    import_ultralytics()
    garbage = tmp_path / "garbage.png"
    garbage.write_bytes(b"not an image")
    assert Image.open.__module__.startswith("PIL")
    with pytest.raises(UnidentifiedImageError):
        Image.open(garbage)


def test_resolve_device():
    assert resolve_device("auto") == ("cuda:0" if torch.cuda.is_available() else "cpu")
    assert resolve_device("cpu") == "cpu"


# -- bad images ----------------------------------------------------------------------------------


@pytest.fixture
def odd_images(tmp_path: Path, photo: Image.Image, jpeg_bytes: bytes) -> dict[str, Path]:
    paths = {
        "truncated": tmp_path / "truncated.jpg",
        "garbage": tmp_path / "garbage.png",
        "missing": tmp_path / "missing.jpg",
        "cmyk": tmp_path / "cmyk.jpg",
        "palette": tmp_path / "palette.png",
        "tiny": tmp_path / "tiny.png",
        "la": tmp_path / "la.png",
        "grey16": tmp_path / "grey16.png",
    }
    paths["truncated"].write_bytes(jpeg_bytes[: len(jpeg_bytes) // 2])
    paths["garbage"].write_bytes(b"\x89PNG\r\n\x1a\n not really")
    photo.convert("CMYK").save(paths["cmyk"])
    pal = photo.resize((96, 120)).convert("P", palette=Image.Palette.ADAPTIVE, colors=16)
    pal.info["transparency"] = 0
    pal.save(paths["palette"], transparency=0)
    Image.new("RGB", (1, 1), (200, 10, 10)).save(paths["tiny"])
    photo.resize((96, 120)).convert("LA").save(paths["la"])
    grey = (np.asarray(photo.convert("L").resize((96, 120)), dtype=np.uint16) * 257).astype(np.uint16)
    Image.fromarray(grey).save(paths["grey16"])
    return paths


def test_bad_images_do_not_raise(grounder: UltralyticsGrounder, odd_images: dict[str, Path], photo_path: Path):
    tasks = [GroundingTask(k, p, [PERSON]) for k, p in odd_images.items()]
    tasks.insert(3, GroundingTask("good", photo_path, [HOPPER]))
    tasks.append(GroundingTask("garbage-no-prompt", odd_images["garbage"], []))
    outcomes = {o.image_id: o for o in grounder.ground(tasks, 0.0)}
    assert list(outcomes) == [t.image_id for t in tasks]
    for bad in ("truncated", "garbage", "missing", "garbage-no-prompt"):
        assert outcomes[bad].error and outcomes[bad].detections == []
    for ok in ("cmyk", "palette", "tiny", "la", "grey16", "good"):
        assert outcomes[ok].error is None, outcomes[ok].error
        check_geometry(outcomes[ok], odd_images.get(ok, photo_path))
    assert outcomes["good"].detections


def test_failing_image_is_isolated_from_its_batch(grounder: UltralyticsGrounder, odd_images, photo_path, monkeypatch):
    real = grounder.model.predict

    def predict(source, **kwargs):
        if any(im.shape[:2] == (1, 1) for im in source):
            raise RuntimeError("boom")
        return real(source, **kwargs)

    monkeypatch.setattr(grounder.model, "predict", predict)
    tasks = [GroundingTask("tiny", odd_images["tiny"], [PERSON]), GroundingTask("good", photo_path, [PERSON])]
    tiny, good = grounder.ground(tasks, 0.0)
    assert tiny.error == "inference failed: RuntimeError: boom" and tiny.detections == []
    assert good.error is None and good.detections


def test_load_bgr_modes(odd_images: dict[str, Path]):
    red = load_bgr(odd_images["tiny"])
    assert red.shape == (1, 1, 3) and red.dtype == np.uint8 and tuple(red[0, 0]) == (10, 10, 200)  # BGR
    for key in ("cmyk", "palette", "la", "grey16"):
        arr = load_bgr(odd_images[key])
        assert arr.ndim == 3 and arr.shape[2] == 3 and arr.flags.c_contiguous
    grey = load_bgr(odd_images["grey16"])
    assert 50 < grey.mean() < 205  # 16-bit scaled to 8 bits, not clipped to white
    buf = io.BytesIO()
    Image.new("RGBA", (4, 4), (0, 0, 0, 0)).save(buf, format="PNG")
    clear = odd_images["tiny"].with_name("clear.png")
    clear.write_bytes(buf.getvalue())
    assert (load_bgr(clear) == 255).all()  # transparent -> white, not black


# -- open vocabulary -------------------------------------------------------------------------------


def fake_text_embedder(dim: int, calls: list[list[str]]):
    """Deterministic per-name vectors in place of MobileCLIP/CLIP (not available offline)."""

    def embed(names: list[str]) -> torch.Tensor:
        calls.append(list(names))
        vecs = [torch.randn(dim, generator=torch.Generator().manual_seed(sum(map(ord, n)))) for n in names]
        return torch.nn.functional.normalize(torch.stack(vecs), dim=-1)[None]

    return embed


def test_yoloe_groups_images_by_prompt_set(photo_path: Path, monkeypatch):
    calls: list[list[str]] = []
    torch.manual_seed(0)
    g = UltralyticsGrounder(
        "yoloe-11n-seg.yaml", device="cpu", imgsz=IMGSZ, conf=CONF, text_embedder=fake_text_embedder(512, calls)
    )
    assert g.kind == "yoloe" and g.open_vocabulary
    set_classes: list[list[str]] = []
    real_set = g.model.set_classes
    monkeypatch.setattr(g.model, "set_classes", lambda names, pe: (set_classes.append(names), real_set(names, pe)))
    predicts = spy_predict(monkeypatch, g.model)
    tasks = [
        GroundingTask("hopper", photo_path, [HOPPER, NAVY]),
        GroundingTask("horse", HORSE, [HORSE_E]),
        GroundingTask("cat", CAT, [NAVY, HOPPER]),  # same prompt set as "hopper", other order
        GroundingTask("nothing", ASTRONAUT, []),
    ]
    outcomes = list(g.ground(tasks, 0.0))
    assert [o.image_id for o in outcomes] == ["hopper", "horse", "cat", "nothing"]
    assert set_classes == [["Grace Hopper", "U.S. Navy", "person"], ["horses"]]  # + "person" for the PERSON entity
    assert predicts == [2, 1]
    assert sorted(n for c in calls for n in c) == ["Grace Hopper", "U.S. Navy", "horses", "person"]  # each once
    for task, outcome in zip(tasks, outcomes, strict=True):
        assert outcome.error is None
        assert {d.entity_key for d in outcome.detections} <= {e.key for e in task.entities}
        check_geometry(outcome, task.path)
    assert outcomes[0].detections and all(d.polygons for d in outcomes[0].detections)
    names = {"Grace Hopper": "grace hopper", "person": "grace hopper", "U.S. Navy": "us navy"}
    assert all(names[d.label] == d.entity_key for d in outcomes[0].detections)
    assert outcomes[3].detections == []


def test_yoloe_without_text_encoder_fails_clearly(photo_path: Path, no_network):
    g = UltralyticsGrounder("yoloe-11n-seg.yaml", device="cpu", imgsz=IMGSZ, conf=CONF)
    with pytest.raises(ModelWeightsMissing, match="text_embedder"):
        list(g.ground([GroundingTask("x", photo_path, [HOPPER])], 0.0))


def test_yolo_world_runs_with_prompts(photo_path: Path):
    calls: list[list[str]] = []
    torch.manual_seed(0)
    g = UltralyticsGrounder(
        "yolov8n-worldv2.yaml", device="cpu", imgsz=IMGSZ, conf=1e-9, text_embedder=fake_text_embedder(512, calls)
    )
    assert g.kind == "world"
    tasks = [GroundingTask("a", photo_path, [HOPPER]), GroundingTask("b", HORSE, [HORSE_E])]
    outcomes = list(g.ground(tasks, 0.0))
    assert [o.error for o in outcomes] == [None, None]
    assert outcomes[0].detections and {d.label for d in outcomes[0].detections} <= {"Grace Hopper", "person"}
    assert outcomes[1].detections and {d.label for d in outcomes[1].detections} == {"horses"}
    assert g.model.model.names == ["horses"]


# -- GPU -----------------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_batched(seg_pt: Path, photo_path: Path):
    g = UltralyticsGrounder(str(seg_pt), device="cuda", batch_size=4, imgsz=IMGSZ, conf=CONF)
    tasks = [GroundingTask(str(i), p, [HOPPER]) for i, p in enumerate([photo_path, HORSE, CAT, ASTRONAUT])]
    outcomes = list(g.ground(tasks, 0.0))
    assert [o.error for o in outcomes] == [None] * 4
    assert outcomes[0].detections and all(d.label == "person" for o in outcomes for d in o.detections)
    for task, outcome in zip(tasks, outcomes, strict=True):
        check_geometry(outcome, task.path)
    # ultralytics runs its predictor's own copy of the network (AutoBackend) on the device; YOLO.model stays put
    assert g.model.predictor is not None and g.model.predictor.device.type == "cuda"
