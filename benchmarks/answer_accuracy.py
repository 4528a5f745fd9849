"""Answer accuracy on MMLongBench-Doc dev with the benchmark's rule-based scoring, per strategy and backend.

    python benchmarks/answer_accuracy.py --index /tmp/ev_mb/index --strategies mg2,mkg --backend extractive

Every question (answerable or not) is answered within its own document (filter by partition) by
``mmkg.generation.answer``; the extractive backend's short answer is the reader's (``Answer.short_answer``);
for a model's response a short answer is pulled out by rules
(``mmkg.eval.answer_scoring.extract_short_answer``, standing in for the benchmark's GPT-4o extraction
step) and scored by the gold answer's format. Prints accuracy, F1, accuracy per format and the
generation latency (median and p95 of the backend's own time, retrieval excluded).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DATASET = Path(__file__).resolve().parent.parent.parent / "shared/datasets/mmlongbench-dev"


def main(
    index: Annotated[Path, typer.Option(help="Published MMLongBench-Doc index root (mmkg eval mmlongbench).")],
    strategies: Annotated[str, typer.Option(help="Comma list: strategy or strategy:preset.")] = "mg2,mkg",
    backend: Annotated[str, typer.Option(help="extractive, openai, llamacpp or transformers.")] = "extractive",
    model: Annotated[str | None, typer.Option(help="Model name or path for an LLM backend.")] = None,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint for --backend openai.")] = None,
    k: Annotated[int, typer.Option(help="Chunks retrieved per question.")] = 8,
    budget: Annotated[int, typer.Option(help="Context token budget.")] = 1500,
    limit: Annotated[int, typer.Option(help="Answer only the first N questions (0: all).")] = 0,
    dataset: Annotated[Path, typer.Option(help="MMLongBench-Doc folder.")] = DATASET,
    questions: Annotated[str, typer.Option(help="The questions file inside --dataset.")] = "questions_dev.json",
    out: Annotated[Path | None, typer.Option(help="Write every scored answer here (JSON lines).")] = None,
) -> None:
    from mmkg.eval import MMLongBench
    from mmkg.eval.answer_scoring import Scored, accuracy_and_f1, extract_short_answer, score
    from mmkg.generation import answer, get_generator
    from mmkg.index import Index

    mb = MMLongBench.load(dataset / "documents", dataset / questions)
    raw = json.loads((dataset / questions).read_text())
    if limit:
        raw = raw[:limit]
    idx = Index.open(index)
    options = {"base_url": base_url} if base_url else {}
    gen = get_generator(backend, model, **options)
    formats = sorted({r["answer_format"] for r in raw})
    print(f"{len(raw)} questions; backend {backend} ({gen.model}); k={k}, budget={budget}")
    header = ["strategy", "acc", "F1", *[f"{f} (n)" for f in formats], "gen p50 ms", "gen p95 ms", "s"]
    print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    sink = out.open("w") if out else None
    for spec in strategies.split(","):
        name, _, preset = spec.partition(":")
        params = {"preset": preset} if preset else {}
        rows: list[Scored] = []
        latencies: list[float] = []
        t0 = time.perf_counter()
        for r in raw:
            part = mb.dataset.doc_partitions[r["doc_id"]]
            a = answer(idx, r["question"], gen, strategy=name, k=k, budget=budget, filters={"partition": part},
                       max_tokens=128, **params)  # fmt: skip
            # the offline backend's short answer is the reader's; a model's free text goes through the rules
            pred = a.short_answer if a.extractive and a.short_answer else extract_short_answer(r["question"], a.text)
            rows.append(Scored(str(r["id"]), str(r["answer"]), pred, r["answer_format"],
                               score(r["answer"], pred, r["answer_format"])))  # fmt: skip
            latencies.append(a.latency_ms["generate"])
            if sink:
                sink.write(json.dumps({"strategy": spec, **rows[-1].__dict__, "response": a.text}) + "\n")
        acc, f1 = accuracy_and_f1(rows)
        cells = [f"{acc:.3f}", f"{f1:.3f}"]
        for f in formats:
            sub = [x.score for x in rows if x.answer_format == f]
            cells.append(f"{sum(sub) / len(sub):.3f} ({len(sub)})")
        p95 = statistics.quantiles(latencies, n=20)[-1] if len(latencies) > 1 else latencies[0]
        cells += [f"{statistics.median(latencies):.1f}", f"{p95:.1f}", f"{time.perf_counter() - t0:.1f}"]
        print(f"| {spec} | " + " | ".join(cells) + " |")
    if sink:
        sink.close()


if __name__ == "__main__":
    typer.run(main)
