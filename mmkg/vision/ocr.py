"""OCR grounding backend: find the entities of the surrounding text written inside an image.

This is the offline default of entity-driven visual grounding. Documents (charts, slides, maps,
labelled product photos) name their entities in print, so reading the image and matching its text
against the entity names grounds them precisely and cheaply. RapidOCR (PP-OCRv4 on onnxruntime)
ships its models inside the package, so it runs with no network.

Three parts:

- ``OcrEngine`` reads an image into ``OcrLine`` quads in original-image pixels.
- ``OcrCache`` stores those lines on disk per image content id, so OCR runs once per image ever.
- ``match_entities`` matches entity names against the lines, robust to OCR quirks: RapidOCR's
  recogniser often drops the spaces of Latin text ("HUBBLESPACETELESCOPE"), names wrap over
  neighbouring boxes, and single characters get misread.

``OcrGrounder`` ties them together behind the ``Grounder`` protocol.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import unicodedata
from collections import Counter, OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from mmkg.atomic import write_bytes
from mmkg.entities import canonical_key
from mmkg.vision.base import Box, Detection, EntityPrompt, GroundingOutcome, GroundingTask, OcrLine

log = logging.getLogger(__name__)

BACKEND = "ocr"
DEFAULT_MAX_SIDE = 1600
DEFAULT_MIN_SCORE = 0.5
DEFAULT_MIN_RATIO = 0.85
MIN_ENTITY_CHARS = 3  # shorter names (after normalization) match too much by accident
FUZZY_MIN_CHARS = 6  # shorter names must match exactly: one edit turns "fever" into "ever"
MAX_SPAN_LINES = 3  # a name may wrap over at most this many neighbouring OCR boxes
_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,199}$")


class OcrError(RuntimeError):
    """An image could not be read (missing, truncated, undecodable)."""


def _rapidocr_version() -> str:
    try:
        return metadata.version("rapidocr-onnxruntime")
    except metadata.PackageNotFoundError:  # pragma: no cover - the package is a hard dependency
        return "unknown"


def engine_tag(max_side: int = DEFAULT_MAX_SIDE, min_score: float = DEFAULT_MIN_SCORE) -> str:
    """Identifies what produced cached lines; a cache entry under another tag is stale."""
    return f"rapidocr-onnxruntime/{_rapidocr_version()}/max_side={max_side}/min_score={min_score:g}"


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------


def to_rgb(image: Image.Image) -> Image.Image:
    """RGB copy of any PIL mode; transparency is flattened onto white (the usual page colour)."""
    mode = image.mode
    if mode == "RGB":
        return image
    if mode in ("I;16", "I;16L", "I;16B", "I;16N", "I", "F"):
        # PIL's own convert clips 16/32-bit values at 255; stretch the range instead.
        arr = np.asarray(image, dtype=np.float64)
        lo, hi = (0.0, 65535.0) if mode.startswith("I;16") else (float(arr.min()), float(arr.max()))
        arr = (arr - lo) * (255.0 / (hi - lo)) if hi > lo else np.zeros_like(arr)
        return Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8), "L").convert("RGB")
    if mode in ("RGBA", "LA", "PA", "RGBa", "La") or (mode in ("P", "L", "RGB") and "transparency" in image.info):
        rgba = image.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, rgba).convert("RGB")
    if mode == "1":
        return image.convert("L").convert("RGB")
    return image.convert("RGB")  # L, P, CMYK, YCbCr, LAB, HSV


class OcrEngine:
    """RapidOCR behind a small interface: PIL image in, ``OcrLine``s in original pixels out.

    The model loads lazily (about half a second) and once; calls are serialised by a lock because
    RapidOCR keeps per-call state on the instance. Images are downscaled so their longest side is
    at most ``max_side`` (OCR cost grows with pixels, and text legible at 1600 px is what matters
    here); quads are mapped back to the original pixel grid. EXIF orientation is not applied, so
    quads refer to the stored pixels as PIL decodes them.
    """

    def __init__(self, max_side: int = DEFAULT_MAX_SIDE, min_score: float = DEFAULT_MIN_SCORE, **rapidocr_kwargs: Any):
        if max_side < 32:
            raise ValueError(f"max_side must be >= 32, got {max_side}")
        self.max_side = int(max_side)
        self.min_score = float(min_score)
        self._kwargs = rapidocr_kwargs
        self._ocr: Any = None
        self._lock = threading.Lock()
        self.calls = 0  # images actually run through the model (for tests and benchmarks)

    @property
    def tag(self) -> str:
        tuned = sorted((k, v) for k, v in self._kwargs.items() if not k.endswith("_num_threads"))
        return engine_tag(self.max_side, self.min_score) + (f"/{tuned}" if tuned else "")

    def _model(self) -> Any:
        if self._ocr is None:
            from rapidocr_onnxruntime import RapidOCR

            kwargs = {"text_score": min(self.min_score, DEFAULT_MIN_SCORE), **self._kwargs}
            self._ocr = RapidOCR(**kwargs)
        return self._ocr

    def read(self, image: Image.Image) -> list[OcrLine]:
        """OCR lines of ``image`` with quads in its pixel coordinates, low-confidence lines dropped."""
        return self._read(image, image.size)

    def read_path(self, path: Path | str) -> list[OcrLine]:
        """Like ``read`` for a file; large JPEGs are decoded at reduced scale (much faster)."""
        with Image.open(path) as im:
            original = im.size
            if im.format == "JPEG" and max(original) > 2 * self.max_side:
                s = self.max_side / max(original)
                im.draft(im.mode, (max(1, round(original[0] * s)), max(1, round(original[1] * s))))
            im.load()
            return self._read(im, original)

    def read_cached(self, image_id: str, path: Path | str, cache: OcrCache | None) -> list[OcrLine]:
        """Lines from the cache when present under this engine's tag, else read and store them."""
        if cache is not None:
            hit = cache.get(image_id, tag=self.tag)
            if hit is not None:
                return hit
        lines = self.read_path(path)
        if cache is not None:
            try:
                cache.put(image_id, lines, tag=self.tag)
            except OSError as exc:  # a cache that cannot be written (full disk, removed by a cold build) costs the
                # next run time; the lines read are this image's text all the same
                log.warning("OCR cache not written for image %s under %s: %s", image_id, cache.root, exc)
        return lines

    def _read(self, image: Image.Image, original_size: tuple[int, int]) -> list[OcrLine]:
        ow, oh = original_size
        if ow < 1 or oh < 1:
            return []
        rgb = to_rgb(image)
        w, h = rgb.size
        if max(w, h) > self.max_side:
            s = self.max_side / max(w, h)
            rgb = rgb.resize((max(1, round(w * s)), max(1, round(h * s))), Image.Resampling.BILINEAR, reducing_gap=3.0)
        pw, ph = rgb.size
        sx, sy = ow / pw, oh / ph
        bgr = np.ascontiguousarray(np.asarray(rgb)[:, :, ::-1])  # RapidOCR takes ndarrays as BGR
        with self._lock:
            model = self._model()
            self.calls += 1
            result, _ = model(bgr)
        lines: list[OcrLine] = []
        for quad, text, score in result or []:
            text = str(text).strip()
            if not text or float(score) < self.min_score:
                continue
            pts = tuple(
                (round(min(max(float(x) * sx, 0.0), ow), 2), round(min(max(float(y) * sy, 0.0), oh), 2))
                for x, y in quad
            )
            lines.append(OcrLine(text=text, score=round(float(score), 4), quad=pts))
        return lines


# --------------------------------------------------------------------------------------------
# Cache
# --------------------------------------------------------------------------------------------


class OcrCache:
    """OCR lines on disk, one JSON file per image content id: ``root/ab/<image_id>.json``.

    Image ids are content hashes, so an entry never goes stale for its image; it only goes stale
    when the engine or its settings change, which the tag in each file records. Writes go to a
    temporary file in the same folder and are renamed into place, so readers never see half a file
    and concurrent writers of the same image just race to write identical content.
    """

    def __init__(self, root: Path | str, tag: str | None = None):
        self.root = Path(root)
        self.tag = tag or engine_tag()

    def path_for(self, image_id: str) -> Path:
        if not _SAFE_ID.match(image_id) or ".." in image_id:
            raise ValueError(f"unsafe image id for the OCR cache: {image_id!r}")
        return self.root / image_id[:2] / f"{image_id}.json"

    def get(self, image_id: str, tag: str | None = None) -> list[OcrLine] | None:
        """Cached lines, or None when absent, unreadable or written under another tag."""
        path = self.path_for(image_id)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("tag") != (tag or self.tag):
                return None
            return [
                OcrLine(str(d["text"]), float(d["score"]), tuple((float(x), float(y)) for x, y in d["quad"]))
                for d in data["lines"]
            ]
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("ignoring unreadable OCR cache entry %s: %s", path, exc)
            return None

    def put(self, image_id: str, lines: Sequence[OcrLine], tag: str | None = None) -> None:
        """Store lines atomically (temp file + os.replace)."""
        payload = {
            "tag": tag or self.tag,
            "image_id": image_id,
            "lines": [{"text": ln.text, "score": ln.score, "quad": [list(p) for p in ln.quad]} for ln in lines],
        }
        data = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        write_bytes(self.path_for(image_id), data)


# --------------------------------------------------------------------------------------------
# Matching
# --------------------------------------------------------------------------------------------


def _norm_char(ch: str) -> str:
    """The alphanumerics ``ch`` contributes to the compact form (NFKC, no accents, casefolded)."""
    s = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", ch))
    return "".join(c for c in s if not unicodedata.combining(c)).casefold()


def normalize_text(text: str) -> str:
    """Casefolded, accent- and punctuation-free, single-spaced text (for display and comparisons)."""
    out = "".join(c if c.isalnum() else " " for c in "".join(_norm_char(ch) for ch in text))
    return " ".join(out.split())


def _entity_compact(entity: EntityPrompt) -> str:
    """The entity name as compared with OCR text: canonical key with spaces and punctuation removed."""
    key = canonical_key(entity.name) or canonical_key(entity.key)
    return "".join(c for c in normalize_text(key) if c.isalnum())


# Rough relative glyph widths, so a substring's box is cut nearer to where its letters really are.
_NARROW = set("iljI.,:;'!|`")
_SEMI = set('frt()[]{}- "/\\1')
_WIDE = set("mwMW@%")


def _glyph_width(ch: str) -> float:
    if ch in _NARROW:
        return 0.45
    if ch in _SEMI:
        return 0.6
    if ch in _WIDE:
        return 1.45
    if ch.isupper():
        return 1.2
    if unicodedata.east_asian_width(ch) in ("W", "F"):
        return 1.9
    return 1.0


@dataclass
class _Line:
    """One OCR line prepared for matching."""

    line: OcrLine
    compact: str  # alphanumerics only, normalized
    src: list[int]  # raw character index of each compact character
    clean: list[bool]  # a word boundary lies before compact character k
    height: float
    box: Box

    @classmethod
    def of(cls, line: OcrLine) -> _Line:
        raw = line.text
        chars: list[str] = []
        src: list[int] = []
        clean: list[bool] = []
        prev_raw = -2
        for i, ch in enumerate(raw):
            for c in _norm_char(ch):
                if not c.isalnum():
                    continue
                if not chars:
                    boundary = True
                elif i > prev_raw + 1:
                    boundary = True  # a space or punctuation lies between
                elif i == prev_raw:
                    boundary = False  # one raw character expanded (ß -> ss)
                else:
                    boundary = _case_boundary(raw, i)
                chars.append(c)
                src.append(i)
                clean.append(boundary)
                prev_raw = i
        p = line.quad
        if len(p) == 4:
            height = (_dist(p[0], p[3]) + _dist(p[1], p[2])) / 2
        else:
            b = line.box
            height = b[3] - b[1]
        return cls(line, "".join(chars), src, clean, max(height, 1.0), line.box)


def _case_boundary(raw: str, i: int) -> bool:
    """Whether joined words likely meet before raw[i] (camelCase, ACRONYMWord, letter/digit)."""
    a, b = raw[i - 1], raw[i]
    if a.isdigit() != b.isdigit():
        return True
    if a.islower() and b.isupper():
        return True
    nxt = raw[i + 1] if i + 1 < len(raw) else ""
    # "NASAand" -> NASA|and ; "XMLParser" -> XML|Parser (both ends of an upper run count)
    if a.isupper() and b.islower() and i >= 2 and raw[i - 2].isupper():
        return True
    return bool(a.isupper() and b.isupper() and nxt.islower())


def _dist(p: tuple[float, float], q: tuple[float, float]) -> float:
    return float(np.hypot(p[0] - q[0], p[1] - q[1]))


def _follows(a: _Line, b: _Line) -> bool:
    """Whether ``b`` can continue a name that starts in ``a``: to its right on the same row, or just below."""
    ha, hb = a.height, b.height
    if not 0.5 <= hb / ha <= 2.0:
        return False  # different font sizes: a title does not continue into body text
    hmax = max(ha, hb)
    ax0, ay0, ax1, ay1 = a.box
    bx0, by0, bx1, by1 = b.box
    v_overlap = min(ay1, by1) - max(ay0, by0)
    acx, bcx = (ax0 + ax1) / 2, (bx0 + bx1) / 2
    if v_overlap >= 0.5 * min(ha, hb):  # same row: b to the right, small gap
        return bcx > acx and bx0 - ax1 <= 1.5 * hmax
    acy, bcy = (ay0 + ay1) / 2, (by0 + by1) / 2
    if bcy <= acy + 0.5 * ha:
        return False
    v_gap = by0 - ay1
    h_gap = max(bx0 - ax1, ax0 - bx1)  # negative when the boxes overlap horizontally
    return v_gap <= 1.5 * hmax and h_gap <= hmax


@dataclass
class _Span:
    """Up to ``MAX_SPAN_LINES`` neighbouring lines read as one text."""

    lines: tuple[int, ...]  # indices into the prepared lines
    text: str  # concatenated compact text
    owner: list[int]  # position in ``lines`` of each character
    clean: list[bool]  # word boundary before each character (line starts included)
    token_len: list[int]  # length of the boundary-delimited token holding each character
    trigrams: frozenset[str]
    counts: Counter[str]


def _make_span(prepared: list[_Line], idx: tuple[int, ...]) -> _Span:
    text = "".join(prepared[i].compact for i in idx)
    owner: list[int] = []
    clean: list[bool] = []
    for pos, i in enumerate(idx):
        n = len(prepared[i].compact)
        owner.extend([pos] * n)
        clean.extend(prepared[i].clean)  # the first character of every line is a boundary
    token_len = [0] * len(text)
    start = 0
    for k in range(1, len(text) + 1):
        if k == len(text) or clean[k]:
            for j in range(start, k):
                token_len[j] = k - start
            start = k
    trigrams = frozenset(text[k : k + 3] for k in range(len(text) - 2))
    return _Span(idx, text, owner, clean, token_len, trigrams, Counter(text))


def _spans(prepared: list[_Line]) -> list[_Span]:
    n = len(prepared)
    boxes = np.array([p.box for p in prepared], dtype=np.float64).reshape(n, 4)
    heights = np.array([p.height for p in prepared])
    succ: list[list[int]] = []
    for i in range(n):
        # Cheap vectorised prefilter (not above, not far below) before the exact neighbour test.
        reach = boxes[i, 3] + 2.0 * np.maximum(heights, heights[i])
        near = np.flatnonzero((boxes[:, 1] <= reach) & (boxes[:, 3] >= boxes[i, 1]))
        succ.append([int(j) for j in near if j != i and prepared[j].compact and _follows(prepared[i], prepared[j])])
    out: list[_Span] = []
    paths: list[tuple[int, ...]] = [(i,) for i in range(n) if prepared[i].compact]
    while paths:
        nxt: list[tuple[int, ...]] = []
        for path in paths:
            out.append(_make_span(prepared, path))
            if len(path) < MAX_SPAN_LINES:
                nxt.extend((*path, j) for j in succ[path[-1]] if j not in path)
        paths = nxt
    return out


def _clean_end(span: _Span, k: int) -> bool:
    return k >= len(span.text) or span.clean[k]


def _boundaries_ok(span: _Span, s: int, e: int, m: int) -> bool:
    """Accept a match that starts or ends inside an OCR token only where words were likely joined.

    A clean boundary is a space, punctuation, a line edge or a case/digit change. Inside a token
    ("USSPACETRAVEL") the entity must be at least 4 characters and the token at least 6 characters
    longer than it, i.e. hold more words; this keeps "Ada" out of "Canada" and "Paris" out of
    "comparison" while still finding "NASA" in "MANNEDNASAFLIGHTS".
    """
    for k, inner in ((s, s), (e, e - 1)):
        if _clean_end(span, k):
            continue
        if m < 4 or span.token_len[inner] < m + 6:
            return False
    return True


class _Target:
    """One entity name prepared for matching: compact text, trigram index and a reusable matcher."""

    def __init__(self, compact: str, min_ratio: float):
        self.text = compact
        self.m = m = len(compact)
        self.min_ratio = min_ratio
        self.counts = Counter(compact)
        self.grams: dict[str, list[int]] = {}
        for k in range(m - 2):
            self.grams.setdefault(compact[k : k + 3], []).append(k)
        # A window within ratio r of the name differs by about (1 - r) * m edits; each edit breaks at
        # most 3 trigrams, so a true match shares at least this many trigram hits near its start.
        edits = int(np.ceil((1.0 - min_ratio) * m)) + 1
        self.need_votes = max(1, (m - 2) - 3 * edits)
        self.gramset = frozenset(self.grams)
        self.need_grams = max(1, len(self.gramset) - 3 * edits)
        self.fuzzy = min_ratio < 1.0 and m >= FUZZY_MIN_CHARS
        self._matcher = SequenceMatcher(None, autojunk=False)
        self._matcher.set_seq2(compact)  # SequenceMatcher indexes seq2 once; windows vary as seq1
        self._memo: dict[str, float] = {}

    def ratio(self, window: str) -> float:
        r = self._memo.get(window)
        if r is None:
            self._matcher.set_seq1(window)
            r = self._matcher.ratio() if self._matcher.quick_ratio() >= self.min_ratio else 0.0
            self._memo[window] = r
        return r

    def align(self, region: str) -> tuple[int, int] | None:
        """Span of ``region`` aligned with the name (first to last matching character)."""
        self._matcher.set_seq1(region)
        blocks = [b for b in self._matcher.get_matching_blocks() if b.size]
        if not blocks:
            return None
        return blocks[0].a - blocks[0].b, blocks[-1].a + blocks[-1].size + (self.m - blocks[-1].b - blocks[-1].size)


def _find(span: _Span, target: _Target) -> list[tuple[int, int, float]]:
    """Non-overlapping windows ``[s, e)`` of the span text matching ``target``, with their ratio."""
    text, m, n = span.text, target.m, len(span.text)
    found: list[tuple[int, int, float]] = []
    start = text.find(target.text)
    while start >= 0:
        found.append((start, start + m, 1.0))
        start = text.find(target.text, start + m)
    exact = _accept(span, found, m, exact=True)
    if not target.fuzzy or (found and len(found) == len(exact) and n < 2 * m):
        return exact
    # Cheap gates first: shared trigrams, an upper bound of the ratio from shared characters.
    if len(span.trigrams & target.gramset) < target.need_grams:
        return exact
    shared = sum(min(c, span.counts[ch]) for ch, c in target.counts.items())
    if 2 * shared / (m + shared) < target.min_ratio:
        return exact
    votes: Counter[int] = Counter()
    for k in range(n - 2):
        for pos in target.grams.get(text[k : k + 3], ()):
            votes[k - pos] += 1
    lo_start, hi_start = 0, n
    if len(span.lines) > 1:  # the window must reach from the first line into the last one
        first_len = span.owner.index(1)
        last_start = span.owner.index(len(span.lines) - 1)
        lo_start, hi_start = last_start - m - 2, first_len
    cands: list[tuple[float, float, int, int]] = []
    seen: set[tuple[int, int]] = set()
    for s0 in sorted(votes):
        if not lo_start <= s0 < hi_start or sum(votes.get(s0 + d, 0) for d in range(-2, 3)) < target.need_votes:
            continue
        lo, hi = max(0, s0 - 2), min(n, s0 + m + 2)
        aligned = target.align(text[lo:hi])
        if aligned is None:
            continue
        tight_s, tight_e = lo + max(0, aligned[0]), lo + min(hi - lo, aligned[1])
        for s, e in ((tight_s, tight_e), (max(0, lo + aligned[0]), min(n, lo + aligned[1]))):
            if (s, e) in seen or e - s < max(3, m - 2):
                continue
            seen.add((s, e))
            r = target.ratio(text[s:e])
            if r >= target.min_ratio:
                # Equal ratios: prefer windows that start and end on word boundaries.
                cands.append((r + 1e-3 * (_clean_end(span, s) + _clean_end(span, e)), r, s, e))
    fuzzy: list[tuple[int, int, float]] = []
    for _, r, s, e in sorted(cands, reverse=True):
        if all(e <= fs or s >= fe for fs, fe, _ in found):
            found.append((s, e, r))
            fuzzy.append((s, e, r))
    return exact + _accept(span, fuzzy, m, exact=False)


def _accept(span: _Span, found: list[tuple[int, int, float]], m: int, exact: bool) -> list[tuple[int, int, float]]:
    """Windows with plausible word boundaries that use every line of the span.

    Fuzzy windows need clean boundaries at both ends: an approximate match inside a joined token
    is too often a near-miss of some other word.
    """
    out = []
    for s, e, r in found:
        if exact and not _boundaries_ok(span, s, e, m):
            continue
        if not exact and not (_clean_end(span, s) and _clean_end(span, e)):
            continue
        if len(span.lines) > 1 and (span.owner[s] != 0 or span.owner[e - 1] != len(span.lines) - 1):
            continue  # a match inside fewer lines is found by the shorter span itself
        out.append((s, e, float(np.floor(r * 1e4) / 1e4)))
    return out


def _cut_quad(line: OcrLine, r0: int, r1: int) -> tuple[tuple[float, float], ...]:
    """The part of the line's quad covering raw characters ``[r0, r1)``, by glyph-width interpolation."""
    text, quad = line.text, line.quad
    if len(quad) != 4 or (r0 == 0 and r1 >= len(text)):
        return quad
    p0, p1, p2, p3 = quad
    if _dist(p0, p3) > 1.5 * _dist(p0, p1):
        return quad  # vertical text: reading direction unknown, keep the whole box
    widths = [_glyph_width(c) for c in text]
    total = sum(widths) or 1.0
    f0 = sum(widths[:r0]) / total
    f1 = sum(widths[:r1]) / total

    def lerp(a: tuple[float, float], b: tuple[float, float], f: float) -> tuple[float, float]:
        return (round(a[0] + (b[0] - a[0]) * f, 2), round(a[1] + (b[1] - a[1]) * f, 2))

    return (lerp(p0, p1, f0), lerp(p0, p1, f1), lerp(p3, p2, f1), lerp(p3, p2, f0))


@dataclass
class _Hit:
    entity: EntityPrompt
    ratio: float
    parts: list[tuple[int, int, int]]  # (line index, raw start, raw end)

    def chars(self) -> set[tuple[int, int]]:
        return {(i, c) for i, a, b in self.parts for c in range(a, b)}


def _hit_for(span: _Span, prepared: list[_Line], s: int, e: int) -> list[tuple[int, int, int]]:
    parts: list[tuple[int, int, int]] = []
    offset = 0
    for i in span.lines:
        n = len(prepared[i].compact)
        lo, hi = max(s, offset), min(e, offset + n)
        if lo < hi:
            src = prepared[i].src
            raw0, raw1 = src[lo - offset], src[hi - offset - 1] + 1
            full = lo == offset and hi == offset + n
            parts.append((i, 0 if full else raw0, len(prepared[i].line.text) if full else raw1))
        offset += n
    return parts


def match_entities(
    lines: list[OcrLine], entities: list[EntityPrompt], image_id: str, min_ratio: float = DEFAULT_MIN_RATIO
) -> list[Detection]:
    """Detections of ``entities`` whose names appear in the OCR ``lines``.

    Names and OCR text are compared casefolded, without accents, punctuation or spaces (RapidOCR
    often joins words), over single lines and over chains of up to three neighbouring lines (names
    wrap). Matches are exact substrings or fuzzy windows with ``SequenceMatcher`` ratio >=
    ``min_ratio``. σ = ratio × mean OCR confidence of the lines used. The box covers only the
    matched characters (interpolated within a line). Several occurrences give several detections;
    names under ``MIN_ENTITY_CHARS`` characters are skipped.
    """
    prepared = [_Line.of(ln) for ln in lines]
    if not any(p.compact for p in prepared):
        return []
    targets: OrderedDict[str, list[tuple[EntityPrompt, _Target]]] = OrderedDict()
    for ent in entities:
        compact = _entity_compact(ent)
        if len(compact) < MIN_ENTITY_CHARS:
            continue
        variants = targets.setdefault(ent.key or compact, [])
        if all(t.text != compact for _, t in variants):
            variants.append((ent, _Target(compact, min_ratio)))
    if not targets:
        return []
    spans = _spans(prepared)
    detections: list[Detection] = []
    for key, variants in targets.items():
        hits: list[_Hit] = []
        for ent, target in variants:
            for span in spans:
                if len(span.text) < max(3, target.m // 2):
                    continue
                for s, e, r in _find(span, target):
                    hits.append(_Hit(ent, r, _hit_for(span, prepared, s, e)))
        kept: list[tuple[float, _Hit]] = []
        taken: set[tuple[int, int]] = set()
        scored = [(h.ratio * float(np.mean([prepared[i].line.score for i, _, _ in h.parts])), h) for h in hits]
        scored.sort(key=lambda t: (-t[0], len(t[1].parts), t[1].parts))
        for sigma, hit in scored:
            chars = hit.chars()
            if chars & taken:
                continue  # one detection per region: the best-scoring reading wins
            taken |= chars
            kept.append((sigma, hit))
        kept.sort(key=lambda t: t[1].parts)  # reading order
        for sigma, hit in kept:
            quads = [_cut_quad(prepared[i].line, a, b) for i, a, b in hit.parts]
            xs = [p[0] for q in quads for p in q]
            ys = [p[1] for q in quads for p in q]
            detections.append(
                Detection(
                    image_id=image_id,
                    entity_key=key,
                    entity_name=hit.entity.name,
                    backend=BACKEND,
                    label=" ".join(prepared[i].line.text[a:b] for i, a, b in hit.parts),
                    box=(min(xs), min(ys), max(xs), max(ys)),
                    score=round(sigma, 4),
                    polygons=tuple(tuple(c for p in q for c in p) for q in quads),
                )
            )
    return detections


def lines_to_text(lines: Sequence[OcrLine]) -> str:
    """Page text from OCR lines, one line per row in reading order (for search and embeddings)."""
    rows: list[list[OcrLine]] = []
    for ln in sorted(lines, key=lambda x: (x.box[1], x.box[0])):
        b = ln.box
        if rows:
            r = rows[-1][-1].box
            if min(r[3], b[3]) - max(r[1], b[1]) >= 0.5 * min(r[3] - r[1], b[3] - b[1]):
                rows[-1].append(ln)
                continue
        rows.append([ln])
    return "\n".join(" ".join(x.text for x in sorted(row, key=lambda x: x.box[0])) for row in rows)


# --------------------------------------------------------------------------------------------
# Grounder
# --------------------------------------------------------------------------------------------


class OcrGrounder:
    """The ``Grounder`` of printed entity names; OCR lines stay available to later stages.

    With a cache, every image is read once ever and ``lines_for`` is a file read; without one, the
    lines of the most recent ``memory`` images are kept in memory.
    """

    name = BACKEND

    def __init__(
        self,
        engine: OcrEngine | None = None,
        cache: OcrCache | None = None,
        min_ratio: float = DEFAULT_MIN_RATIO,
        memory: int = 256,
    ):
        self.engine = engine or OcrEngine()
        self.cache = cache
        self.min_ratio = min_ratio
        self._memory = memory
        self._recent: OrderedDict[str, list[OcrLine]] = OrderedDict()

    def _remember(self, image_id: str, lines: list[OcrLine]) -> None:
        self._recent[image_id] = lines
        self._recent.move_to_end(image_id)
        while len(self._recent) > self._memory:
            self._recent.popitem(last=False)

    def lines_for(self, task: GroundingTask) -> list[OcrLine]:
        """OCR lines of the task's image (from memory, the cache, or a fresh read).

        Raises ``OcrError`` when the image cannot be read, so callers can tell "no text" from "broken".
        """
        if task.image_id in self._recent:
            return self._recent[task.image_id]
        try:
            lines = self.engine.read_cached(task.image_id, task.path, self.cache)
        except Exception as exc:
            raise OcrError(_describe(task, exc)) from exc
        self._remember(task.image_id, lines)
        return lines

    def texts(self, image_id: str) -> list[str] | None:
        """OCR texts already known for ``image_id`` (memory or cache), None when never read."""
        lines = self._recent.get(image_id)
        if lines is None and self.cache is not None:
            lines = self.cache.get(image_id, tag=self.engine.tag)
        return None if lines is None else [ln.text for ln in lines]

    def ground(self, tasks: Sequence[GroundingTask], tau: float) -> Iterator[GroundingOutcome]:
        """One outcome per task, in order; a bad image yields an outcome with ``error`` set."""
        for task in tasks:
            if not any(len(_entity_compact(e)) >= MIN_ENTITY_CHARS for e in task.entities):
                # Nothing to look for: skip the OCR; ``lines_for`` still reads the image on demand.
                yield GroundingOutcome(task.image_id, [])
                continue
            try:
                lines = self.lines_for(task)
                found = match_entities(lines, task.entities, task.image_id, self.min_ratio)
            except Exception as exc:  # one bad image must not stop the batch
                msg = str(exc) if isinstance(exc, OcrError) else _describe(task, exc)
                log.warning("OCR grounding failed: %s", msg)
                yield GroundingOutcome(task.image_id, [], error=msg)
                continue
            yield GroundingOutcome(task.image_id, [d for d in found if d.score > tau])


def _describe(task: GroundingTask, exc: BaseException) -> str:
    return f"OCR could not read image {task.image_id} ({task.path}): {type(exc).__name__}: {exc}"
