"""Decoding, checking and content-addressed storage of images.

Images are fully decoded once at ingest (so a truncated file is caught here, not in the
detector), then stored under their content hash: the same picture used by ten documents is one
file, and a re-run writes nothing new.
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, UnidentifiedImageError

from mmkg.atomic import write_bytes
from mmkg.ids import bytes_id
from mmkg.ingest.base import Limits, Rejected

# Formats kept byte for byte; anything else is re-encoded as PNG.
_KEEP_AS_IS = {"JPEG": "jpg", "PNG": "png", "WEBP": "webp", "GIF": "gif"}


@dataclass(frozen=True)
class StoredImage:
    image_id: str
    blob_path: str  # relative to the store's data root
    format: str
    mode: str
    width: int
    height: int
    n_bytes: int
    phash: str  # perceptual hash (``perceptual_hash``); "" for a flat image


PHASH_BITS = 64
#: Two pictures are the same when their perceptual hashes differ in at most this many of the 64 bits
#: (re-encoding, rescaling or a PDF's recompression of one picture moves a handful of bits; two
#: different photographs differ in about half of them).
SAME_PICTURE_MAX_BITS = 8


def perceptual_hash(img: Image.Image) -> str:
    """64-bit difference hash (dHash) as 16 hex digits: is each pixel of a 9x8 grey thumbnail brighter than its
    right neighbour. Robust to re-encoding, resizing and mild colour changes, so the same picture stored by a
    Markdown file as a JPEG and by a PDF as a re-encoded bitmap gets (nearly) the same hash.

    Hand-written (eight lines) rather than the ``imagehash`` package, which would bring PyWavelets for one
    function. A flat image (a blank page, a solid logo background) has no gradient to hash and gets "" so it
    never matches every other flat image.
    """
    grey = np.asarray(img.convert("L").resize((9, 8), Image.Resampling.LANCZOS), dtype=np.float32)
    if float(grey.std()) < 2.0:
        return ""
    bits = (grey[:, 1:] > grey[:, :-1]).ravel()
    return f"{int(''.join('1' if b else '0' for b in bits), 2):016x}"


def hash_distance(a: str, b: str) -> int:
    """Bits in which two perceptual hashes differ (64 when either is empty: nothing to compare)."""
    if not a or not b:
        return PHASH_BITS
    return (int(a, 16) ^ int(b, 16)).bit_count()


class ImageStore:
    """Content-addressed image blobs under ``<data_root>/blobs/<kind>/ab/abcd….ext``."""

    def __init__(self, data_root: Path | str, kind: str = "images"):
        self.data_root = Path(data_root)
        self.kind = kind

    def path_for(self, blob_path: str) -> Path:
        return self.data_root / blob_path

    def put(self, data: bytes, ext: str) -> tuple[str, str]:
        image_id = bytes_id(data)
        rel = f"blobs/{self.kind}/{image_id[:2]}/{image_id}.{ext}"
        target = self.data_root / rel
        if not target.exists():
            # concurrent partitions storing the same picture never see a torn file
            write_bytes(target, data)
        return image_id, rel


def _check_size(width: int, height: int, limits: Limits) -> None:
    if width * height > limits.max_image_pixels:
        raise Rejected(
            f"image is {width}x{height} = {width * height:,} px, over the limit of "
            f"{limits.max_image_pixels:,} px (raise MMKG_MAX_IMAGE_PIXELS to accept it)"
        )
    if min(width, height) < limits.min_image_side:
        raise Rejected(f"image is {width}x{height} px, smaller than the minimum side of {limits.min_image_side} px")


def decode_and_store(
    data: bytes | None, store: ImageStore, limits: Limits, pil: Image.Image | None = None
) -> StoredImage:
    """Validate an encoded image (or a PIL image from a renderer) and store it once."""
    if pil is None:
        if not data:
            raise Rejected("image file is empty (0 bytes)")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", Image.DecompressionBombWarning)
                img = Image.open(io.BytesIO(data))
                _check_size(img.width, img.height, limits)  # header only: no decode of huge images
                fmt = img.format or "UNKNOWN"
                img.load()  # full decode: catches truncated and corrupt streams
        except Rejected:
            raise
        except UnidentifiedImageError as exc:  # its message names the in-memory buffer: "<_io.BytesIO object at 0x…>"
            head = data[:8].hex(" ")
            raise Rejected(f"not a readable image: no image format Pillow reads starts with these bytes ({head})") \
                from exc
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
            raise Rejected(f"not a readable image ({exc.__class__.__name__}: {exc})") from exc
        except (OSError, SyntaxError, ValueError) as exc:
            raise Rejected(f"corrupt or truncated image data ({exc})") from exc
        if fmt in _KEEP_AS_IS:
            blob, ext = data, _KEEP_AS_IS[fmt]
        else:
            blob, ext = _to_png(img), "png"
    else:
        img = pil
        _check_size(img.width, img.height, limits)
        fmt = "PNG"
        blob, ext = _to_png(img), "png"
    image_id, rel = store.put(blob, ext)
    return StoredImage(image_id, rel, fmt, img.mode, img.width, img.height, len(blob), perceptual_hash(img))


def _to_png(img: Image.Image) -> bytes:
    if img.mode not in {"1", "L", "LA", "I", "I;16", "P", "RGB", "RGBA"}:
        img = img.convert("RGBA" if "A" in img.mode else "RGB")
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=False)
    return buf.getvalue()
