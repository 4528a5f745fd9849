"""Kill a publish at every named failpoint, then publish a different change; print what survived.

    python benchmarks/failpoints.py --data-root /tmp/sample_build --first computing_history,space \
        --second nature_and_objects --question "What is a fundus photograph?"

With ``--keep 1 --compact-fragments 1`` every publish compacts and applies retention, so the points in
compaction and retention are reached as well.

``--data-root`` is a built corpus (its ``tables/`` and published ``index/``). For each point of
``python -m mmkg.faults``, a copy of the index gets a publish of ``--first`` killed at that point
(SIGKILL), then a publish of ``--second``; a point is survived when the killed run really died, the
index still opened after it, the next publish succeeded, ``mmkg index verify`` passed, the new
version answers from its own partitions only and nothing was left lying around.
"""

from __future__ import annotations

import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated

import typer

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]


def main(
    data_root: Annotated[Path, typer.Option(help="Built corpus: tables/ and a published index/.")],
    first: Annotated[str, typer.Option(help="Partitions of the killed publish (comma list).")],
    second: Annotated[str, typer.Option(help="Partitions of the publish after it (comma list).")],
    question: Annotated[str, typer.Option(help="A question the second publish's partitions answer.")],
    keep: Annotated[int | None, typer.Option(help="Retention after each publish (keep_versions).")] = None,
    compact_fragments: Annotated[int | None, typer.Option(help="MMKG_COMPACT_FRAGMENTS (1: every publish).")] = None,
) -> None:
    from publish_worker import killed_then_republished

    from mmkg.faults import POINTS

    wanted = set(second.split(","))
    print("| point | died | CURRENT kept | opened after kill | next publish | verify | answers | no leftovers | s |")
    print("|---|---|---|---|---|---|---|---|---:|")
    survived = 0
    for point in POINTS:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "index"
            shutil.copytree(data_root / "index", root)
            t0 = time.perf_counter()
            extra = {"MMKG_COMPACT_FRAGMENTS": str(compact_fragments)} if compact_fragments else None
            r = killed_then_republished(data_root, root, point, first, second, question, keep, extra)
            ok = {
                "died": r["killed_rc"] == -signal.SIGKILL,
                "kept": r["current_after_kill"] == r["current_before"] or r["whole_after_kill"],
                "opened": r["opens_after_kill"],
                "next": r["second_rc"] == 0 and r["current"] == r["second_version"],
                "verify": r["verify_rc"] == 0,
                "answers": set(r["partitions"]) == wanted and {s.split("/")[0] for s in r["sources"]} <= wanted,
                "clean": not r["leftovers"],
            }
            survived += all(ok.values())
            cells = ["yes" if v else "**no**" for v in ok.values()]
            print(f"| {point} | " + " | ".join(cells) + f" | {time.perf_counter() - t0:.1f} |", flush=True)
    print(f"\n{survived} of {len(POINTS)} kill points survived")


if __name__ == "__main__":
    typer.run(main)
