"""The fuzz harness at scale: a hostile corpus through the real Dagster assets, with time and memory per partition.

Three builds of the same partitions, each in its own process (models are loaded on a warm-up
partition first, so the times are the partitions' own):

- ``clean``: each partition without its hostile files: its good and odd-but-valid files (the baseline);
- ``budgets off``: the hostile corpus with every budget lifted (what ingest did before budgets);
- ``budgets on``: the hostile corpus with the default budgets.

It prints the checker's table by category (as expected / not), the failed partitions, good files
lost, bad files not rejected, canary leaks, and per partition the seconds and peak memory of the
process tree with their ratio to the clean build. ``budgets off`` costs minutes per partition, so
it runs on the first ``--off-partitions`` only.

    .venv/bin/python benchmarks/fuzz_corpus.py --partitions 12 --off-partitions 2 --out /tmp/fuzz.md
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OFF = {  # every budget lifted
    "max_text_file_bytes": 10**12,
    "max_document_chars": 10**12,
    "max_sentence_chars": 10**12,
    "max_sentences_per_document": 10**12,
    "max_pages": 10**9,
    "max_images_per_document": 10**9,
    "max_file_seconds": 1e9,
    "max_partition_chars": 10**15,
}


def worker(corpus: Path, data: Path, partitions: list[str], budgets: dict, out: Path) -> None:
    """Materialize each partition alone (after a warm-up one) and write seconds and peak memory per partition."""
    sys.path.insert(0, str(REPO))
    sys.path.insert(0, str(REPO / "tests"))
    from dagster import DagsterInstance, materialize
    from indexing import PARTITIONED

    from mmkg.eval.memory import PeakMemory
    from pipelines.resources import default_resources
    from resources import CorpusResource

    resources = default_resources(corpus, data)
    resources["corpus"] = CorpusResource(root=str(corpus), **budgets)
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("corpus", ["warmup", *partitions])
    rows = []
    for key in ["warmup", *partitions]:
        t0 = time.perf_counter()
        with PeakMemory() as mem:
            ok = materialize(
                PARTITIONED, partition_key=key, instance=instance, resources=resources, raise_on_error=False
            ).success
        rows.append(
            {"partition": key, "ok": ok, "seconds": time.perf_counter() - t0, "peak_mb": mem.peak_bytes / 2**20}
        )
        print(
            f"  {key}: {'ok' if ok else 'FAILED'} {rows[-1]['seconds']:.1f}s {rows[-1]['peak_mb']:.0f} MB", flush=True
        )
    out.write_text(json.dumps(rows[1:]), encoding="utf-8")


def run_variant(name: str, corpus: Path, data: Path, partitions: list[str], budgets: dict, work: Path) -> list[dict]:
    out = work / f"{name.replace(' ', '_')}.json"
    print(f"{name}: {len(partitions)} partition(s)", flush=True)
    cmd = [sys.executable, __file__, "--worker", str(corpus), str(data), ",".join(partitions), json.dumps(budgets)]
    subprocess.run([*cmd, str(out)], check=True, cwd=REPO)
    return json.loads(out.read_text(encoding="utf-8"))


def warmup_partition(root: Path) -> None:
    (root / "warmup").mkdir(parents=True, exist_ok=True)
    (root / "warmup" / "w.md").write_text("# Warm-up\n\nAda Park was born in Lisbon in 1901.\n", encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--partitions", type=int, default=12)
    ap.add_argument("--off-partitions", type=int, default=2, help="partitions built with the budgets off")
    ap.add_argument("--run-on-chars", type=int, default=1_000_000, help="size of the run-on file (the issue's case)")
    ap.add_argument("--tiny-sentences", type=int, default=100_000)
    ap.add_argument("--pdf-pages", type=int, default=20)
    ap.add_argument("--work", type=Path, default=Path("/tmp/mmkg-fuzz"))
    ap.add_argument("--out", type=Path, help="also write the tables (Markdown) here")
    args = ap.parse_args()

    import shutil

    import polars as pl

    from mmkg.eval.fuzz import check, make_corpus

    shutil.rmtree(args.work, ignore_errors=True)
    sizes = {"run_on_chars": args.run_on_chars, "tiny_sentences": args.tiny_sentences, "pdf_pages": args.pdf_pages}
    hostile = make_corpus(args.work / "hostile", partitions=args.partitions, **sizes)
    clean = make_corpus(args.work / "clean", partitions=args.partitions, hostile=False, **sizes)
    for c in (hostile, clean):
        warmup_partition(c.root)
    keys = hostile.partitions
    n_bad = sum(p.expect == "rejected" for p in hostile.planted)
    print(f"hostile corpus: {len(hostile.planted)} planted files in {len(keys)} partitions, {n_bad} bad", flush=True)

    runs = {
        "clean": run_variant("clean", clean.root, args.work / "d_clean", keys, {}, args.work),
        "budgets off": run_variant(
            "budgets off", hostile.root, args.work / "d_off", keys[: args.off_partitions], OFF, args.work
        ),
        "budgets on": run_variant("budgets on", hostile.root, args.work / "d_on", keys, {}, args.work),
    }
    lines = [
        f"Fuzz corpus: {len(keys)} partitions, {len(hostile.planted)} planted files ({n_bad} bad); sizes {sizes}",
        "",
    ]
    for name, data in (("budgets off", "d_off"), ("budgets on", "d_on")):
        done = {r["partition"] for r in runs[name]}
        failed = [r["partition"] for r in runs[name] if not r["ok"]]
        sub = type(hostile)(
            hostile.root, hostile.outside, hostile.canary, [p for p in hostile.planted if p.partition in done]
        )
        report = check(sub, args.work / data, failed)
        lines += [f"### {name}: checker", "", f"{report.summary()}", ""]
        if name == "budgets on":
            lines += [report.by_category().to_pandas().to_markdown(index=False), ""]
        for o in report.wrong[:20]:
            lines.append(
                f"- not as expected: {o.planted.path} ({o.planted.category}): "
                f"expected {o.planted.expect}, got {o.outcome}"
            )
        lines.append("")
    base = {r["partition"]: r for r in runs["clean"]}
    table = []
    for name in ("clean", "budgets off", "budgets on"):
        for r in runs[name]:
            b = base[r["partition"]]
            table.append(
                {
                    "build": name,
                    "partition": r["partition"],
                    "ok": r["ok"],
                    "seconds": round(r["seconds"], 1),
                    "x clean": round(r["seconds"] / b["seconds"], 2),
                    "peak MB": round(r["peak_mb"]),
                    "x clean mem": round(r["peak_mb"] / b["peak_mb"], 2),
                }
            )
    df = pl.DataFrame(table)
    summary = df.group_by("build", maintain_order=True).agg(
        partitions=pl.len(),
        failed=(~pl.col("ok")).sum(),
        median_s=pl.col("seconds").median(),
        max_s=pl.col("seconds").max(),
        median_x=pl.col("x clean").median(),
        max_x=pl.col("x clean").max(),
        max_peak_mb=pl.col("peak MB").max(),
        max_mem_x=pl.col("x clean mem").max(),
    )
    lines += ["### Time and peak memory per partition", "", summary.to_pandas().to_markdown(index=False), ""]
    lines += [df.to_pandas().to_markdown(index=False), ""]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        corpus, data, parts, budgets, out = sys.argv[2:7]
        worker(Path(corpus), Path(data), parts.split(","), json.loads(budgets), Path(out))
    else:
        main()
