"""Per-file and per-partition budgets: work over a budget is cut with a recorded reason, never silently."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from conftest import write_pdf
from PIL import Image

from mmkg.chunking import chunk_documents
from mmkg.ingest import ImageStore, Limits, ingest_partition
from mmkg.ingest.base import ImageRef, SourceDocument
from mmkg.ingest.budget import apply_text_budgets, remove_spans
from mmkg.settings import Settings
from resources import CorpusResource


def run(root: Path, tmp_path: Path, limits: Limits | None = None):
    return ingest_partition(root, "p", ImageStore(tmp_path / "data"), limits)


def rows(result, stage: str) -> dict[str, str]:
    return {
        f"{r['source_path']}|{r['record_key']}": r["reason"]
        for r in result.rejected.iter_rows(named=True)
        if r["stage"] == stage
    }


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    (tmp_path / "corpus" / "p").mkdir(parents=True)
    return tmp_path / "corpus"


def doc(text: str, page_starts: list[int] | None = None, images: list[ImageRef] | None = None) -> SourceDocument:
    return SourceDocument("p/x.md", "", "markdown", "X", text, "0" * 64, len(text), page_starts or [0], images or [])


def test_remove_spans_moves_every_offset():
    d = doc(
        "aaaa XXXX bbbb YYYY cccc",
        page_starts=[0, 10, 20],
        images=[ImageRef(None, "i", "linked", 12), ImageRef(None, "j", "linked", 7)],
    )
    d.time_segments = [
        {"char_start": 0, "char_end": 4, "t_start": 0.0, "t_end": 1.0},
        {"char_start": 5, "char_end": 9, "t_start": 1.0, "t_end": 2.0},  # wholly removed
        {"char_start": 10, "char_end": 24, "t_start": 2.0, "t_end": 3.0},
    ]
    remove_spans(d, [(5, 10), (15, 20)])
    assert d.text == "aaaa bbbb cccc"
    assert d.page_starts == [0, 5, 10]
    assert [r.char_offset for r in d.images] == [7, 5]  # one inside a removed span moves to where it was
    assert [(s["char_start"], s["char_end"]) for s in d.time_segments] == [(0, 4), (5, 14)]
    # every kept character is where the new offsets say
    assert d.text[d.page_starts[1] : d.page_starts[1] + 4] == "bbbb"


def test_run_on_text_is_cut_but_tables_and_prose_are_not():
    run_on = " ".join(f"word{i}" for i in range(5000))
    table = "\n".join(f"| row {i} | value {i} |" for i in range(2000))  # long, but every row ends in a break
    prose = " ".join(f"Sentence number {i} ends here." for i in range(2000))
    d = doc(f"Start.\n\n{run_on}\n\n{table}\n\n{prose}")
    before_table = d.text.index("| row 0 |")
    reasons = apply_text_budgets(d, Limits(max_sentence_chars=1000))
    assert len(reasons) == 1 and "run-on" in reasons[0] and "MMKG_MAX_SENTENCE_CHARS" in reasons[0]
    kept = d.text[: d.text.index("| row 0 |")]
    assert len(kept) < 1100 < before_table
    assert not kept.rstrip().endswith("word")  # cut at a word boundary
    assert table in d.text and prose in d.text


def test_character_cap_drops_trailing_pages_and_their_pictures():
    pages = [f"Page {i} text. " * 20 for i in range(10)]
    text = "\n\n".join(pages)
    starts = [sum(len(p) + 2 for p in pages[:i]) for i in range(10)]
    refs = [ImageRef(None, f"r{i}", "page_render", starts[i], i + 1) for i in range(10)]
    d = doc(text, starts, refs)
    reasons = apply_text_budgets(d, Limits(max_document_chars=starts[3] + 50))
    assert len(reasons) == 1 and "MMKG_MAX_DOCUMENT_CHARS" in reasons[0] and "6 picture(s)" in reasons[0]
    assert len(d.page_starts) == 4 and [r.page for r in d.images] == [1, 2, 3, 4]
    assert len(d.text) <= starts[3] + 50


def test_sentence_cap_keeps_the_first_sentences():
    d = doc("Title\n\n" + "a. " * 5000)
    reasons = apply_text_budgets(d, Limits(max_sentences_per_document=100))
    assert len(reasons) == 1 and "about 5,001 sentences; kept the first 100" in reasons[0]
    assert d.text.count("a.") == 99  # the blank line after the title is the first sentence end


def test_budgets_are_recorded_per_file_and_the_partition_still_reads(corpus: Path, tmp_path: Path):
    p = corpus / "p"
    (p / "junk.md").write_text("# Junk\n\n" + " ".join(f"w{i}" for i in range(300_000)), encoding="utf-8")
    (p / "good.md").write_text("# Good\n\nAda Park was born in Lisbon.", encoding="utf-8")
    (p / "big.json").write_text(json.dumps({"id": "r", "title": "R", "text": "x" * 3_100_000}), encoding="utf-8")
    res = run(corpus, tmp_path, Limits(max_text_file_bytes=3_000_000))
    cut = rows(res, "budget")
    assert list(cut) == ["p/junk.md|"] and "run-on" in cut["p/junk.md|"]
    assert "MMKG_MAX_TEXT_FILE_BYTES" in rows(res, "ingest")["p/big.json|"]
    lengths = dict(zip(res.documents["source_path"], res.documents["text"].str.len_chars(), strict=True))
    assert lengths["p/junk.md"] <= 5000 + 10 and lengths["p/good.md"] > 20
    assert res.truncated == 1


def test_partition_budget_rejects_documents_past_it(corpus: Path, tmp_path: Path):
    for i in range(4):
        (corpus / "p" / f"d{i}.md").write_text(f"# D{i}\n\n" + "Some words here. " * 20, encoding="utf-8")
    res = run(corpus, tmp_path, Limits(max_partition_chars=700))
    assert res.documents.height == 2
    over = rows(res, "ingest")  # not read at all: an ingest rejection that names the budget
    assert sorted(over) == ["p/d2.md|", "p/d3.md|"] and not rows(res, "budget")
    assert all("MMKG_MAX_PARTITION_CHARS" in r for r in over.values())


def test_pdf_page_and_picture_budgets(corpus: Path, tmp_path: Path, photo: Image.Image):
    write_pdf(corpus / "p" / "long.pdf", [f"Page {i} of the report." for i in range(5)])
    for i in range(3):
        photo.save(corpus / "p" / f"fig{i}.jpg")
    (corpus / "p" / "figs.md").write_text(
        "# Figures\n\n" + "\n\n".join(f"Figure {i}. ![f](fig{i}.jpg)" for i in range(3)), encoding="utf-8"
    )
    res = run(corpus, tmp_path, Limits(max_pages=2, max_images_per_document=2))
    cut = rows(res, "budget")
    assert "has 5 pages; read the first 2" in cut["p/long.pdf|"]
    assert "3 pictures; kept the first 2" in cut["p/figs.md|"]
    pdf = res.documents.filter(res.documents["kind"] == "pdf").row(0, named=True)
    assert pdf["n_pages"] == 2 and "Page 1" in pdf["text"] and "Page 2" not in pdf["text"]
    assert res.images.height == 2


def test_file_time_budget_stops_reading(corpus: Path, tmp_path: Path):
    write_pdf(corpus / "p" / "slow.pdf", [f"Page {i}." for i in range(4)])
    res = run(corpus, tmp_path, Limits(max_file_seconds=1e-9))
    reason = rows(res, "budget")["p/slow.pdf|"]
    assert "read pages 1-1 of 4" in reason and "MMKG_MAX_FILE_SECONDS" in reason
    assert res.documents["n_pages"].to_list() == [1]


def test_reader_surprises_cost_the_file_not_the_partition(corpus: Path, tmp_path: Path):
    p = corpus / "p"
    (p / "deep.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    (p / "half.jsonl").write_text('{"id": "h", "title": "Half", "text": "A \\ud800 half."}\n', encoding="utf-8")
    (p / "odd.json").write_text(json.dumps({"id": "o", "title": "O", "text": "t", "images": [3]}), encoding="utf-8")
    (p / "fine.md").write_text("# Fine\n\nStill read.", encoding="utf-8")
    res = run(corpus, tmp_path)
    assert "nested too deeply" in rows(res, "ingest")["p/deep.json|"]
    assert "must be a path or a {path, alt} object" in rows(res, "ingest")["p/odd.json|o"]
    assert "replaced with U+FFFD" in rows(res, "repaired")["p/half.jsonl|h"]
    texts = dict(zip(res.documents["source_path"], res.documents["text"], strict=True))
    assert texts["p/half.jsonl"] == "A \ufffd half." and texts["p/fine.md"].endswith("Still read.")


def test_file_name_that_is_not_utf8_is_rejected_by_a_printable_name(corpus: Path, tmp_path: Path):
    (corpus / "p" / "fine.md").write_text("# Fine\n\nRead.", encoding="utf-8")
    (corpus / "p" / "bad\udcffname.md").write_text("# Bad\n\nName.", encoding="utf-8")  # byte 0xff on disk
    res = run(corpus, tmp_path)
    assert "not valid UTF-8" in rows(res, "ingest")["p/bad\\xffname.md|"]
    assert res.documents["source_path"].to_list() == ["p/fine.md"]


def test_a_paragraph_past_spacy_max_length_still_chunks(corpus: Path, tmp_path: Path):
    """With every budget off, one 1.2-million-character block chunks instead of failing the partition."""
    (corpus / "p" / "wall.txt").write_text("Wall\n\n" + "word and more words. " * 60_000, encoding="utf-8")
    off = Limits(max_document_chars=10**9, max_sentence_chars=10**9, max_sentences_per_document=10**9)
    res = run(corpus, tmp_path, off)
    assert res.rejected.is_empty()
    chunks = chunk_documents(res.documents, res.images, max_tokens=200)
    assert chunks.height > 1000 and chunks["n_tokens"].max() <= 200


def test_settings_and_resource_carry_every_budget():
    """The environment variables, the Dagster resource and the Limits agree on names and defaults."""
    limits, settings = Limits(), Settings()
    budget_fields = [f.name for f in dataclasses.fields(Limits) if f.name.startswith("max_")]
    for name in budget_fields:
        assert getattr(settings, name) == getattr(limits, name), name
    resource = CorpusResource(root="/x", max_pages=7, max_sentence_chars=900)
    assert resource.limits() == dataclasses.replace(limits, max_pages=7, max_sentence_chars=900)


def test_repeated_texts_are_encoded_once_with_the_same_vectors():
    """A file of one repeated sentence costs one forward pass, and the rows equal encoding each text."""
    import numpy as np

    from mmkg.embedding import encode_distinct
    from mmkg.encoders import load_encoder

    # float32: int8 vectors move slightly with their batch companions, and this compares two batchings
    encoder = load_encoder("text", device="cpu", runtime="onnx")
    seen: list[int] = []
    original = encoder.encode_text

    def counting(texts, batch_size=64):
        seen.append(len(texts))
        return original(texts, batch_size)

    encoder.encode_text = counting  # type: ignore[method-assign]
    texts = ["a.", "All rights reserved.", "a.", "a.", "Ada Park was born in Lisbon.", "All rights reserved."]
    vecs = encode_distinct(encoder, texts, batch_size=4)
    assert seen == [3]
    assert np.allclose(vecs, original(texts, 4), atol=1e-5)


def test_pdf_pictures_past_the_budget_are_never_decoded(corpus: Path, tmp_path: Path, photo: Image.Image):
    """The cut happens while the PDF is read, so a PDF of thousands of pictures never holds them all in memory."""
    write_pdf(corpus / "p" / "pics.pdf", ["Caption one.", "", "", "Caption four."], photo)  # a figure, two scans
    everything = run(corpus, tmp_path / "all").images.height
    res = run(corpus, tmp_path, Limits(max_images_per_document=2))
    reason = rows(res, "budget")["p/pics.pdf|"]
    assert f"{everything - 2} more pictures after the first 2 were not decoded" in reason and everything > 2
    assert res.images.height == 2
