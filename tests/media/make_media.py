"""Generate the tiny multimedia test corpus in tests/data/media_corpus and its queries in tests/data/media_queries.

Run once with ``python tests/media/make_media.py`` (needs the espeak-ng binary, e.g. ``apt-get install espeak-ng``)
and commit the outputs, so that CI never needs espeak-ng. Uses only PyAV, Pillow, numpy and the standard library.

Every video is a short slide show: each scene is a plain coloured background, a large title naming one entity and
a simple shape, with hard cuts between scenes and a keyframe at every scene start. Each scene is narrated by
espeak-ng from its first fraction of a second; the sidecar subtitles (.srt/.vtt) hold one cue per narration sentence
with the times at which it is spoken. Everything but the encoders' internals is deterministic: scene lengths are
whole seconds derived from the measured (silence-trimmed) length of each spoken sentence.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
from PIL import Image, ImageDraw, ImageFont

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "data" / "media_corpus"
QUERIES = REPO / "tests" / "data" / "media_queries"

FPS = 5
SIZE = (320, 240)
GOP = 10
RATE = 16_000  # audio sample rate of every track (mono)
SPEED = 165  # espeak-ng words per minute
LEAD = 0.2  # the narration starts this long after the scene's first frame
GAP = 0.3  # silence between two sentences of one scene
TAIL = 0.4  # at least this much silence after the last sentence of a scene
TITLE_PX = 28  # title font size at 320 px width
FONT_FILE = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf")
BROKEN_BYTES = 3 * 1024

RGB = tuple[int, int, int]


@dataclass(frozen=True)
class Scene:
    title: str
    sentences: tuple[str, ...]
    background: RGB
    shape: str  # circle, rectangle, triangle or diamond


@dataclass(frozen=True)
class Media:
    path: str  # relative to the corpus root
    sidecar: str | None  # "srt", "vtt", "broken-srt" or None
    scenes: tuple[Scene, ...]
    min_scene: int = 6  # seconds
    audio_only: bool = False


@dataclass(frozen=True)
class Cue:
    start: float
    end: float
    text: str


@dataclass(frozen=True)
class Timed:
    scene: Scene
    start: float
    end: float
    cues: tuple[Cue, ...]


GOLDEN_GATE = Scene(
    "GOLDEN GATE BRIDGE",
    ("The Golden Gate Bridge opened in 1937.", "Its chief engineer was Joseph Strauss."),
    (192, 57, 43),
    "circle",
)
STRAUSS = Scene(
    "JOSEPH STRAUSS",
    ("Joseph Strauss was a bridge engineer born in Cincinnati, Ohio.", "He died in 1938."),
    (41, 128, 185),
    "rectangle",
)
BROOKLYN = Scene(
    "BROOKLYN BRIDGE",
    ("The Brooklyn Bridge crosses the East River in New York.", "It opened in 1883."),
    (241, 196, 15),
    "triangle",
)
AMUNDSEN = Scene(
    "ROALD AMUNDSEN",
    ("Roald Amundsen was a Norwegian explorer.", "In 1911 he was the first to reach the South Pole."),
    (236, 240, 241),
    "diamond",
)
FRAM = Scene(
    "FRAM",
    ("Amundsen sailed to Antarctica on the Fram, built by Colin Archer.", "The ship is now in a museum in Oslo."),
    (39, 174, 96),
    "circle",
)
SCOTT = Scene(
    "ROBERT FALCON SCOTT",
    ("Robert Falcon Scott reached the South Pole in January 1912.", "That was five weeks after Amundsen."),
    (142, 68, 173),
    "triangle",
)
MAUNA_KEA = Scene(
    "MAUNA KEA OBSERVATORIES",
    (
        "The Mauna Kea Observatories stand on a dormant volcano in Hawaii.",
        "The summit is over four thousand metres high.",
    ),
    (44, 62, 80),
    "triangle",
)
HUBBLE_TELESCOPE = Scene(
    "HUBBLE SPACE TELESCOPE",
    ("The Hubble Space Telescope was launched in 1990.", "It is named after the astronomer Edwin Hubble."),
    (230, 126, 34),
    "rectangle",
)
EDWIN_HUBBLE = Scene(
    "EDWIN HUBBLE",
    ("Edwin Hubble was born in Missouri in 1889.", "He showed that the universe is expanding."),
    (26, 188, 156),
    "circle",
)
VESUVIUS = Scene(
    "MOUNT VESUVIUS",
    ("Mount Vesuvius erupted in the year 79.", "The eruption buried the Roman city of Pompeii."),
    (127, 140, 141),
    "triangle",
)
POMPEII = Scene(
    "POMPEII",
    ("Pompeii lies near the modern city of Naples.", "Its ruins are a World Heritage Site."),
    (255, 153, 204),
    "rectangle",
)
KRAKATOA = Scene(
    "KRAKATOA",
    ("Krakatoa is a volcanic island in Indonesia.", "Its eruption in 1883 was heard far across the ocean."),
    (120, 40, 31),
    "diamond",
)
LIGHTHOUSE = Scene(
    "LIGHTHOUSE OF ALEXANDRIA",
    ("The Lighthouse of Alexandria stood on the island of Pharos.",),
    (173, 216, 230),
    "rectangle",
)
CURIE = Scene(
    "MARIE CURIE",
    (
        "Marie Curie won the Nobel Prize in Physics in 1903.",
        "She won a second Nobel Prize, in Chemistry, in 1911.",
        "She was born in Warsaw, in Poland.",
    ),
    (0, 0, 0),
    "circle",
)

MEDIA = (
    Media("talks/bridges.mp4", "srt", (GOLDEN_GATE, STRAUSS, BROOKLYN)),
    Media("talks/explorers.webm", "vtt", (AMUNDSEN, FRAM, SCOTT)),
    Media("talks/podcast.ogg", "srt", (CURIE,), min_scene=15, audio_only=True),
    Media("clips/observatories.mkv", "srt", (MAUNA_KEA, HUBBLE_TELESCOPE, EDWIN_HUBBLE)),
    Media("clips/volcanoes.mp4", None, (VESUVIUS, POMPEII, KRAKATOA)),
    Media("clips/glitchy.mp4", "broken-srt", (LIGHTHOUSE,), min_scene=4),
)
BROKEN = ("clips/broken.mp4", "talks/bridges.mp4")  # (file, the good file whose first bytes it holds)


@dataclass(frozen=True)
class Query:
    id: str
    question: str
    answer: str
    target: tuple[str, str]  # (media path, scene title)
    file: str | None = None  # q01.mp4 ... or q07.png; None for a text-only question
    hops: tuple[tuple[str, str], ...] = ()


QUESTIONS = (
    Query(
        "q01",
        "In which year did the bridge shown in this clip open?",
        "1937",
        ("talks/bridges.mp4", GOLDEN_GATE.title),
        "q01.mp4",
    ),
    Query(
        "q02",
        "What nationality was the explorer named in this clip?",
        "Norwegian",
        ("talks/explorers.webm", AMUNDSEN.title),
        "q02.mp4",
    ),
    Query(
        "q03",
        "In which city is the ship shown in this clip kept today?",
        "Oslo",
        ("talks/explorers.webm", FRAM.title),
        "q03.mp4",
    ),
    Query(
        "q04",
        "In which US state are the observatories shown in this clip?",
        "Hawaii",
        ("clips/observatories.mkv", MAUNA_KEA.title),
        "q04.mp4",
    ),
    Query(
        "q05",
        "Which Roman city did the eruption of the volcano shown in this clip bury?",
        "Pompeii",
        ("clips/volcanoes.mp4", VESUVIUS.title),
        "q05.mp4",
    ),
    Query(
        "q06",
        "In which country is the island shown in this clip?",
        "Indonesia",
        ("clips/volcanoes.mp4", KRAKATOA.title),
        "q06.mp4",
    ),
    Query(
        "q07",
        "In which year was the telescope shown in this picture launched?",
        "1990",
        ("clips/observatories.mkv", HUBBLE_TELESCOPE.title),
        "q07.png",
    ),
    Query(
        "q08",
        "In which month and year did the explorer shown in this picture reach the South Pole?",
        "January 1912",
        ("talks/explorers.webm", SCOTT.title),
        "q08.png",
    ),
    Query("t01", "Which river does the Brooklyn Bridge cross?", "East River", ("talks/bridges.mp4", BROOKLYN.title)),
    Query("t02", "Which modern city is Pompeii near?", "Naples", ("clips/volcanoes.mp4", POMPEII.title)),
    Query(
        "t03",
        "In which year did Marie Curie win the Nobel Prize in Chemistry?",
        "1911",
        ("talks/podcast.ogg", CURIE.title),
    ),
    Query("t04", "In which year did Joseph Strauss die?", "1938", ("talks/bridges.mp4", STRAUSS.title)),
    Query(
        "t05",
        "In which city was the chief engineer of the Golden Gate Bridge born?",
        "Cincinnati",
        ("talks/bridges.mp4", STRAUSS.title),
        hops=(("talks/bridges.mp4", GOLDEN_GATE.title), ("talks/bridges.mp4", STRAUSS.title)),
    ),
    Query(
        "t06",
        "In which year was the astronomer the Hubble Space Telescope is named after born?",
        "1889",
        ("clips/observatories.mkv", EDWIN_HUBBLE.title),
        hops=(("clips/observatories.mkv", HUBBLE_TELESCOPE.title), ("clips/observatories.mkv", EDWIN_HUBBLE.title)),
    ),
)
# how each media query is re-rendered: (size, title px at that size, shift in px, seconds, encoder)
QUERY_RENDER = {
    "q01": ((256, 192), 26, (10, 0), 3, "mpeg4"),
    "q02": ((256, 192), 20, (0, 10), 2, "libx264"),
    "q03": ((256, 192), 24, (-10, 0), 3, "mpeg4"),
    "q04": ((256, 192), 18, (0, -10), 2, "libx264"),
    "q05": ((256, 192), 26, (10, 10), 3, "mpeg4"),
    "q06": ((256, 192), 20, (-10, -10), 2, "libx264"),
    "q07": ((288, 216), 30, (10, 0), 0, "png"),
    "q08": ((288, 216), 22, (0, 10), 0, "png"),
}


# --- speech ---------------------------------------------------------------------------------------------------


NUMBER_WORDS = (
    *("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"),
    *("thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"),
)
TENS_WORDS = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")


def say_number(n: int) -> str:
    """0..99 in words."""
    if n < 20:
        return NUMBER_WORDS[n]
    return TENS_WORDS[n // 10] + (f"-{NUMBER_WORDS[n % 10]}" if n % 10 else "")


def say_year(match: re.Match[str]) -> str:
    """1883 -> "eighteen eighty-three" (espeak-ng would say "one thousand eight hundred and eighty three")."""
    high, low = divmod(int(match.group()), 100)
    if low == 0:
        return f"{say_number(high)} hundred"
    return f"{say_number(high)} {say_number(low) if low >= 10 else 'oh ' + say_number(low)}"


def spoken(text: str) -> str:
    """The text as espeak-ng should read it: years said the way people say them; the subtitles keep the digits."""
    return re.sub(r"\b1[1-9]\d\d\b", say_year, text)


def speak(text: str, workdir: Path) -> np.ndarray:
    """espeak-ng's reading of text as mono int16 samples at RATE, leading and trailing silence trimmed."""
    wav = workdir / "speech.wav"
    subprocess.run(["espeak-ng", "-v", "en", "-s", str(SPEED), "-w", str(wav), spoken(text)], check=True)
    resampler = av.AudioResampler(format="s16", layout="mono", rate=RATE)
    chunks = []
    with av.open(str(wav)) as container:
        for frame in container.decode(audio=0):
            chunks.extend(f.to_ndarray().reshape(-1) for f in resampler.resample(frame))
    chunks.extend(f.to_ndarray().reshape(-1) for f in resampler.resample(None))
    samples = np.concatenate(chunks).astype(np.int16)
    loud = np.nonzero(np.abs(samples.astype(np.int32)) > 100)[0]
    margin = RATE // 50  # 20 ms
    return samples[max(loud[0] - margin, 0) : loud[-1] + margin + 1]


def lay_out(media: Media, speech: dict[str, np.ndarray]) -> tuple[list[Timed], np.ndarray]:
    """Scene spans (whole seconds), cue times and the full audio track of one media file."""
    timed, pieces, t = [], [], 0
    for scene in media.scenes:
        cues, pos = [], round((t + LEAD) * RATE)  # positions in samples
        for sentence in scene.sentences:
            pieces.append((pos, speech[sentence]))
            cues.append(Cue(pos / RATE, (pos + len(speech[sentence])) / RATE, sentence))
            pos += len(speech[sentence]) + round(GAP * RATE)
        end = max(t + media.min_scene, math.ceil(cues[-1].end + TAIL))
        timed.append(Timed(scene, float(t), float(end), tuple(cues)))
        t = end
    audio = np.zeros(t * RATE, dtype=np.int16)
    for pos, samples in pieces:
        audio[pos : pos + len(samples)] = samples
    return timed, audio


# --- pictures -------------------------------------------------------------------------------------------------


def font(px: int) -> ImageFont.FreeTypeFont:
    if FONT_FILE.exists():
        return ImageFont.truetype(str(FONT_FILE), px)
    return ImageFont.load_default(size=px)


def ink(background: RGB) -> RGB:
    """Black or white, whichever reads better on the background."""
    r, g, b = background
    return (0, 0, 0) if 0.299 * r + 0.587 * g + 0.114 * b > 140 else (255, 255, 255)


def wrap(draw: ImageDraw.ImageDraw, text: str, face: ImageFont.FreeTypeFont, width: float) -> list[str]:
    lines: list[str] = []
    for word in text.split():
        if lines and draw.textlength(f"{lines[-1]} {word}", font=face) <= width:
            lines[-1] = f"{lines[-1]} {word}"
        else:
            lines.append(word)
    return lines


def slide(
    scene: Scene, size: tuple[int, int] = SIZE, title_px: int = TITLE_PX, shift: tuple[int, int] = (0, 0)
) -> Image.Image:
    """One scene's picture: background, title (wrapped, centred in the upper part) and a shape below it."""
    w, h = size
    dx, dy = shift
    image = Image.new("RGB", size, scene.background)
    draw = ImageDraw.Draw(image)
    colour = ink(scene.background)
    face = font(title_px)
    line_h = round(title_px * 1.2)
    for i, line in enumerate(wrap(draw, scene.title, face, w - 24)):
        draw.text((w / 2 + dx, round(h * 0.09) + dy + i * line_h), line, fill=colour, font=face, anchor="mt")
    cx, cy, r = w / 2 + dx, h * 0.74 + dy, h * 0.14
    box = (cx - r, cy - r, cx + r, cy + r)
    if scene.shape == "circle":
        draw.ellipse(box, fill=colour)
    elif scene.shape == "rectangle":
        draw.rectangle((cx - 1.4 * r, cy - 0.8 * r, cx + 1.4 * r, cy + 0.8 * r), fill=colour)
    elif scene.shape == "triangle":
        draw.polygon([(cx, cy - r), (cx + 1.15 * r, cy + r), (cx - 1.15 * r, cy + r)], fill=colour)
    elif scene.shape == "diamond":
        draw.polygon([(cx, cy - r), (cx + r, cy), (cx, cy + r), (cx - r, cy)], fill=colour)
    else:
        raise ValueError(scene.shape)
    return image


# --- encoding -------------------------------------------------------------------------------------------------


def add_video(container: av.container.OutputContainer, codec: str, size: tuple[int, int]) -> av.VideoStream:
    options = {
        "libx264": {"crf": "35", "preset": "medium", "forced-idr": "1", "x264-params": "scenecut=0:bframes=0"},
        "libvpx-vp9": {"crf": "45", "b": "0", "deadline": "good", "cpu-used": "4", "row-mt": "0"},
        "mpeg4": {},
    }[codec]
    stream = container.add_stream(codec, rate=FPS, options=options)
    stream.width, stream.height = size
    stream.pix_fmt = "yuv420p"
    stream.codec_context.gop_size = GOP
    stream.codec_context.thread_count = 1
    if codec == "mpeg4":
        stream.codec_context.bit_rate = 60_000
    return stream


def add_audio(container: av.container.OutputContainer, codec: str) -> av.AudioStream:
    stream = container.add_stream(codec, rate=RATE, layout="mono")
    stream.codec_context.bit_rate = 24_000
    stream.codec_context.thread_count = 1
    return stream


def encode_video(
    container: av.container.OutputContainer, stream: av.VideoStream, scenes: Iterable[tuple[Image.Image, int]]
) -> None:
    """Encode (picture, frame count) runs, forcing a keyframe at the first frame of each run (the hard cuts)."""
    pts = 0
    for image, count in scenes:
        for i in range(count):
            frame = av.VideoFrame.from_image(image).reformat(format="yuv420p")
            frame.pts, frame.time_base = pts, Fraction(1, FPS)
            if i == 0:
                frame.pict_type = av.video.frame.PictureType.I
            container.mux(stream.encode(frame))
            pts += 1
    container.mux(stream.encode(None))


def encode_audio(container: av.container.OutputContainer, stream: av.AudioStream, samples: np.ndarray) -> None:
    step = 1024
    for pos in range(0, len(samples), step):
        frame = av.AudioFrame.from_ndarray(samples[pos : pos + step].reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate, frame.pts, frame.time_base = RATE, pos, Fraction(1, RATE)
        container.mux(stream.encode(frame))
    container.mux(stream.encode(None))


def write_media(path: Path, media: Media, timed: list[Timed], audio: np.ndarray) -> None:
    suffix = path.suffix
    vcodec, acodec = {
        ".mp4": ("libx264", "aac"),
        ".mkv": ("libx264", "aac"),
        ".webm": ("libvpx-vp9", "libopus"),
        ".ogg": (None, "libopus"),
    }[suffix]
    with av.open(str(path), "w", container_options={"fflags": "+bitexact"}) as container:
        if not media.audio_only:
            vstream = add_video(container, vcodec, SIZE)
        astream = add_audio(container, acodec)
        if not media.audio_only:
            encode_video(container, vstream, [(slide(t.scene), round((t.end - t.start) * FPS)) for t in timed])
        encode_audio(container, astream, audio)


def write_query_clip(path: Path, image: Image.Image, seconds: int, codec: str) -> None:
    with av.open(str(path), "w", container_options={"fflags": "+bitexact"}) as container:
        stream = add_video(container, codec, image.size)
        encode_video(container, stream, [(image, seconds * FPS)])


# --- sidecars, questions, README --------------------------------------------------------------------------------


def stamp(seconds: float, sep: str) -> str:
    ms = round(seconds * 1000)
    return f"{ms // 3_600_000:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d}{sep}{ms % 1000:03d}"


def sidecar_text(kind: str, cues: list[Cue]) -> str:
    if kind == "srt":
        return "".join(
            f"{i}\n{stamp(c.start, ',')} --> {stamp(c.end, ',')}\n{c.text}\n\n" for i, c in enumerate(cues, 1)
        )
    if kind == "vtt":
        return "WEBVTT\n\n" + "".join(f"{stamp(c.start, '.')} --> {stamp(c.end, '.')}\n{c.text}\n\n" for c in cues)
    if kind == "broken-srt":  # garbage timecodes: must be rejected, the video still ingested from its frames
        return (
            "1\n00:00:xx,000 --> banana\n" + cues[0].text + "\n\n"
            "2\n99:99 --> 00:00:03,5OO\nThis cue has no usable times either.\n\n"
        )
    raise ValueError(kind)


def span(spans: dict[tuple[str, str], Timed], key: tuple[str, str]) -> dict[str, object]:
    t = spans[key]
    return {"source_path": key[0], "t_start": t.start, "t_end": t.end}


def questions_json(spans: dict[tuple[str, str], Timed]) -> list[dict[str, object]]:
    out = []
    for q in QUESTIONS:
        kind = None if q.file is None else ("image" if q.file.endswith(".png") else "video")
        item: dict[str, object] = {
            "id": q.id,
            "question": q.question,
            "video": q.file if kind == "video" else None,
            "image": q.file if kind == "image" else None,
            "answer": q.answer,
            "gold": span(spans, q.target),
        }
        if q.hops:
            item["hops"] = [span(spans, hop) for hop in q.hops]
        out.append(item)
    return out


def readme(layout: dict[str, list[Timed]], sizes: dict[str, int], espeak_version: str) -> str:
    sidecars = {m.path: m.sidecar for m in MEDIA}
    lines = [
        "# Tiny multimedia test corpus",
        "",
        "Generated by `tests/media/make_media.py` (run `python tests/media/make_media.py` from the repository root;",
        "it needs the `espeak-ng` binary, e.g. `apt-get install espeak-ng`, plus PyAV, Pillow and numpy). The outputs",
        "are committed so that tests never need espeak-ng. Regenerating rewrites this directory and",
        "`tests/data/media_queries/` (encoder internals may change the bytes, not the timings, which depend only on",
        f"the espeak-ng voice; this copy was made with {espeak_version}).",
        "",
        "Two partitions, `talks/` and `clips/`. Every video is 320x240 at 5 fps, yuv420p, a keyframe at every scene",
        "start (GOP 10), made of slides: a plain background colour per scene, the title naming the scene's entity and",
        "a simple shape, with hard cuts between scenes. Each scene is narrated by espeak-ng (English voice,",
        f"{SPEED} words per minute, years read as e.g. 'nineteen thirty-seven') starting {LEAD} s after its first",
        f"frame; audio is mono {RATE} Hz at about 24 kbit/s. The narration facts link scenes: the Golden Gate",
        "Bridge names Joseph Strauss, the Hubble Space Telescope names Edwin Hubble, the Fram and Robert Falcon Scott",
        "scenes name Roald Amundsen, Mount Vesuvius names Pompeii.",
        "",
        "## Files",
        "",
        "| file | bytes | content | sidecar |",
        "|---|---|---|---|",
    ]
    kinds = {
        ".mp4": "H.264 + AAC (MP4)",
        ".mkv": "H.264 + AAC (Matroska)",
        ".webm": "VP9 + Opus (WebM)",
        ".ogg": "Opus audio only (Ogg)",
    }
    side = {
        "srt": "`.srt`",
        "vtt": "`.vtt` (WebVTT)",
        "broken-srt": "`.srt`, deliberately malformed (reject it)",
        None: "none: ingest from frames (and audio) only",
    }
    for path in sorted(sizes):
        if path.endswith((".srt", ".vtt")) or path == "README.md":
            continue
        if path == BROKEN[0]:
            lines.append(
                f"| `{path}` | {sizes[path]} | first {BROKEN_BYTES} bytes of `{BROKEN[1]}`: truncated, "
                "must be rejected | none |"
            )
            continue
        content = kinds[Path(path).suffix]
        stem = Path(path).with_suffix({"srt": ".srt", "broken-srt": ".srt", "vtt": ".vtt"}.get(sidecars[path], ""))
        note = side[sidecars[path]] + (f" (`{stem}`)" if sidecars[path] else "")
        lines.append(f"| `{path}` | {sizes[path]} | {content}, {layout[path][-1].end:g} s | {note} |")
    lines += [
        "",
        "## Scenes",
        "",
        "Spans are in seconds from the start of the file. Narration cues are the sidecar cues (also for",
        "`clips/volcanoes.mp4`, which has no sidecar, and `clips/glitchy.mp4`, whose sidecar is garbage).",
        "",
        "| file | scene | t_start | t_end | title entity | background | narration (cue start-end) |",
        "|---|---|---|---|---|---|---|",
    ]
    for path, timed in layout.items():
        for i, t in enumerate(timed):
            narration = " ".join(f"{c.text} ({c.start:.2f}-{c.end:.2f})" for c in t.cues)
            background = "(audio only)" if path.endswith(".ogg") else f"rgb{t.scene.background}"
            lines.append(f"| `{path}` | {i} | {t.start:g} | {t.end:g} | {t.scene.title} | {background} | {narration} |")
    lines += [
        "",
        "## Queries",
        "",
        "`tests/data/media_queries/questions.json` holds 14 questions: `q01`-`q06` come with a 2-3 s query clip",
        "(`q01.mp4`...`q06.mp4`, re-rendered from a scene's slide at 256x192 with another title size and a 10 px",
        "shift, no audio, MPEG-4 part 2 or H.264), `q07` and `q08` with a re-rendered still (`q07.png`, `q08.png`,",
        "288x216), `t01`-`t06` are text only (`t05` and `t06` need two hops; `hops` lists both scenes' spans).",
        "`gold.source_path` is relative to this directory and `gold.t_start`/`gold.t_end` is the span of the scene",
        "whose narration states the answer (for `talks/podcast.ogg`, the whole file).",
        "",
    ]
    return "\n".join(lines)


# --- check ----------------------------------------------------------------------------------------------------


def check(layout: dict[str, list[Timed]]) -> None:
    """Decode every video back and compare the background at each scene's middle with the expected colour."""
    for path, timed in layout.items():
        if path.endswith(".ogg"):
            continue
        with av.open(str(CORPUS / path)) as container:
            frames = [(float(f.time), f.to_ndarray(format="rgb24")) for f in container.decode(video=0)]
        for t in timed:
            mid = (t.start + t.end) / 2
            _, pixels = min(frames, key=lambda f: abs(f[0] - mid))
            seen = np.median(pixels[2:10, 2:10].reshape(-1, 3), axis=0)
            if np.abs(seen - np.array(t.scene.background)).max() > 16:
                raise AssertionError(f"{path} at {mid}s: background {seen} != {t.scene.background}")
    with av.open(str(CORPUS / BROKEN[1])) as container:
        assert container.streams.video
    try:
        av.open(str(CORPUS / BROKEN[0])).close()
    except av.error.FFmpegError:
        pass
    else:
        raise AssertionError(f"{BROKEN[0]} opens")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-check", action="store_true", help="skip decoding the outputs back")
    args = parser.parse_args()
    if shutil.which("espeak-ng") is None:
        raise SystemExit("espeak-ng is not installed (apt-get install espeak-ng)")
    espeak_version = subprocess.run(["espeak-ng", "--version"], capture_output=True, text=True, check=True).stdout
    espeak_version = " ".join(espeak_version.split()[:4]).removesuffix(" Data")

    for directory in (CORPUS, QUERIES):
        if directory.exists():
            shutil.rmtree(directory)
    for directory in (CORPUS / "talks", CORPUS / "clips", QUERIES):
        directory.mkdir(parents=True)

    with tempfile.TemporaryDirectory() as tmp:
        speech = {s: speak(s, Path(tmp)) for m in MEDIA for scene in m.scenes for s in scene.sentences}

    layout: dict[str, list[Timed]] = {}
    for media in MEDIA:
        timed, audio = lay_out(media, speech)
        layout[media.path] = timed
        write_media(CORPUS / media.path, media, timed, audio)
        if media.sidecar:
            suffix = ".vtt" if media.sidecar == "vtt" else ".srt"
            cues = [c for t in timed for c in t.cues]
            (CORPUS / media.path).with_suffix(suffix).write_text(sidecar_text(media.sidecar, cues), encoding="utf-8")
    (CORPUS / BROKEN[0]).write_bytes((CORPUS / BROKEN[1]).read_bytes()[:BROKEN_BYTES])

    spans = {(path, t.scene.title): t for path, timed in layout.items() for t in timed}
    for q in QUESTIONS:
        if q.file is None:
            continue
        size, title_px, shift, seconds, codec = QUERY_RENDER[q.id]
        image = slide(spans[q.target].scene, size, title_px, shift)
        if codec == "png":
            image.save(QUERIES / q.file, optimize=True)
        else:
            write_query_clip(QUERIES / q.file, image, seconds, codec)
    (QUERIES / "questions.json").write_text(json.dumps(questions_json(spans), indent=2) + "\n", encoding="utf-8")

    sizes = {p.relative_to(CORPUS).as_posix(): p.stat().st_size for p in CORPUS.rglob("*") if p.is_file()}
    (CORPUS / "README.md").write_text(readme(layout, sizes, espeak_version), encoding="utf-8")
    if not args.no_check:
        check(layout)
    total = sum(p.stat().st_size for d in (CORPUS, QUERIES) for p in d.rglob("*") if p.is_file())
    print(f"wrote {CORPUS.relative_to(REPO)} and {QUERIES.relative_to(REPO)}: {total} bytes")


if __name__ == "__main__":
    main()
