"""The short-answer targets of issue 83, from ``mmkg eval``'s answers.json files: what a user is told and how often
it is right.

    python benchmarks/answer_targets.py /tmp/ev/res/plain_val_span/answers.json \
        /tmp/ev/res/plain_val_smollm2/answers.json

Per file (one line each, in the order given): the questions, the answerable ones, the answers stated (the reader
did not decline), how often a stated answer is right (a stated answer to an unanswerable question is wrong), the
share of answerable questions answered right and stated ("coverage"), the best guess's exact match over answerable
questions (SQuAD normalization; MMLongBench-Doc's rule of a score of 0.5 or more), the share of unanswerable
questions declined, and unsupported stated answers.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

NA = "not answerable"


def right(row: dict, system: str) -> bool:
    scores = row["scores"][system]
    return scores.get("em", scores.get("score", 0.0)) >= (1.0 if "em" in scores else 0.5)


def targets(path: Path) -> dict[str, object]:
    data = json.loads(path.read_text())
    rows = data["questions"]
    answerable = [r for r in rows if str(r["gold"]).strip().lower() != NA]
    unanswerable = [r for r in rows if str(r["gold"]).strip().lower() == NA]
    stated = [r for r in rows if str(r["predictions"]["reader"]).strip().lower() != NA]
    stated_right = [r for r in stated if right(r, "reader")]
    return {
        "file": f"{path.parent.name}", "model": data.get("model") or "(rules)", "n": len(rows),
        "answerable": len(answerable), "stated": len(stated),
        "stated right": round(len(stated_right) / max(len(stated), 1), 3),
        "coverage": round(sum(1 for r in answerable if r in stated and right(r, "reader")) / max(len(answerable), 1),
                          3),
        "answered": round(sum(1 for r in answerable if r in stated) / max(len(answerable), 1), 3),
        "best guess EM": round(sum(right(r, "reader_guess") for r in answerable) / max(len(answerable), 1), 3),
        "unanswerable declined": round(sum(1 for r in unanswerable if r not in stated) / max(len(unanswerable), 1), 3)
        if unanswerable else "-",
        "unsupported": data.get("unsupported", {}).get("reader", 0),
        "read p50 ms": data.get("latency", {}).get("read_p50_ms"),
    }  # fmt: skip


def main(paths: list[str]) -> None:
    rows = [targets(Path(p)) for p in paths]
    keys = list(rows[0])
    print("| " + " | ".join(keys) + " |\n|" + "---|" * len(keys))
    for r in rows:
        print("| " + " | ".join(str(r[k]) for k in keys) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
