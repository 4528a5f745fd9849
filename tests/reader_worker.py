"""Query an index in a loop while publishes run, and report what was seen (for the safety tests and benchmark).

    python tests/reader_worker.py INDEX_ROOT STOP_FILE QUESTION [--pinned]

Without ``--pinned`` every query opens whatever ``CURRENT`` names at that moment; with it, the version
current at start is opened once and queried throughout. Each answer is checked against the version it
came from: every chunk must belong to a partition that version publishes (a mixed or half-published
version would show chunks of partitions it does not hold). Prints one JSON line when ``STOP_FILE`` appears.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def main(root: Path, stop: Path, question: str, pinned: bool) -> int:
    from mmkg.index import Index
    from mmkg.retrieval import retrieve

    first = Index.open(root)
    encoder = first.encoder
    seen: dict[str, int] = {}
    answers: set[tuple[str, ...]] = set()
    queries = errors = mixed = 0
    messages: list[str] = []
    while not stop.exists():
        queries += 1
        try:
            idx = first if pinned else Index.open(root, encoder=encoder)
            chunks = retrieve(idx, text=question, k=3).chunks
            parts = set(idx.manifest.partitions)
            if any(c.source_path.split("/")[0] not in parts for c in chunks):
                mixed += 1
            seen[idx.version] = seen.get(idx.version, 0) + 1
            answers.add(tuple(c.chunk_id for c in chunks))
        except Exception as exc:  # counted and reported: the test asserts there are none
            errors += 1
            messages.append(f"{exc.__class__.__name__}: {exc}"[:300])
        time.sleep(0.05)
    out = {"queries": queries, "errors": errors, "mixed": mixed, "versions": seen,
           "distinct_answers": len(answers), "messages": messages[:5]}  # fmt: skip
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], "--pinned" in sys.argv[4:]))
