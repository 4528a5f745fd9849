"""Evaluation datasets: questions with the units that answer them, and the corpus they are asked over.

A *unit* is what a dataset judges retrieval by: a passage or document title (2WikiMultihopQA, the
sample corpus) or a page of a document (MMLongBench-Doc, ``"<file.pdf>#<page>"``). Retrieval returns
chunks; ``unit_of`` maps a chunk to its unit so every method is scored on the same footing.

Corpora are written as ordinary corpus partitions (one folder each) and indexed through the same
Dagster assets as any other corpus.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import shutil
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mmkg.atomic import atomic_path, write_bytes

UnitKind = Literal["title", "page"]

# MMLongBench-Doc evidence_sources values -> short names used in the breakdowns
SOURCES = {
    "Pure-text (Plain-text)": "text",
    "Table": "table",
    "Chart": "chart",
    "Figure": "figure",
    "Generalized-text (Layout)": "layout",
}
_UNSAFE = re.compile(r"[^A-Za-z0-9._\-]+")


class DatasetError(ValueError):
    """A dataset file that cannot be used; the message names the file and the problem."""


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    relevant: tuple[str, ...]  # unit keys that answer it; empty: not answerable from the corpus
    doc: str | None = None  # the question's own document (MMLongBench-Doc), for document-filtered retrieval
    sources: tuple[str, ...] = ()  # evidence kinds (text, table, chart, figure, layout)
    answer: str | None = None
    answer_format: str | None = None  # MMLongBench-Doc: Str, Int, Float, List or None (how the answer is scored)

    @property
    def answerable(self) -> bool:
        return bool(self.relevant)


@dataclass
class Dataset:
    """Questions plus how to map a retrieved chunk to the dataset's unit."""

    name: str
    questions: list[Question]
    unit_kind: UnitKind
    doc_partitions: dict[str, str] = field(default_factory=dict)  # document file -> its corpus partition

    def unit_of(self, title: str, source_path: str, page: int | None) -> str:
        """The unit key of a chunk: its title, or ``<file>#<page>``."""
        if self.unit_kind == "title":
            return title
        return page_unit(Path(source_path).name, page)

    def limit(self, n: int | None) -> Dataset:
        """The first n questions (all when n is None), for quick runs."""
        return self if n is None else Dataset(self.name, self.questions[:n], self.unit_kind, self.doc_partitions)


def page_unit(doc: str, page: int | None) -> str:
    return f"{doc}#{page if page is not None else '?'}"


def _read_json(path: Path) -> Any:
    if not path.is_file():
        raise DatasetError(f"{path}: file not found")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{path}: not valid UTF-8 JSON ({exc})") from exc


def _require(path: Path, i: int, row: Any, keys: tuple[str, ...]) -> dict:
    if not isinstance(row, dict):
        raise DatasetError(f"{path}: item {i} is {type(row).__name__}, expected an object")
    missing = [k for k in keys if k not in row]
    if missing:
        raise DatasetError(f"{path}: item {i} lacks {missing}")
    return row


def load_title_questions(path: Path, titles: set[str] | None = None) -> list[Question]:
    """Questions ``{id, question, supporting_titles}``; every title must exist when ``titles`` is given. A question
    whose gold ``answer`` is "Not answerable" has no supporting title (``[]``): it is kept for the answers and left
    out of the retrieval metrics."""
    data = _read_json(path)
    if not isinstance(data, list):
        raise DatasetError(f"{path}: expected a list of questions")
    out = []
    for i, row in enumerate(data):
        row = _require(path, i, row, ("id", "question", "supporting_titles"))
        sup = row["supporting_titles"]
        unanswerable = sup == [] and str(row.get("answer", "")).strip().lower() == "not answerable"
        if not isinstance(sup, list) or not (sup or unanswerable) or not all(isinstance(t, str) for t in sup):
            raise DatasetError(f"{path}: question {row['id']} needs a non-empty list of supporting_titles (or the "
                               "answer 'Not answerable' and [])")  # fmt: skip
        if titles is not None and (unknown := [t for t in sup if t not in titles]):
            raise DatasetError(f"{path}: question {row['id']} names titles not in the corpus: {unknown}")
        out.append(Question(str(row["id"]), str(row["question"]), tuple(dict.fromkeys(sup)), answer=row.get("answer")))
    return out


# -- 2WikiMultihopQA -------------------------------------------------------------------------------


@dataclass
class TwoWiki:
    """The 2Wiki passage corpus ``[{title, text}, ...]`` and its questions with supporting titles."""

    passages: list[dict[str, str]]
    dataset: Dataset

    @classmethod
    def load(cls, corpus_json: Path, questions_json: Path | Sequence[Path]) -> TwoWiki:
        """The corpus and its questions; several question files are read in order (ids must not repeat)."""
        data = _read_json(corpus_json)
        if not isinstance(data, list):
            raise DatasetError(f"{corpus_json}: expected a list of {{title, text}} passages")
        passages = []
        for i, row in enumerate(data):
            row = _require(corpus_json, i, row, ("title", "text"))
            passages.append({"title": str(row["title"]), "text": str(row["text"])})
        titles = {p["title"] for p in passages}
        if len(titles) != len(passages):
            raise DatasetError(f"{corpus_json}: titles are not unique; a title cannot identify its passage")
        files = [questions_json] if isinstance(questions_json, Path) else list(questions_json)
        questions = [q for path in files for q in load_title_questions(path, titles)]
        if dup := sorted(i for i, n in Counter(q.id for q in questions).items() if n > 1):
            raise DatasetError(f"{', '.join(map(str, files))}: question ids repeat across the files: {dup[:5]}")
        return cls(passages, Dataset("twowiki", questions, "title"))

    def write_corpus(self, out_root: Path, partitions: int = 1) -> list[str]:
        """Round-robin the passages into ``part00..`` folders (one ``corpus.json`` each); deterministic.

        Files whose content is unchanged are left alone, so a re-run re-uses an existing build.
        """
        if partitions < 1:
            raise ValueError("partitions must be >= 1")
        keys = [f"part{i:02d}" for i in range(partitions)]
        for i, key in enumerate(keys):
            part = self.passages[i::partitions]
            _write_if_changed(out_root / key / "corpus.json", json.dumps(part, ensure_ascii=False).encode("utf-8"))
        _refuse_stale(out_root, keys)
        return keys


# -- MMLongBench-Doc --------------------------------------------------------------------------------


@dataclass
class MMLongBench:
    """A folder of PDFs (one corpus partition each) and questions with evidence pages and sources."""

    documents: dict[str, Path]  # file name -> path
    dataset: Dataset

    @classmethod
    def load(cls, documents_dir: Path, questions_json: Path) -> MMLongBench:
        if not documents_dir.is_dir():
            raise DatasetError(f"{documents_dir}: not a folder of PDFs")
        docs = {p.name: p for p in sorted(documents_dir.iterdir()) if p.suffix.lower() == ".pdf" and p.is_file()}
        if not docs:
            raise DatasetError(f"{documents_dir}: no .pdf files")
        partitions: dict[str, str] = {}
        for name in docs:
            key = partition_key(name)
            if key in partitions.values():
                raise DatasetError(f"{documents_dir}: two documents map to the partition name {key!r}")
            partitions[name] = key
        data = _read_json(questions_json)
        if not isinstance(data, list):
            raise DatasetError(f"{questions_json}: expected a list of questions")
        questions = []
        for i, row in enumerate(data):
            row = _require(questions_json, i, row, ("id", "doc_id", "question", "evidence_pages", "evidence_sources"))
            qid = str(row["id"])
            if row["doc_id"] not in docs:
                raise DatasetError(
                    f"{questions_json}: question {qid} refers to {row['doc_id']}, not in {documents_dir}"
                )
            pages = _literal_list(questions_json, qid, "evidence_pages", row["evidence_pages"])
            if not all(isinstance(p, int) and p >= 1 for p in pages):
                raise DatasetError(f"{questions_json}: question {qid}: evidence_pages must be 1-based page numbers")
            raw_sources = _literal_list(questions_json, qid, "evidence_sources", row["evidence_sources"])
            unknown = [s for s in raw_sources if s not in SOURCES]
            if unknown:
                raise DatasetError(f"{questions_json}: question {qid}: unknown evidence source(s) {unknown}")
            questions.append(
                Question(
                    id=qid,
                    question=str(row["question"]),
                    relevant=tuple(dict.fromkeys(page_unit(row["doc_id"], p) for p in pages)),
                    doc=row["doc_id"],
                    sources=tuple(dict.fromkeys(SOURCES[s] for s in raw_sources)),
                    answer=None if row.get("answer") is None else str(row["answer"]),
                    answer_format=row.get("answer_format"),
                )
            )
        return cls(docs, Dataset("mmlongbench", questions, "page", partitions))

    def write_corpus(self, out_root: Path) -> list[str]:
        """One partition folder per PDF, holding a copy (the ingest reads only files inside the corpus root)."""
        keys = []
        for name, path in self.documents.items():
            key = self.dataset.doc_partitions[name]
            target = out_root / key / name
            if not (target.is_file() and _same_file(path, target)):
                with atomic_path(target) as tmp:
                    shutil.copyfile(path, tmp)
            keys.append(key)
        _refuse_stale(out_root, keys)
        return keys


def partition_key(file_name: str) -> str:
    """A safe partition name for a document file: its stem with odd characters replaced."""
    key = _UNSAFE.sub("_", Path(file_name).stem).strip("._-")
    if not key:
        raise DatasetError(f"cannot derive a partition name from {file_name!r}")
    return key


def _literal_list(path: Path, qid: str, key: str, value: Any) -> list:
    """MMLongBench-Doc stores lists as their Python repr (``"[2, 5]"``, ``"['Table']"``)."""
    if isinstance(value, list):
        return value
    try:
        out = ast.literal_eval(value) if isinstance(value, str) else None
    except (ValueError, SyntaxError) as exc:
        raise DatasetError(f"{path}: question {qid}: {key} {value!r} is not a list ({exc})") from exc
    if not isinstance(out, list):
        raise DatasetError(f"{path}: question {qid}: {key} {value!r} is not a list")
    return out


# -- the bundled sample corpus ---------------------------------------------------------------------


def load_sample(questions_json: Path) -> Dataset:
    """Questions over the bundled sample corpus, judged by document title (like 2Wiki)."""
    return Dataset("sample", load_title_questions(questions_json), "title")


# -- helpers ---------------------------------------------------------------------------------------


def _digest(path: Path) -> str:
    h = hashlib.blake2b(digest_size=16)
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def _same_file(a: Path, b: Path) -> bool:
    return a.stat().st_size == b.stat().st_size and _digest(a) == _digest(b)


def _write_if_changed(target: Path, data: bytes) -> None:
    if target.is_file() and target.read_bytes() == data:
        return
    write_bytes(target, data)


def _refuse_stale(out_root: Path, keys: list[str]) -> None:
    """Partition folders from an earlier, different split would be indexed too: refuse rather than mix."""
    folders = (p.name for p in out_root.iterdir() if p.is_dir() and not p.name.startswith("."))
    stale = sorted(name for name in folders if name not in keys)
    if stale:
        raise DatasetError(
            f"{out_root} holds partition folders not in this corpus ({stale[:5]}{'...' if len(stale) > 5 else ''}); "
            "use an empty folder or the one an earlier run with the same settings wrote"
        )
