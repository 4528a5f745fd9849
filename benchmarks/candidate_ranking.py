"""Would weights fitted to labelled candidates rank the span reader's candidates better than its hand-set ones?

    .venv/bin/python benchmarks/candidate_ranking.py \\
        --set dev=/tmp/s17/dev/index --set val=/tmp/s17/val/index --set tw=/tmp/s17/tw/index --train dev,tw

Each ``--set NAME=INDEX`` answers its questions as ``mmkg eval ... --answers`` does (``run_answers``) and keeps
the candidates of the span reader's last ``candidates`` call per question (every candidate, not the five the
answer reports), each with its features (``Reader._features`` and the rest: sentence, relation, near, about,
graph, rank, focus, cell, ...) and whether it scores as the gold answer (MMLongBench-Doc's rule for ``dev``
and ``val``, exact match after SQuAD normalization for ``tw``). Names: ``dev`` and ``val`` are MMLongBench-Doc's
dev and validation questions, ``tw`` 2Wiki's 240 dev questions.

Over the questions where some candidate scores as the gold, it counts how often the top candidate does:
with the reader's own scores, and with weights fitted on the ``--train`` sets by a conditional logit (a
softmax over each question's candidates, L2-penalized, plain gradient descent), with and without the
candidates' NER labels as extra features. Weights are fitted on the train sets only; a set not trained on
is the test. Prints counts, never a question, so validation can be a test set.

With ``--dependency``, each candidate also gets two features from spaCy's dependency parse of its sentence
(classic QA's syntactic matching, Cui et al. 2005): ``dep_relation``, 1 / (1 + the tree distance from the
candidate's tokens to the nearest of the question's relation words), and ``dep_asked``, the same to any of the
question's content words; 0 when the sentence holds none. Rows with the reader's score plus ``w`` times each are
printed, and the fits see both features.
"""

from __future__ import annotations

import sys
from collections import deque
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SHARED = Path(__file__).resolve().parent.parent.parent / "shared/datasets"
LABELS = ("NUMBER", "CARDINAL", "PERCENT", "MONEY", "QUANTITY", "DATE", "PERSON", "ORG", "GPE", "FOCUS", "IDENT")
Group = list[tuple[dict[str, float], float, str, bool]]  # (features, reader's score, NER label, scores as gold)


def _dataset(name: str) -> Any:
    from mmkg.eval.datasets import MMLongBench, TwoWiki

    if name == "tw":
        files = [SHARED / "twowiki/questions_dev.json", SHARED / "twowiki/questions_dev2.json"]
        return TwoWiki.load(SHARED / "twowiki/corpus.json", files).dataset
    folder = SHARED / f"mmlongbench-{name}"
    return MMLongBench.load(folder / "documents", folder / f"questions_{name}.json").dataset


def _tree_distance(doc: Any, a: int, b: int, anchor: Any) -> int | None:
    """Edges of the dependency tree between the tokens of ``doc`` in characters ``[a, b)`` and the nearest token
    ``anchor`` accepts outside them; None when there is none."""
    start = [t.i for t in doc if a <= t.idx < b]
    targets = {t.i for t in doc if anchor(t) and not a <= t.idx < b}
    if not start or not targets:
        return None
    depth = dict.fromkeys(start, 0)
    queue = deque(start)
    while queue:
        i = queue.popleft()
        if i in targets:
            return depth[i]
        for n in (doc[i].head, *doc[i].children):
            if n.i not in depth:
                depth[n.i] = depth[i] + 1
                queue.append(n.i)
    return None


def add_dependency(groups: list[Group], found: list[tuple[Any, list]]) -> None:
    """``dep_relation`` and ``dep_asked`` of every candidate (see the module docstring), in place."""
    from mmkg.generation.cells import asked_words
    from mmkg.generation.question import stem
    from mmkg.nlp import load_pipeline
    from mmkg.settings import get_settings

    nlp = load_pipeline(get_settings().spacy_model)
    texts = sorted({c.sentence for _, cands in found for c in cands})
    docs = dict(zip(texts, nlp.pipe(texts, batch_size=64), strict=True))
    for group, (q, cands) in zip(groups, found, strict=True):
        relation = set(q.relation) | set(q.alternates)
        asked = {stem(w) for w in asked_words(q.text)}
        for (features, *_), c in zip(group, cands, strict=True):
            doc = docs[c.sentence]
            for key, words in (("dep_relation", relation), ("dep_asked", asked)):
                d = _tree_distance(doc, c.start, c.end, lambda t, words=words: stem(t.text.lower()) in words)
                features[key] = 0.0 if d is None else 1.0 / (1.0 + d)


def collect(name: str, index: Path, dependency: bool = False) -> list[Group]:
    """Each answered question's candidate list, as the reader scored it."""
    import mmkg.eval.answers as answers
    from mmkg.eval.answer_scoring import score
    from mmkg.generation import reader as reading
    from mmkg.index import Index

    ds = _dataset(name)
    gold = {q.question: (str(q.answer), q.answer_format) for q in ds.questions if q.answer is not None}
    seen: list[tuple[Any, list]] = []
    groups: list[Group] = []
    found: list[tuple[Any, list]] = []  # each group's question analysis and candidates
    original_candidates, original_prepare = reading.Reader.candidates, answers.prepare

    def spy(self, q, sentences, value_type, result=None, limit=reading.MAX_SENTENCES):  # type: ignore[no-untyped-def]
        out = original_candidates(self, q, sentences, value_type, result, limit)
        seen.append((q, out))
        return out

    def prepare(result, question, **kw):  # type: ignore[no-untyped-def]
        seen.clear()
        out = original_prepare(result, question, **kw)
        ours = [(q, c) for q, c in seen if q.text == out[0].analysis.text]
        g, fmt = gold[question]
        hit = (lambda t: score(g, t, fmt) >= 0.5) if fmt else (lambda t: answers.exact_match(g, t) >= 1.0)
        if ours:
            groups.append([(dict(c.features), c.score, c.label, hit(c.text)) for c in ours[-1][1]])
            found.append(ours[-1])
        return out

    reading.Reader.candidates, answers.prepare = spy, prepare  # type: ignore[method-assign]
    try:
        answers.run_answers(Index.open(index), ds)
    finally:
        reading.Reader.candidates, answers.prepare = original_candidates, original_prepare  # type: ignore[method-assign]
    if dependency:
        add_dependency(groups, found)
    return groups


def _matrix(group: Group, keys: list[str], labels: bool) -> tuple[np.ndarray, np.ndarray]:
    rows = [[f.get(k, 0.0) for k in keys] + ([float(lab == x) for x in LABELS] if labels else [])
            for f, _, lab, _ in group]  # fmt: skip
    return np.array(rows, dtype=float), np.array([g for *_, g in group], dtype=float)


def fit(data: list[tuple[np.ndarray, np.ndarray]], l2: float, steps: int = 3000, rate: float = 0.1) -> np.ndarray:
    """Conditional-logit weights: each question's softmax over its candidates toward its gold ones."""
    w = np.zeros(data[0][0].shape[1])
    for _ in range(steps):
        grad = l2 * w
        for x, y in data:
            s = x @ w
            p = np.exp(s - s.max())
            grad += x.T @ (p / p.sum() - y / y.sum()) / len(data)
        w -= rate * grad
    return w


def main(
    sets: Annotated[list[str], typer.Option("--set", help="NAME=INDEX; NAME is dev, val (MMLongBench-Doc) or tw.")],
    train: Annotated[str, typer.Option(help="Comma list of the set names the weights are fitted on.")] = "dev,tw",
    l2: Annotated[str, typer.Option(help="Comma list of L2 penalties to fit with.")] = "0.01,0.1,1",
    dependency: Annotated[bool, typer.Option(help="Add the dependency-tree features and their rankings.")] = False,
) -> None:
    named = dict(s.split("=", 1) for s in sets)
    unknown = set(train.split(",")) - set(named)
    if unknown:
        raise typer.BadParameter(f"--train names {sorted(unknown)}, which no --set gives")
    groups = {n: [g for g in collect(n, Path(index), dependency) if any(hit for *_, hit in g)]
              for n, index in named.items()}  # fmt: skip
    keys = sorted({k for gs in groups.values() for g in gs for f, *_ in g for k in f})
    print("questions where a candidate scores as the gold: " + ", ".join(f"{n} {len(g)}" for n, g in groups.items()))
    print(f"{'ranking':44}" + "".join(f"{n:>8}" for n in groups))
    own = {n: sum(max(g, key=lambda c: c[1])[3] for g in gs) for n, gs in groups.items()}
    print(f"{'the reader own scores':44}" + "".join(f"{own[n]:>8}" for n in groups))
    if dependency:
        for key in ("dep_relation", "dep_asked"):
            for w in (0.5, 1.0, 2.0, 4.0):
                top = {n: sum(max(g, key=lambda c: c[1] + w * c[0][key])[3] for g in gs) for n, gs in groups.items()}
                print(f"{f'the reader + {w:g} x {key}':44}" + "".join(f"{top[n]:>8}" for n in groups))
    for labels in (False, True):
        for penalty in (float(x) for x in l2.split(",")):
            data = {n: [_matrix(g, keys, labels) for g in gs] for n, gs in groups.items()}
            w = fit([d for n in train.split(",") for d in data[n]], penalty)
            top = {n: sum(y[int(np.argmax(x @ w))] > 0 for x, y in ds) for n, ds in data.items()}
            name = f"fitted on {train}, l2 {penalty:g}" + (", NER labels" if labels else "")
            print(f"{name:44}" + "".join(f"{top[n]:>8}" for n in groups))


if __name__ == "__main__":
    typer.run(main)
