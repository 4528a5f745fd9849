"""Answer-in-context@k on MMLongBench-Doc dev: is the gold answer written in the top-k chunks a strategy returns?

    python benchmarks/answer_in_context.py --index /tmp/ev_mb/index --methods bm25,dense,mg2:default,mg2:longdoc,mkg

An LLM-free upper bound for generation: an answer model can copy or compute only what its context
shows. Per answerable question with a written answer (``answer_format`` Str, Int, Float, List; the
"Not answerable" ones are left out), retrieval runs within the question's own document, and the
answer counts as in context when every element of it (a list's items, or the one value) appears in
the concatenated text of the top-k chunks after normalization (lower case, thousands separators and
"%" dropped, punctuation around words ignored). Numbers a chart shows only as bars, or values the
question asks to compute, are never "in context": the figures are a floor for those formats.
"""

from __future__ import annotations

import ast
import re
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DATASET = Path(__file__).resolve().parent.parent.parent / "shared/datasets/mmlongbench-dev"


def normalize(text: str) -> str:
    t = text.lower().replace("%", " ")
    t = re.sub(r"(?<=\d),(?=\d{3})", "", t)
    t = re.sub(r"[^\w.\-$ ]+", " ", t)
    t = re.sub(r"(?<!\d)\.|\.(?!\d)", " ", t)  # periods that are not decimal points
    return " " + re.sub(r"\s+", " ", t).strip() + " "


def answer_items(answer: str, fmt: str) -> list[str]:
    if fmt == "List":
        try:
            items = ast.literal_eval(answer)
            if isinstance(items, list | tuple):
                return [str(x) for x in items]
        except (ValueError, SyntaxError):
            pass
    return [answer]


def in_context(answer: str, fmt: str, context: str) -> bool:
    ctx = normalize(context)
    return all(normalize(item) in ctx for item in answer_items(answer, fmt))


def main(
    index: Annotated[
        Path, typer.Option(help="Published MMLongBench-Doc index root (mmkg eval mmlongbench builds one).")
    ],
    methods: Annotated[str, typer.Option(help="Comma list, as mmkg eval --methods.")] = "bm25,dense,mg2:longdoc,mkg",
    ks: Annotated[str, typer.Option(help="Comma list of k.")] = "1,5,10",
    dataset: Annotated[Path, typer.Option(help="MMLongBench-Doc folder.")] = DATASET,
) -> None:
    import json

    from mmkg.eval import MMLongBench, make_methods, parse_methods
    from mmkg.index import Index

    mb = MMLongBench.load(dataset / "documents", dataset / "questions_dev.json")
    raw = {str(r["id"]): r for r in json.loads((dataset / "questions_dev.json").read_text())}
    idx = Index.open(index)
    texts = dict(idx.chunks.select("chunk_id", "text").iter_rows())
    k_list = sorted(int(k) for k in ks.split(","))
    ms = make_methods(idx, parse_methods(methods))
    questions = [q for q in mb.dataset.questions if raw[q.id]["answer_format"] != "None" and q.answer]
    by_format: dict[str, int] = {}
    for q in questions:
        by_format[raw[q.id]["answer_format"]] = by_format.get(raw[q.id]["answer_format"], 0) + 1
    print(f"{len(questions)} questions with a written answer: {by_format}")
    header = ["method", *[f"AiC@{k}" for k in k_list], *[f"{f}@{k_list[-1]}" for f in sorted(by_format)], "s"]
    print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    for m in ms:
        t0 = time.perf_counter()
        hits = {k: 0 for k in k_list}
        fmt_hits: dict[str, int] = {}
        for q in questions:
            fmt = raw[q.id]["answer_format"]
            ranked = m.search(q.question, max(k_list), {"partition": mb.dataset.doc_partitions[q.doc]})
            for k in k_list:
                if in_context(q.answer, fmt, "\n".join(texts[c] for c in ranked[:k])):
                    hits[k] += 1
                    if k == k_list[-1]:
                        fmt_hits[fmt] = fmt_hits.get(fmt, 0) + 1
        cells = [f"{hits[k] / len(questions):.3f}" for k in k_list]
        cells += [f"{fmt_hits.get(f, 0) / n:.3f}" for f, n in sorted(by_format.items())]
        print(f"| {m.name} | " + " | ".join(cells) + f" | {time.perf_counter() - t0:.1f} |")


if __name__ == "__main__":
    typer.run(main)
