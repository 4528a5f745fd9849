"""Readers on real files: Markdown, text, JSON/JSONL, PDF, images, and every bad-file case."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from conftest import write_pdf
from PIL import Image

from mmkg import schemas
from mmkg.ingest import ImageStore, Limits, ingest_partition, list_partitions


def run(root: Path, tmp_path: Path, partition: str = "p", limits: Limits | None = None):
    return ingest_partition(root, partition, ImageStore(tmp_path / "data"), limits)


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    (root / "p" / "images").mkdir(parents=True)
    return root


def reasons(result) -> dict[str, str]:
    return {f"{r['source_path']}|{r['record_key']}": r["reason"] for r in result.rejected.iter_rows(named=True)}


def test_markdown_title_text_and_linked_image(corpus: Path, tmp_path: Path, photo_path: Path):
    (corpus / "p" / "images" / "hopper.jpg").write_bytes(photo_path.read_bytes())
    (corpus / "p" / "hopper.md").write_text(
        "# Grace Hopper\n\nGrace Hopper was a *computer* scientist at [Harvard](https://harvard.edu).\n\n"
        "![Hopper in uniform](images/hopper.jpg)\n\nShe joined the U.S. Navy.\n",
        encoding="utf-8",
    )
    res = run(corpus, tmp_path)
    assert res.rejected.is_empty()
    doc = res.documents.row(0, named=True)
    assert doc["title"] == "Grace Hopper"
    assert doc["kind"] == "markdown"
    assert "*" not in doc["text"] and "](" not in doc["text"]
    assert "Grace Hopper was a computer scientist at Harvard." in doc["text"]
    img = res.images.row(0, named=True)
    assert img["role"] == "linked" and img["alt_text"] == "Hopper in uniform"
    assert img["source"] == "p/images/hopper.jpg"
    # the image sits between the two paragraphs
    assert doc["text"][: img["char_offset"]].rstrip().endswith("Harvard.")
    assert (img["width"], img["height"]) == Image.open(photo_path).size
    # stored once by content hash, byte for byte
    assert (tmp_path / "data" / img["blob_path"]).read_bytes() == photo_path.read_bytes()
    # a linked image is not also a standalone document
    assert res.documents.height == 1
    assert schemas.conform(res.documents, schemas.DOCUMENTS).columns == list(schemas.DOCUMENTS)


def test_front_matter_title_wins_and_ids_are_stable(corpus: Path, tmp_path: Path):
    path = corpus / "p" / "note.md"
    path.write_text("---\ntitle: Mona Lisa\nauthor: x\n---\n# Heading\n\nThe Louvre holds it.\n", encoding="utf-8")
    a = run(corpus, tmp_path).documents
    b = run(corpus, tmp_path).documents
    assert a["title"].to_list() == ["Mona Lisa"]
    assert a["doc_id"].to_list() == b["doc_id"].to_list()
    path.write_text("---\ntitle: Mona Lisa\n---\nThe Louvre holds it now.\n", encoding="utf-8")
    assert run(corpus, tmp_path).documents["doc_id"].to_list() != a["doc_id"].to_list()


def test_plain_text_title_from_first_line(corpus: Path, tmp_path: Path):
    (corpus / "p" / "eiffel.txt").write_text("Eiffel Tower\n\nThe tower stands in Paris.\n", encoding="utf-8")
    (corpus / "p" / "one_line.txt").write_text("A single line of text about Berlin.", encoding="utf-8")
    docs = run(corpus, tmp_path).documents.sort("source_path")
    assert docs["title"].to_list() == ["Eiffel Tower", "one line"]


def test_json_and_jsonl_records(corpus: Path, tmp_path: Path, photo_path: Path):
    (corpus / "p" / "images" / "h.jpg").write_bytes(photo_path.read_bytes())
    records = [
        {"id": "r1", "title": "Grace Hopper", "text": "Grace Hopper worked at Harvard.", "images": ["images/h.jpg"]},
        {"title": "Yale", "text": "Yale University is in New Haven."},
        {"title": "Broken"},
    ]
    (corpus / "p" / "recs.json").write_text(json.dumps(records), encoding="utf-8")
    (corpus / "p" / "more.jsonl").write_text(
        json.dumps({"id": "x", "title": "A", "text": "Alpha."})
        + "\n{not json\n\n"
        + json.dumps({"id": "x", "title": "B", "text": "Dup."})
        + "\n",
        encoding="utf-8",
    )
    res = run(corpus, tmp_path)
    docs = res.documents
    # file order (sorted paths), then record order; the bad records are left out
    assert docs.select("source_path", "title").rows() == [
        ("p/more.jsonl", "A"),
        ("p/recs.json", "Grace Hopper"),
        ("p/recs.json", "Yale"),
    ]
    assert docs["record_key"][2] == docs["content_sha256"][2][:16]  # no id: content hash
    assert set(docs["record_key"]) >= {"r1", "x"}
    assert res.images.height == 1 and res.images["doc_id"][0] == docs.filter(pl.col("record_key") == "r1")["doc_id"][0]
    r = reasons(res)
    assert r["p/recs.json|2"] == "record 2: field 'text' is missing or empty"
    assert "line 2 is not valid JSON" in r["p/more.jsonl|2"]
    assert "duplicate record id 'x'" in r["p/more.jsonl|x"]


def test_invalid_json_file_is_rejected(corpus: Path, tmp_path: Path):
    (corpus / "p" / "bad.json").write_text('[{"title": "a", "text": "b"', encoding="utf-8")
    (corpus / "p" / "ok.md").write_text("# Ok\n\nStill read.", encoding="utf-8")
    res = run(corpus, tmp_path)
    assert res.documents["title"].to_list() == ["Ok"]
    assert reasons(res)["p/bad.json|"].startswith("invalid JSON at line 1")


def test_twowiki_corpus_loads_as_records(tmp_path: Path):
    src = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "twowiki" / "corpus.json"
    if not src.exists():
        pytest.skip("../shared/datasets/twowiki not present")
    records = json.loads(src.read_text())[:200]
    root = tmp_path / "corpus"
    (root / "twowiki").mkdir(parents=True)
    (root / "twowiki" / "corpus.json").write_text(json.dumps(records), encoding="utf-8")
    res = ingest_partition(root, "twowiki", ImageStore(tmp_path / "d"))
    assert res.rejected.is_empty()
    assert res.documents.height == len({(r["title"], r["text"]) for r in records})
    assert res.documents["title"].to_list()[0] == records[0]["title"]


def test_pdf_pages_text_and_embedded_image(corpus: Path, tmp_path: Path, photo: Image.Image):
    write_pdf(corpus / "p" / "report.pdf", ["Page one text about NASA.", "Page two mentions the Moon."], photo)
    res = run(corpus, tmp_path)
    assert res.rejected.is_empty(), res.rejected
    doc = res.documents.row(0, named=True)
    assert doc["kind"] == "pdf" and doc["n_pages"] == 2
    assert doc["title"] == "Test document"
    p2 = doc["page_starts"][1]
    assert "NASA" in doc["text"][:p2] and "Moon" in doc["text"][p2:]
    emb = res.images.filter(pl.col("role") == "embedded")
    assert emb.height == 1 and emb["page"][0] == 1
    assert emb["width"][0] >= 100
    assert emb["char_offset"][0] <= p2


def test_pdf_image_only_page_is_rendered(corpus: Path, tmp_path: Path, photo: Image.Image):
    # Pillow writes a PDF page that is a picture with no text layer, like a scanned page.
    photo.save(corpus / "p" / "scan.pdf", format="PDF")
    res = run(corpus, tmp_path)
    roles = sorted(res.images["role"].to_list())
    assert roles == ["embedded", "page_render"]
    assert res.documents["text"][0] == ""


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("empty.md", b"", "file is empty (0 bytes)"),
        ("latin1.txt", "Caf\xe9 in M\xfcnchen".encode("latin-1"), "not valid utf-8 (byte 0xe9 at offset 3)"),
        ("broken.pdf", b"%PDF-1.7\n1 0 obj << /Type /Catalog >> garbage", "cannot open PDF"),
        ("notes.docx", b"PK\x03\x04 zip", "unsupported file type '.docx'"),
        ("fake.png", b"\x89PNG\r\n\x1a\n not really", "not a readable image"),
        ("words.jpg", b"just some words", "no image format Pillow reads starts with these bytes (6a 75 73 74"),
    ],
)
def test_bad_files_are_rejected_not_fatal(corpus: Path, tmp_path: Path, name: str, content: bytes, expected: str):
    (corpus / "p" / name).write_bytes(content)
    (corpus / "p" / "good.md").write_text("# Good\n\nThe rest of the partition is read.", encoding="utf-8")
    res = run(corpus, tmp_path)
    assert res.documents["title"].to_list() == ["Good"]
    r = reasons(res)
    assert list(r) == [f"p/{name}|"]
    assert expected in r[f"p/{name}|"] and "object at 0x" not in r[f"p/{name}|"]  # no Python repr in a reason


def test_truncated_pdf_is_rejected(corpus: Path, tmp_path: Path, photo: Image.Image):
    full = write_pdf(tmp_path / "full.pdf", ["Some text."], photo).read_bytes()
    (corpus / "p" / "cut.pdf").write_bytes(full[: len(full) // 3])
    res = run(corpus, tmp_path)
    assert res.documents.is_empty()
    assert "cannot open PDF" in reasons(res)["p/cut.pdf|"]


def test_bad_images(corpus: Path, tmp_path: Path, jpeg_bytes: bytes, photo: Image.Image):
    img = corpus / "p" / "images"
    (img / "truncated.jpg").write_bytes(jpeg_bytes[: len(jpeg_bytes) // 2])
    (img / "empty.png").write_bytes(b"")
    Image.new("L", (9000, 9000)).save(img / "huge.png")  # 81 Mpx, a few KB on disk
    Image.new("RGB", (1, 1)).save(img / "dot.png")
    photo.convert("CMYK").save(img / "cmyk.jpg")
    pal = photo.convert("P", palette=Image.Palette.ADAPTIVE)
    pal.info["transparency"] = 0
    pal.save(img / "palette.png")
    res = run(corpus, tmp_path)
    r = reasons(res)
    assert "corrupt or truncated image data" in r["p/images/truncated.jpg|"]
    assert r["p/images/empty.png|"] == "file is empty (0 bytes)"
    assert "over the limit of 40,000,000 px" in r["p/images/huge.png|"]
    assert "smaller than the minimum side" in r["p/images/dot.png|"]
    ok = res.images.sort("source")
    assert ok["source"].to_list() == ["p/images/cmyk.jpg", "p/images/palette.png"]
    assert ok["mode"].to_list() == ["CMYK", "P"]
    assert res.documents["kind"].to_list() == ["image", "image"]


def test_pixel_limit_is_configurable(corpus: Path, tmp_path: Path, photo_path: Path):
    (corpus / "p" / "a.jpg").write_bytes(photo_path.read_bytes())
    res = run(corpus, tmp_path, limits=Limits(max_image_pixels=1000))
    assert "over the limit of 1,000 px" in reasons(res)["p/a.jpg|"]


def test_image_links_outside_root_missing_or_remote(corpus: Path, tmp_path: Path, photo_path: Path):
    (tmp_path / "outside.jpg").write_bytes(photo_path.read_bytes())
    (corpus / "p" / "doc.md").write_text(
        "# Doc\n\n![a](../../outside.jpg)\n\n![b](images/missing.png)\n\n![c](https://example.org/x.png)\n\nText.",
        encoding="utf-8",
    )
    res = run(corpus, tmp_path)
    assert res.documents.height == 1 and res.images.is_empty()
    msgs = res.rejected["reason"].to_list()
    assert any("'../../outside.jpg' (line 3) points outside the corpus root" in m for m in msgs)
    assert any("'images/missing.png' (line 5) not found" in m for m in msgs)
    assert any("remote URL" in m for m in msgs)


def test_symlink_out_of_root_is_rejected(corpus: Path, tmp_path: Path):
    secret = tmp_path / "secret.txt"
    secret.write_text("do not read", encoding="utf-8")
    (corpus / "p" / "link.txt").symlink_to(secret)
    res = run(corpus, tmp_path)
    assert res.documents.is_empty()
    assert "outside the corpus root" in res.rejected["reason"][0]


def test_same_image_in_two_partitions_is_stored_once(tmp_path: Path, photo_path: Path):
    root = tmp_path / "corpus"
    for p in ("a", "b"):
        (root / p).mkdir(parents=True)
        (root / p / "x.jpg").write_bytes(photo_path.read_bytes())
    store = ImageStore(tmp_path / "data")
    ids = [ingest_partition(root, p, store).images["image_id"][0] for p in ("a", "b")]
    assert ids[0] == ids[1]
    assert len(list((tmp_path / "data" / "blobs").rglob("*.jpg"))) == 1
    assert list_partitions(root) == ["a", "b"]


def test_a_folder_without_files_is_no_partition(tmp_path: Path):
    root = tmp_path / "corpus"
    (root / "full").mkdir(parents=True)
    (root / "full" / "a.md").write_text("# A\n\nText.\n", encoding="utf-8")
    (root / "emptied" / "images").mkdir(parents=True)  # its files deleted, folders left behind
    (root / "hidden_only").mkdir()
    (root / "hidden_only" / ".DS_Store").write_bytes(b"x")
    assert list_partitions(root) == ["full"]


def test_missing_partition_folder_is_a_clear_error(tmp_path: Path):
    (tmp_path / "c").mkdir()
    with pytest.raises(FileNotFoundError, match=r"partition folder .*nope does not exist"):
        ingest_partition(tmp_path / "c", "nope", ImageStore(tmp_path / "d"))
