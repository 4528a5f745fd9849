"""Page recall of the default strategy at several ``page_sentence_weight`` values, through the eval harness.

    python benchmarks/page_sentences.py --index /tmp/s26/dev/index                    # dev
    python benchmarks/page_sentences.py --index /tmp/s26/val/index \\
        --dataset ../shared/datasets/mmlongbench-val --questions questions_val.json  # validation

Each weight is one method of one ``run_eval`` call: MG2-RAG as ``auto`` routes it (``mmkg.retrieval.mg2.route``),
with ``longdoc``'s page-sentence step (``mmkg.retrieval.page_sentences``) at that weight; ``default`` keeps its own
parameters. Prints R@1 / R@5 within the question's document and across the corpus, and each weight's R@5 wins and
losses against the first weight (0: the step off). docs/results/mmlongbench.md holds the run that chose 0.2.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DATASET = Path(__file__).resolve().parent.parent.parent / "shared/datasets/mmlongbench-dev"


@dataclass
class Weighted:
    """The harness's ``Method``: ``auto``'s route, with ``longdoc``'s page-sentence weight set."""

    index: Any
    weight: float
    name: str = ""
    setup_s: float = 0.0
    _last: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.name = f"weight {self.weight:g}"

    def search(self, text: str, depth: int, filters: dict | None = None) -> list[str]:
        from mmkg.retrieval.mg2 import MG2, PRESETS, route

        chosen = route(self.index, text, filters)
        params = PRESETS[chosen]
        if chosen == "longdoc":
            params = params.override(page_sentence_weight=self.weight)
        with self.index.single_blas_thread():
            result = MG2(params, preset=chosen).run(self.index, text, None, depth, filters)
        self._last = {"preset": chosen}
        return [c.chunk_id for c in result.chunks]

    def explain(self) -> dict[str, Any]:
        return self._last


def main(
    index: Annotated[Path, typer.Option(help="A built MMLongBench-Doc index (mmkg eval mmlongbench --data-root ...).")],
    dataset: Annotated[Path, typer.Option(help="MMLongBench-Doc folder (documents/, the questions).")] = DATASET,
    questions: Annotated[str, typer.Option(help="The questions file inside --dataset.")] = "questions_dev.json",
    weights: Annotated[str, typer.Option(help="Comma-separated weights; the first: baseline.")] = "0,0.1,0.2,0.3,0.4",
) -> None:
    from mmkg.eval.datasets import MMLongBench
    from mmkg.eval.runner import run_eval
    from mmkg.index import Index

    idx = Index.open(index)
    ds = MMLongBench.load(dataset / "documents", dataset / questions).dataset
    methods = [Weighted(idx, float(w)) for w in weights.split(",")]
    report = run_eval(idx, ds, methods, ks=[1, 5], depth=50)
    print(f"{index}: {report.n_scored} answerable questions, top 50 chunks")
    print(f"{'method':12} {'scope':9} {'R@1':>6} {'R@5':>6} {'p50 ms':>7}  R@5 against {methods[0].name}")
    for scope in report.scopes:
        for m in methods:
            wins = losses = 0
            for q in report.questions:
                got = q["results"].get(scope)
                if got:
                    base, this = got[methods[0].name]["metrics"]["recall@5"], got[m.name]["metrics"]["recall@5"]
                    wins, losses = wins + (this > base), losses + (this < base)
            s = report.summary[scope][m.name]
            print(f"{m.name:12} {scope:9} {s['recall@1']:6.3f} {s['recall@5']:6.3f} "
                  f"{report.latency[m.name]['p50_ms']:7.1f}  wins {wins}, losses {losses}")  # fmt: skip


if __name__ == "__main__":
    typer.run(main)
