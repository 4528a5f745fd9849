"""Fit a model reader's calibration on dev candidates, write it, and score the policy it sets on every set given,
the held-apart ones included, and each fit set left out of the fit in turn.

    python benchmarks/reader_fit.py --fit /tmp/ev/cands_tw.jsonl --fit /tmp/ev/cands_dev.jsonl \
        --check /tmp/ev/cands_val.jsonl --check /tmp/ev/cands_plain.jsonl --write
    python benchmarks/reader_fit.py --reader smollm2 ...   # SmolLM2's dumps, into calibration.json

``--reader span`` (the default) fits ``mmkg/generation/span_calibration.json`` on the span model's features;
``--reader smollm2`` fits ``mmkg/generation/calibration.json`` on SmolLM2's.

The candidate dumps come from ``benchmarks/reader_candidates.py``. ``--fit`` sets train the three maps of
``mmkg.generation.calibration`` (candidate logistic regression, the chosen candidate's isotonic map, the rule
families' isotonic maps) and choose the threshold (the lowest confidence at which the answered questions'
precision is at least ``--precision``); ``--check`` sets are only scored. Without ``--write`` nothing is written.

Per set it prints: stated answers (share of answerable questions answered, precision), the best guess's score
(what peers report: always an answer), the score with declines as the benchmark counts them, the rule reader
alone and the model alone (its most likely candidate) on the same questions, and the expected calibration error.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _rows(paths: list[Path]) -> list[dict[str, Any]]:
    out = []
    for p in paths:
        out += [json.loads(line) | {"file": p.name} for line in p.read_text().splitlines() if line.strip()]
    return out


def decide(row: dict[str, Any], cal: Any) -> tuple[str, float, int, bool]:
    """(answer text, confidence, right, hard-declined) of the policy on one dumped question: the policy is
    ``Calibration.decide``, what ``mmkg ask`` runs (``cal`` may be any object with its maps and threshold)."""
    from mmkg.generation.calibration import Calibration, RuleAnswer

    rule = RuleAnswer(row["method"], row["confidence"], row["abstained"], row["declined_for"],
                      bool(row["guess"] if row["abstained"] else row["text"]))  # fmt: skip
    if row["options"] and "sm_logp" in row["options"][0]["features"]:  # the span reader's policy, as mmkg ask's
        from mmkg.generation.span_choice import policy

        order, _, d, mistyped = policy(cal, row["type"], [o["features"] for o in row["options"]], rule)
        best = row["options"][order[d.option or 0]]
        if best["features"]["reader_top"] and row["guess"]:
            return row["guess"], d.confidence, row["guess_right"], mistyped
        return best["text"], d.confidence, best["right"], mistyped
    probs = [cal.candidate.prob(o["features"]) for o in row["options"]]
    d = Calibration.decide(cal, probs, rule)
    if d.option is not None:
        best = row["options"][d.option]
        if best["features"]["reader_top"] and row["guess"]:
            return row["guess"], d.confidence, row["guess_right"], False
        return best["text"], d.confidence, best["right"], False
    if row["abstained"] and not row["guess"]:
        return row["text"], d.confidence, row["text_right"], True
    return row["guess"] or row["text"], d.confidence, row["guess_right"], d.hard


def ece(pairs: list[tuple[float, int]], bins: int = 10) -> float:
    if not pairs:
        return 0.0
    total = 0.0
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        sel = [(c, r) for c, r in pairs if lo <= c < hi or (b == bins - 1 and c == 1.0)]
        if sel:
            total += len(sel) / len(pairs) * abs(sum(c for c, _ in sel) / len(sel) - sum(r for _, r in sel) / len(sel))
    return total


def lowest_threshold(decided: list[tuple[str, float, int, bool]], precision: float) -> float:
    """The lowest confidence at which the decided questions stated (pooled over the fit sets) are right at least
    ``precision`` of the time; 1.0 when none is."""
    for t in sorted({round(conf, 3) for _, conf, _, hard in decided if not hard}):
        sel = [right for _, conf, right, hard in decided if not hard and conf >= t]
        if sel and sum(sel) / len(sel) >= precision:
            return t
    return 1.0


def score_set(name: str, rows: list[dict[str, Any]], cal: Any,
              decider: Callable[[dict[str, Any], Any], tuple[str, float, int, bool]] = decide) -> dict[str, float]:
    """The policy's figures on one set (``decider``: ``decide``, or a variant's own)."""
    answerable = [r for r in rows if not r["na_right"]]
    stated = right_stated = final = guess_right = rules = model = 0
    pairs = []
    for r in rows:
        text, conf, right, hard = decider(r, cal)
        guess_right += right
        says = not hard and conf >= cal.threshold and text and text != "Not answerable"
        if says:
            stated += 1
            right_stated += right
            final += right
            pairs.append((conf, right))
        else:
            final += r["na_right"]
        rules += r["text_right"]
        if r["options"]:
            top = max(r["options"], key=lambda o: o["features"].get("sm_logp", o["features"].get("lp", 0.0)))
            model += top["right"]
        else:
            model += r["text_right"]
    n = len(rows)
    return {"set": name, "n": n, "answerable": len(answerable), "stated": stated,
            "coverage": round(stated / max(len(answerable), 1), 3),
            "precision": round(right_stated / max(stated, 1), 3), "score": round(final / n, 3),
            "best_guess": round(guess_right / n, 3), "rules_only": round(rules / n, 3),
            "model_only": round(model / n, 3), "ece_stated": round(ece(pairs), 3)}  # fmt: skip


def fit(rows: list[dict[str, Any]], names: list[str], c: float, precision: float, balance: bool = True) -> Any:
    """The three maps and the threshold fitted on ``rows`` (see the module's docstring). With ``balance`` every
    family (a dump file, ``row["file"]``) weighs alike in the candidate regression, however many candidates it has:
    2Wiki's 240 questions would otherwise set the weights for plain notes too."""
    from collections import Counter

    from mmkg.generation.calibration import (
        RULE_FAMILIES,
        Calibration,
        Isotonic,
        RuleAnswer,
        fit_isotonic,
        fit_logistic,
    )
    from mmkg.generation.span_choice import policy

    feats, labels, fams = [], [], []
    for r in rows:
        for o in r["options"]:
            feats.append(o["features"])
            labels.append(o["right"])
            fams.append(r.get("file", ""))
    sizes = Counter(fams)
    weights = [1.0 / sizes[f] for f in fams] if balance else None
    candidate = fit_logistic(feats, labels, names, c=c, weights=weights)
    cal = Calibration(candidate, Isotonic([], []), {}, 0.0)
    probs, rights = [], []
    for r in rows:
        if r["options"]:
            feats_r = [o["features"] for o in r["options"]]
            if "sm_logp" in feats_r[0]:  # the span reader's order: a candidate of the asked type first
                order, _, _, _ = policy(cal, r["type"], feats_r, RuleAnswer("span", 0.0, False, "", True))
                best = r["options"][order[0]]
            else:
                best = max(r["options"], key=lambda o: candidate.prob(o["features"]))
            right = r["guess_right"] if best["features"]["reader_top"] and r["guess"] else best["right"]
            probs.append(candidate.prob(best["features"]))
            rights.append(right)
    cal.chosen = fit_isotonic(probs, rights)
    fams: dict[str, tuple[list[float], list[int]]] = {}
    for r in rows:
        fam = RULE_FAMILIES.get(r["method"])
        if fam and not r["options"] and (r["guess"] or not r["abstained"]):
            xs, ys = fams.setdefault(fam, ([], []))
            xs.append(r["confidence"])
            ys.append(r["guess_right"])
    cal.rules = {f: fit_isotonic(xs, ys) for f, (xs, ys) in fams.items()}
    # the threshold: the lowest confidence whose answered questions (pooled over the fit sets) hold the precision
    cal.threshold = lowest_threshold([decide(r, cal) for r in rows], precision)
    cal.fitted_on = {"questions": len(rows), "candidates": len(feats), "precision_target": precision, "c": c}
    return cal


def main(
    fit_: Annotated[list[Path], typer.Option("--fit", help="Dev candidate dumps to fit on.")],
    check: Annotated[list[Path] | None, typer.Option(help="Dumps only scored.")] = None,
    precision: Annotated[float, typer.Option(help="Answered questions' precision the threshold keeps.")] = 0.8,
    c: Annotated[float, typer.Option(help="Inverse L2 strength of the candidate regression.")] = 0.1,
    balance: Annotated[bool, typer.Option(help="Every fit file weighs alike in the candidate regression.")] = True,
    write: Annotated[bool, typer.Option(help="Write the reader's calibration file.")] = False,
    drop: Annotated[str, typer.Option(help="Comma list of features left out of the candidate regression.")] = "",
    reader: Annotated[str, typer.Option(help="span (mmkg's span model) or smollm2.")] = "span",
) -> None:
    if reader == "smollm2":
        from mmkg.generation.calibration import DEFAULT_PATH as target
        from mmkg.generation.model_reader import FEATURES
    else:
        from mmkg.generation.span_choice import CALIBRATION as target
        from mmkg.generation.span_choice import FEATURES

    names = [f for f in FEATURES if f not in set(drop.split(","))]
    rows = _rows(fit_)
    cal = fit(rows, names, c, precision, balance)
    cal.fitted_on |= {"files": [p.name for p in fit_], "left_out": [f for f in FEATURES if f not in names],
                      "balanced": balance}
    print(f"threshold {cal.threshold:.3f}; candidate weights:")
    for n, w in sorted(zip(cal.candidate.names, cal.candidate.coef, strict=True), key=lambda x: -abs(x[1])):
        print(f"  {n:>14} {w:+.3f}")
    header = ("| set | n | answerable | stated | coverage | precision | score | best guess | rules only | model only | "
              "ECE |\n|---|" + "---:|" * 10)  # fmt: skip
    print(header)
    for p in [*fit_, *(check or [])]:
        s = score_set(p.stem, _rows([p]), cal)
        print("| " + " | ".join(str(v) for v in s.values()) + " |")
    if len(fit_) > 1:  # each fit family left out of the fit in turn, and scored at the others' threshold
        print("\nleft out of the fit, one family at a time:\n" + header)
        for p in fit_:
            others = fit([r for q in fit_ if q != p for r in _rows([q])], names, c, precision, balance)
            s = score_set(p.stem, _rows([p]), others)
            print("| " + " | ".join(str(v) for v in s.values()) + f" | (threshold {others.threshold:.3f})")
    if write:
        target.write_text(cal.to_json() + "\n")
        print(f"wrote {target}")


if __name__ == "__main__":
    typer.run(main)
