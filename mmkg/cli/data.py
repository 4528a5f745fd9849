"""``mmkg sql`` and ``mmkg graph export``: the tables and the graph for other tools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from mmkg.cli.common import DATA_ROOT_HELP, IndexPath, app, console, current_settings, err_console, index_root

graph_app = typer.Typer(help="Export the published graph.", no_args_is_help=True)
FORMAT_HELP = "graphml (Gephi, igraph, NetworkX), json (node-link), parquet (nodes and edges tables)"
app.add_typer(graph_app, name="graph")


@app.command()
def sql(
    statement: Annotated[str, typer.Argument(help="A DuckDB SQL statement over the data root's tables.")],
    data_root: Annotated[Path | None, typer.Option("--data-root", help=DATA_ROOT_HELP)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Rows as JSON lines.")] = False,
    max_rows: Annotated[int, typer.Option("--max-rows", min=1, help="Rows shown in the table view.")] = 50,
) -> None:
    """SQL over every table: one view per table (all partitions), the current index version as schema idx.

    Examples: SELECT partition, count(*) FROM chunks GROUP BY partition;
    SELECT label, count(*) FROM entity_mentions GROUP BY label ORDER BY 2 DESC;
    SELECT image_entity, entity_name, score FROM idx.cross_modal_links WHERE method = 'spectral'.
    """
    import duckdb

    from mmkg.tables import connect

    root = data_root or current_settings().data_root
    try:
        rel = connect(root).sql(statement)
    except FileNotFoundError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    except duckdb.Error as exc:
        err_console.print(f"[red]error:[/] {_one_line(exc)}", highlight=False)
        raise typer.Exit(2) from exc
    if rel is None:  # a statement without rows (CREATE, SET, ...)
        return
    columns, rows = rel.columns, rel.fetchall()
    if as_json:
        for row in rows:
            print(json.dumps(dict(zip(columns, row, strict=True)), ensure_ascii=False, default=str))
        return
    t = Table(*columns)
    for row in rows[:max_rows]:
        t.add_row(*(str(v) for v in row))
    console.print(t)
    if len(rows) > max_rows:
        console.print(f"[dim]{len(rows) - max_rows} more rows (--max-rows, or --json for all)[/]")


def _one_line(exc: Exception) -> str:
    """DuckDB's message in one line: its lines joined, the echoed statement and the caret line under it left out
    (the message names the token already), and where a table is unknown, how to list the views."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    kept = [line for line in lines if not line.startswith("LINE ") and set(line) - set("^ ")]
    import duckdb

    text = "; ".join(kept)
    if isinstance(exc, duckdb.CatalogException):
        text += ' (mmkg sql "SHOW TABLES" lists the views; idx.<name> are the published index\'s tables)'
    return text


@graph_app.command("export")
def graph_export(
    out: Annotated[Path, typer.Option("--out", help="File to write (a folder for parquet).")],
    fmt: Annotated[str, typer.Option("--format", help=FORMAT_HELP)] = "graphml",
    index: IndexPath = None,
    version: Annotated[str | None, typer.Option(help="Pin a version (default: current).")] = None,
) -> None:
    """Write the published graph (chunk, picture and entity nodes; weighted undirected edges) for graph tools."""
    from mmkg.graph_export import FORMATS, export
    from mmkg.index import Index

    if fmt not in FORMATS:
        err_console.print(f"[red]error:[/] unknown format {fmt!r}; choose one of {list(FORMATS)}")
        raise typer.Exit(2)
    try:
        idx = Index.open(index_root(index), version=version, encoder=False)  # no model: the graph only
    except (FileNotFoundError, ValueError) as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    written = export(idx, fmt, out)
    console.print(f"graph of {idx.version}: {idx.graph.n:,} nodes, {idx.graph.adjacency.nnz // 2:,} edges -> {written}")


