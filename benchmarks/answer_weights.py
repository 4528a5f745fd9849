"""How the reader's feature weights and abstention threshold were chosen: a grid over dev, confirmed on held-out.

    .venv/bin/python benchmarks/answer_weights.py --index /tmp/ev_tw/index \
        --questions ../shared/datasets/twowiki/questions_dev.json \
        --questions ../shared/datasets/twowiki/questions_dev2.json --dev 140

Retrieval and context are computed once per question (as ``mmkg ask`` builds them); then every weight
setting re-reads the same evidence, so a grid of settings costs reader time only. The first ``--dev``
questions are the development part the grid is scored on; the rest are held out and only reported. Each
setting changes one weight from the default (or scales it to 0 / 0.5 / 2 x); the table prints EM and F1
on both parts, so a gain on dev that vanishes on the held-out part shows as such.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main(
    index: Annotated[Path, typer.Option(help="Published 2Wiki index (mmkg eval twowiki).")],
    questions: Annotated[list[Path], typer.Option(help="2Wiki question files with answers, in order.")],
    corpus: Annotated[Path, typer.Option(help="2Wiki corpus.json.")] = Path("../shared/datasets/twowiki/corpus.json"),
    dev: Annotated[int, typer.Option(help="The first N questions form the development part.")] = 140,
    scales: Annotated[str, typer.Option(help="Comma list of factors applied to one weight at a time.")] = "0,0.5,2",
) -> None:
    from mmkg.eval import TwoWiki
    from mmkg.eval.answers import exact_match, token_f1
    from mmkg.generation.answer import prepare, retrieve
    from mmkg.generation.reader import WEIGHTS, Reader
    from mmkg.index import Index

    qs = [q for q in TwoWiki.load(corpus, questions).dataset.questions if q.answer is not None]
    idx = Index.open(index)
    prepared = []
    for q in qs:
        result = retrieve(idx, q.question)
        request, ctx, _ = prepare(result, q.question)
        prepared.append((q, request.analysis, result, ctx.evidence))
    print(f"{len(qs)} questions: dev {min(dev, len(qs))}, held out {max(0, len(qs) - dev)}")

    def run(weights: dict[str, float]) -> tuple[float, float, float, float]:
        reader = Reader(min_confidence=0.0, weights=weights)
        em = [0.0, 0.0]
        f1 = [0.0, 0.0]
        for i, (q, analysis, result, evidence) in enumerate(prepared):
            pred = reader.read(analysis, result, evidence).text
            part = 0 if i < dev else 1
            em[part] += exact_match(str(q.answer), pred)
            f1[part] += token_f1(str(q.answer), pred)
        n = [min(dev, len(qs)), max(1, len(qs) - dev)]
        return em[0] / n[0], f1[0] / n[0], em[1] / n[1], f1[1] / n[1]

    print("| setting | dev EM | dev F1 | held EM | held F1 |\n|---|---:|---:|---:|---:|")
    base = run(dict(WEIGHTS))
    print(f"| default {WEIGHTS} | {base[0]:.3f} | {base[1]:.3f} | {base[2]:.3f} | {base[3]:.3f} |")
    for name, value in WEIGHTS.items():
        for factor in (float(x) for x in scales.split(",")):
            r = run({**WEIGHTS, name: value * factor})
            print(f"| {name} x{factor:g} | {r[0]:.3f} | {r[1]:.3f} | {r[2]:.3f} | {r[3]:.3f} |")


if __name__ == "__main__":
    typer.run(main)
