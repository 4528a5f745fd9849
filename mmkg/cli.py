"""``mmkg``: query a published index and inspect it, without Dagster."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from mmkg.settings import get_settings

app = typer.Typer(help="Query and inspect mmkg retrieval indexes.", no_args_is_help=True, add_completion=False)
index_app = typer.Typer(help="Inspect a published index.", no_args_is_help=True)
app.add_typer(index_app, name="index")
console = Console()

IndexPath = Annotated[
    Path | None, typer.Option("--index", help="Index root (default: $MMKG_DATA_ROOT/index).", show_default=False)
]


def _root(index: Path | None) -> Path:
    return index or get_settings().data_root / "index"


def _open(index: Path | None, version: str | None):
    from mmkg.index import Index

    try:
        return Index.open(_root(index), version=version)
    except (FileNotFoundError, ValueError) as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc


@app.command()
def query(
    text: Annotated[str | None, typer.Argument(help="Text query.")] = None,
    image: Annotated[Path | None, typer.Option("--image", help="Image query (file path).")] = None,
    k: Annotated[int, typer.Option("--k", help="Chunks to return.")] = 5,
    preset: Annotated[str, typer.Option("--preset", help="Retrieval preset.")] = "default",
    doc: Annotated[list[str] | None, typer.Option("--doc", help="Only these doc_ids (repeatable).")] = None,
    partition: Annotated[list[str] | None, typer.Option("--partition", help="Only these partitions.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the full result as JSON.")] = False,
    index: IndexPath = None,
    version: Annotated[str | None, typer.Option(help="Pin a version (default: current).")] = None,
) -> None:
    """Retrieve the chunks that answer a text and/or image query."""
    if text is None and image is None:
        console.print("[red]error:[/] give a text query, --image PATH, or both")
        raise typer.Exit(2)
    if image is not None and not image.is_file():
        console.print(f"[red]error:[/] image {image} not found")
        raise typer.Exit(2)
    filters = {key: vals for key, vals in (("doc_id", doc), ("partition", partition)) if vals}
    idx = _open(index, version)
    try:
        result = idx.retrieve(text=text, image=image, k=k, preset=preset, filters=filters or None)
    except ValueError as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    if as_json:
        print(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
        return
    console.print(
        f"[dim]index {result.version}, preset {result.preset}, {result.seeds} seed nodes, "
        f"{result.timings_ms['total']:.0f} ms[/]"
    )
    for c in result.chunks:
        where = c.source_path + (f" p.{c.page}" if c.page else "")
        console.print(f"\n[bold]{c.rank}. {c.title}[/]  [dim]{where}  score {c.score:.4f}[/]")
        console.print(c.text if len(c.text) <= 400 else c.text[:400] + "…")
        if c.sentences:
            console.print(f"  [green]best sentence[/] ({c.sentences[0].score:.2f}): {c.sentences[0].text}")
        for img in c.images:
            console.print(f"  [cyan]image[/] {img.source}")
        for o in c.objects[:5]:
            console.print(f"  [yellow]object[/] {o.entity_name} ({o.backend}, σ={o.sigma:.2f})")


@index_app.command("info")
def index_info(index: IndexPath = None, as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Version, counts, encoder and size on disk of the current index."""
    info = _open(index, None).info()
    if as_json:
        print(json.dumps(info, indent=2))
        return
    t = Table(show_header=False, title=f"mmkg index at {info['root']}")
    t.add_row("version", info["version"])
    t.add_row("created", info["created_at"])
    t.add_row("versions kept", str(len(info["versions"])))
    t.add_row("encoder", info["encoder"])
    t.add_row("partitions", ", ".join(info["partitions"]))
    for key, value in info["counts"].items():
        t.add_row(key, f"{value:,}")
    t.add_row("size on disk", f"{info['size_bytes'] / 2**20:.1f} MiB")
    console.print(t)


if __name__ == "__main__":
    app()
