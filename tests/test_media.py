"""Video and audio in the corpus and in queries: frames, transcripts, time links, M3KG-RAG with GRASP.

The media test set (``tests/data/media_corpus``, ``tests/data/media_queries``) is real H.264/VP9/AAC/Opus
files rendered by ``tests/media/make_media.py`` with espeak-ng narration and subtitle sidecars; its
README lists every scene and its time span.
"""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from mmkg.ingest import ingest_partition
from mmkg.ingest.base import Limits, Rejected
from mmkg.ingest.images import ImageStore
from mmkg.ingest.media import layout, parse_subtitles, probe, sample_frames, sidecar_language, sidecars, uniform_frames
from mmkg.retrieval import retrieve, search

DATA = Path(__file__).parent / "data"
CORPUS = DATA / "media_corpus"
QUERIES = DATA / "media_queries"


def _copy_partition(tmp_path: Path, partition: str, names: list[str]) -> Path:
    root = tmp_path / "corpus"
    (root / partition).mkdir(parents=True)
    for name in names:
        shutil.copy(CORPUS / partition / name, root / partition / name)
    return root


# -- frames ----------------------------------------------------------------------------------------------


def test_frames_at_scene_cuts_and_uniform_ticks():
    path = CORPUS / "talks" / "bridges.mp4"
    info = probe(path, Limits())
    assert info.has_video and info.has_audio and (info.width, info.height) == (320, 240)
    frames = sample_frames(path, info, Limits())
    times = [round(t, 1) for t, _ in frames.frames]
    # three slides cut at 7 s and 14 s (README); the 10 s tick is within 5 s of the 7 s cut, so skipped
    assert times == [0.0, 7.0, 14.0]
    assert frames.scene_changes == 2 and frames.cuts == [7.0, 14.0]
    assert frames.frames[1][1].size == (320, 240)
    # a frame every 2 s: the ticks are added, and cuts still come first
    dense = sample_frames(path, info, Limits(frame_interval_s=2.0))
    dense_times = [round(t, 1) for t, _ in dense.frames]
    assert {0.0, 7.0, 14.0} <= set(dense_times) and len(dense_times) >= 9
    assert all(b - a >= 0.99 for a, b in itertools.pairwise(dense_times))


def test_frame_budget_per_minute_bounds_the_work():
    path = CORPUS / "talks" / "bridges.mp4"
    info = probe(path, Limits())
    capped = sample_frames(path, info, Limits(frame_interval_s=0.5, max_frames_per_minute=6))
    # 20 s of video at 6 frames a minute: at most 6 * (t/60 + 1) frames by any time t
    assert len(capped.frames) <= 8
    assert all(i < 6 * (t / 60 + 1) for i, (t, _) in enumerate(capped.frames))


def test_uniform_query_frames_by_seeking():
    frames = uniform_frames(QUERIES / "q01.mp4", 4)
    assert len(frames) == 4
    times = [t for t, _ in frames]
    assert times == sorted(times) and times[0] < times[-1]


# -- transcripts -----------------------------------------------------------------------------------------


def test_srt_and_vtt_segments_keep_their_times():
    srt = parse_subtitles((CORPUS / "talks" / "bridges.srt").read_bytes(), ".srt")
    assert len(srt) == 6
    assert srt[0].text == "The Golden Gate Bridge opened in 1937."
    assert (srt[0].start, srt[0].end) == pytest.approx((0.2, 3.16), abs=0.01)
    vtt = parse_subtitles((CORPUS / "talks" / "explorers.vtt").read_bytes(), ".vtt")
    assert len(vtt) == 6
    # milliseconds kept (webvtt's start_in_seconds truncates to whole seconds)
    assert vtt[1].start == pytest.approx(2.733, abs=0.002)


@pytest.mark.parametrize(
    ("data", "suffix", "message"),
    [
        ((CORPUS / "clips" / "glitchy.srt").read_bytes(), ".srt", "cannot be parsed as SRT"),
        (b"WEBVTT\n\n00:01.000 --> banana\nhello\n", ".vtt", "no cue with text"),  # webvtt skips bad cues
        (b"1\n00:00:05,000 --> 00:00:01,000\nbackwards\n", ".srt", "ends before it starts"),
        (b"\xff\xfe\x00garbage", ".srt", "not UTF-8"),
        (b"WEBVTT\n\n", ".vtt", "cannot be parsed|no cue"),
    ],
)
def test_malformed_subtitles_are_named(data: bytes, suffix: str, message: str):
    with pytest.raises(Rejected, match=message):
        parse_subtitles(data, suffix)


def test_sidecars_match_stem_and_language_tag(tmp_path: Path):
    for name in ("talk.mp4", "talk.srt", "talk.en.vtt", "talk.extra.en.srt", "talks.srt", "other.srt"):
        (tmp_path / name).write_bytes(b"x")
    assert [p.name for p in sidecars(tmp_path / "talk.mp4")] == ["talk.srt", "talk.en.vtt"]
    assert [sidecar_language(p, tmp_path / "talk.mp4") for p in sidecars(tmp_path / "talk.mp4")] == ["", "en"]


def test_layout_puts_speech_and_frames_of_one_shot_on_one_page():
    from mmkg.ingest.media import Segment

    segs = [Segment(0.2, 3.0, "one"), Segment(3.5, 6.0, "two"), Segment(7.2, 9.0, "three"), Segment(40.0, 41.0, "x")]
    text, page_starts, spans, starts = layout(segs, 45.0, 30.0, cuts=[7.0])
    assert starts == [0.0, 7.0, 37.0]  # the cut, then 30 s later within the long second shot
    assert text == "one\n\ntwo\n\nthree\n\nx"
    assert page_starts == [0, 10, 17]
    assert [(s["char_start"], s["char_end"], s["t_start"]) for s in spans] == [
        (0, 3, 0.2), (5, 8, 3.5), (10, 15, 7.2), (17, 18, 40.0),
    ]  # fmt: skip


# -- a partition with media -------------------------------------------------------------------------------


def test_partition_with_media_sidecars_and_bad_files(tmp_path: Path):
    root = _copy_partition(
        tmp_path, "clips", ["observatories.mkv", "observatories.srt", "volcanoes.mp4", "glitchy.mp4", "glitchy.srt",
                            "broken.mp4"],
    )  # fmt: skip
    part = root / "clips"
    (part / "empty.mp4").write_bytes(b"")
    (part / "notes.txt").write_text("Mauna Kea is a dormant volcano on the island of Hawaii.")
    (part / "lonely.vtt").write_text("WEBVTT\n\n00:00.000 --> 00:01.000\nhi\n")
    # a WebM cut in the middle: opens, and its stream breaks
    data = (CORPUS / "talks" / "explorers.webm").read_bytes()
    (part / "cut.webm").write_bytes(data[: len(data) * 6 // 10])
    res = ingest_partition(root, "clips", ImageStore(tmp_path / "data"))
    docs = {d["source_path"]: d for d in res.documents.iter_rows(named=True)}
    assert set(docs) == {"clips/observatories.mkv", "clips/volcanoes.mp4", "clips/glitchy.mp4", "clips/notes.txt",
                         "clips/cut.webm"}  # fmt: skip
    obs = docs["clips/observatories.mkv"]
    assert obs["kind"] == "video" and obs["duration_s"] == pytest.approx(20.0, abs=0.2)
    assert obs["n_pages"] == 3 and len(obs["time_segments"]) == 6
    assert obs["text"].startswith("The Mauna Kea Observatories stand on a dormant volcano in Hawaii.")
    assert docs["clips/volcanoes.mp4"]["text"].strip() == ""  # no sidecar, no ASR model: frames only (3 empty pages)
    reasons = {(r["source_path"], r["stage"]): r["reason"] for r in res.rejected.iter_rows(named=True)}
    assert "cannot open as a media file" in reasons[("clips/broken.mp4", "ingest")]
    assert reasons[("clips/empty.mp4", "ingest")] == "file is empty (0 bytes)"
    assert "no video or audio file of the same name" in reasons[("clips/lonely.vtt", "ingest")]
    assert "cannot be parsed as SRT" in reasons[("clips/glitchy.srt", "transcript")]
    assert "clips/glitchy.mp4 is ingested without it" in reasons[("clips/glitchy.srt", "transcript")]
    assert "no ASR model (MMKG_ASR_MODEL is off" in reasons[("clips/volcanoes.mp4", "transcript")]
    assert "breaks after" in reasons[("clips/cut.webm", "frames")]
    frames = res.images.filter(pl.col("role") == "video_frame")
    vol = frames.filter(pl.col("source").str.starts_with("clips/volcanoes.mp4#t="))
    assert vol["t_s"].to_list() == pytest.approx([0.0, 7.0, 13.0], abs=0.01) and vol["page"].to_list() == [1, 2, 3]
    assert frames.filter(pl.col("source").str.starts_with("clips/cut.webm")).height >= 1  # frames before the break
    by_path = {m["source_path"]: m for m in res.media}
    assert by_path["clips/observatories.mkv"]["transcript"] == "clips/observatories.srt"
    assert by_path["clips/volcanoes.mp4"]["frames"] == 3
    # where each transcript came from, per document (the sidecar is untagged: no language)
    assert (obs["transcript_source"], obs["language"]) == ("clips/observatories.srt", None)
    assert docs["clips/volcanoes.mp4"]["transcript_source"] is None and docs["clips/notes.txt"]["language"] is None


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        (Limits(max_media_seconds=10), "min long, over the limit"),
        (Limits(max_image_pixels=10_000), "320x240 = 76,800 px, over the limit"),
    ],
)
def test_long_or_huge_media_is_rejected_before_decoding(tmp_path: Path, limits: Limits, message: str):
    root = _copy_partition(tmp_path, "talks", ["bridges.mp4", "bridges.srt"])
    res = ingest_partition(root, "talks", ImageStore(tmp_path / "data"), limits)
    assert res.documents.is_empty() and res.images.is_empty()
    assert message in res.rejected["reason"][0]


def test_sidecar_edit_changes_the_document(tmp_path: Path):
    root = _copy_partition(tmp_path, "talks", ["bridges.mp4", "bridges.srt"])
    before = ingest_partition(root, "talks", ImageStore(tmp_path / "data")).documents
    srt = root / "talks" / "bridges.srt"
    srt.write_text(srt.read_text().replace("1937", "1938"))
    after = ingest_partition(root, "talks", ImageStore(tmp_path / "data")).documents
    assert before["content_sha256"][0] != after["content_sha256"][0]
    assert "1938" in after["text"][0]


def test_asr_transcribes_media_without_subtitles(tmp_path: Path):
    from tiny_models import write_tiny_whisper

    from mmkg.ingest.asr import WhisperTranscriber

    model = write_tiny_whisper(tmp_path / "whisper")
    root = _copy_partition(tmp_path, "clips", ["volcanoes.mp4"])
    res = ingest_partition(root, "clips", ImageStore(tmp_path / "data"), transcriber=WhisperTranscriber(str(model)))
    doc = res.documents.row(0, named=True)
    assert res.media[0]["transcript"] == f"asr:{model}"
    # a random model says nonsense, with times inside the file, in order
    segs = doc["time_segments"]
    assert segs and all(0 <= s["t_start"] <= s["t_end"] <= doc["duration_s"] + 0.01 for s in segs)
    assert not res.rejected.filter(pl.col("stage") == "transcript").height


def test_missing_asr_model_is_a_clear_error(tmp_path: Path):
    from mmkg.ingest.asr import WhisperTranscriber

    with pytest.raises(OSError, match="does not exist"):
        WhisperTranscriber(str(tmp_path / "no-such-model"))


def test_old_partitions_read_with_nulls_in_added_columns(tmp_path: Path):
    """A partition written before the media columns existed reads beside a new one (an upgrade, no rebuild)."""
    from mmkg import schemas
    from resources.parquet_io import PolarsParquetIOManager

    row = {c: None for c in schemas.CHUNKS} | {"chunk_id": "c1", "partition": "old", "text": "x", "image_ids": []}
    new = schemas.frame([row], schemas.CHUNKS)
    (tmp_path / "chunks").mkdir()
    new.write_parquet(tmp_path / "chunks" / "new.parquet")
    new.drop("t_start", "t_end").write_parquet(tmp_path / "chunks" / "old.parquet")
    io = PolarsParquetIOManager(base_dir=str(tmp_path))
    both = io._read("chunks", [tmp_path / "chunks" / "old.parquet", tmp_path / "chunks" / "new.parquet"])
    assert both.columns == list(schemas.CHUNKS) and both.height == 2 and both["t_start"].null_count() == 2
    assert schemas.conform(new.drop("t_start", "t_end"), schemas.CHUNKS, "chunks").columns[-2:] == ["t_start", "t_end"]
    # an input that names its columns reads only those, an added one filled in for the old partition
    some = io._read("chunks", [tmp_path / "chunks" / "old.parquet", tmp_path / "chunks" / "new.parquet"],
                    columns=["chunk_id", "t_start"])  # fmt: skip
    assert some.columns == ["chunk_id", "t_start"] and some.height == 2 and some["t_start"].null_count() == 2
    # any other missing column is still an error
    with pytest.raises(schemas.SchemaError, match="missing column"):
        schemas.conform(new.drop("text"), schemas.CHUNKS, "chunks")


# -- the index: time links, modality-wise retrieval, GRASP ------------------------------------------------


@pytest.fixture(scope="module")
def media_index(tmp_path_factory: pytest.TempPathFactory):
    """The media test set indexed through the real Dagster jobs."""
    from mmkg.index import Index
    from pipelines.build import build_index

    data = tmp_path_factory.mktemp("media-data")
    build_index(CORPUS, data, reuse=False)
    return Index.open(data / "index")


def test_frames_link_to_the_speech_of_their_shot(media_index):
    chunks = media_index.chunks.filter(pl.col("source_path") == "talks/bridges.mp4").sort("chunk_index")
    assert chunks["t_start"].to_list() == pytest.approx([0.2, 7.2, 14.2], abs=0.01)
    strauss = chunks.row(1, named=True)
    assert strauss["text"].startswith("Joseph Strauss was a bridge engineer")
    occ = media_index.image_occurrences.filter(pl.col("image_id").is_in(strauss["image_ids"]))
    assert occ["t_s"].to_list() == pytest.approx([7.0], abs=0.01)
    # the contextual edge is in the graph
    nodes = media_index.graph.nodes
    chunk_node = nodes.with_row_index().filter((pl.col("kind") == "chunk") & (pl.col("key") == strauss["chunk_id"]))
    image_node = nodes.with_row_index().filter((pl.col("kind") == "image") & (pl.col("key") == occ["image_id"][0]))
    assert media_index.graph.adjacency[chunk_node["index"][0], image_node["index"][0]] > 0


def test_text_query_points_at_the_time_span(media_index):
    r = retrieve(media_index, "Which river does the Brooklyn Bridge cross?", k=3)
    top = r.chunks[0]
    assert top.source_path == "talks/bridges.mp4" and (top.t_start, top.t_end) == pytest.approx((14.2, 18.88), abs=0.05)
    assert r.media[0].via == "chunk" and r.media[0].source_path == "talks/bridges.mp4"


def test_video_query_finds_the_frames_of_a_video_without_transcript(media_index):
    """volcanoes.mp4 has no subtitles and no ASR here: only its frames can be found, by the query's frames."""
    from mmkg.query import Query

    r = search(media_index, Query(video=QUERIES / "q06.mp4"), k=5, strategy="m3kg")
    best = r.media[0]
    assert (best.source_path, best.via) == ("clips/volcanoes.mp4", "frame")
    assert 13.0 <= best.t_start <= 20.0  # the Krakatoa shot
    assert any("video query: 4 frame(s)" in n for n in r.notes)
    assert not any("audio" in n for n in r.notes)  # q06.mp4 has no sound track


def test_m3kg_text_query_lifts_sentences_to_triples(media_index):
    r = retrieve(media_index, "In which year did Marie Curie win the Nobel Prize in Chemistry?", strategy="m3kg", k=3)
    assert r.chunks[0].source_path == "talks/podcast.ogg"
    assert r.relations and all(rel.doc_id == r.chunks[0].doc_id for rel in r.relations if rel.hop == 0)
    assert any("GRASP visual grounding skipped: the query has no picture or video" in n for n in r.notes)
    assert any("LLM keep/drop mask skipped" in n for n in r.notes)


def _triple(rid: str, subject: str, obj: str) -> dict:
    from mmkg.entities import canonical_key

    return {
        "relation_id": rid, "partition": "p", "doc_id": "d", "chunk_id": "c", "sentence_id": "s", "subject": subject,
        "subject_key": canonical_key(subject), "predicate": "is near", "object": obj, "object_key": None,
        "negated": False,
    }  # fmt: skip


def test_grasp_prunes_a_triple_whose_entities_the_frames_do_not_show(media_index, tmp_path: Path):
    """Eq. 4: presence is the best OCR confidence over the query frames; a triple scores head + tail."""
    from mmkg.retrieval.m3kg import M3KG, Triple
    from mmkg.retrieval.results import RetrievalResult

    frames = uniform_frames(QUERIES / "q01.mp4", 4)  # the GOLDEN GATE BRIDGE slide
    paths = []
    for i, (_, img) in enumerate(frames):
        paths.append(tmp_path / f"f{i}.png")
        img.save(paths[-1])
    shown = Triple(_triple("r1", "Golden Gate Bridge", "San Francisco Bay"), 0.5, 0)
    absent = Triple(_triple("r2", "Brooklyn Bridge", "East River"), 0.5, 0)
    strategy = M3KG(M3KG.presets["paper"].override(eta_v=0.5))
    presence = strategy._presence(media_index, [shown, absent], paths, _empty(RetrievalResult))
    s_shown = presence[shown.row["subject_key"]]
    assert s_shown >= 0.9 and presence.get(absent.row["subject_key"], 0.0) == 0.0

    def kept(eta: float) -> list[str]:
        strat = M3KG(M3KG.presets["paper"].override(eta_v=eta))
        triples = {t.row["relation_id"]: Triple(t.row, t.score, 0) for t in (shown, absent)}
        return [t.row["relation_id"] for t in strat._grasp(media_index, triples, paths, "q", _empty(RetrievalResult))]

    assert kept(0.5) == ["r1"]
    assert kept(s_shown) == ["r1"]  # at η_v exactly: kept
    assert kept(s_shown + 1e-3) == []  # just above: pruned
    assert kept(0.0) == ["r1", "r2"]


def _empty(cls):
    return cls(version="v", strategy="m3kg", preset="paper", query_text=None, query_image=None, chunks=[])


def test_grasp_llm_mask_through_an_openai_server(media_index, scripted_llm):
    from mmkg.retrieval.m3kg import M3KG, Triple
    from mmkg.retrieval.results import RetrievalResult

    triples = [Triple(_triple(f"r{i}", f"Thing {i}", "X"), 1.0 - i / 10, 0) for i in range(3)]
    scripted_llm.replies = ["Keep 0, 2", "I am not sure."]
    strat = M3KG(M3KG.presets["paper"].override(filter_backend="openai", filter_model="tiny",
                                                filter_base_url=scripted_llm.url))  # fmt: skip
    first = _empty(RetrievalResult)
    assert [t.row["relation_id"] for t in strat._llm_mask(triples, "q", first)] == ["r0", "r2"]
    assert "kept 2 of 3" in first.notes[-1]
    assert "Triplets:\\n[0] Thing 0 | is near | X" in json.dumps(scripted_llm.asked[0])
    second = _empty(RetrievalResult)
    assert len(strat._llm_mask(triples, "q", second)) == 3  # unreadable: keep all (conservative)
    assert "all kept" in second.notes[-1]


def test_cli_video_query(media_index):
    from typer.testing import CliRunner

    from mmkg.cli import app

    res = CliRunner().invoke(
        app, ["query", "--video", str(QUERIES / "q05.mp4"), "--strategy", "m3kg", "--index", str(media_index.root),
              "--json"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout[res.stdout.index("{") :])
    assert out["media"][0]["source_path"] == "clips/volcanoes.mp4" and out["media"][0]["t_start"] < 7.0
    bad = CliRunner().invoke(app, ["query", "--video", str(QUERIES / "q05.mp4"), "--index", str(media_index.root)])
    assert bad.exit_code == 2 and "does not answer ['video'] queries" in bad.output
    bad = CliRunner().invoke(app, ["query", "--video", "/no/such.mp4", "--strategy", "m3kg"])
    assert bad.exit_code == 2 and "not found" in bad.output


def test_answer_cites_the_moment(media_index):
    """A grounded answer from a transcript names the file and time span it cites."""
    from mmkg.generation import ExtractiveGenerator, answer

    ans = answer(media_index, "Which river does the Brooklyn Bridge cross?", ExtractiveGenerator(), k=3)
    assert "East River" in ans.text
    cited = ans.citations[0]
    assert cited.source_path == "talks/bridges.mp4"
    assert cited.time_span == pytest.approx((14.2, 18.88), abs=0.05)


def test_audio_is_read_in_bounded_blocks():
    from mmkg.ingest.media import SAMPLE_RATE, iter_audio, read_audio

    path = CORPUS / "talks" / "podcast.ogg"
    blocks = list(iter_audio(path, 1000, block_s=4))
    assert [o for o, _ in blocks] == [0.0, 4.0, 8.0, 12.0]
    assert all(a.size == 4 * SAMPLE_RATE for _, a in blocks[:-1]) and a_dtype(blocks)
    whole = read_audio(path, 1000)
    assert whole.size == sum(a.size for _, a in blocks) and abs(whole.size / SAMPLE_RATE - 15.0) < 0.1
    assert read_audio(path, 5).size == 5 * SAMPLE_RATE


def a_dtype(blocks) -> bool:
    return all(str(a.dtype) == "float32" for _, a in blocks)


def test_audio_query_needs_asr(media_index, tmp_path: Path):
    from tiny_models import write_tiny_whisper

    from mmkg.query import Query

    audio = CORPUS / "talks" / "podcast.ogg"
    with pytest.raises(ValueError, match="no ASR model to transcribe it"):
        search(media_index, Query(audio=audio), strategy="m3kg")
    model = write_tiny_whisper(tmp_path / "whisper")
    r = search(media_index, Query(text="Marie Curie", audio=audio), strategy="m3kg", asr_model=str(model))
    assert any("the query's audio says" in n for n in r.notes)
    assert any("audio grounding (text-to-audio grounding, Eq. 5) skipped" in n for n in r.notes)
    assert r.chunks[0].source_path == "talks/podcast.ogg"


def test_a_silent_shot_frame_stays_unattached():
    """Frames attach to speech of their own shot: a silent shot's frame does not borrow the previous shot's chunk."""
    from mmkg import schemas
    from mmkg.chunking import chunk_documents
    from mmkg.ingest.media import Segment

    text, page_starts, spans, _ = layout([Segment(1.0, 9.0, "The lighthouse stood on Pharos.")], 20.0, 30.0,
                                              cuts=[10.0])  # fmt: skip
    doc = {c: None for c in schemas.DOCUMENTS} | {
        "doc_id": "d", "partition": "p", "source_path": "p/v.mp4", "kind": "video", "title": "v", "text": text,
        "page_starts": page_starts, "n_pages": len(page_starts), "time_segments": spans, "duration_s": 20.0,
    }  # fmt: skip
    img = {c: None for c in schemas.IMAGES} | {"partition": "p", "doc_id": "d", "role": "video_frame"}
    images = schemas.frame(
        [img | {"image_id": "f1", "occurrence": 0, "page": 1, "t_s": 2.0},
         img | {"image_id": "f2", "occurrence": 1, "page": 2, "t_s": 11.0}], schemas.IMAGES,
    )  # fmt: skip
    chunks = chunk_documents(schemas.frame([doc], schemas.DOCUMENTS), images)
    assert chunks.height == 1 and chunks["image_ids"].to_list() == [["f1"]]
    assert (chunks["t_start"][0], chunks["t_end"][0], chunks["page"][0]) == (1.0, 9.0, 1)


def test_m3kg_keeps_to_the_filters(media_index):
    """A video query restricted to one partition points only at files of that partition."""
    from mmkg.query import Query

    query = Query(text="Which island is this?", video=QUERIES / "q06.mp4")  # the Krakatoa shot, in clips/
    free = search(media_index, query, k=5, strategy="m3kg")
    assert free.media[0].source_path == "clips/volcanoes.mp4" and free.timings_ms["total"] > 0
    kept = search(media_index, query, k=5, strategy="m3kg", filters={"partition": "talks"})
    assert kept.chunks and all(c.partition == "talks" for c in kept.chunks)
    assert kept.media and all(m.source_path.startswith("talks/") for m in kept.media)
