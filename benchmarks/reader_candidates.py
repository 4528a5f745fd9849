"""Dump every question's candidates with a model reader's features and whether each is right, for fitting and
measuring the calibration (``benchmarks/reader_fit.py``).

    python benchmarks/reader_candidates.py --index /tmp/ev/tw/index --set twowiki --out /tmp/ev/cands_tw.jsonl
    python benchmarks/reader_candidates.py --reader smollm2 ...   # SmolLM2's features instead of the span model's
    python benchmarks/reader_candidates.py --index /tmp/ev/dev/index --set mmlongbench --out /tmp/ev/cands_dev.jsonl
    python benchmarks/reader_candidates.py --index /tmp/ev/sample/index --set sample \
        --questions benchmarks/data/sample_plain.json --out /tmp/ev/cands_plain.jsonl

Retrieval, context and the reader run as ``mmkg ask`` runs them (``mmkg.generation.answer.retrieve``/``prepare``,
the default strategy, k 8, budget 1,500, within the question's document for MMLongBench-Doc), with the model
reader off; then the model scores the candidates (``SpanChooser.options``, or ``ModelReader.options`` with
``--reader smollm2``). One JSON line per question: the
reader's own answer and whether it is right, and each candidate's features and whether it is right (SQuAD exact
match for 2Wiki and the sample; the benchmark's rule, a score of 0.5 or more, for MMLongBench-Doc).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
SHARED = Path(__file__).resolve().parent.parent.parent / "shared/datasets"


def main(
    index: Annotated[Path, typer.Option(help="Published index root.")],
    set_: Annotated[str, typer.Option("--set", help="twowiki, mmlongbench or sample.")],
    out: Annotated[Path, typer.Option(help="JSON lines written here.")],
    questions: Annotated[list[Path] | None, typer.Option(help="Questions file(s); default: the set's dev.")] = None,
    documents: Annotated[Path | None, typer.Option(help="MMLongBench-Doc PDFs folder.")] = None,
    limit: Annotated[int, typer.Option(help="Only the first N questions (0: all).")] = 0,
    reader: Annotated[str, typer.Option(help="span (mmkg's span model) or smollm2.")] = "span",
) -> None:
    os.environ["MMKG_READER_MODEL"] = "off"  # the reader's own answer first; the model scores below
    from mmkg.eval import MMLongBench, TwoWiki, load_sample
    from mmkg.eval.answer_scoring import score
    from mmkg.eval.answers import exact_match
    from mmkg.generation.answer import prepare, retrieve
    from mmkg.generation.model_reader import ModelReader, stated_text
    from mmkg.index import Index
    from mmkg.llm.installed import reader_model
    from mmkg.llm.likelihood import load

    if set_ == "twowiki":
        qs = questions or [SHARED / "twowiki/questions_dev.json", SHARED / "twowiki/questions_dev2.json"]
        dataset = TwoWiki.load(SHARED / "twowiki/corpus.json", qs).dataset
    elif set_ == "mmlongbench":
        qfile = (questions or [SHARED / "mmlongbench-dev/questions_dev.json"])[0]
        dataset = MMLongBench.load(documents or SHARED / "mmlongbench-dev/documents", qfile).dataset
    else:
        dataset = load_sample((questions or [Path("sample_corpus/questions.json")])[0])
    idx = Index.open(index)
    doc_filters: dict[str, list[str]] = {}
    for doc_id, source_path in idx.documents.select("doc_id", "source_path").iter_rows():
        doc_filters.setdefault(Path(source_path).name, []).append(doc_id)
    from mmkg.generation.span_choice import SpanChooser
    from mmkg.generation.span_reader import load as load_span_model

    if reader == "smollm2":
        choice = reader_model("")
        assert choice.path is not None, choice.reason
        mr: ModelReader | SpanChooser = ModelReader(load(choice.path, choice.name), None)
    else:
        mr = SpanChooser(load_span_model(), None)

    def right(gold: str, pred: str, fmt: str | None) -> int:
        if set_ == "mmlongbench":
            return int(score(gold, pred, fmt or "Str") >= 0.5)
        return int(exact_match(gold, pred))

    rows = [q for q in dataset.questions if q.answer is not None][: limit or None]
    ms: list[float] = []
    with out.open("w") as sink:
        for n, q in enumerate(rows, 1):
            filters = {"doc_id": doc_filters[q.doc]} if q.doc and q.doc in doc_filters else None
            result = retrieve(idx, q.question, k=8, filters=filters)
            request, ctx, _ = prepare(result, q.question, budget=1500)
            reading, analysis = request.reading, request.analysis
            assert reading is not None and analysis is not None
            gold, fmt = str(q.answer), q.answer_format
            opts = []
            if mr.reads(reading, analysis) if isinstance(mr, SpanChooser) else mr.reads(reading):
                t0 = time.perf_counter()
                _, options = mr.options(analysis, reading, ctx.evidence)
                ms.append((time.perf_counter() - t0) * 1e3)
                opts = [{"text": o.span.text, "source": o.span.source, "label": o.span.label,
                         "features": o.features, "right": right(gold, o.span.text, fmt)} for o in options]  # fmt: skip
            guess = stated_text(reading)
            sink.write(json.dumps({
                "id": q.id, "set": set_, "question": q.question, "gold": gold, "format": fmt,
                "type": analysis.answer_type, "method": reading.method, "abstained": reading.abstained,
                "declined_for": reading.declined_for, "confidence": reading.confidence, "text": reading.text,
                "guess": guess, "text_right": right(gold, reading.text, fmt),
                "guess_right": right(gold, guess or reading.text, fmt),
                "na_right": right(gold, "Not answerable", fmt), "options": opts,
            }, ensure_ascii=False) + "\n")  # fmt: skip
            if n % 20 == 0:
                print(f"{n}/{len(rows)}", file=sys.stderr, flush=True)
    if ms:
        print(f"model scoring p50 {statistics.median(ms):.0f} ms over {len(ms)} questions", file=sys.stderr)


if __name__ == "__main__":
    typer.run(main)
