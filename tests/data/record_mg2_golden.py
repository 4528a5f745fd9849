"""Re-record tests/data/mg2_sample_golden.json: MG2-RAG's top 5 chunks and scores for its cases on the sample index.

    python tests/data/record_mg2_golden.py

Builds the sample corpus as ``tests/test_index.py``'s fixture does (default resources, so the
default encoder runtime), asks every recorded case again (``default`` with its second hop off and ``longdoc``
without its page-sentence re-ranking, ``conftest.MG2_GOLDEN_OFF``, as the test does) and rewrites the file. Run
it only for an intended change to what MG2-RAG returns (the file's history says which); the test then pins the
new answers.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parents[1]))


def main() -> None:
    from conftest import MG2_GOLDEN_OFF, SAMPLE_CORPUS
    from dagster import DagsterInstance
    from indexing import build

    from mmkg.index import Index
    from mmkg.retrieval import retrieve

    golden_path = HERE / "mg2_sample_golden.json"
    cases = json.loads(golden_path.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        corpus, data = Path(tmp) / "corpus", Path(tmp) / "data"
        shutil.copytree(SAMPLE_CORPUS, corpus)
        build(corpus, data, DagsterInstance.ephemeral())
        idx = Index.open(data / "index")
        for case in cases:
            query = {"text": case["text"]} if "text" in case else {"image": SAMPLE_CORPUS / case["image"]}
            res = retrieve(idx, **query, k=5, preset=case["preset"], **MG2_GOLDEN_OFF.get(case["preset"], {}))
            case["chunks"] = [[c.chunk_id, round(c.score, 6)] for c in res.chunks]
    golden_path.write_text("[\n" + ",\n".join(json.dumps(c, ensure_ascii=False) for c in cases) + "\n]\n")
    print(f"wrote {len(cases)} cases to {golden_path}")


if __name__ == "__main__":
    main()
