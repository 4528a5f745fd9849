"""A hostile-corpus generator and the checker that says whether ingest held up against it.

``make_corpus`` writes partitions that each hold the same mix of files, so partitions compare:

- **good** files (Markdown, text, JSON, JSONL, PDF with a text layer, pictures, a video with
  subtitles) that must become documents;
- **bad** files that must be rejected with a reason and cost nothing else: zero bytes, random
  bytes and truncated copies of every format, decompression bombs, text that is not UTF-8 or mixes
  encodings, NUL bytes, malformed or too deeply nested JSON, a record with a duplicate id, names
  that are not UTF-8, unsupported types, orphan subtitles, symbolic links out of the corpus root;
- **odd-but-valid** files that must be read: UTF-16 and BOM text, CRLF, odd file names (spaces,
  accents, emoji, a newline, 200 characters), CMYK, 16-bit, palette and animated pictures, an
  image-only PDF, identical files, JSON with lone surrogate escapes (repaired), a Markdown file
  with links to pictures outside the root (the file is read, the links are refused);
- **budget** files that must be read and cut with a recorded reason: a huge run-on "sentence",
  a file of tiny sentences, a PDF longer than the page budget;
- hidden files, which must be ignored.

Outside the corpus root lie files carrying a random canary string and a canary picture of an
unusual size; links point at them. ``check`` reads every table a build wrote and reports each
planted file's outcome, good files lost, bad files not rejected, cuts not recorded, and any
canary that reached a table. The benchmark ``benchmarks/fuzz_corpus.py`` and the test
``tests/test_fuzz.py`` run it through the real Dagster assets.
"""

from __future__ import annotations

import io
import json
import os
import random
import secrets
import wave
import zlib
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import polars as pl
from PIL import Image

from mmkg.ingest.base import Limits

#: what must happen to a planted file
INGESTED, REJECTED, CUT, REPAIRED, IGNORED = "ingested", "rejected", "cut", "repaired", "ignored"
CANARY_SIZE = (97, 89)  # the canary picture's size: no planted picture inside the root has it

_FIRST = ["Ada", "Mara", "Tomas", "Ilse", "Karim", "Noor", "Felix", "Rosa", "Jun", "Leila", "Owen", "Greta"]
_LAST = ["Quill", "Halden", "Varga", "Okafor", "Lindqvist", "Moreau", "Tanaka", "Brandt", "Castillo", "Novak"]
_PLACES = ["Lisbon", "Tromso", "Cusco", "Leipzig", "Hobart", "Tartu", "Oaxaca", "Bergen", "Kyoto", "Zadar"]
_ORGS = ["Orion Institute", "Halden Observatory", "Blue Fern Press", "Northgate Museum", "Saltmarsh Library"]


@dataclass(frozen=True)
class Planted:
    """One planted file (or record) and what must become of it."""

    partition: str
    path: str  # as ``source_path``: relative to the corpus root, POSIX, undecodable bytes as \\xNN
    category: str
    expect: str
    record_key: str = ""
    good: bool = False  # holds content a user wants: losing it is the worst outcome


@dataclass
class FuzzCorpus:
    root: Path
    outside: Path
    canary: str
    planted: list[Planted] = field(default_factory=list)

    @property
    def partitions(self) -> list[str]:
        return sorted({p.partition for p in self.planted})

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for p in self.planted:
            out[p.expect] = out.get(p.expect, 0) + 1
        return out

    def save(self, path: Path) -> None:
        payload = {"root": str(self.root), "outside": str(self.outside), "canary": self.canary}
        payload["planted"] = [asdict(p) for p in self.planted]
        path.write_text(json.dumps(payload, indent=1, ensure_ascii=False), encoding="utf-8")


class _Writer:
    def __init__(self, corpus: FuzzCorpus, partition: str, rng: random.Random):
        self.corpus, self.partition, self.rng = corpus, partition, rng
        self.dir = corpus.root / partition
        self.dir.mkdir(parents=True, exist_ok=True)

    def put(
        self, name: str | bytes, data: bytes | str, category: str, expect: str, *, good: bool = False, key: str = ""
    ) -> Path:
        path = self.dir / (os.fsdecode(name) if isinstance(name, bytes) else name)
        path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        self.plant(path, category, expect, good=good, key=key)
        return path

    def plant(self, path: Path, category: str, expect: str, *, good: bool = False, key: str = "") -> None:
        rel = os.fsencode(path.relative_to(self.corpus.root).as_posix()).decode("utf-8", "backslashreplace")
        self.corpus.planted.append(Planted(self.partition, rel, category, expect, key, good))

    def sentences(self, n: int) -> str:
        r = self.rng
        out = []
        for _ in range(n):
            who = f"{r.choice(_FIRST)} {r.choice(_LAST)}"
            out.append(
                r.choice(
                    [
                        f"{who} was born in {r.choice(_PLACES)} in {r.randint(1850, 1990)}.",
                        f"{who} founded the {r.choice(_ORGS)} in {r.choice(_PLACES)}.",
                        f"{who} directed the {r.choice(_ORGS)} for {r.randint(2, 30)} years.",
                        f"The {r.choice(_ORGS)} hired {who} as its first curator.",
                    ]
                )
            )
        return " ".join(out)


# ------------------------------------------------------------------------------------------------
# Building blocks: real files of each format
# ------------------------------------------------------------------------------------------------


def _png(img: Image.Image, **kw) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format="PNG", **kw)
    return buf.getvalue()


def _picture(rng: random.Random, size: tuple[int, int] = (160, 120)) -> Image.Image:
    arr = np.zeros((size[1], size[0], 3), np.uint8)
    arr[:] = [rng.randrange(256) for _ in range(3)]
    x0, y0 = rng.randrange(size[0] // 2), rng.randrange(size[1] // 2)
    arr[y0 : y0 + size[1] // 3, x0 : x0 + size[0] // 3] = [rng.randrange(256) for _ in range(3)]
    return Image.fromarray(arr)


def _jpeg(img: Image.Image, mode: str = "RGB") -> bytes:
    buf = io.BytesIO()
    img.convert(mode).save(buf, format="JPEG", quality=80)
    return buf.getvalue()


def _pdf(pages: list[str]) -> bytes:
    """A PDF with a text layer per page (matplotlib's PDF backend)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_pdf import PdfPages

    buf = io.BytesIO()
    with PdfPages(buf, metadata={"CreationDate": None}) as pdf:
        for text in pages:
            fig = plt.figure(figsize=(6, 8))
            fig.text(0.08, 0.92, text, wrap=True, fontsize=10, va="top")
            pdf.savefig(fig)
            plt.close(fig)
    return buf.getvalue()


def _image_pdf(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.convert("RGB").save(buf, format="PDF")
    return buf.getvalue()


def _video(rng: random.Random, seconds: int = 2) -> bytes:
    """A small MPEG-4 video: one plain colour per second (each change is a scene cut)."""
    import av

    buf = io.BytesIO()
    with av.open(buf, "w", format="mp4") as out:
        stream = out.add_stream("mpeg4", rate=5)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        for i in range(seconds * 5):
            if i % 5 == 0:
                colour = [rng.randrange(256) for _ in range(3)]
            frame = np.zeros((48, 64, 3), np.uint8)
            frame[:] = colour
            for packet in stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return buf.getvalue()


def _wav(seconds: float = 1.0, rate: int = 8000) -> bytes:
    t = np.arange(int(seconds * rate)) / rate
    samples = (np.sin(2 * np.pi * 440 * t) * 8000).astype("<i2")
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(samples.tobytes())
    return buf.getvalue()


def _claimed_png(width: int, height: int) -> bytes:
    """A PNG whose header claims ``width`` x ``height`` pixels but whose data holds a few rows."""

    def chunk(tag: bytes, data: bytes) -> bytes:
        return len(data).to_bytes(4, "big") + tag + data + zlib.crc32(tag + data).to_bytes(4, "big")

    ihdr = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([8, 0, 0, 0, 0])
    rows = zlib.compress(b"\x00" + b"\x00" * width)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", rows) + chunk(b"IEND", b"")


def _srt(text: str, seconds: int) -> str:
    return f"1\n00:00:00,000 --> 00:00:0{min(seconds, 9)},000\n{text}\n"


# ------------------------------------------------------------------------------------------------
# The generator
# ------------------------------------------------------------------------------------------------


def make_corpus(
    root: Path | str,
    partitions: int = 2,
    seed: int = 0,
    run_on_chars: int = 200_000,
    tiny_sentences: int = 50_000,
    pdf_pages: int = 6,
    limits: Limits | None = None,
    hostile: bool = True,
) -> FuzzCorpus:
    """Write a hostile corpus under ``root`` (partitions ``fuzz00``, ...) and the canaries beside it.

    ``run_on_chars`` sizes the run-on file (the issue's case is 1,000,000), ``tiny_sentences`` the
    file of one-word sentences, ``pdf_pages`` the long PDF. ``limits`` (default ``Limits()``) decides
    which of those must be cut rather than read whole. ``hostile=False`` writes only the good and the
    odd-but-valid files (the same ones, for the same seed): the partition without its hostile files,
    the baseline its cost is compared with.
    """
    limits = limits or Limits()
    root = Path(root)
    outside = root.parent / f"{root.name}_outside"
    root.mkdir(parents=True, exist_ok=True)
    outside.mkdir(parents=True, exist_ok=True)
    corpus = FuzzCorpus(root, outside, "MMKGCANARY" + secrets.token_hex(8))
    (outside / "secret.txt").write_text(f"The secret is {corpus.canary}.\n", encoding="utf-8")
    (outside / "secret.md").write_text(f"# Secret\n\n{corpus.canary} must never be read.\n", encoding="utf-8")
    (outside / "canary.png").write_bytes(_png(Image.new("RGB", CANARY_SIZE, (250, 10, 200))))
    (outside / "folder").mkdir(exist_ok=True)
    (outside / "folder" / "inside.md").write_text(f"# Folder\n\n{corpus.canary} again.\n", encoding="utf-8")
    for i in range(partitions):
        rng = random.Random(seed * 1000 + i)
        _partition(corpus, f"fuzz{i:02d}", rng, run_on_chars, tiny_sentences, pdf_pages, limits, hostile)
    return corpus


def _partition(
    corpus: FuzzCorpus,
    key: str,
    rng: random.Random,
    run_on_chars: int,
    tiny_sentences: int,
    pdf_pages: int,
    limits: Limits,
    hostile: bool,
) -> None:
    w = _Writer(corpus, key, rng)
    pic = _picture(rng)
    png, jpeg = _png(pic), _jpeg(pic)
    pdf = _pdf([w.sentences(6), w.sentences(6)])
    video = _video(rng)
    records = [{"id": f"{key}-r{i}", "title": f"Record {i}", "text": w.sentences(4)} for i in range(3)]

    # good files
    w.put(
        "notes.md",
        f"# Notes of {key}\n\n{w.sentences(8)}\n\n![figure](figure.png)\n\n{w.sentences(4)}\n\n![logo](logo.png)\n",
        "markdown",
        INGESTED,
        good=True,
    )
    w.put("figure.png", _png(_picture(rng)), "linked picture", IGNORED)  # read as the Markdown file's figure
    w.put("logo.png", _png(_picture(random.Random(7))), "linked picture", IGNORED)  # the same in every partition
    w.put("plain.txt", f"Plain notes\n\n{w.sentences(6)}\n", "plain text", INGESTED, good=True)
    w.put("records.json", json.dumps(records), "json records", INGESTED, good=True, key=f"{key}-r0")
    w.put(
        "lines.jsonl",
        "\n".join(json.dumps({**r, "id": r["id"] + "l"}) for r in records),
        "jsonl records",
        INGESTED,
        good=True,
        key=f"{key}-r1l",
    )
    w.put("report.pdf", pdf, "pdf", INGESTED, good=True)
    w.put("photo.png", png, "png picture", INGESTED, good=True)
    w.put("photo.jpg", jpeg, "jpeg picture", INGESTED, good=True)
    w.put("clip.mp4", video, "video with subtitles", INGESTED, good=True)
    (w.dir / "clip.srt").write_text(_srt(w.sentences(1), 2), encoding="utf-8")

    # odd but valid
    w.put("utf16.txt", ("UTF-16 notes\n\n" + w.sentences(3)).encode("utf-16"), "UTF-16 with BOM", INGESTED, good=True)
    w.put("bom.md", "\ufeff# BOM\n\n" + w.sentences(3), "UTF-8 with BOM", INGESTED, good=True)
    w.put(
        "crlf.txt", ("CRLF notes\r\n\r\n" + w.sentences(3)).replace("\n", "\r\n"), "CRLF line ends", INGESTED, good=True
    )
    for name in (
        "with space.md",
        "caf\u00e9 \u00fcml\u00e4ut.md",
        "emoji \U0001f4da.md",
        "line\nbreak.md",
        "-dash #hash %20.md",
        "L" * 196 + ".md",
        "UPPER.MD",
    ):
        w.put(name, f"# Odd name\n\n{w.sentences(2)}\n", "odd file name", INGESTED, good=True)
    w.put("copy_of_notes.txt", (w.dir / "plain.txt").read_bytes(), "identical file", INGESTED, good=True)
    w.put("cmyk.jpg", _jpeg(_picture(rng), "CMYK"), "CMYK picture", INGESTED, good=True)
    w.put(
        "deep16.png",
        _png(Image.fromarray((np.arange(64 * 48).reshape(48, 64) * 20).astype(np.uint16))),
        "16-bit picture",
        INGESTED,
        good=True,
    )
    w.put("palette.png", _png(_picture(rng).convert("P")), "palette picture", INGESTED, good=True)
    frames = [_picture(rng, (48, 48)) for _ in range(3)]
    buf = io.BytesIO()
    frames[0].save(buf, format="GIF", save_all=True, append_images=frames[1:], duration=100, loop=0)
    w.put("animated.gif", buf.getvalue(), "animated picture", INGESTED, good=True)
    w.put("scan.pdf", _image_pdf(_picture(rng, (300, 400))), "image-only PDF", INGESTED, good=True)
    w.put(
        "surrogate.json",
        '[{"id": "s1", "title": "Half", "text": "A lone \\ud800 half pair. ' + w.sentences(1) + '"}]',
        "lone surrogate escape",
        REPAIRED,
        good=True,
        key="s1",
    )
    w.put(
        "links_out.md",
        f"# Links\n\n{w.sentences(2)}\n\n![c]({os.path.relpath(corpus.outside / 'canary.png', w.dir)})"
        "\n\n![p](/etc/hostname)\n\n![r](https://example.com/x.png)\n",
        "links out of the root",
        INGESTED,
        good=True,
    )
    w.put("tone.wav", _wav(), "audio without transcript", INGESTED, good=True)
    w.put(
        "table.md",
        "# Table\n\n| name | place |\n|---|---|\n"
        + "".join(f"| {rng.choice(_FIRST)} {rng.choice(_LAST)} | {rng.choice(_PLACES)} |\n" for _ in range(300)),
        "long table",
        INGESTED,
        good=True,
    )
    w.put(
        "nested.md",
        "# Nested\n\n" + "> " * 500 + "Deep quote.\n\n" + "".join("  " * i + "- item\n" for i in range(200)),
        "deep nesting",
        INGESTED,
        good=True,
    )
    w.put(".hidden.md", "# Hidden\n\nNever read.\n", "hidden file", IGNORED)

    if not hostile:
        return

    # bad files: rejected with a reason, costing nothing else
    for ext in (".md", ".txt", ".json", ".pdf", ".png", ".jpg", ".mp4", ".wav"):
        w.put(f"empty{ext}", b"", "zero bytes", REJECTED)
    for ext in (".pdf", ".png", ".jpg", ".gif", ".mp4", ".webm", ".wav", ".mp3"):
        w.put(f"random{ext}", rng.randbytes(4096), "random bytes", REJECTED)
    w.put("truncated.pdf", pdf[: len(pdf) // 3], "truncated", REJECTED)
    w.put("truncated.png", png[: len(png) // 2], "truncated", REJECTED)
    w.put("truncated.jpg", jpeg[: len(jpeg) // 2], "truncated", REJECTED)
    w.put("truncated.mp4", video[: len(video) // 3], "truncated", REJECTED)
    w.put("bomb.png", _png(Image.new("1", (9000, 9000)), optimize=True), "decompression bomb", REJECTED)
    w.put("claims_huge.png", _claimed_png(60_000, 60_000), "decompression bomb", REJECTED)
    w.put("tiny.png", _png(Image.new("RGB", (4, 4), (1, 2, 3))), "picture too small", REJECTED)
    w.put("text_as.png", b"this is not a picture at all\n" * 20, "wrong extension", REJECTED)
    w.put("latin1.txt", ("Caf\u00e9 cr\u00e8me in K\u00f8benhavn. " * 20).encode("latin-1"), "not UTF-8", REJECTED)
    w.put(
        "mixed.md",
        b"# Mixed\n\nGood start. " + "na\u00efve".encode("cp1252") + b" end.",
        "mixed encodings",
        REJECTED,
    )
    w.put("nul.md", b"# Binary\n\nText\x00with\x00NUL bytes.\n", "NUL bytes", REJECTED)
    w.put("malformed.json", '{"id": "x", "text": "unclosed', "malformed JSON", REJECTED)
    w.put("deep.json", "[" * 50_000 + "]" * 50_000, "deeply nested JSON", REJECTED)
    w.put("scalar.json", "42", "JSON of the wrong shape", REJECTED)
    dup = [{"id": "same", "title": "One", "text": w.sentences(2)}, {"id": "same", "title": "Two", "text": "Again."}]
    w.put("dupes.json", json.dumps(dup), "duplicate record id", INGESTED, good=True, key="same")
    w.plant(w.dir / "dupes.json", "duplicate record id", REJECTED, key="same#2")
    w.put(b"name\xff\xfe.md", "# Bad name\n\nNot a UTF-8 name.\n", "file name not UTF-8", REJECTED)
    w.put("program.exe", rng.randbytes(512), "unsupported type", REJECTED)
    w.put("noext", w.sentences(2), "unsupported type", REJECTED)
    w.put("orphan.srt", _srt("Nobody hears this.", 1), "orphan subtitles", REJECTED)
    for name, target in (
        ("link_secret.md", "secret.md"),
        ("link_secret.txt", "secret.txt"),
        ("link_canary.png", "canary.png"),
    ):
        os.symlink(corpus.outside / target, w.dir / name)
        w.plant(w.dir / name, "symlink out of the root", REJECTED)
    os.symlink(corpus.outside / "folder", w.dir / "linked_folder")  # never followed, or its file rejected

    # over a budget: read, cut, and the cut recorded
    words = [f"{rng.choice(_FIRST).lower()}{rng.choice(_PLACES).lower()}" for _ in range(400)]
    run_on = " ".join(rng.choice(words) for _ in range(run_on_chars // 12 + 1))[:run_on_chars]
    w.put(
        "run_on.md",
        f"# Run-on\n\n{w.sentences(2)}\n\n{run_on}\n",
        "huge single sentence",
        CUT if run_on_chars > limits.max_sentence_chars else INGESTED,
        good=True,
    )
    w.put(
        "tiny_sentences.txt",
        "Tiny sentences\n\n" + "a. " * tiny_sentences,
        "many tiny sentences",
        CUT if tiny_sentences > limits.max_sentences_per_document else INGESTED,
        good=True,
    )
    w.put(
        "long.pdf",
        _pdf([f"Page {i + 1}. {w.sentences(2)}" for i in range(pdf_pages)]),
        "long PDF",
        CUT if pdf_pages > limits.max_pages else INGESTED,
        good=True,
    )


# ------------------------------------------------------------------------------------------------
# The checker
# ------------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    planted: Planted
    outcome: str  # what happened: ingested / rejected / cut / repaired / absent / lost
    ok: bool
    detail: str = ""


@dataclass
class FuzzReport:
    outcomes: list[Outcome]
    leaks: list[str]  # tables (and columns) where the canary showed up
    failed_partitions: list[str] = field(default_factory=list)

    @property
    def good_lost(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.planted.good and o.outcome not in (INGESTED, CUT, REPAIRED)]

    @property
    def bad_not_rejected(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.planted.expect == REJECTED and o.outcome != REJECTED]

    @property
    def wrong(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.ok]

    @property
    def passed(self) -> bool:
        return not self.wrong and not self.leaks and not self.failed_partitions

    def by_category(self) -> pl.DataFrame:
        rows = [
            {"category": o.planted.category, "expect": o.planted.expect, "ok": o.ok, "outcome": o.outcome}
            for o in self.outcomes
        ]
        return (
            pl.DataFrame(rows)
            .group_by("category", "expect")
            .agg(files=pl.len(), as_expected=pl.col("ok").sum(), outcomes=pl.col("outcome").unique().sort())
            .with_columns(pl.col("outcomes").list.join(", "))
            .sort("expect", "category")
        )

    def summary(self) -> dict[str, int]:
        return {
            "files": len(self.outcomes),
            "as_expected": sum(o.ok for o in self.outcomes),
            "good_lost": len(self.good_lost),
            "bad_not_rejected": len(self.bad_not_rejected),
            "failed_partitions": len(self.failed_partitions),
            "canary_leaks": len(self.leaks),
        }


def _read_tables(data_root: Path, name: str, partitions: Iterable[str]) -> pl.DataFrame | None:
    files = [data_root / "tables" / name / f"{p}.parquet" for p in partitions]
    files = [f for f in files if f.exists()]
    if not files:
        return None
    return pl.concat([pl.read_parquet(f) for f in files], how="diagonal_relaxed")


def check(corpus: FuzzCorpus, data_root: Path | str, failed_partitions: Iterable[str] = ()) -> FuzzReport:
    """Compare what a build wrote under ``data_root`` with what had to happen to each planted file."""
    data_root = Path(data_root)
    failed = sorted(failed_partitions)
    parts = corpus.partitions
    docs = _read_tables(data_root, "documents", parts)
    rejected = _read_tables(data_root, "rejected_files", parts)
    doc_keys = set() if docs is None else {(r[0], r[1]) for r in docs.select("source_path", "record_key").iter_rows()}
    doc_paths = {p for p, _ in doc_keys}
    rows: dict[tuple[str, str], list[tuple[str, str]]] = {}
    by_path: dict[str, list[tuple[str, str]]] = {}
    if rejected is not None:
        for r in rejected.iter_rows(named=True):
            rows.setdefault((r["source_path"], r["record_key"]), []).append((r["stage"], r["reason"]))
            by_path.setdefault(r["source_path"], []).append((r["stage"], r["reason"]))
    outcomes = []
    for p in corpus.planted:
        key = p.record_key.split("#")[0]
        if p.partition in failed:
            outcomes.append(Outcome(p, "lost", False, "its partition failed"))
            continue
        stated = rows.get((p.path, key), []) if p.record_key else by_path.get(p.path, [])
        stages = {s for s, _ in stated}
        present = (p.path, key) in doc_keys if p.record_key else p.path in doc_paths
        if p.record_key.endswith("#2"):  # the second record with a duplicate id: its rejection is the row
            present = any("duplicate record id" in reason for _, reason in stated)
            outcome = REJECTED if present else "absent"
        elif not present:
            outcome = REJECTED if "ingest" in stages else "absent"
        elif "budget" in stages:
            outcome = CUT
        elif "repaired" in stages:
            outcome = REPAIRED
        else:
            outcome = INGESTED
        if p.expect == IGNORED:
            ok = not present and not stated
        elif p.expect == REJECTED:
            ok = outcome == REJECTED and all(reason.strip() for _, reason in stated)
        else:
            ok = outcome == p.expect
        detail = "; ".join(f"{s}: {r}" for s, r in stated)[:400]
        outcomes.append(Outcome(p, outcome, ok, detail))
    return FuzzReport(outcomes, _leaks(corpus, data_root), failed)


def _leaks(corpus: FuzzCorpus, data_root: Path) -> list[str]:
    """Where the canary text or the canary picture reached a table under ``data_root``."""
    found = []
    tables = data_root / "tables"
    for path in sorted(tables.rglob("*.parquet")) if tables.exists() else []:
        df = pl.read_parquet(path)
        for name, dtype in df.schema.items():
            col = df[name]
            if (dtype == pl.String and col.str.contains(corpus.canary, literal=True).any()) or (
                isinstance(dtype, pl.List)
                and dtype.inner == pl.String
                and col.list.join(" ").str.contains(corpus.canary, literal=True).any()
            ):
                found.append(f"{path.relative_to(data_root)}:{name}")
        if {"width", "height"} <= set(df.columns):
            w, h = CANARY_SIZE
            if df.filter((pl.col("width") == w) & (pl.col("height") == h)).height:
                found.append(f"{path.relative_to(data_root)}: the canary picture ({w}x{h})")
    return found
