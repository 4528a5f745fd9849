"""OCR page text: image-only PDF pages become chunks, mentions and sentences like text-layer pages.

Real inputs throughout: a PDF written by matplotlib with one text-layer page and one page that is
only a picture of text (DejaVu), real RapidOCR, real spaCy, real Dagster materializations; plus
pages of an MMLongBench-Doc slide deck with no text layer (skipped when ../shared is absent).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib
import polars as pl
import pytest
from conftest import SHARED
from dagster import AssetKey, DagsterInstance, materialize
from PIL import Image, ImageDraw, ImageFont

from assets import ingest, text, vision
from mmkg import schemas
from mmkg.chunking import chunk_documents
from mmkg.ids import bytes_id
from mmkg.vision.base import OcrLine
from mmkg.vision.ocr import OcrEngine
from mmkg.vision.page_text import extended_text, ocr_pages, ocr_table_rows, ocr_words, reading_order_text
from pipelines.resources import default_resources

FONT = Path(matplotlib.get_data_path()) / "fonts/ttf/DejaVuSans.ttf"
MMLONGBENCH = SHARED / "datasets/mmlongbench-dev/documents"
DECK = MMLONGBENCH / "measuringsuccessonfacebooktwitterlinkedin-160317142140_95.pdf"
PAGE_ONE = "The first page has a real text layer about the Analytical Engine and Charles Babbage."
OCR_LINES = [
    "Grace Hopper joined Harvard University in 1944.",
    "She wrote the manual of the Mark I",
    "for the United States Navy.",
]


def line(text: str, x: float, y: float, w: float | None = None, h: float = 20.0) -> OcrLine:
    w = 10.0 * len(text) if w is None else w
    return OcrLine(text=text, score=0.9, quad=((x, y), (x + w, y), (x + w, y + h), (x, y + h)))


def text_picture() -> Image.Image:
    """A scanned-looking page: a title and two paragraphs drawn as pixels, no text layer."""
    img = Image.new("RGB", (1200, 900), "white")
    draw = ImageDraw.Draw(img)
    draw.text((80, 60), "The Harvard Mark I", font=ImageFont.truetype(str(FONT), 44), fill="black")
    body = ImageFont.truetype(str(FONT), 30)
    for i, sentence in enumerate(OCR_LINES):
        draw.text((80, 200 + 50 * i), sentence, font=body, fill="black")
    draw.text((80, 500), "Howard Aiken designed the machine at IBM.", font=body, fill="black")
    return img


def write_scanned_pdf(path: Path) -> Path:
    """Page 1 with a text layer (as conftest.write_pdf), page 2 only a picture of text (a scan, a slide export)."""
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_pdf import PdfPages

    with PdfPages(path, metadata={"CreationDate": None, "Title": "Scanned notes"}) as pdf:
        fig = plt.figure(figsize=(6, 8))
        fig.text(0.08, 0.92, PAGE_ONE, wrap=True, fontsize=11, va="top")
        pdf.savefig(fig)
        plt.close(fig)
        fig = plt.figure(figsize=(8, 6))
        ax = fig.add_axes((0, 0, 1, 1))
        ax.imshow(text_picture())
        ax.axis("off")
        pdf.savefig(fig, dpi=150)
        plt.close(fig)
    return path


# ---------------------------------------------------------------- reading order


def test_reading_order_rows_paragraphs_and_columns() -> None:
    lines = [
        line("world", 120, 2),
        line("hello", 0, 0),
        line("second row", 0, 25),
        line("new paragraph", 0, 90),
        # two columns, lines aligned: the left column is read before the right one
        line("left one", 0, 200, w=150),
        line("right one", 400, 200, w=150),
        line("left two", 0, 225, w=150),
        line("right two", 400, 225, w=150),
    ]
    assert reading_order_text(lines) == (
        "hello world\nsecond row\n\nnew paragraph\n\nleft one\nleft two\n\nright one\nright two"
    )
    assert reading_order_text([]) == ""
    assert reading_order_text([line("  ", 0, 0)]) == ""


def test_extended_text_rejects_stale_offsets() -> None:
    assert extended_text("abc", [(5, "page two"), (15, "three")]) == "abc\n\npage two\n\nthree"
    with pytest.raises(ValueError, match="char_start 4 does not follow"):
        extended_text("abc", [(4, "page two")])


def test_ocr_chunks_offsets_and_pages_without_dagster() -> None:
    docs = schemas.frame(
        [
            {
                "doc_id": "d1", "partition": "p", "source_path": "a.pdf", "record_key": "", "kind": "pdf",
                "title": "t", "text": "Page one text.", "page_starts": [0, 16, 16], "n_pages": 3,
                "content_sha256": "x", "n_bytes": 1,
            }
        ],
        schemas.DOCUMENTS,
    )  # fmt: skip
    images = schemas.frame(
        [
            {"image_id": f"img{p}", "partition": "p", "doc_id": "d1", "occurrence": p, "page": p, "char_offset": 16,
             "role": "page_render", "source": f"a.pdf#page={p}", "blob_path": f"b/{p}.png"}
            for p in (2, 3)
        ],
        schemas.IMAGES,
    )  # fmt: skip
    ocr = {"img2": [line("Second page words", 0, 0)], "img3": [line("Third page", 0, 0), line("more", 0, 40)]}
    pages = ocr_pages(docs, images, lambda image_id, path: ocr[image_id], Path)
    assert pages["page"].to_list() == [2, 3]
    assert pages["char_start"].to_list() == [16, 16 + len("Second page words") + 2]
    chunks = chunk_documents(docs, images, 200, page_text=pages)
    assert chunks.select("page", "text_source", "chunk_index").rows() == [
        (1, "document", 0),
        (2, "ocr", 1),
        (3, "ocr", 2),
    ]
    full = extended_text("Page one text.", list(pages.select("char_start", "text").iter_rows()))
    for c in chunks.iter_rows(named=True):
        assert full[c["char_start"] : c["char_end"]] == c["text"]
    # each page render is attached to the OCR chunk of its own page
    assert chunks.select("page", "image_ids").rows()[1:] == [(2, ["img2"]), (3, ["img3"])]
    with pytest.raises(ValueError, match="unknown document"):
        chunk_documents(docs.clear(), images, 200, page_text=pages)


# ---------------------------------------------------------------- tables on OCRed pages

TABLE = [("Print", "154", "172", "11.5%"), ("Television", "130", "148", "14.7%"), ("Radio", "13", "16", "20.7%")]


def table_picture() -> Image.Image:
    """A slide with a title, a borderless table (a label column, two years and a growth rate) and a footnote."""
    img = Image.new("RGB", (1400, 800), "white")
    draw = ImageDraw.Draw(img)
    draw.text((60, 40), "Advertising spend in India", font=ImageFont.truetype(str(FONT), 44), fill="black")
    body = ImageFont.truetype(str(FONT), 30)
    for x, head in ((560, "2012"), (800, "2013"), (1040, "CAGR")):
        draw.text((x, 200), head, font=body, fill="black")
    for i, (label, *values) in enumerate(TABLE):
        y = 270 + 60 * i
        draw.text((60, y), label, font=body, fill="black")
        for x, value in zip((560, 800, 1040), values, strict=True):
            draw.text((x, y), value, font=body, fill="black")
    draw.text((60, 620), "Source: industry reports", font=body, fill="black")
    return img


def test_ocr_words_are_placed_in_points_on_their_line() -> None:
    words = ocr_words([line("Net income 3,033", 100, 40, w=320, h=24), line("2015", 500, 36, w=80, h=32)], 2.0)
    assert [w["text"] for w in words] == ["Net", "income", "3,033", "2015"]
    net, income, value, year = words
    assert net["x0"] == 50.0 and value["x1"] == 210.0  # pixels at 2 per point, back to points
    assert net["x1"] < income["x0"] < income["x1"] < value["x0"]  # words placed by their characters
    # one visual row: a taller box on the same centre line gets the same top as the line beside it
    assert net["top"] == year["top"] and net["bottom"] == year["bottom"]
    assert ocr_words([line("   ", 0, 0)], 2.0) == []


def one_rendered_page(name: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The documents and images rows of a one-page PDF with no text layer: its page render only."""
    docs = schemas.frame(
        [{"doc_id": "d1", "partition": "p", "source_path": name, "record_key": "", "kind": "pdf", "title": "t",
          "text": "", "page_starts": [0], "n_pages": 1, "content_sha256": "x", "n_bytes": 1}],
        schemas.DOCUMENTS,
    )  # fmt: skip
    images = schemas.frame(
        [{"image_id": "render", "partition": "p", "doc_id": "d1", "occurrence": 1, "page": 1, "char_offset": 0,
          "role": "page_render", "source": f"{name}#page=1", "blob_path": "b/1.png"}],
        schemas.IMAGES,
    )  # fmt: skip
    return docs, images


def test_a_table_on_a_scanned_page_is_read_as_rows_with_headers() -> None:
    """Real RapidOCR on a picture of a table: each row comes back with its label and column headers."""
    lines = OcrEngine().read(table_picture())
    rows = ocr_table_rows(lines, scale=2.0)
    assert rows == [
        "Print | 2012: 154 | 2013: 172 | CAGR: 11.5%",
        "Television | 2012: 130 | 2013: 148 | CAGR: 14.7%",
        "Radio | 2012: 13 | 2013: 16 | CAGR: 20.7%",
    ]
    docs, images = one_rendered_page("deck.pdf")
    read = ocr_pages(docs, images, lambda image_id, path: lines, Path)
    with_rows, plain = read["text"][0], ocr_pages(docs, images, lambda image_id, path: lines, Path, tables=False)
    assert read["n_table_rows"].to_list() == [3] and plain["n_table_rows"].to_list() == [0]
    plain = plain["text"][0]
    # the page's own text first, as before; then one paragraph per row
    assert with_rows.startswith(plain) and with_rows[len(plain) :] == "".join(f"\n\n{r}" for r in rows)
    assert "Television" in plain and "CAGR: 14.7%" not in plain
    # a page of prose has no table
    assert ocr_table_rows([line(s, 0, 40 * i) for i, s in enumerate(OCR_LINES)]) == []


def test_a_page_whose_tables_cannot_be_read_keeps_its_text(monkeypatch: pytest.MonkeyPatch, caplog) -> None:
    import mmkg.vision.page_text as page_text

    def broken(lines, scale):
        raise ValueError("no column lines up")

    monkeypatch.setattr(page_text, "ocr_table_rows", broken)
    docs, images = one_rendered_page("scan.pdf")
    pages = ocr_pages(docs, images, lambda image_id, path: [line("Grace Hopper joined Harvard.", 0, 0)], Path)
    assert pages["text"].to_list() == ["Grace Hopper joined Harvard."] and pages["n_table_rows"].to_list() == [0]
    assert "page 1 of scan.pdf#page=1: tables not read (ValueError: no column lines up)" in caplog.text


# ---------------------------------------------------------------- materialized through Dagster


@pytest.fixture(scope="module")
def scanned(tmp_path_factory: pytest.TempPathFactory) -> dict:
    corpus = tmp_path_factory.mktemp("corpus")
    data = tmp_path_factory.mktemp("data")
    (corpus / "scans").mkdir()
    write_scanned_pdf(corpus / "scans" / "notes.pdf")
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("corpus", ["scans"])
    resources = default_resources(corpus, data)
    first = materialize([ingest.ingest, text.chunks], partition_key="scans", instance=instance, resources=resources)
    assert first.success
    return {"data": data, "instance": instance, "resources": resources}


def read(data: Path, name: str) -> pl.DataFrame:
    return pl.read_parquet(data / "tables" / name / "scans.parquet")


def test_image_only_page_becomes_ocr_chunks(scanned: dict) -> None:
    data = scanned["data"]
    docs, images, pages = read(data, "documents"), read(data, "images"), read(data, "page_text")
    assert docs["text"][0].startswith(PAGE_ONE[:20])  # page 2 has no text layer
    render = images.filter(pl.col("role") == "page_render")
    assert render["page"].to_list() == [2]
    assert pages.height == 1 and pages["page"][0] == 2 and pages["source"][0] == "ocr"
    assert pages["image_id"][0] == render["image_id"][0]
    page2 = pages["text"][0]
    for sentence in OCR_LINES:
        assert sentence in page2
    assert page2.index("Grace Hopper") < page2.index("Howard Aiken")  # reading order
    chunks = read(data, "chunks")
    assert chunks.select("page", "text_source").rows() == [(1, "document"), (2, "ocr")]
    ocr_chunk = chunks.row(1, named=True)
    assert "Harvard University" in ocr_chunk["text"]
    # the page render (and the picture embedded in the page) belong to the OCR chunk of page 2
    assert set(ocr_chunk["image_ids"]) == set(images.filter(pl.col("page") == 2)["image_id"])
    assert render["image_id"][0] in ocr_chunk["image_ids"]
    full = extended_text(docs["text"][0], list(pages.select("char_start", "text").iter_rows()))
    for c in chunks.iter_rows(named=True):
        assert full[c["char_start"] : c["char_end"]] == c["text"]
    meta = scanned["instance"].get_latest_materialization_event(AssetKey("page_text")).asset_materialization.metadata
    assert meta["ocr_calls"].value == 1 and meta["pages_with_text"].value == 1
    assert meta["ocr_table_rows"].value == 0 and pages["n_table_rows"].to_list() == [0]  # prose, no table


def test_mentions_from_ocr_text_and_rerun_hits_the_cache(scanned: dict) -> None:
    data, instance, resources = scanned["data"], scanned["instance"], scanned["resources"]
    render_id = read(data, "page_text")["image_id"][0]
    cache_file = data / "blobs" / "ocr" / render_id[:2] / f"{render_id}.json"
    assert cache_file.is_file()
    written = cache_file.stat().st_mtime_ns
    before = read(data, "chunks")
    assets = [ingest.ingest, text.chunks, text.parse, text.entities, vision.ground_images]
    assert materialize(assets, partition_key="scans", instance=instance, resources=resources).success
    meta = instance.get_latest_materialization_event(AssetKey("page_text")).asset_materialization.metadata
    assert meta["ocr_calls"].value == 0  # every page render came from the cache
    assert read(data, "chunks").equals(before)
    assert cache_file.stat().st_mtime_ns == written  # grounding read the same cache entry, never re-OCRed
    image_text = read(data, "image_text").filter(pl.col("image_id") == render_id)
    assert image_text.height >= len(OCR_LINES)

    chunks = read(data, "chunks")
    ocr_ids = set(chunks.filter(pl.col("text_source") == "ocr")["chunk_id"])
    mentions = read(data, "entity_mentions").filter(pl.col("chunk_id").is_in(ocr_ids) & (pl.col("source") == "ner"))
    found = dict(mentions.select("text", "label").iter_rows())
    assert found.get("Grace Hopper") == "PERSON"
    assert "Harvard University" in found
    # sentence and mention offsets of OCR text address the extended document text
    docs, pages = read(data, "documents"), read(data, "page_text")
    full = extended_text(docs["text"][0], list(pages.select("char_start", "text").iter_rows()))
    sentences = read(data, "sentences").filter(pl.col("chunk_id").is_in(ocr_ids))
    assert sentences.height >= 2
    for s in sentences.iter_rows(named=True):
        assert full[s["char_start"] : s["char_end"]] == s["text"]
        assert s["char_start"] > len(docs["text"][0])
    for m in mentions.iter_rows(named=True):
        assert full[m["char_start"] : m["char_end"]] == m["text"]


# ---------------------------------------------------------------- a real image-only slide deck


@pytest.mark.skipif(not DECK.exists(), reason=f"{DECK} not available")
def test_mmlongbench_slide_deck_pages(tmp_path: Path) -> None:
    from mmkg.ingest.base import Limits
    from mmkg.ingest.pdf import read_pdf

    doc, rejections = read_pdf(DECK.read_bytes(), DECK.name, Limits())
    assert not rejections and doc.text.strip() == ""  # no text layer at all
    renders = {img.page: img.pil for img in doc.images if img.role == "page_render"}
    assert sorted(renders) == list(range(1, len(doc.page_starts) + 1))
    # MMLongBench: "Which account tweets content tagged #WednesdayWisdom?" -> page 16; page 15 is a table (Pew's
    # shares of internet users on Twitter by group, 2013 and 2014) drawn as a picture
    wanted = [1, 15, 16]
    ids = {p: bytes_id(renders[p].tobytes()) for p in wanted}
    docs = schemas.frame(
        [
            {"doc_id": "deck", "partition": "deck", "source_path": DECK.name, "record_key": "", "kind": "pdf",
             "title": doc.title, "text": doc.text, "page_starts": doc.page_starts, "n_pages": len(doc.page_starts),
             "content_sha256": doc.content_sha256, "n_bytes": doc.n_bytes}
        ],
        schemas.DOCUMENTS,
    )  # fmt: skip
    images = schemas.frame(
        [
            {"image_id": ids[p], "partition": "deck", "doc_id": "deck", "occurrence": p, "page": p,
             "char_offset": doc.page_starts[p - 1], "role": "page_render", "source": f"{DECK.name}#page={p}",
             "blob_path": str(p)}
            for p in wanted
        ],
        schemas.IMAGES,
    )  # fmt: skip
    engine = OcrEngine()
    pages = ocr_pages(docs, images, lambda image_id, path: engine.read(renders[int(str(path))]), Path)
    chunks = chunk_documents(docs, images, 200, page_text=pages)
    assert set(chunks["page"]) == set(wanted) and set(chunks["text_source"]) == {"ocr"}
    title = " ".join(chunks.filter(pl.col("page") == 1)["text"])
    assert "Measuring Success" in title and "New York University" in title
    assert "WednesdayWisdom" in " ".join(chunks.filter(pl.col("page") == 16)["text"])
    table = pages.filter(pl.col("page") == 15)["text"][0].split("\n\n")
    # the picture's rows, each with its label and the years over its columns, after the page's reading order
    assert "Women | 2013: 18 | 2014: 21" in table and "18-29 | 2013: 31 | 2014: 37" in table
    assert not any(" | " in p for p in pages.filter(pl.col("page") != 15)["text"])
