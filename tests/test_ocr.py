"""OCR grounding: real RapidOCR on real images (placards drawn on a photo, the sample corpus, PDF pages)."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib
import numpy as np
import pytest
from conftest import SAMPLE_CORPUS, SHARED
from PIL import Image, ImageDraw, ImageFont

from mmkg.entities import canonical_key
from mmkg.vision.base import Box, EntityPrompt, Grounder, GroundingTask, OcrLine
from mmkg.vision.ocr import (
    OcrCache,
    OcrEngine,
    OcrError,
    OcrGrounder,
    engine_tag,
    lines_to_text,
    match_entities,
    normalize_text,
    to_rgb,
)

FONT = Path(matplotlib.get_data_path()) / "fonts/ttf/DejaVuSans-Bold.ttf"
MMLONGBENCH = SHARED / "datasets/mmlongbench-dev/documents"


def ent(name: str) -> EntityPrompt:
    return EntityPrompt(key=canonical_key(name), name=name)


def iou(a: Box, b: Box) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def center_in(a: Box, b: Box) -> bool:
    cx, cy = (a[0] + a[2]) / 2, (a[1] + a[3]) / 2
    return b[0] <= cx <= b[2] and b[1] <= cy <= b[3]


def line(text: str, x: float, y: float, w: float | None = None, h: float = 20.0, score: float = 0.95) -> OcrLine:
    w = 10.0 * len(text) if w is None else w
    return OcrLine(text=text, score=score, quad=((x, y), (x + w, y), (x + w, y + h), (x, y + h)))


def draw_labels(
    base: Image.Image, labels: list[tuple[str, tuple[int, int]]], size: int = 30, pad: int = 10
) -> tuple[Image.Image, list[Box], list[Box]]:
    """Paste white placards with black text; returns the image, placard boxes and text boxes."""
    img = base.copy()
    draw = ImageDraw.Draw(img)
    font = ImageFont.truetype(str(FONT), size)
    placards, texts = [], []
    for text, (x, y) in labels:
        tb = draw.textbbox((x + pad, y + pad), text, font=font)
        placard = (x, y, tb[2] + pad, tb[3] + pad)
        draw.rectangle(placard, fill="white")
        draw.text((x + pad, y + pad), text, fill="black", font=font)
        placards.append(tuple(map(float, placard)))
        texts.append(tuple(map(float, tb)))
    return img, placards, texts


@pytest.fixture(scope="module")
def engine() -> OcrEngine:
    return OcrEngine()


@pytest.fixture(scope="module")
def grounder(engine: OcrEngine) -> OcrGrounder:
    return OcrGrounder(engine)


def task_for(tmp_path: Path, img: Image.Image, image_id: str, names: list[str], fmt: str = "PNG") -> GroundingTask:
    path = tmp_path / f"{image_id}.{fmt.lower()}"
    img.save(path, format=fmt)
    return GroundingTask(image_id=image_id, path=path, entities=[ent(n) for n in names])


# ---------------------------------------------------------------- matcher on hand-made lines


def test_match_exact_and_case_and_accents() -> None:
    lines = [line("Visit the CAFÉ de Flore today", 10, 10)]
    dets = match_entities(lines, [ent("Café de Flore")], "img")
    assert len(dets) == 1
    d = dets[0]
    assert (d.backend, d.entity_key, d.image_id) == ("ocr", "cafe de flore", "img")
    assert d.label == "CAFÉ de Flore"
    assert d.score == pytest.approx(0.95)
    full = lines[0].box
    assert full[0] < d.box[0] < d.box[2] < full[2]  # cut to the substring, not the whole line
    assert len(d.polygons) == 1 and len(d.polygons[0]) == 8


def test_match_fuzzy_one_ocr_typo() -> None:
    lines = [line("HUBBLE SPACE TELESC0PE", 0, 0, score=0.9)]
    (d,) = match_entities(lines, [ent("Hubble Space Telescope")], "img")
    assert 0.85 <= d.score / 0.9 < 1.0  # σ = ratio × OCR confidence
    assert d.label == "HUBBLE SPACE TELESC0PE"
    assert match_entities(lines, [ent("Hubble Space Telescope")], "img", min_ratio=1.0) == []


def test_match_joined_words() -> None:
    lines = [line("HUBBLESPACETELESCOPE", 0, 0), line("A TIMELINEOFMANNEDNASAFLIGHTS", 0, 30)]
    dets = match_entities(lines, [ent("Hubble Space Telescope"), ent("Manned NASA Flights"), ent("NASA")], "img")
    by_name = {d.entity_name: d for d in dets}
    assert set(by_name) == {"Hubble Space Telescope", "Manned NASA Flights", "NASA"}
    assert by_name["Hubble Space Telescope"].box == lines[0].box
    nasa, flights = by_name["NASA"].box, by_name["Manned NASA Flights"].box
    assert flights[0] < nasa[0] < nasa[2] < flights[2]  # cut inside the joined token
    assert flights[0] > lines[1].box[0]  # "A TIMELINE OF" is not part of it


def test_match_no_match_and_word_boundaries() -> None:
    lines = [line("Welcome to Canada and the comparison table", 0, 0)]
    assert match_entities(lines, [ent("Grace Hopper"), ent("Ada"), ent("Paris")], "img") == []
    assert match_entities([], [ent("Grace Hopper")], "img") == []
    assert match_entities(lines, [], "img") == []


def test_match_skips_short_names() -> None:
    lines = [line("AI", 0, 0), line("UN report", 0, 40)]
    assert match_entities(lines, [ent("AI"), ent("U.N."), ent("The A")], "img") == []


def test_match_two_occurrences() -> None:
    lines = [line("Grace Hopper", 0, 0), line("photo of someone", 0, 100), line("by GRACE HOPPER", 300, 400)]
    dets = match_entities(lines, [ent("Grace Hopper")], "img")
    assert len(dets) == 2
    assert dets[0].box == lines[0].box
    assert dets[1].box[1] >= 400 and dets[1].box[0] > 300


def test_match_across_stacked_and_side_by_side_lines() -> None:
    stacked = [line("GRACE", 100, 100, w=80, h=30), line("HOPPER", 100, 140, w=95, h=30)]
    (d,) = match_entities(stacked, [ent("Grace Hopper")], "img")
    assert d.box == (100, 100, 195, 170)
    assert d.label == "GRACE HOPPER" and len(d.polygons) == 2
    side = [line("Grace", 10, 10, w=80, h=30), line("Hopper", 110, 12, w=90, h=30)]
    assert len(match_entities(side, [ent("Grace Hopper")], "img")) == 1
    # Too far apart (or a different font size) is not one name.
    far = [line("GRACE", 100, 100, w=80, h=30), line("HOPPER", 100, 400, w=95, h=30)]
    assert match_entities(far, [ent("Grace Hopper")], "img") == []
    sizes = [line("GRACE", 100, 100, w=80, h=30), line("HOPPER", 100, 135, w=30, h=8)]
    assert match_entities(sizes, [ent("Grace Hopper")], "img") == []


def test_match_one_detection_per_region_and_synonyms() -> None:
    lines = [line("International Business Machines", 0, 0)]
    prompts = [
        EntityPrompt("ibm", "International Business Machines"),
        EntityPrompt("ibm", "International Business Machines Corp"),
    ]
    dets = match_entities(lines, prompts, "img")
    assert len(dets) == 1 and dets[0].entity_key == "ibm"


def test_normalize_text() -> None:
    assert normalize_text("  Ÿes—São  Paulo's ") == "yes sao paulo s"


def test_lines_to_text_reading_order() -> None:
    lines = [line("world", 120, 2), line("hello", 0, 0), line("second row", 0, 50)]
    assert lines_to_text(lines) == "hello world\nsecond row"


# ---------------------------------------------------------------- real OCR on a photo


def test_placard_on_photo_grounds_only_the_named_entity(tmp_path: Path, photo: Image.Image, grounder: Grounder) -> None:
    img, (placard,), (text_box,) = draw_labels(photo, [("GRACE HOPPER", (110, 420))], size=32)
    task = task_for(tmp_path, img, "gh1", ["Grace Hopper", "Harvard University"])
    (outcome,) = list(grounder.ground([task], tau=0.3))
    assert outcome.error is None and outcome.image_id == "gh1"
    assert [d.entity_name for d in outcome.detections] == ["Grace Hopper"]
    d = outcome.detections[0]
    assert d.score > 0.5
    assert iou(d.box, text_box) > 0.5 and center_in(d.box, placard)


def test_two_line_label_is_one_entity(tmp_path: Path, photo: Image.Image, grounder: OcrGrounder) -> None:
    img, _, (t1, t2) = draw_labels(photo, [("GRACE", (150, 380)), ("HOPPER", (150, 425))], size=30, pad=6)
    task = task_for(tmp_path, img, "gh2", ["Grace Hopper"])
    assert [ln.text for ln in grounder.lines_for(task) if ln.box[1] > 350 and ln.box[3] < 480] == ["GRACE", "HOPPER"]
    (outcome,) = list(grounder.ground([task], tau=0.3))
    (d,) = outcome.detections
    union = (min(t1[0], t2[0]), t1[1], max(t1[2], t2[2]), t2[3])
    assert iou(d.box, union) > 0.5 and len(d.polygons) == 2


def test_side_by_side_boxes(tmp_path: Path, photo: Image.Image, grounder: OcrGrounder) -> None:
    img, _, (t1, t2) = draw_labels(photo, [("GRACE", (40, 440)), ("HOPPER", (180, 440))], size=30, pad=6)
    task = task_for(tmp_path, img, "gh3", ["Grace Hopper"])
    (outcome,) = list(grounder.ground([task], tau=0.3))
    (d,) = outcome.detections
    assert iou(d.box, (t1[0], t1[1], t2[2], t2[3])) > 0.5


def test_substring_box_is_cut_from_the_line(tmp_path: Path, photo: Image.Image, grounder: OcrGrounder) -> None:
    text = "Rear Admiral Grace Hopper, 1984"
    img, _, (tb,) = draw_labels(photo, [(text, (12, 500))], size=20)
    font = ImageFont.truetype(str(FONT), 20)
    x0 = tb[0] + font.getlength("Rear Admiral ")
    truth = (x0, tb[1], x0 + font.getlength("Grace Hopper"), tb[3])
    task = task_for(tmp_path, img, "gh4", ["Grace Hopper"])
    (outcome,) = list(grounder.ground([task], tau=0.3))
    (d,) = outcome.detections
    (full,) = [ln for ln in grounder.lines_for(task) if "1984" in ln.text]
    assert d.box[2] - d.box[0] < 0.6 * (full.box[2] - full.box[0])
    assert iou(d.box, truth) > 0.6


def test_sample_corpus_hubble_placard_joined_words(grounder: OcrGrounder) -> None:
    path = SAMPLE_CORPUS / "space/images/hubble_placard.jpg"
    task = GroundingTask("hubble", path, [ent("Hubble Space Telescope"), ent("Eileen Collins"), ent("NASA")])
    (outcome,) = list(grounder.ground([task], tau=0.5))
    names = {d.entity_name: d for d in outcome.detections}
    assert set(names) == {"Hubble Space Telescope", "NASA"}
    hst = names["Hubble Space Telescope"]
    assert hst.score > 0.8
    # The placard sits in the lower part of the 640x640 image, under the photograph.
    assert hst.box[1] > 400 and hst.box[2] - hst.box[0] > 300
    assert names["NASA"].box[2] - names["NASA"].box[0] < 120


# ---------------------------------------------------------------- real document pages


def _render(name: str, index: int) -> tuple[Image.Image, object]:
    pdfium = pytest.importorskip("pypdfium2")
    path = MMLONGBENCH / name
    if not path.exists():
        pytest.skip(f"{path} not available")
    page = pdfium.PdfDocument(path)[index]
    return page.render(scale=2).to_pil(), page


def _text_layer_box(page, phrase: str) -> Box:
    """Pixel box (scale 2) of ``phrase`` from the PDF text layer (points, y up)."""
    textpage = page.get_textpage()
    text = textpage.get_text_range()
    start = text.find(phrase)
    assert start >= 0, phrase
    boxes = [textpage.get_charbox(i) for i in range(start, start + len(phrase)) if not text[i].isspace()]
    height = page.get_size()[1]
    return (
        min(b[0] for b in boxes) * 2,
        (height - max(b[3] for b in boxes)) * 2,
        max(b[2] for b in boxes) * 2,
        (height - min(b[1] for b in boxes)) * 2,
    )


def test_text_layer_page_phrases_where_the_pdf_says(engine: OcrEngine) -> None:
    # Slide 2 of a data-presentation deck: a large title that RapidOCR reads as one joined word
    # ("GestaltPrinciplesofVisualPerception") and a phrase inside a long body line.
    img, page = _render("0e94b4197b10096b1f4c699701570fbf.pdf", 1)
    lines = engine.read(img)
    phrases = ["Gestalt Principles of Visual Perception", "Berlin School of Experimental Psychology"]
    dets = match_entities(lines, [ent(p) for p in phrases], "p1")
    by_name = {d.entity_name: d for d in dets}
    assert set(by_name) == set(phrases)
    for phrase in phrases:
        truth = _text_layer_box(page, phrase)
        assert iou(by_name[phrase].box, truth) > 0.7, (phrase, by_name[phrase].box, truth)
        assert by_name[phrase].score > 0.8


def test_image_only_slide_phrases(engine: OcrEngine) -> None:
    # Title slide of an image-only deck (no text layer): regions measured on the render by hand.
    img, page = _render("measuringsuccessonfacebooktwitterlinkedin-160317142140_95.pdf", 0)
    assert page.get_textpage().get_text_range().strip() == ""
    lines = engine.read(img)
    names = ["New York University", "Measuring Success", "Harvard University"]
    by_name = {d.entity_name: d for d in match_entities(lines, [ent(n) for n in names], "slide")}
    assert set(by_name) == {"New York University", "Measuring Success"}
    nyu = by_name["New York University"]
    assert iou(nyu.box, (615, 494, 1136, 552)) > 0.7  # a substring of "Class 3: New York University"
    assert iou(by_name["Measuring Success"].box, (331, 149, 1150, 235)) > 0.7


# ---------------------------------------------------------------- engine details


def test_downscale_maps_quads_back_to_original_pixels(engine: OcrEngine, photo: Image.Image) -> None:
    img, _, (tb,) = draw_labels(photo, [("GRACE HOPPER", (110, 420))], size=32)
    small = OcrEngine(max_side=400)
    small._ocr = engine._model()  # share the loaded model
    lines = [ln for ln in small.read(img) if "GRACE" in ln.text.upper()]
    assert lines and iou(lines[0].box, tb) > 0.5
    assert all(0 <= x <= img.width and 0 <= y <= img.height for ln in lines for x, y in ln.quad)


@pytest.mark.parametrize("mode", ["CMYK", "LA", "P", "I;16", "1", "RGBA", "F"])
def test_to_rgb_any_mode(photo: Image.Image, mode: str) -> None:
    if mode == "I;16":
        src = Image.fromarray(np.asarray(photo.convert("L"), dtype=np.uint16) * 257)
        assert src.mode == "I;16"
    elif mode == "F":
        src = photo.convert("L").convert("F")
    else:
        src = photo.convert(mode)
    out = to_rgb(src)
    assert out.mode == "RGB" and out.size == photo.size
    if mode in ("I;16", "F"):
        assert np.asarray(out).max() > 200  # stretched, not clipped to black/white


def test_min_score_filters_lines(engine: OcrEngine, photo: Image.Image) -> None:
    img, _, _ = draw_labels(photo, [("GRACE HOPPER", (110, 420))], size=32)
    strict = OcrEngine(min_score=0.999)
    strict._ocr = engine._model()
    assert all(ln.score >= 0.999 for ln in strict.read(img))


# ---------------------------------------------------------------- cache


def test_cache_second_call_skips_engine(tmp_path: Path, engine: OcrEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = OcrCache(tmp_path / "ocr", tag=engine.tag)
    path = SAMPLE_CORPUS / "space/images/hubble_placard.jpg"
    image_id = "ab12cd34"
    first = engine.read_cached(image_id, path, cache)
    assert first and (tmp_path / "ocr/ab/ab12cd34.json").is_file()

    def boom(*args: object, **kwargs: object) -> None:
        raise AssertionError("engine invoked despite a cache hit")

    monkeypatch.setattr(engine, "read_path", boom)
    assert engine.read_cached(image_id, path, cache) == first
    grounder = OcrGrounder(engine, cache)
    task = GroundingTask(image_id, path, [ent("Hubble Space Telescope")])
    (outcome,) = list(grounder.ground([task], tau=0.5))
    assert [d.entity_name for d in outcome.detections] == ["Hubble Space Telescope"]
    assert grounder.texts(image_id) == [ln.text for ln in first]
    assert OcrGrounder(engine, cache).texts(image_id) == [ln.text for ln in first]
    assert grounder.texts("ffffffff") is None


def test_cache_roundtrip_atomic_and_tagged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = OcrCache(tmp_path, tag="t1")
    lines = [line("Grace Hopper", 1.5, 2.25), line("Ünïcode ✓", 0, 40, score=0.5)]
    replaced: list[tuple[str, str]] = []
    real_replace = __import__("os").replace

    def spy(src: str, dst: str) -> None:
        replaced.append((str(src), str(dst)))
        assert json.loads(Path(src).read_text(encoding="utf-8"))["tag"] == "t1"  # complete before the rename
        real_replace(src, dst)

    monkeypatch.setattr("mmkg.atomic.os.replace", spy)
    cache.put("abcdef", lines)
    target = tmp_path / "ab" / "abcdef.json"
    assert replaced == [(replaced[0][0], str(target))] and Path(replaced[0][0]).parent == target.parent
    assert sorted(p.name for p in target.parent.iterdir()) == ["abcdef.json"]  # no temp file left behind
    assert cache.get("abcdef") == lines
    assert cache.get("abcdef", tag="other") is None
    assert OcrCache(tmp_path, tag="t2").get("abcdef") is None
    assert cache.get("missing") is None
    cache.put("empty0", [])
    assert cache.get("empty0") == []  # "no text" is cached too
    target.write_text("{not json", encoding="utf-8")
    assert cache.get("abcdef") is None
    with pytest.raises(ValueError):
        cache.get("../etc/passwd")
    assert engine_tag() != engine_tag(max_side=800)


def test_cache_write_failure_leaves_no_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = OcrCache(tmp_path, tag="t1")

    def fail(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("mmkg.atomic.os.replace", fail)
    with pytest.raises(OSError):
        cache.put("abcdef", [line("x", 0, 0)])
    assert list((tmp_path / "ab").iterdir()) == []


def test_a_cache_that_cannot_be_written_costs_no_text(tmp_path: Path, engine: OcrEngine,
                                                      caplog: pytest.LogCaptureFixture) -> None:  # fmt: skip
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache's folder should be", encoding="utf-8")
    cache = OcrCache(blocked / "ocr", tag=engine.tag)
    path = SAMPLE_CORPUS / "space/images/hubble_placard.jpg"
    with caplog.at_level("WARNING", logger="mmkg.vision.ocr"):
        lines = engine.read_cached("ab12cd34", path, cache)
    assert lines == engine.read_path(path) and lines  # the text read, not an OCR failure
    assert "OCR cache not written for image ab12cd34" in caplog.text


# ---------------------------------------------------------------- bad images


def test_bad_images_never_raise(tmp_path: Path, photo: Image.Image, jpeg_bytes: bytes, grounder: OcrGrounder) -> None:
    names = ["Grace Hopper"]
    truncated = tmp_path / "truncated.jpg"
    truncated.write_bytes(jpeg_bytes[: len(jpeg_bytes) // 2])
    not_image = tmp_path / "notes.jpg"
    not_image.write_text("hello", encoding="utf-8")
    labelled, _, _ = draw_labels(photo, [("GRACE HOPPER", (110, 420))], size=32)
    cmyk = tmp_path / "cmyk.jpg"
    labelled.convert("CMYK").save(cmyk, format="JPEG", quality=90)
    pal = labelled.convert("P", palette=Image.Palette.ADAPTIVE, colors=64)
    pal.info["transparency"] = 0
    palette = tmp_path / "palette.png"
    pal.save(palette, transparency=0)
    tiny = tmp_path / "tiny.png"
    Image.new("RGB", (1, 1), "white").save(tiny)
    tasks = [
        GroundingTask("truncated", truncated, [ent(n) for n in names]),
        GroundingTask("missing", tmp_path / "nope.png", [ent(n) for n in names]),
        GroundingTask("notimage", not_image, [ent(n) for n in names]),
        GroundingTask("cmyk", cmyk, [ent(n) for n in names]),
        GroundingTask("palette", palette, [ent(n) for n in names]),
        GroundingTask("tiny", tiny, [ent(n) for n in names]),
        GroundingTask("noentities", cmyk, []),
    ]
    outcomes = list(grounder.ground(tasks, tau=0.3))
    assert [o.image_id for o in outcomes] == [t.image_id for t in tasks]
    by_id = {o.image_id: o for o in outcomes}
    for bad in ("truncated", "missing", "notimage"):
        assert by_id[bad].error and bad in by_id[bad].error and by_id[bad].detections == []
    assert "truncated" in by_id["truncated"].error.lower()
    for ok in ("cmyk", "palette", "tiny", "noentities"):
        assert by_id[ok].error is None
    assert by_id["tiny"].detections == [] and by_id["noentities"].detections == []
    assert [d.entity_name for d in by_id["cmyk"].detections] == ["Grace Hopper"]
    assert [d.entity_name for d in by_id["palette"].detections] == ["Grace Hopper"]
    with pytest.raises(OcrError, match="truncated"):
        OcrGrounder(grounder.engine).lines_for(tasks[0])
