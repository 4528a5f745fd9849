"""Where the reader loses MMLongBench-Doc answers: page, written, candidate, chosen, answered.

    .venv/bin/python benchmarks/answer_losses.py --index /tmp/s17/dev/index
    .venv/bin/python benchmarks/answer_losses.py --index /tmp/s17/val/index \\
        --dataset ../shared/datasets/mmlongbench-val --questions questions_val.json

Per answerable question with a single written answer (``answer_format`` Str, Int or Float; lists and "Not
answerable" left out), the evidence is gathered and read as ``mmkg ask`` does it within the question's document
(k 8, budget 1,500 tokens), and the question counts at each stage it reaches:

- **page**: a gold evidence page is among the pages of the chunks the reader sees;
- **written**: the gold is written in that context (a number within 1%, or as a percentage either way; a string
  after lower-casing and dropping punctuation), so a reader that copies could answer it; integers up to 12 are
  counted apart (**small**), since nearly any page holds them;
- **candidate**: a span candidate the reader scored (every one, not only the five it reports) scores as the gold
  by the benchmark's rule, a number as the reader would write it (digits, at the scale the question asks); where
  it stands among them is tallied (first, 2-4, 5 or below);
- **chosen**: the reader's best answer scores, declined or not (its guess when it declined);
- **answered**: the answer it gives scores (a declined one says "Not answerable" and scores 0).

With ``--where``, it also tallies where each gold that is not a small integer is written, beyond the context: on
the pages of the evidence (their whole text, the chunks the token budget left out included), on a gold evidence
page, anywhere in the document's text. A gold written in none of them is in a picture or must be computed.

With ``--shapes``, it also tallies what the Str golds look like where they are written in the context and no
candidate scores as them: a whole line of the context (a heading, a label), a noun phrase of spaCy's parse of
the lines holding it, one word, and the answer type the question analysis gave. Counts only, again.

With ``--lists``, it also tallies the List-format questions (left out above) that a list of sub-answers could
answer: those that split at a coordination of spaCy's parse (``multi_page.question_parts``: "how many strengths
and weaknesses"), those whose gold has as many items as the question has parts, and those whose items are all
numbers. It is the ceiling of answering each part on its own and listing the answers.

Answers by other methods than the span reader (arithmetic, lookups, counts) count as chosen and answered when
they score, and as candidates only through the span reader. Prints counts only, never a question, so it can
run on validation questions nobody reads.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

DATASET = Path(__file__).resolve().parent.parent.parent / "shared/datasets/mmlongbench-dev"
FORMATS = ("Str", "Int", "Float")
SMALL = 12  # integers up to this are on nearly every page
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


def _numbers(text: str) -> set[float]:
    out = set()
    for token in _NUMBER.findall(text):
        try:
            out.add(float(token.replace(",", "")))
        except ValueError:
            continue
    return out


def _written(gold: str, context: str, fmt: str) -> bool:
    if fmt in ("Int", "Float"):
        try:
            value = float(gold.replace("%", "").replace(",", "").strip())
        except ValueError:
            return False
        return any(abs(n - value) <= 0.01 * abs(value) + 1e-9 or abs(n - value * 100) < 1e-6
                   or abs(n - value / 100) < 1e-9 for n in _numbers(context))  # fmt: skip
    words, text = _norm(gold), _norm(context)
    return bool(words) and f" {words} " in f" {text} "


def _small(gold: str, fmt: str) -> bool:
    try:
        value = float(gold.replace("%", "").replace(",", "").strip())
    except ValueError:
        return False
    return fmt in ("Int", "Float") and value == int(value) and 0 <= value <= SMALL


def main(
    index: Annotated[Path, typer.Option(help="A built MMLongBench-Doc index (mmkg eval mmlongbench --data-root ...).")],
    dataset: Annotated[Path, typer.Option(help="MMLongBench-Doc folder (documents/, the questions).")] = DATASET,
    questions: Annotated[str, typer.Option(help="The questions file inside --dataset.")] = "questions_dev.json",
    shapes: Annotated[bool, typer.Option(help="Also tally the shapes of Str golds written but no candidate.")] = False,
    where: Annotated[bool, typer.Option(help="Also tally where golds are written beyond the context.")] = False,
    lists: Annotated[bool, typer.Option(help="Also tally List questions that split into as many parts.")] = False,
) -> None:
    from mmkg.eval.answer_scoring import score
    from mmkg.eval.datasets import MMLongBench
    from mmkg.generation import reader as reading
    from mmkg.generation.answer import prepare, retrieve
    from mmkg.index import Index

    seen: list[tuple[str, list[str]]] = []  # (question text, candidates as answers) of every candidates() call
    original = reading.Reader.candidates

    def spy(self, q, sentences, value_type, result=None, limit=reading.MAX_SENTENCES):  # type: ignore[no-untyped-def]
        out = original(self, q, sentences, value_type, result, limit)
        # a number as the reader would answer it: digits, at the scale the question asks ("in millions")
        seen.append((q.text, [reading._clean_number(c, q, sentences) if value_type == "number" else c.text
                              for c in out]))  # fmt: skip
        return out

    reading.Reader.candidates = spy  # type: ignore[method-assign]  # observe every candidate, not the five kept
    ds = MMLongBench.load(dataset / "documents", dataset / questions).dataset
    idx = Index.open(index)
    docs: dict[str, list[str]] = {}
    for doc_id, path in idx.documents.select("doc_id", "source_path").iter_rows():
        docs.setdefault(Path(path).name, []).append(doc_id)
    page_texts: dict[tuple[str, int], list[str]] = {}  # (file name, page): its chunks' texts
    if where:
        for path, page, text in idx.payload("chunks").select("source_path", "page", "text").iter_rows():
            page_texts.setdefault((Path(path).name, page), []).append(text)
    located: dict[str, Counter] = {fmt: Counter() for fmt in (*FORMATS, "all")}
    counts: dict[str, Counter] = {fmt: Counter() for fmt in (*FORMATS, "all")}
    missed: Counter = Counter()
    for q in ds.questions:
        fmt = q.answer_format
        if fmt not in FORMATS or q.answer is None:
            continue
        gold = str(q.answer)
        seen.clear()
        result = retrieve(idx, q.question, k=8, filters={"doc_id": docs[q.doc]})
        request, ctx, _ = prepare(result, q.question, budget=1500)
        r = request.reading
        pages = {f"{Path(e.source_path).name}#{e.page}" for e in ctx.evidence if e.kind == "chunk"}
        ours = [cands for text, cands in seen if text == request.analysis.text]
        ranks = [i for i, text in enumerate(ours[-1] if ours else []) if score(gold, text, fmt) >= 0.5]
        stages = {
            "n": True,
            "page": bool(pages & set(q.relevant)),
            "written": _written(gold, ctx.text, fmt),
            "small": _small(gold, fmt),
            "candidate": bool(ranks),
            "first": bool(ranks) and ranks[0] == 0,
            "rank 2-4": bool(ranks) and 1 <= ranks[0] <= 3,
            "rank 5+": bool(ranks) and ranks[0] >= 4,
            "chosen": score(gold, r.guess if r.abstained else r.text, fmt) >= 0.5,
            "answered": not r.abstained and score(gold, r.text, fmt) >= 0.5,
        }
        for key, hit in stages.items():
            counts[fmt][key] += hit
            counts["all"][key] += hit
        if where and not stages["small"]:
            shown = {(Path(e.source_path).name, e.page) for e in ctx.evidence if e.kind == "chunk"}
            golds = {(q.doc, int(r.rsplit("#", 1)[1])) for r in q.relevant}
            whole = {k for k in page_texts if k[0] == q.doc}
            spots = {"n": True, "context": stages["written"],
                     "evidence pages": _written(gold, _text_of(page_texts, shown), fmt),
                     "gold pages": _written(gold, _text_of(page_texts, golds), fmt),
                     "document": _written(gold, _text_of(page_texts, whole), fmt)}  # fmt: skip
            for key, hit in spots.items():
                located[fmt][key] += hit
                located["all"][key] += hit
        if shapes and fmt == "Str" and stages["written"] and not stages["candidate"]:
            missed.update(_shape(gold, ctx.text, request.analysis.answer_type))
    columns = ("n", "page", "written", "small", "candidate", "first", "rank 2-4", "rank 5+", "chosen", "answered")
    print(f"{index}: answerable Str/Int/Float questions, the context `mmkg ask` reads within the document")
    print(f"{'format':8}" + "".join(f"{c:>11}" for c in columns))
    for fmt, c in counts.items():
        print(f"{fmt:8}" + "".join(f"{c[col]:>11}" for col in columns))
    if where:
        spots = ("n", "context", "evidence pages", "gold pages", "document")
        print("Where golds other than small integers are written")
        print(f"{'format':8}" + "".join(f"{c:>16}" for c in spots))
        for fmt, c in located.items():
            print(f"{fmt:8}" + "".join(f"{c[col]:>16}" for col in spots))
    if lists:
        _list_parts(ds.questions)
    if shapes:
        print(f"Str golds written in the context that no candidate scores as ({missed['n']}):")
        for key, n in sorted(missed.items()):
            if key != "n":
                print(f"  {key:32}{n:>5}")


def _list_parts(questions: list) -> None:
    from multi_page import question_parts

    from mmkg.eval.answer_scoring import _as_list
    from mmkg.nlp import load_pipeline
    from mmkg.settings import get_settings

    nlp = load_pipeline(get_settings().spacy_model)
    c: Counter[str] = Counter()
    for q in questions:
        if q.answer_format != "List" or q.answer is None:
            continue
        parts, gold = question_parts(q.question, nlp), _as_list(q.answer)
        c["List questions"] += 1
        c["split at a coordination"] += bool(parts)
        c["  into as many parts as gold items"] += bool(parts) and len(parts) == len(gold)
        c["    whose items are all numbers"] += bool(parts) and len(parts) == len(gold) and all(
            _NUMBER.fullmatch(str(g).strip().rstrip("%")) for g in gold)
    for key in ("List questions", "split at a coordination", "  into as many parts as gold items",
                "    whose items are all numbers"):  # fmt: skip
        print(f"{key:40}{c[key]:>5}")


def _text_of(page_texts: dict[tuple[str, int], list[str]], keys: set[tuple[str, int]]) -> str:
    return "\n".join(t for key in keys for t in page_texts.get(key, []))


def _norm(text: str) -> str:
    return re.sub(r"[^\w]+", " ", text.lower()).strip()


def _shape(gold: str, context: str, answer_type: str) -> list[str]:
    """The tallies one missed Str gold adds: whole line, noun phrase, one word, the analysis's answer type."""
    from mmkg.nlp import load_pipeline
    from mmkg.settings import get_settings

    g = _norm(gold)
    lines = [line for line in context.split("\n") if f" {g} " in f" {_norm(line)} "]
    nlp = load_pipeline(get_settings().spacy_model)
    phrase = any(_norm(chunk.text).removeprefix("the ").removeprefix("a ") == g
                 for doc in nlp.pipe(line[:1000] for line in lines[:5]) for chunk in doc.noun_chunks)  # fmt: skip
    out = ["n", f"answer type {answer_type}"]
    out += ["a whole line"] * any(_norm(line) == g for line in lines)
    out += ["a noun phrase of the parse"] * phrase
    out += ["one word"] * (len(g.split()) == 1)
    return out


if __name__ == "__main__":
    typer.run(main)
