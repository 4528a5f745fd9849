"""Page scoring from a document's structure, on a built MMLongBench-Doc index: does it lift page recall?

    python benchmarks/page_scoring.py --index /tmp/ev_mbn/index                       # dev
    python benchmarks/page_scoring.py --index /tmp/ev_mbvn/index \\
        --dataset ../shared/datasets/mmlongbench-val --questions questions_val.json     # validation

Retrieves the default strategy's top ``--depth`` chunks once per answerable question (within its document,
and across the corpus), then re-ranks the pages three ways against today's rule (a page ranks by its best
chunk, as the eval harness does):

- **several chunks**: a page scores its best chunk plus ``alpha`` times its second, ``alpha²`` its third;
- **reading order**: a page also gets ``beta`` times the better of its neighbours (the page before and after);
- **references**: a part a top chunk mentions in its text ("Table 2 shows", "see Figure 3") lends ``gamma``
  times that chunk's score to the page where the part's label opens a line (its caption or heading), within
  the document (``mmkg.retrieval.references`` reads the labels);
- **document prior** (mKG-RAG's first stage, made soft): a page also gets ``mu`` times its document's best
  three chunks, against the best document's; it matters across the corpus;
- **picture text**: the OCR lines of a page's embedded pictures (charts' labels, legends, titles; read from
  the data root's OCR cache, ``<data root>/blobs/ocr``, where the build's grounding left them) as a BM25
  channel of their own: a page scores at least ``lam`` times its pictures' BM25 score against the best;
- **page text**: BM25 over each page's whole text (its chunks joined; a page holds three chunks on average in
  the validation build), so the question's words may match across the page's chunk boundaries: a page scores
  at least ``nu`` times its page BM25 score against the best (``page text``), or that much more (``page
  text, added``).

- **sentence facets** (ColBERT's late interaction, with the index's sentence vectors as the document side): the
  question's noun phrases (its stop words and words such as "page" or "document" left out) and content verbs
  are embedded one by one; a page scores each facet's best cosine over the page's sentences, averaged over the
  facets, and gets ``phi`` times that (min-max scaled over the pages) added;
- **question's best sentence**: the same with the whole question as the one facet (``psi``).
- **answer type** (classic QA's predictive annotation): a page gets ``tau`` (against its best chunk's relative
  score) when one of its retrieved chunks holds a value of the kind the question analysis expects: a percentage
  when the question asks for one, a year for a date, three or more numbers for a number, an entity of the
  asked type for a person, organization or place (spaCy's NER); other questions are left as they are.

Prints R@1 and R@5 for each setting: a structure mechanism is kept only if it helps on dev and validation.
``psi`` was kept (twenty-seventh session) as MG2-RAG's ``page_sentence_weight``: since then the default strategy's
ranking, "today" here, already includes it, and ``psi`` stacks a second copy on top (``benchmarks/
page_sentences.py`` sweeps the kept step itself).
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Annotated

import typer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DATASET = Path(__file__).resolve().parent.parent.parent / "shared/datasets/mmlongbench-dev"
Hit = tuple[str, int | None, float, str]  # (document file, page, score, text)


def _pages(hits: list[Hit], alpha: float = 0.0, beta: float = 0.0, lent: dict | None = None, mu: float = 0.0,
           added: dict | None = None) -> list[str]:  # fmt: skip
    by: dict[tuple[str, int | None], list[float]] = defaultdict(list)
    for doc, page, score, _ in hits:
        by[(doc, page)].append(score)
    top = max((h[2] for h in hits), default=1.0) or 1.0  # scores relative to the best chunk's
    base = {key: sum(s / top * alpha**i for i, s in enumerate(sorted(v, reverse=True)[:3])) for key, v in by.items()}
    if mu and hits:  # a document prior: the document's best three chunks, against the best document's
        docs: dict[str, list[float]] = defaultdict(list)
        for doc, _, score, _ in hits:
            docs[doc].append(score)
        prior = {d: sum(sorted(v, reverse=True)[:3]) for d, v in docs.items()}
        top_doc = max(prior.values()) or 1.0
        base = {key: s + mu * prior[key[0]] / top_doc for key, s in base.items()}
    for key, s in (lent or {}).items():
        base[key] = max(base.get(key, float("-inf")), s)
    for key, s in (added or {}).items():
        base[key] = base.get(key, 0.0) + s
    score = dict(base)
    if beta:
        for (doc, page), s in base.items():
            if page is not None:
                score[(doc, page)] = s + beta * max(base.get((doc, page - 1), 0.0), base.get((doc, page + 1), 0.0))
    return [f"{d}#{p if p is not None else '?'}" for d, p in sorted(score, key=lambda key: -score[key])]


def _picture_pages(idx, ocr_root: Path) -> tuple[list[tuple[str, int]], object]:
    """(document file, page) of every page with embedded pictures, and a BM25 index over their OCR text."""
    import json

    from mmkg.lexical import LexicalIndex

    texts: dict[tuple[str, int], list[str]] = defaultdict(list)
    for image_id, source in idx.images.select("image_id", "source").iter_rows():
        m = re.match(r"(.+?)#page=(\d+)&image=\d+", source)  # a whole-page render's text is already chunk text
        path = ocr_root / image_id[:2] / f"{image_id}.json"
        if m and path.is_file():
            lines = json.loads(path.read_text(encoding="utf-8")).get("lines", [])
            texts[(Path(m.group(1)).name, int(m.group(2)))].append(" ".join(line["text"] for line in lines))
    keys = sorted(texts)
    return keys, LexicalIndex.build([f"{d}#{p}" for d, p in keys], [" ".join(texts[k]) for k in keys])


def _page_texts(idx) -> tuple[list[tuple[str, int]], object]:
    """(document file, page) of every page with text, and a BM25 index over each page's chunks joined."""
    from mmkg.lexical import LexicalIndex

    texts: dict[tuple[str, int], list[str]] = defaultdict(list)
    for path, page, text in idx.chunks.sort("chunk_index").select("source_path", "page", "text").iter_rows():
        if page is not None and text:
            texts[(Path(path).name, int(page))].append(text)
    keys = sorted(texts)
    return keys, LexicalIndex.build([f"{d}#{p}" for d, p in keys], [" ".join(texts[k]) for k in keys])


def _lexical_pages(question: str, doc: str | None, keys: list, lex, lam: float) -> dict:
    """``lam`` times each page's BM25 score in ``lex`` (its pictures' text, or its whole text) against the best
    page's, within ``doc`` when one is given."""
    raw = lex.scores(question)
    hits = {keys[i]: float(raw[i]) for i in range(len(keys)) if raw[i] > 0 and (doc is None or keys[i][0] == doc)}
    top = max(hits.values(), default=1.0)
    return {key: lam * v / top for key, v in hits.items()}


def _lent(hits: list[Hit], defined: dict, gamma: float, top: int = 5) -> dict:
    from mmkg.parts import PART, kind_of

    out: dict[tuple[str, int | None], float] = {}
    best = max((h[2] for h in hits), default=1.0) or 1.0
    for doc, page, score, text in hits[:top]:
        score /= best  # on _pages' scale: relative to the best chunk
        for m in PART.finditer(text):
            kind = kind_of(m.group(1))
            pages = defined.get((doc, kind, m.group(2).lower()), set()) - {page}
            if 0 < len(pages) <= 2:  # a label defined on many pages names no one part
                for p in pages:
                    out[(doc, p)] = max(out.get((doc, p), float("-inf")), gamma * score)
    return out


_FACET_STOP = {"document", "page", "paper", "report", "slide", "slides", "figure", "answer", "format", "list",
               "decimal", "places", "what", "which", "who", "how"}  # fmt: skip


def _facets(nlp, question: str) -> list[str]:
    """The question's noun phrases without stop words, then its content verbs' lemmas."""
    doc = nlp(question)
    out = []
    for chunk in doc.noun_chunks:
        words = [t.text for t in chunk if not t.is_stop and t.is_alpha and t.lower_ not in _FACET_STOP]
        if words:
            out.append(" ".join(words))
    out += [t.lemma_ for t in doc if t.pos_ == "VERB" and not t.is_stop]
    return list(dict.fromkeys(out)) or [question]


def _sentence_pages(idx, question: str, doc_ids: list[str], nlp, row_page: list) -> tuple[dict, dict]:
    """(facets, whole): per page, the facets' mean best sentence cosine, and the whole question's best."""
    import numpy as np

    facets = _facets(nlp, question)
    best: list[dict] = []
    for vec in idx.encode_texts([*facets, question]):
        rows, cos = idx.cosines_for_docs("sentences", vec, doc_ids)
        top: dict = {}
        for r, c in zip(rows.tolist(), cos.tolist(), strict=True):
            key = row_page[r]
            if key is not None and c > top.get(key, -1.0):
                top[key] = c
        best.append(top)
    pages = set().union(*best[:-1])
    return {k: float(np.mean([b.get(k, 0.0) for b in best[:-1]])) for k in pages}, best[-1]


_PERCENT = re.compile(r"\d\s?%|\bper\s?cent")
_NUMBER = re.compile(r"\b\d[\d,]*(?:\.\d+)?\b")
_YEAR = re.compile(r"\b(?:1[89]\d\d|20\d\d)\b")
_TYPED = {"person": {"PERSON"}, "organization": {"ORG"}, "place": {"GPE", "LOC"}}


def _typed_pages(question: str, hits: list[Hit], tau: float) -> dict:
    """``tau`` for each page with a retrieved chunk that holds a value of the question's expected type."""
    from mmkg.generation.question import analyze
    from mmkg.generation.sentences import entities
    from mmkg.settings import get_settings

    a = analyze(question)
    asked = a.value_type or a.answer_type
    if re.search(r"percent|%|proportion", question, re.IGNORECASE):
        holds = lambda text: bool(_PERCENT.search(text))  # noqa: E731
    elif asked == "date":
        holds = lambda text: bool(_YEAR.search(text))  # noqa: E731
    elif asked == "number":
        holds = lambda text: len(_NUMBER.findall(text)) >= 3  # noqa: E731
    elif asked in _TYPED:
        model = get_settings().spacy_model
        holds = lambda text: any(e[1] in _TYPED[asked] for e in entities([text], model)[0])  # noqa: E731
    else:
        return {}
    return {(doc, page): tau for doc, page, _, text in hits if holds(text)}


def _scaled(scores: dict, weight: float) -> dict:
    if not scores:
        return {}
    lo, hi = min(scores.values()), max(scores.values())
    return {k: weight * (v - lo) / (hi - lo + 1e-9) for k, v in scores.items()}


def main(
    index: Annotated[Path, typer.Option(help="A built MMLongBench-Doc index (mmkg eval mmlongbench --data-root ...).")],
    dataset: Annotated[Path, typer.Option(help="MMLongBench-Doc folder (documents/, the questions).")] = DATASET,
    questions: Annotated[str, typer.Option(help="The questions file inside --dataset.")] = "questions_dev.json",
    depth: Annotated[int, typer.Option(help="Chunks retrieved per question.")] = 50,
    ocr_cache: Annotated[Path | None, typer.Option(help="OCR cache (default: blobs/ocr beside the index).")] = None,
) -> None:
    from mmkg.eval.datasets import MMLongBench
    from mmkg.eval.metrics import recall_at_k
    from mmkg.index import Index
    from mmkg.parts import DEFINES, kind_of
    from mmkg.retrieval import retrieve

    defines = DEFINES  # the label of a part that opens a line: where the part is defined (its caption)

    ds = MMLongBench.load(dataset / "documents", dataset / questions).dataset
    idx = Index.open(index)
    docs: dict[str, list[str]] = defaultdict(list)
    for doc_id, path in idx.documents.select("doc_id", "source_path").iter_rows():
        docs[Path(path).name].append(doc_id)
    defined: dict[tuple[str, str, str], set] = defaultdict(set)
    for path, page, text in idx.chunks.select("source_path", "page", "text").iter_rows():
        for m in defines.finditer(text or ""):
            kind = kind_of(m.group(1))
            defined[(Path(path).name, kind, m.group(2).lower())].add(page)
    keys, pictures = _picture_pages(idx, ocr_cache or index.parent / "blobs" / "ocr")
    page_keys, page_lex = _page_texts(idx)
    from mmkg.nlp import load_pipeline
    from mmkg.settings import get_settings

    nlp = load_pipeline(get_settings().spacy_model)
    located = idx.chunks.select("chunk_id", "source_path", "page").iter_rows()
    chunk_page = {c: (Path(sp).name, pg) for c, sp, pg in located}
    sentence_chunk = dict(idx.sentences.select("sentence_id", "chunk_id").iter_rows())
    row_page = [chunk_page.get(sentence_chunk.get(i)) for i in idx.meta["sentences"]["id"].to_list()]
    all_docs = [d for ids in docs.values() for d in ids]
    Run = tuple[list[Hit], tuple[str, ...], str, str | None, tuple[dict, dict]]
    runs: dict[str, list[Run]] = {"document": [], "corpus": []}
    for q in ds.questions:
        if not q.answerable:
            continue
        for scope, filters in (("document", {"doc_id": docs[q.doc]}), ("corpus", None)):
            res = retrieve(idx, text=q.question, k=depth, filters=filters)
            hits = [(Path(c.source_path).name, c.page, c.score, c.text) for c in res.chunks]
            dense = _sentence_pages(idx, q.question, docs[q.doc] if filters else all_docs, nlp, row_page)
            runs[scope].append((hits, q.relevant, q.question, q.doc if scope == "document" else None, dense))
    settings = [("best chunk (today)", {}), *((f"several chunks, alpha {a}", {"alpha": a}) for a in (0.2, 0.4, 0.6)),
                *((f"reading order, beta {b}", {"beta": b}) for b in (0.1, 0.2, 0.3)),
                ("alpha 0.6 + beta 0.1", {"alpha": 0.6, "beta": 0.1}),
                *((f"references, gamma {g}", {"gamma": g}) for g in (0.7, 0.8, 0.9)),
                *((f"document prior, mu {m}", {"mu": m}) for m in (0.1, 0.2, 0.4)),
                *((f"picture text, lam {m}", {"lam": m}) for m in (0.5, 0.7, 0.9)),
                *((f"page text, nu {m}", {"nu": m}) for m in (0.5, 0.7, 0.9)),
                *((f"page text, added, nu {m}", {"nu": m, "add": True}) for m in (0.1, 0.2, 0.4)),
                *((f"sentence facets, phi {m}", {"phi": m}) for m in (0.1, 0.2, 0.4)),
                *((f"best sentence, psi {m}", {"psi": m}) for m in (0.1, 0.2, 0.4)),
                *((f"answer type, tau {m}", {"tau": m}) for m in (0.05, 0.1, 0.2, 0.3))]  # fmt: skip
    print(f"{index}: {len(runs['document'])} answerable questions, top {depth} chunks of the default strategy; "
          f"{len(keys)} pages with picture text")
    print(f"{'setting':28} {'doc R@1':>8} {'doc R@5':>8} {'corpus R@1':>11} {'corpus R@5':>11}")
    for name, kw in settings:
        row = []
        for scope in ("document", "corpus"):
            r1 = r5 = 0.0
            for hits, relevant, question, doc, (facets, whole) in runs[scope]:
                lent = _lent(hits, defined, kw["gamma"]) if "gamma" in kw else None
                if "lam" in kw:
                    lent = _lexical_pages(question, doc, keys, pictures, kw["lam"])
                added = None
                if "nu" in kw:
                    page = _lexical_pages(question, doc, page_keys, page_lex, kw["nu"])
                    lent, added = (None, page) if kw.get("add") else (page, None)
                if "phi" in kw or "psi" in kw:
                    added = _scaled(facets, kw["phi"]) if "phi" in kw else _scaled(whole, kw["psi"])
                if "tau" in kw:
                    added = _typed_pages(question, hits, kw["tau"])
                ranked = _pages(hits, kw.get("alpha", 0.0), kw.get("beta", 0.0), lent, kw.get("mu", 0.0), added)
                r1 += recall_at_k(ranked, relevant, 1)
                r5 += recall_at_k(ranked, relevant, 5)
            n = len(runs[scope]) or 1
            row += [r1 / n, r5 / n]
        print(f"{name:28} {row[0]:8.3f} {row[1]:8.3f} {row[2]:11.3f} {row[3]:11.3f}")


if __name__ == "__main__":
    typer.run(main)
