"""An encoder backend: feature-hashed bags of words, no model to download (``docs/extending.md``).

Each text becomes counts of its lower-cased words hashed into ``DIM`` buckets (a signed hash, so collisions
cancel out on average), ℓ2-normalized. Pictures are embedded through their surrogate text (OCR text,
caption, alt text, nearby text, grounded names), as the built-in ``text`` backend does. Useful where no
sentence-transformers model may be installed, and as the smallest complete ``Encoder``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from mmkg.encoder_base import EncoderInfo, ImageInput, SurrogateTextImages, l2_normalize
from mmkg.encoders import ENCODERS

DIM = 512
_WORD = re.compile(r"\w+")


class HashingEncoder(SurrogateTextImages):
    def __init__(self, dim: int = DIM, max_chars: int = 2000):
        self.max_chars = max_chars
        self.info = EncoderInfo(backend="hashing", model=f"hashing-{dim}", dim=dim, runtime="numpy")

    def encode_text(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        out = np.zeros((len(texts), self.info.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
                out[row, h % self.info.dim] += 1.0 if (h >> 63) & 1 else -1.0
        return l2_normalize(out)

    def encode_images(self, images: Sequence[ImageInput], batch_size: int = 32) -> np.ndarray:
        return self.encode_text(self.describe(images), batch_size=batch_size)


@ENCODERS.register("hashing", help="feature-hashed bag of words (numpy), no model")
def hashing_encoder(model: str, device: str, runtime: str) -> HashingEncoder:
    """``model`` may give the dimension ("1024"); device and runtime do not matter (numpy on the CPU)."""
    return HashingEncoder(int(model) if model.strip().isdigit() else DIM)
