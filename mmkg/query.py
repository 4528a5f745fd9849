"""The query boundary: what a query may be, the limits it must keep, and the error it gets when it does not.

The ground floor both sides of a query share: the index (``mmkg.index``) selects rows with ``Filters``
and refuses bad ones with ``QueryError``; retrieval (``mmkg.retrieval``) takes a ``Query`` and checks
its ``k`` and picture before any model runs; the apps (CLI, REST API) cap what they accept with the
same limits. Nothing here imports the index or retrieval.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

#: what filters select on: columns of a version's ``documents`` table
FILTER_KEYS = ("doc_id", "partition", "source_path")

Filters = dict[str, str | Sequence[str]] | None

#: the longest query text (characters); longer text is refused with the reason, never silently cut
MAX_QUERY_CHARS = 10_000
#: the most chunks one query may ask for
MAX_K = 1_000


class QueryError(ValueError):
    """A query the index cannot take (empty, too long, broken text, bad k or filter, unreadable picture)."""


def clean_text(value: str | None, what: str = "query text") -> str | None:
    """The query text as a strategy may take it: valid Unicode (NFC), within the length cap; blank is no text.

    A lone surrogate (what a mis-decoded file gives) is refused with its position instead of failing in
    the tokenizer.
    """
    import unicodedata

    if value is None:
        return None
    if not isinstance(value, str):
        raise QueryError(f"{what} must be a string; got {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise QueryError(
            f"{what} is not valid Unicode (a lone surrogate at character {exc.start}); send UTF-8 text"
        ) from None
    if not value.strip():
        return None
    if len(value) > MAX_QUERY_CHARS:
        raise QueryError(f"{what} is {len(value):,} characters, over the limit of {MAX_QUERY_CHARS:,}; shorten it")
    return unicodedata.normalize("NFC", value)


class PictureTooLarge(QueryError):
    """A query picture over the pixel cap (the REST API answers 413 for it)."""


def check_picture(path: Path, max_pixels: int | None = None, what: str | None = None) -> None:
    """An image query must be a readable picture under the pixel cap; the header is read before any decoding.

    ``what`` names the picture in the message (default: ``image query <path>``).
    """
    import warnings

    from PIL import Image, UnidentifiedImageError

    from mmkg.ingest.base import Limits

    limit = max_pixels or Limits().max_image_pixels
    name = what or f"image query {path}"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path) as img:
                if img.width * img.height > limit:
                    raise PictureTooLarge(f"{name} is {img.width}x{img.height} = {img.width * img.height:,} px, "
                                          f"over the limit of {limit:,} px")  # fmt: skip
                img.load()
    except QueryError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise QueryError(f"{name} is too large to decode safely ({exc})") from exc
    except UnidentifiedImageError as exc:
        raise QueryError(f"{name} is not a readable picture ({type(exc).__name__})") from exc
    except (OSError, SyntaxError, ValueError) as exc:
        raise QueryError(f"{name} is corrupt or truncated ({exc})") from exc


def check_k(k: object) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise QueryError(f"k must be an integer from 1 to {MAX_K:,}; got {k!r}")
    return k


@dataclass(frozen=True)
class Query:
    """What a user asks: text and/or an image now; audio and video are reserved for time-based media.

    A strategy says which modalities it answers (``Strategy.modalities``); asking it for another is an
    error that names the strategies that can.
    """

    text: str | None = None
    image: Path | None = None
    audio: Path | None = None
    video: Path | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "text", clean_text(self.text))
        for name in ("image", "audio", "video"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, Path):
                object.__setattr__(self, name, Path(value))
            if value is not None and not Path(value).is_file():
                raise QueryError(f"{name} query {value} is not a file")
        if not self.modalities:
            raise QueryError("a query needs text (not empty or only spaces), an image, audio or video")

    @property
    def modalities(self) -> frozenset[str]:
        return frozenset(m for m in ("text", "image", "audio", "video") if getattr(self, m) is not None)
