"""M3KG-RAG against MG2-RAG on the media test set: right file and right moment, and what ingest costs.

Builds ``tests/data/media_corpus`` through the real Dagster jobs (cold), times ingest per media
minute (``ingest_partition`` alone, and the whole build), then asks every question of
``tests/data/media_queries/questions.json``:

- ``m3kg`` gets the question with its query video (or picture);
- ``mg2`` answers text and pictures, not video: it gets the question with the video's middle frame.

Scores (``mmkg.eval.media``): hit@k (a pointer in the gold file with its midpoint in the gold span),
file@1, span IoU@1, by question kind (video, picture, text).

``--transcripts subtitles`` (the default) indexes the corpus as committed, its subtitle sidecars read and speech
recognition off; ``--transcripts asr`` indexes a copy without any sidecar, every transcript from the installed
Whisper base (``MMKG_ASR_MODEL`` unset), to compare retrieval over recognized speech with retrieval over subtitles.

    .venv/bin/python benchmarks/media_retrieval.py [--data-root /tmp/media-bench] [--transcripts asr]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "media_corpus"
QUESTIONS = ROOT / "tests" / "data" / "media_queries" / "questions.json"
METHODS = ("mg2", "m3kg:paper", "m3kg:default")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-root", type=Path, default=Path(tempfile.gettempdir()) / "mmkg-media-bench")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--hd-seconds", type=float, default=60.0, help="length of the 720p ingest probe (0: skip)")
    ap.add_argument("--transcripts", choices=("subtitles", "asr"), default="subtitles",
                    help="subtitle sidecars with ASR off, or no sidecars and the installed Whisper")
    args = ap.parse_args()
    import os

    corpus = CORPUS
    if args.transcripts == "asr":
        corpus = args.data_root.parent / f"{args.data_root.name}-corpus-asr"
        shutil.rmtree(corpus, ignore_errors=True)
        shutil.copytree(CORPUS, corpus, ignore=shutil.ignore_patterns("*.srt", "*.vtt", "README.md"))
        os.environ.pop("MMKG_ASR_MODEL", None)  # the default: the installed Whisper base
    else:
        os.environ["MMKG_ASR_MODEL"] = "off"
    if args.hd_seconds:
        hd_ingest(args.data_root / "hd", args.hd_seconds)

    from mmkg.eval.media import load_questions, score
    from mmkg.index import Index
    from mmkg.ingest import ingest_partition, list_partitions
    from mmkg.ingest.images import ImageStore
    from mmkg.ingest.media import uniform_frames
    from mmkg.query import Query
    from mmkg.retrieval import search
    from pipelines.build import build_index

    shutil.rmtree(args.data_root, ignore_errors=True)
    # ingest alone (decode, frames, subtitles), per media minute
    t0 = time.perf_counter()
    minutes = 0.0
    n_frames = 0
    from mmkg.ingest.asr import load_transcriber

    transcriber = load_transcriber("off" if args.transcripts == "subtitles" else "")
    for part in list_partitions(corpus):
        res = ingest_partition(corpus, part, ImageStore(args.data_root / "ingest-only"), transcriber=transcriber)
        minutes += sum(m["duration_s"] for m in res.media) / 60
        n_frames += sum(m["frames"] for m in res.media)
    ingest_s = time.perf_counter() - t0
    report = build_index(corpus, args.data_root, reuse=False, cold=True)
    print(f"transcripts: {args.transcripts}")
    print(f"media: {minutes:.2f} min in {len(list_partitions(corpus))} partitions, {n_frames} frames sampled")
    print(f"ingest alone: {ingest_s:.2f} s = {ingest_s / minutes:.2f} s per media minute")
    print(f"cold build (Dagster, all assets, publish): {report.wall_s:.1f} s = {report.wall_s / minutes:.1f} s per "
          f"media minute; {report.chunks} chunks")  # fmt: skip

    index = Index.open(args.data_root / "index")
    questions = load_questions(QUESTIONS)
    frames_dir = args.data_root / "mid-frames"
    frames_dir.mkdir(exist_ok=True)
    print(f"\n{len(questions)} questions; index {index.version}")
    cols = ("hit@1", "hit@3", "hit@5", "file@1", "span_iou@1")
    print(f"{'method':<14} {'kind':<8} {'n':>3} " + " ".join(f"{c:>10}" for c in cols) + f" {'ms/q':>6}")
    for method in args.methods.split(","):
        # untimed warm-up: the first picture query of a process loads the OCR models (kept per process since
        # issue 37, by mmkg.retrieval.query_media)
        warm = next(q for q in questions if q.image is not None)
        search(index, Query(text=warm.question, image=warm.image), k=5, strategy=method)
        by_kind: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        for q in questions:
            kind = "video" if q.video else "picture" if q.image else "text"
            image = q.image
            if method.startswith("mg2") and q.video is not None:
                ((_, mid),) = uniform_frames(q.video, 1)
                image = frames_dir / f"{q.id}.png"
                mid.save(image)
            query = (
                Query(text=q.question, image=image)
                if method.startswith("mg2")
                else Query(text=q.question, image=q.image, video=q.video)
            )
            t = time.perf_counter()
            result = search(index, query, k=5, strategy=method)
            ms = (time.perf_counter() - t) * 1000
            for key in (kind, "all"):
                agg = by_kind[key]
                agg["n"] += 1
                agg["ms"] += ms
                for name, value in score(result, q).items():
                    agg[name] += value
        for kind in ("video", "picture", "text", "all"):
            a = by_kind[kind]
            n = a["n"] or 1
            values = " ".join(f"{a[c] / n:>10.3f}" for c in cols)
            print(f"{method:<14} {kind:<8} {int(a['n']):>3} {values} {a['ms'] / n:>6.0f}")


def hd_ingest(folder: Path, seconds: float) -> None:
    """Ingest cost of a 1280x720, 30 fps H.264 video with a cut every 5 s (written here with PyAV), per minute."""
    import av
    import numpy as np

    from mmkg.ingest import ingest_partition
    from mmkg.ingest.images import ImageStore

    part = folder / "corpus" / "hd"
    part.mkdir(parents=True, exist_ok=True)
    path = part / "hd.mp4"
    rng = np.random.default_rng(0)
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=30, options={"preset": "ultrafast", "crf": "30"})
        stream.width, stream.height, stream.pix_fmt = 1280, 720, "yuv420p"
        base = np.zeros((720, 1280, 3), np.uint8)
        for i in range(int(seconds * 30)):
            if i % 150 == 0:  # a new scene: another colour field with noise
                base = (rng.integers(0, 255, 3) * np.ones((720, 1280, 3))).astype(np.uint8)
                base[::7] = rng.integers(0, 255, (base[::7].shape), dtype=np.uint8)
            frame = np.roll(base, i % 150 * 4, axis=1)  # panning inside the scene
            for packet in stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    t0 = time.perf_counter()
    res = ingest_partition(folder / "corpus", "hd", ImageStore(folder / "data"))
    spent = time.perf_counter() - t0
    m = res.media[0]
    print(
        f"1280x720 30 fps H.264, {m['duration_s']:.0f} s ({path.stat().st_size / 1e6:.1f} MB): {m['frames']} frames, "
        f"{m['scene_changes']} cuts; ingest {spent:.2f} s = {spent / (m['duration_s'] / 60):.2f} s per media minute"
    )


if __name__ == "__main__":
    main()
