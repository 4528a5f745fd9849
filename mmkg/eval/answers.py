"""Answer quality: the reader's short answers scored against gold answers, beside baselines from the same run.

For every question that carries a gold ``answer`` the harness retrieves with one strategy (the default
unless told), builds the context as ``mmkg ask`` does, and scores four systems on the same evidence:

- ``reader``: the stated short answer of ``mmkg.generation.reading`` (what ``mmkg ask`` answers: the rule reader,
  the reading model's choice among spans, calibrated confidence, the faithfulness check), "Not answerable" where
  it declines;
- ``reader_guess``: the same answer where it is stated, its best guess where it declines (what peers report: they
  always answer);
- ``rules``: the rule reader alone (``mmkg.generation.reader``, the model off), when the model read;
- ``model``: the reading model alone, its most likely candidate span, when it read;
- ``not_answerable``: "Not answerable" everywhere (what abstaining on everything scores);
- ``first_sentence``: the first sentence of the top chunk (the copied-sentence answer at its simplest);
- ``random_choice``: choice questions get one of their options and yes/no questions "yes" or "no", at
  random (seeded); every other question gets the first sentence, so the column reads as "random where a
  guess is possible";
- ``span_model``, when a local extractive QA model is given (``--span-model``): what the ``span-model`` backend
  answers on the same evidence (the reader's computed answers, else the model's span).

Every system's stated answers are checked against the sentences it cites (``mmkg.generation.support``): the
``unsupported`` count must be 0 for mmkg's. The reader's confidence is tabled against how often its best guess is
right (reliability, and risk against coverage: the accuracy of the answered share when only the most confident
questions are answered).

Scoring follows the dataset: SQuAD-style exact match and token F1 (lower case, no punctuation or
articles) for 2Wiki and the sample corpus; MMLongBench-Doc's rules by answer format
(``answer_scoring.score``) and its F1, with accuracy over answerable questions beside it. Questions
are grouped by the answer type the analysis gave them (and, for MMLongBench-Doc, by the gold format).
"""

from __future__ import annotations

import itertools
import random
import re
import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mmkg.eval.answer_scoring import NOT_ANSWERABLE, Scored, accuracy_and_f1, score
from mmkg.eval.datasets import Dataset
from mmkg.generation.answer import reading_ms, retrieve
from mmkg.generation.context import build_context
from mmkg.generation.model_reader import Option
from mmkg.generation.question import analyze
from mmkg.generation.reader import MIN_CONFIDENCE, THRESHOLDED
from mmkg.generation.reading import model_reader, read
from mmkg.generation.short_answer import ShortAnswer, normalize
from mmkg.generation.support import unsupported
from mmkg.index.reader import Index

if TYPE_CHECKING:
    from mmkg.generation.span_model import SpanModelGenerator

THRESHOLDS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6)
SYSTEMS = ("reader", "reader_guess", "not_answerable", "first_sentence", "random_choice")
MODEL_SYSTEMS = ("rules", "model")  # when the reading model read: the rule reader alone, the model alone
#: the confidence bins of the reliability table
BINS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0001)
COVERAGES = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
_FIRST = re.compile(r"(?<=[.!?])\s+")


def exact_match(gold: str, pred: str) -> float:
    return float(normalize(gold) == normalize(pred))


def token_f1(gold: str, pred: str) -> float:
    """SQuAD's token F1 after normalization ("yes"/"no"/"noanswer" must match exactly, as in HotpotQA)."""
    g, p = normalize(gold).split(), normalize(pred).split()
    if not g or not p:
        return float(g == p)
    common = sum((Counter(g) & Counter(p)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


@dataclass
class AnswerReport:
    dataset: str
    strategy: str
    k: int
    budget: int
    n: int
    scoring: str  # squad | mmlongbench
    summary: dict[str, dict[str, float]]  # system -> metric -> value
    by_type: dict[str, dict[str, dict[str, float]]]  # system -> group -> metric -> value
    latency: dict[str, float]  # reader and retrieval milliseconds
    versus_first_sentence: dict[str, int]  # questions the reader wins, loses and ties against the copied sentence
    min_confidence: float
    thresholds: dict[str, dict[str, float]] = field(default_factory=dict)  # abstention threshold -> reader metrics
    questions: list[dict[str, Any]] = field(default_factory=list)
    systems: tuple[str, ...] = SYSTEMS  # the columns scored: ``SYSTEMS``, and ``span_model`` when one was given
    unsupported: dict[str, int] = field(default_factory=dict)  # system -> stated answers no cited sentence says
    reliability: list[dict[str, float]] = field(default_factory=list)  # confidence bin -> n, confidence, accuracy
    risk_coverage: list[dict[str, float]] = field(default_factory=list)  # answered share -> accuracy
    ece: float = 0.0  # expected calibration error of the confidence, against the best guess being right
    model: str = ""  # the reading model, "" when the rule reader answered alone
    threshold: float = 0.0  # the calibrated confidence below which stated answers are declined (with the model)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def shape(analysis: Any) -> str:
    """The question's shape as the analysis reads it, close to 2Wiki's types (which the data does not carry):
    comparison (options or "same", compared directly), bridge comparison (compared through a person each
    option leads to), two hops (an attribute of the person a named thing leads to), one hop (the rest)."""
    if analysis.answer_type in ("choice", "yes_no"):
        return "bridge comparison" if analysis.bridge else "comparison"
    return "two hops" if analysis.bridge and analysis.hops == 2 else "one hop"


def _first_sentence(ctx_evidence: Any) -> str:
    chunks = [e for e in ctx_evidence if e.kind == "chunk"]
    if not chunks:
        return NOT_ANSWERABLE
    return _FIRST.split(chunks[0].text.strip(), maxsplit=1)[0]


def _metrics(scoring: str, gold: str, fmt: str | None, pred: str) -> dict[str, float]:
    if scoring == "mmlongbench":
        return {"score": score(gold, pred, fmt or "Str")}
    return {"em": exact_match(gold, pred), "f1": token_f1(gold, pred)}


def _pct(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100)[int(p) - 1]


def run_answers(
    index: Index,
    dataset: Dataset,
    strategy: str | None = None,
    k: int = 8,
    budget: int = 1500,
    seed: int = 0,
    on_step: Callable[[], None] | None = None,
    span_model: SpanModelGenerator | None = None,
) -> AnswerReport:
    """Answer every question with a gold answer; score the reader and the baselines (and ``span_model``'s
    answers, when given, on the same evidence). A question that names its document (MMLongBench-Doc) is answered
    from that document alone, as the benchmark asks."""
    questions = [q for q in dataset.questions if q.answer is not None]
    doc_filters: dict[str, list[str]] = {}
    for doc_id, source_path in index.documents.select("doc_id", "source_path").iter_rows():
        doc_filters.setdefault(Path(source_path).name, []).append(doc_id)
    scoring = "mmlongbench" if dataset.name == "mmlongbench" else "squad"
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    read_ms: list[float] = []
    retrieve_ms: list[float] = []
    model_ms: list[float] = []
    systems = (*SYSTEMS, "span_model") if span_model is not None else SYSTEMS
    mr, _ = model_reader()
    model_name = mr.model.name if mr is not None else ""  # the reading model, when there is one to read
    for q in questions:
        filters = {"doc_id": doc_filters[q.doc]} if q.doc and q.doc in doc_filters else None
        t0 = time.perf_counter()
        result = retrieve(index, q.question, k=k, strategy=strategy, filters=filters)
        # the question's parse (and a two-hop question's bridge reading) happen inside ``retrieve`` but are
        # counted with the reader
        retrieve_ms.append((time.perf_counter() - t0) * 1e3 - reading_ms(result))
        ctx = build_context(result, budget)
        t0 = time.perf_counter()
        analysis = analyze(q.question)
        done = read(analysis, result, ctx.evidence)
        reading = done.answer
        read_ms.append((time.perf_counter() - t0) * 1e3 + reading_ms(result))
        first = _first_sentence(ctx.evidence)
        if analysis.answer_type == "choice" and analysis.options:
            rnd = rng.choice(analysis.options)
        elif analysis.answer_type == "yes_no":
            rnd = rng.choice(("yes", "no"))
        else:
            rnd = first
        guess = reading.guess if reading.abstained and reading.guess else reading.text
        preds = {"reader": reading.text, "reader_guess": guess, "not_answerable": NOT_ANSWERABLE,
                 "first_sentence": first, "random_choice": rnd}  # fmt: skip
        cited: dict[str, tuple[str, str, list[str]]] = {"reader": _cited(reading)}
        if not done.notes:  # the model was there to read (a question it does not read: both are the rules')
            top = max(done.options, key=_model_score).span.text if done.options else done.rules.text
            preds["rules"], preds["model"] = done.rules.text, top
            cited["rules"] = _cited(done.rules)
        if span_model is not None:
            from mmkg.generation.base import GenerationRequest

            request = GenerationRequest("", "", q.question, tuple(ctx.evidence), analysis=analysis, reading=reading)
            t0 = time.perf_counter()
            preds["span_model"] = span_model.read(request).text
            model_ms.append((time.perf_counter() - t0) * 1e3)
        scores = {name: _metrics(scoring, str(q.answer), q.answer_format, p) for name, p in preds.items()}
        rows.append({
            "id": q.id, "question": q.question, "gold": q.answer, "format": q.answer_format,
            "type": analysis.answer_type, "shape": shape(analysis), "strategy": result.strategy,
            "predictions": preds, "scores": scores,
            "unsupported": {name: why for name, (text, method, sents) in cited.items()
                            if (why := unsupported(text, method, sents, analysis.options))},
            "confidence": reading.confidence, "coverage": reading.coverage, "abstained": reading.abstained,
            "guess": reading.guess, "method": reading.method, "model": reading.model,
            "declined_for": reading.declined_for, "guess_right": _right(scoring, scores["reader_guess"]),
            "reason": reading.reason, "read_ms": round(read_ms[-1], 2),
        })  # fmt: skip
        if on_step:
            on_step()
    if rows and all("rules" in r["predictions"] for r in rows):
        systems = (*systems[:2], *MODEL_SYSTEMS, *systems[2:])
    summary: dict[str, dict[str, float]] = {}
    by_type: dict[str, dict[str, dict[str, float]]] = {}
    for name in systems:
        summary[name] = _summarize(scoring, rows, name)
        groups: dict[str, list[dict[str, Any]]] = {}
        for r in rows:
            groups.setdefault(r["type"], []).append(r)
            groups.setdefault(f"shape {r['shape']}", []).append(r)
            if r["format"]:
                groups.setdefault(f"format {r['format']}", []).append(r)
        by_type[name] = {g: _summarize(scoring, rs, name) for g, rs in sorted(groups.items())}
    sweep = {f"{t:.2f}": _at_threshold(scoring, rows, t) for t in THRESHOLDS}
    main = "score" if scoring == "mmlongbench" else "f1"
    wins = sum(r["scores"]["reader"][main] > r["scores"]["first_sentence"][main] for r in rows)
    losses = sum(r["scores"]["reader"][main] < r["scores"]["first_sentence"][main] for r in rows)
    latency = {"read_p50_ms": round(_pct(read_ms, 50), 2), "read_p95_ms": round(_pct(read_ms, 95), 2),
               "retrieve_p50_ms": round(_pct(retrieve_ms, 50), 2), "retrieve_p95_ms": round(_pct(retrieve_ms, 95), 2)}
    if model_ms:  # the model's own reading, after the reader's
        latency |= {"span_model_p50_ms": round(_pct(model_ms, 50), 2),
                    "span_model_p95_ms": round(_pct(model_ms, 95), 2)}
    counted = [s for s in systems if s in ("reader", "rules")]
    reliability, risk, ece = calibration_tables(rows)
    return AnswerReport(
        dataset=dataset.name, strategy=strategy or "default", k=k, budget=budget, n=len(rows), scoring=scoring,
        summary=summary, by_type=by_type, latency=latency,
        versus_first_sentence={"wins": wins, "losses": losses, "ties": len(rows) - wins - losses},
        min_confidence=MIN_CONFIDENCE, thresholds=sweep, questions=rows, systems=systems,
        unsupported={name: sum(name in r["unsupported"] for r in rows) for name in counted},
        reliability=reliability, risk_coverage=risk, ece=ece, model=model_name,
        threshold=mr.calibration.threshold if mr is not None and mr.calibration is not None else 0.0,
    )  # fmt: skip


def _model_score(option: Option) -> float:
    """What the reading model alone ranks a candidate by: the span model's log-probability, or SmolLM2's."""
    return option.features.get("sm_logp", option.features.get("lp", 0.0))


def _cited(reading: ShortAnswer) -> tuple[str, str, list[str]]:
    return reading.text, reading.method, [s.sentence for s in reading.support]


def _right(scoring: str, scores: dict[str, float]) -> int:
    """Whether an answer counts as right: exact match, or the benchmark's score of 0.5 or more."""
    return int(scores.get("em", scores.get("score", 0.0)) >= (1.0 if scoring == "squad" else 0.5))


def calibration_tables(rows: list[dict[str, Any]]) -> tuple[list[dict[str, float]], list[dict[str, float]], float]:
    """The reader's confidence against its best guess being right, over the questions it has a guess for: a
    reliability table by confidence bin, risk against coverage (answer only the most confident share), and the
    expected calibration error."""
    na = normalize(NOT_ANSWERABLE)
    pairs = sorted(((float(r["confidence"]), int(r["guess_right"])) for r in rows
                    if normalize(r["predictions"]["reader_guess"]) != na), reverse=True)  # fmt: skip
    reliability, ece = [], 0.0
    for lo, hi in itertools.pairwise(BINS):
        sel = [(c, y) for c, y in pairs if lo <= c < hi]
        if sel:
            conf, acc = sum(c for c, _ in sel) / len(sel), sum(y for _, y in sel) / len(sel)
            ece += len(sel) / len(pairs) * abs(conf - acc)
            reliability.append({"from": lo, "to": min(hi, 1.0), "n": len(sel), "confidence": round(conf, 3),
                                "accuracy": round(acc, 3)})  # fmt: skip
    risk = []
    for share in COVERAGES:
        top = pairs[: max(1, round(share * len(pairs)))] if pairs else []
        if top:
            risk.append({"coverage": share, "n": len(top), "min_confidence": round(top[-1][0], 3),
                         "accuracy": round(sum(y for _, y in top) / len(top), 3)})  # fmt: skip
    return reliability, risk, round(ece, 3)


def _at_threshold(scoring: str, rows: list[dict[str, Any]], t: float) -> dict[str, float]:
    """The reader's metrics had it declined below confidence ``t`` (its guess stands in where it declined). Only the
    answers the reader thresholds move (``reader.THRESHOLDED``): at the default, the figure is the reader's own."""
    shifted = []
    for r in rows:
        if r.get("method") not in THRESHOLDED:
            shifted.append(r)
            continue
        guess = r["guess"] if r["abstained"] and r["guess"] else r["predictions"]["reader"]
        pred = guess if r["confidence"] >= t else NOT_ANSWERABLE
        shifted.append({**r, "predictions": {"reader": pred},
                        "scores": {"reader": _metrics(scoring, str(r["gold"]), r["format"], pred)}})  # fmt: skip
    return _summarize(scoring, shifted, "reader")


def _summarize(scoring: str, rows: list[dict[str, Any]], name: str) -> dict[str, float]:
    if not rows:
        return {"n": 0}
    if scoring == "mmlongbench":
        scored = [Scored(r["id"], str(r["gold"]), r["predictions"][name], r["format"] or "Str",
                         r["scores"][name]["score"]) for r in rows]  # fmt: skip
        acc, f1 = accuracy_and_f1(scored)
        answerable = [s.score for s in scored if s.gold != NOT_ANSWERABLE]
        return {"n": len(rows), "accuracy": round(acc, 4), "f1": round(f1, 4),
                "accuracy_answerable": round(sum(answerable) / len(answerable), 4) if answerable else 0.0}  # fmt: skip
    em = sum(r["scores"][name]["em"] for r in rows) / len(rows)
    f1 = sum(r["scores"][name]["f1"] for r in rows) / len(rows)
    return {"n": len(rows), "em": round(em, 4), "f1": round(f1, 4)}


def markdown(r: AnswerReport) -> str:
    """The answer tables: systems side by side, then by answer type (and format), the latency, wins and losses."""
    metrics = ["accuracy", "f1", "accuracy_answerable"] if r.scoring == "mmlongbench" else ["em", "f1"]
    out = [f"## Answers ({r.n} questions with a gold answer; retrieval `{r.strategy}`, k={r.k}, budget {r.budget})",
           "", "| system | " + " | ".join(metrics) + " |", "|---|" + "---:|" * len(metrics)]  # fmt: skip
    for name in r.systems:
        out.append(f"| {name} | " + " | ".join(f"{r.summary[name].get(m, 0.0):.3f}" for m in metrics) + " |")
    out += ["", f"Reading model: {r.model}; stated answers declined below calibrated confidence {r.threshold:.2f} "
            "(reader_guess: the best guess where it declined)." if r.model else
            "Reading model: none (the rule reader answered alone)."]  # fmt: skip
    groups = list(r.by_type["reader"])
    # the other systems by their first metric: the baselines, and a span model when one was given
    others = [s for s in r.systems if s not in ("reader", "not_answerable")]
    out += ["", "By answer type and question shape (both the analysis's) and gold format:", "",
            "| group | n | " + " | ".join(f"reader {m}" for m in metrics) + " | " + " | ".join(others) + " |",
            "|---|---:|" + "---:|" * (len(metrics) + len(others))]  # fmt: skip
    main = metrics[0]
    for g in groups:
        cells = [f"{r.by_type['reader'][g].get(m, 0.0):.3f}" for m in metrics]
        cells += [f"{r.by_type[s][g].get(main, 0.0):.3f}" for s in others]
        out.append(f"| {g} | {int(r.by_type['reader'][g]['n'])} | " + " | ".join(cells) + " |")
    if r.thresholds:
        out += ["", f"Reader {main} had it declined below each confidence (the default is {r.min_confidence:.2f}):", "",
                "| " + " | ".join(r.thresholds) + " |", "|" + "---:|" * len(r.thresholds),
                "| " + " | ".join(f"{m.get(main, 0.0):.3f}" for m in r.thresholds.values()) + " |"]  # fmt: skip
    v = r.versus_first_sentence
    out += ["", f"Reader against the first sentence: {v['wins']} wins, {v['losses']} losses, {v['ties']} ties. "
            f"Reader latency p50 {r.latency['read_p50_ms']:.1f} ms, p95 {r.latency['read_p95_ms']:.1f} ms "
            f"(retrieval p50 {r.latency['retrieve_p50_ms']:.1f} ms). Abstention below confidence "
            f"{r.min_confidence:.2f}."]  # fmt: skip
    if r.unsupported:
        out += ["", "Unsupported stated answers (no cited sentence says them): "
                + ", ".join(f"{k} {v}" for k, v in r.unsupported.items()) + "."]  # fmt: skip
    if r.reliability:
        out += ["", f"Reliability of the reader's confidence against its best guess (ECE {r.ece:.3f}):", "",
                "| confidence | n | mean confidence | accuracy |", "|---|---:|---:|---:|"]  # fmt: skip
        out += [f"| {b['from']:.1f}–{b['to']:.1f} | {b['n']} | {b['confidence']:.3f} | {b['accuracy']:.3f} |"
                for b in r.reliability]  # fmt: skip
        out += ["", "Risk against coverage (only the most confident share answered):", "",
                "| coverage | n | from confidence | accuracy |", "|---:|---:|---:|---:|"]  # fmt: skip
        out += [f"| {c['coverage']:.1f} | {c['n']} | {c['min_confidence']:.3f} | {c['accuracy']:.3f} |"
                for c in r.risk_coverage]  # fmt: skip
    if "span_model_p50_ms" in r.latency:
        out[-1] += (f" The span model's reading p50 {r.latency['span_model_p50_ms']:.1f} ms, "
                    f"p95 {r.latency['span_model_p95_ms']:.1f} ms.")  # fmt: skip
    return "\n".join(out)


def write(report: AnswerReport, out_dir: Path) -> tuple[Path, Path]:
    """``answers.json`` (every question, every system) and ``answers.md`` (the tables)."""
    import json

    from mmkg.atomic import write_bytes

    out_dir.mkdir(parents=True, exist_ok=True)
    jpath, mpath = out_dir / "answers.json", out_dir / "answers.md"
    write_bytes(jpath, json.dumps(report.to_dict(), indent=1, ensure_ascii=False).encode("utf-8"))
    write_bytes(mpath, markdown(report).encode("utf-8"))
    return jpath, mpath
