"""Calibration that knows the kind of evidence (text pages or one PDF): variants fitted on the dev candidate dumps
and scored on every dump, validation included (docs/results/answers.md, "Confidence by the kind of evidence").

    python benchmarks/calibration_by_kind.py --dumps /tmp/ev

The dumps are ``benchmarks/reader_candidates.py``'s (``cands_tw``, ``cands_dev``, ``cands_pfit`` fitted;
``cands_val``, ``cands_plain`` checked). 2Wiki's evidence is text pages and MMLongBench-Doc's one PDF, so each
question's kind is its set's. The policy is ``benchmarks/reader_fit.py``'s ``decide``, with the candidate
regression, the chosen-candidate map and the rule families' maps fitted as each variant says; the threshold is
chosen and each set scored by its ``lowest_threshold`` and ``score_set`` (80 % right on the pooled dev answers).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

FIT = ("cands_tw", "cands_dev", "cands_pfit")
CHECK = ("cands_val", "cands_plain")
VARIANTS = {
    "shipped": set(),
    "pdf feature": {"feature"},
    "rule maps per kind, pooled fallback": {"rules"},
    "... and chosen map per kind": {"rules", "feature", "chosen"},
    "rule maps per kind, decline under support": {"support"},
}


def _load(folder: Path, name: str) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (folder / f"{name}.jsonl").read_text().splitlines() if line.strip()]
    for r in rows:
        r["kind"] = "pdf" if r["set"] == "mmlongbench" else "text"
        for o in r["options"]:
            o["features"]["pdf"] = float(r["kind"] == "pdf")
    return rows


class _KindCalibration:
    """The calibration a variant fits, answering ``reader_fit.decide``'s calls for one question's kind."""

    def __init__(self, rows: list[dict[str, Any]], mode: set[str], min_support: int):
        from mmkg.generation.calibration import RULE_FAMILIES, fit_isotonic, fit_logistic
        from mmkg.generation.model_reader import FEATURES

        self.mode, self.min_support, self.kind, self.threshold = mode, min_support, "text", 0.0
        feats = [o["features"] for r in rows for o in r["options"]]
        labels = [o["right"] for r in rows for o in r["options"]]
        self.candidate = fit_logistic(feats, labels, [*FEATURES, *(["pdf"] if "feature" in mode else [])], c=0.1)

        def chosen_fit(rs: list[dict[str, Any]]) -> Any:
            probs, rights = [], []
            for r in rs:
                if r["options"]:
                    best = max(r["options"], key=lambda o: self.candidate.prob(o["features"]))
                    probs.append(self.candidate.prob(best["features"]))
                    rights.append(r["guess_right"] if best["features"]["reader_top"] and r["guess"] else best["right"])
            return fit_isotonic(probs, rights)

        self.maps = {"all": chosen_fit(rows)}
        if "chosen" in mode:
            self.maps.update({k: chosen_fit([r for r in rows if r["kind"] == k]) for k in ("pdf", "text")})
        self.fams: dict[str, tuple[list[float], list[int]]] = {}
        for r in rows:
            fam = RULE_FAMILIES.get(r["method"])
            if fam and not r["options"] and (r["guess"] or not r["abstained"]):
                keys = [f"{fam}@{r['kind']}", f"*@{r['kind']}"] if mode & {"rules", "support"} else [fam]
                for key in keys:
                    xs, ys = self.fams.setdefault(key, ([], []))
                    xs.append(r["confidence"])
                    ys.append(r["guess_right"])
        self.rules = {f: fit_isotonic(xs, ys) for f, (xs, ys) in self.fams.items()}

    def chosen(self, p: float) -> float:
        return self.maps[self.kind if "chosen" in self.mode else "all"](p)

    def rule_confidence(self, method: str, confidence: float) -> float:
        from mmkg.generation.calibration import RULE_FAMILIES

        fam = RULE_FAMILIES.get(method)
        key = f"{fam}@{self.kind}"
        if "support" in self.mode:
            if len(self.fams.get(key, ([], []))[0]) < self.min_support:
                return 0.0  # no dev answers enough of this family on this kind of evidence: declined
            iso = self.rules.get(key)
        elif "rules" in self.mode:
            iso = self.rules.get(key) or self.rules.get(f"*@{self.kind}")
        else:
            iso = self.rules.get(fam)
        return round(iso(confidence), 3) if iso is not None else confidence


def main(
    dumps: Annotated[Path, typer.Option(help="Folder of the candidate dumps (cands_*.jsonl).")] = Path("/tmp/ev"),
    min_support: Annotated[int, typer.Option(help="Dev answers a family needs on a kind of evidence.")] = 10,
) -> None:
    from reader_fit import decide, lowest_threshold, score_set

    data = {n: _load(dumps, n) for n in (*FIT, *CHECK)}
    fit_rows = [r for n in FIT for r in data[n]]
    print("| variant | set | stated | precision | score with declines | ECE of stated |\n|---|---|---:|---:|---:|---:|")
    for name, mode in VARIANTS.items():
        cal = _KindCalibration(fit_rows, mode, min_support)

        def decided(r: dict[str, Any], cal: _KindCalibration = cal) -> tuple[str, float, int, bool]:
            cal.kind = r["kind"]
            return decide(r, cal)

        cal.threshold = lowest_threshold([decided(r, cal) for r in fit_rows], 0.8)
        for n in (*FIT, *CHECK):
            f = score_set(n, data[n], cal, decided)
            print(f"| {name} (threshold {cal.threshold:.3f}) | {n} | {f['stated']} | {f['precision']:.3f} | "
                  f"{f['score']:.3f} | {f['ece_stated']:.3f} |")


if __name__ == "__main__":
    typer.run(main)
