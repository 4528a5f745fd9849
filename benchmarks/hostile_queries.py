"""Hostile queries against the reader (``mmkg.retrieval.retrieve``), classified by outcome.

Each case should be refused. Outcomes: ``clear error`` (a ``ValueError`` saying what is wrong),
``traceback`` (any other exception escapes), ``wrong result`` (chunks come back as if the query were
fine). Run it against an older checkout to get the "before" column:

    .venv/bin/python benchmarks/hostile_queries.py --index /tmp/mmkg-api-load/index
    PYTHONPATH=/tmp/before .venv/bin/python benchmarks/hostile_queries.py --index ...   # a worktree of an old commit
"""

from __future__ import annotations

import argparse
import io
import tempfile
from collections import Counter
from pathlib import Path

from PIL import Image


def pictures(folder: Path) -> dict[str, Path]:
    (folder / "empty.png").write_bytes(b"")
    (folder / "text.png").write_text("this is not a picture")
    buf = io.BytesIO()
    Image.new("RGB", (64, 64), "red").save(buf, format="PNG")
    (folder / "truncated.png").write_bytes(buf.getvalue()[:60])
    Image.new("1", (15_000, 15_000)).save(folder / "bomb.png")
    Image.new("1", (8_000, 6_000)).save(folder / "big.png")
    return {n: folder / f"{n}.png" for n in ("empty", "text", "truncated", "bomb", "big")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--index", type=Path, required=True)
    args = ap.parse_args()

    import mmkg
    from mmkg.index import Index
    from mmkg.retrieval import retrieve

    index = Index.open(args.index)
    partition = sorted(index.manifest.partitions)[0]
    pics = pictures(Path(tempfile.mkdtemp()))
    cases = {
        "k = -2": {"text": "telescope", "k": -2},
        "k = 0": {"text": "telescope", "k": 0},
        "k = 2.5": {"text": "telescope", "k": 2.5},
        "k = '5'": {"text": "telescope", "k": "5"},
        "k = 10**6": {"text": "telescope", "k": 10**6},
        "empty text": {"text": ""},
        "blank text": {"text": " \n\t "},
        "lone surrogate": {"text": "telescope \ud800"},
        "1 MB text": {"text": "telescope " * 100_000},
        "filter value of the wrong type": {"text": "telescope", "filters": {"partition": 7}},
        "unknown partition": {"text": "telescope", "filters": {"partition": partition + "x"}},
        "SQL in a doc_id filter": {"text": "telescope", "filters": {"doc_id": "' OR 1=1 --"}},
        "text_topk_chunk = -1": {"text": "telescope", "text_topk_chunk": -1},
        "empty image file": {"image": pics["empty"]},
        "text as .png": {"image": pics["text"]},
        "truncated PNG": {"image": pics["truncated"]},
        "225-megapixel PNG": {"image": pics["bomb"]},
        "48-megapixel PNG": {"image": pics["big"]},
    }
    outcomes: Counter = Counter()
    print(f"mmkg from {Path(mmkg.__file__).parent}; index {index.version}")
    for name, kwargs in cases.items():
        try:
            res = retrieve(index, **kwargs)
            outcome, detail = "wrong result", f"{len(res.chunks)} chunks"
        except ValueError as exc:
            outcome, detail = "clear error", str(exc)[:100]
        except Exception as exc:  # classifying what escapes is the point
            outcome, detail = "traceback", f"{type(exc).__name__}: {str(exc)[:80]}"
        outcomes[outcome] += 1
        print(f"{name:<32} {outcome:<13} {detail}")
    print("\n" + ", ".join(f"{k}: {v}" for k, v in sorted(outcomes.items())))


if __name__ == "__main__":
    main()
