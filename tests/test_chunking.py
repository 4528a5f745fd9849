from __future__ import annotations

import polars as pl

from mmkg import schemas
from mmkg.chunking import chunk_documents

TEXT = (
    "Grace Hopper\n\n"
    "Grace Hopper was an American computer scientist. She worked on the Harvard Mark I computer. "
    "Dr. Hopper joined the U.S. Navy in 1943.\n\n"
    "She developed the first compiler. COBOL was influenced by her work."
)


def doc(doc_id: str, text: str, page_starts: list[int] | None = None, kind: str = "markdown") -> dict:
    return {
        "doc_id": doc_id,
        "partition": "p",
        "source_path": f"{doc_id}.md",
        "record_key": "",
        "kind": kind,
        "title": doc_id,
        "text": text,
        "page_starts": page_starts or [0],
        "n_pages": len(page_starts or [0]),
        "content_sha256": doc_id,
        "n_bytes": len(text),
    }


def image(doc_id: str, image_id: str, offset: int | None, page: int | None = None, occurrence: int = 0) -> dict:
    return {
        "image_id": image_id,
        "partition": "p",
        "doc_id": doc_id,
        "occurrence": occurrence,
        "page": page,
        "char_offset": offset,
        "role": "linked",
        "source": "x",
        "alt_text": "",
        "blob_path": "b",
        "format": "PNG",
        "mode": "RGB",
        "width": 10,
        "height": 10,
        "n_bytes": 1,
    }


def chunk(docs: list[dict], images: list[dict] | None = None, max_tokens: int = 200) -> pl.DataFrame:
    return chunk_documents(
        schemas.frame(docs, schemas.DOCUMENTS), schemas.frame(images or [], schemas.IMAGES), max_tokens
    )


def test_chunks_are_sentence_aligned_and_bounded():
    out = chunk([doc("d", TEXT)], max_tokens=14)
    assert out["n_tokens"].max() <= 14
    for row in out.iter_rows(named=True):
        assert TEXT[row["char_start"] : row["char_end"]] == row["text"]
    # greedy packing of whole sentences; the heading block is its own sentence
    assert out["text"].to_list() == [
        "Grace Hopper\n\nGrace Hopper was an American computer scientist.",
        "She worked on the Harvard Mark I computer.",
        "Dr. Hopper joined the U.S. Navy in 1943.",
        "She developed the first compiler. COBOL was influenced by her work.",
    ]
    assert out["n_tokens"].to_list() == [10, 9, 11, 13]  # "Dr." and "U.S." count their dots
    assert out["chunk_index"].to_list() == list(range(out.height))


def test_large_budget_packs_whole_document():
    out = chunk([doc("d", TEXT)], max_tokens=200)
    assert out.height == 1
    assert out["text"][0] == TEXT


def test_overlong_sentence_is_cut_by_tokens():
    words = " ".join(f"word{i}" for i in range(50))
    out = chunk([doc("d", words)], max_tokens=20)
    assert out["n_tokens"].to_list() == [20, 20, 10]
    assert " ".join(out["text"]) == words


def test_chunks_never_cross_pages_and_keep_page_numbers():
    text = "Page one sentence. Another one.\n\nPage two sentence."
    out = chunk([doc("d", text, page_starts=[0, text.index("Page two")], kind="pdf")], max_tokens=200)
    assert out.select("page", "text").rows() == [(1, "Page one sentence. Another one."), (2, "Page two sentence.")]


def test_images_attach_to_the_chunk_that_holds_them():
    pos = TEXT.index("She developed")
    out = chunk(
        [doc("d", TEXT), doc("e", "Only text.")],
        [image("d", "img-late", pos), image("d", "img-none", None, occurrence=1), image("e", "img-e", 0)],
        max_tokens=14,
    )
    by_text = dict(zip(out["text"].to_list(), out["image_ids"].to_list(), strict=True))
    assert by_text["She developed the first compiler. COBOL was influenced by her work."] == ["img-late"]
    assert by_text["Grace Hopper\n\nGrace Hopper was an American computer scientist."] == [
        "img-none"
    ]  # no position: first chunk of the document
    assert by_text["Only text."] == ["img-e"]
    assert out.filter(pl.col("doc_id") == "e")["chunk_index"].to_list() == [0]


def test_image_on_a_page_without_text_stays_unattached():
    text = "First page text.\n\n"
    out = chunk(
        [doc("d", text.strip() + "\n\n", page_starts=[0, len(text)], kind="pdf")],
        [image("d", "scan", len(text), page=2)],
    )
    assert out["image_ids"].to_list() == [[]]


def test_chunk_ids_are_stable():
    a = chunk([doc("d", TEXT)], max_tokens=14)["chunk_id"].to_list()
    b = chunk([doc("d", TEXT)], max_tokens=14)["chunk_id"].to_list()
    assert a == b and len(set(a)) == len(a)
