"""Quick start: register the corpus partitions, materialize every asset, print a summary.

``python -m pipelines.demo`` uses a persistent Dagster instance under the data root
(``<data_root>/dagster_home``), so the runs it makes are the ones ``mmkg ui`` shows afterwards.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import polars as pl
import typer
from rich.console import Console
from rich.table import Table

from mmkg.quiet import quiet_native_logs
from mmkg.settings import get_settings

console = Console()


def run(corpus_root: Path, data_root: Path, partitions: list[str] | None = None) -> dict[str, float]:
    """Materialize all assets for the given (default: all) partitions; returns seconds per job run."""
    from pipelines.build import build_index

    def progress(what: str, secs: float) -> None:
        if what == "publish_index":
            console.print(f"[green]✓[/] entity catalog, graph and index published in {secs:.1f}s")
        else:
            console.print(f"[green]✓[/] partition [bold]{what}[/] in {secs:.1f}s")

    try:
        report = build_index(corpus_root, data_root, partitions, reuse=False, on_progress=progress)
    except RuntimeError as exc:
        raise SystemExit(f"{exc}") from exc
    return {**report.partitions, "publish_index": report.publish_s}


def summary(data_root: Path) -> None:
    tables = data_root / "tables"

    def read(name: str) -> pl.DataFrame:
        files = sorted((tables / name).glob("*.parquet"))
        return pl.concat([pl.read_parquet(f) for f in files]) if files else pl.DataFrame({"partition": []})

    names = [
        "documents", "images", "chunks", "sentences", "entity_mentions", "entities", "relations",
        "image_text", "objects", "multimodal_nodes", "rejected_files",
    ]  # fmt: skip
    frames = {n: read(n) for n in names}
    parts = sorted(set(frames["documents"]["partition"].to_list()))
    t = Table(title="Rows per table and partition")
    t.add_column("table")
    for p in parts:
        t.add_column(p, justify="right")
    for n in names:
        t.add_row(n, *[f"{frames[n].filter(pl.col('partition') == p).height:,}" for p in parts])
    console.print(t)
    catalog = pl.read_parquet(tables / "entity_catalog.parquet")  # written by the publish job
    top = catalog.filter("relational").sort("n_mentions", descending=True).head(10)
    console.print(
        "[bold]Top entities:[/] "
        + ", ".join(f"{r['name']} ({r['label']}, {r['n_mentions']})" for r in top.iter_rows(named=True))
    )
    rels = frames["relations"]
    if rels.height:
        console.print("[bold]Sample relations:[/]")
        for r in rels.head(8).iter_rows(named=True):
            console.print(f"  ⟨{r['subject']}, {r['predicate']}, {r['object']}⟩  [dim]{r['rule']}[/]")
    objects = frames["objects"]
    if objects.height:
        console.print("[bold]Grounded objects:[/]")
        for r in objects.sort("score", descending=True).head(8).iter_rows(named=True):
            console.print(
                f"  {r['entity_name']} in an image, found by {r['backend']} as {r['label']!r} (σ={r['score']:.2f})"
            )
        console.print(f"  overlays: {data_root / 'overlays'}")
    rejected = frames["rejected_files"]
    for r in rejected.iter_rows(named=True):
        console.print(f"[yellow]rejected[/] {r['source_path']}: {r['reason']}")
    console.print(f"Tables under [bold]{tables}[/]; [bold]bash scripts/ui.sh[/] browses the runs.")


SAMPLE_QUERY = "Which mission did the first woman to command a Space Shuttle lead?"


def answer(data_root: Path, question: str) -> None:
    from mmkg.generation import ExtractiveGenerator
    from mmkg.generation import answer as ask
    from mmkg.index import Index
    from mmkg.retrieval import retrieve

    idx = Index.open(data_root / "index")
    result = retrieve(idx, text=question, k=3)
    console.print(f"\n[bold]Query:[/] {question}  [dim]({result.timings_ms['total']:.0f} ms, index {idx.version})[/]")
    for c in result.chunks:
        console.print(f"[bold]{c.rank}. {c.title}[/] [dim]{c.source_path} score {c.score:.4f}[/]")
        if c.sentences:
            console.print(f"   {c.sentences[0].text}")
    # the short answer, read out of the evidence (mmkg ask does the same): the rule reader, and the installed
    # reading model where it chooses among spans
    a = ask(idx, question, ExtractiveGenerator(), k=5)
    by = f"read by {a.reading['model']}" if a.reading.get("model") else "the rule reader, no language model"
    console.print(f"\n[bold]Answer:[/] {a.short_answer}  [dim]({a.answer_type}, confidence {a.confidence:.2f}; "
                  f"{by})[/]")  # fmt: skip
    if a.reading.get("abstained") and a.reading.get("guess"):  # declined: the guess, marked, and what to check
        console.print(f"[bold]Best guess, not stated:[/] {a.reading['guess']}  [dim]({a.reading['reason'][:160]})[/]",
                      highlight=False)  # fmt: skip
    for note in a.notes:
        if note.startswith("answered by the rule reader alone"):
            console.print(f"   [dim]{note}[/]")
    for sup in a.reading.get("support", [])[:2]:
        console.print(f"   [{sup['label']}] {sup['sentence']}", markup=False, highlight=False)


def activation_line() -> str:
    """The one shell line that puts this environment's ``mmkg`` on the PATH: the quick start installs it into
    ``.venv``, which a new shell does not have (``bash: mmkg: command not found`` otherwise)."""
    activate = Path(sys.prefix) / "bin" / "activate"
    try:
        where = str(activate.relative_to(Path.cwd()))
    except ValueError:
        where = str(activate)
    return f"source {where}"


def main(
    corpus: Annotated[
        Path | None, typer.Option(help="Corpus root (default: MMKG_CORPUS_ROOT or the bundled sample).")
    ] = None,
    data: Annotated[Path | None, typer.Option(help="Data root (default: MMKG_DATA_ROOT or ./.mmkg).")] = None,
    question: Annotated[str, typer.Option(help="Sample query answered from the published index.")] = SAMPLE_QUERY,
) -> None:
    quiet_native_logs()  # no per-tensor bars when a model loads, no LanceDB "No existing dataset" warnings
    s = get_settings()
    corpus_root, data_root = corpus or s.corpus_root, data or s.data_root
    console.print(f"Materializing [bold]{corpus_root}[/] into [bold]{data_root}[/]")
    timings = run(corpus_root, data_root)
    console.print(f"Done in {sum(timings.values()):.1f}s")
    summary(data_root)
    answer(data_root, question)
    console.print(f"\n[bold]mmkg on your PATH:[/] {activation_line()}   [dim]# then the README's tour: mmkg init kb && "
                  "cd kb && mmkg index build[/]", highlight=False)  # fmt: skip


if __name__ == "__main__":
    typer.run(main)
