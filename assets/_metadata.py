"""Metadata helpers: what a data engineer sees for each materialization in the Dagster UI."""

from __future__ import annotations

import polars as pl
from dagster import MetadataValue, TableColumn, TableSchema


def _cell(value: object, width: int) -> str:
    s = "" if value is None else str(value)
    s = s.replace("\n", " ").replace("|", "\\|")
    return s if len(s) <= width else s[: width - 1] + "…"


def preview(df: pl.DataFrame, columns: list[str] | None = None, n: int = 5, width: int = 60) -> MetadataValue:
    """Markdown table of the first ``n`` rows (long cells cut), shown inline in the asset page."""
    cols = [c for c in (columns or df.columns) if c in df.columns]
    head = df.select(cols).head(n)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_cell(v, width) for v in row) + " |" for row in head.iter_rows()]
    if df.height > n:
        lines.append(f"\n_{df.height - n:,} more rows_")
    return MetadataValue.md("\n".join(lines))


def counts(df: pl.DataFrame, column: str, n: int = 10) -> MetadataValue:
    """Top values of a column as a small markdown table."""
    if df.is_empty():
        return MetadataValue.md("_empty_")
    top = df.group_by(column).len().sort(["len", column], descending=[True, False]).head(n)
    return preview(top.rename({"len": "rows"}), n=n)


def column_schema(df: pl.DataFrame) -> TableSchema:
    """The table's columns and Polars dtypes, for the asset page's Columns tab."""
    return TableSchema(columns=[TableColumn(name, str(dtype)) for name, dtype in df.schema.items()])


def table_metadata(df: pl.DataFrame, columns: list[str] | None = None, seconds: float | None = None) -> dict:
    """Row count, column schema, preview and (when timed) seconds: what every table asset reports.

    ``dagster/row_count`` and ``dagster/column_schema`` are Dagster's standard keys: the UI plots the
    row count over materializations and lists the columns with their types. ``row_count`` stays for
    readers of older runs' metadata.
    """
    meta: dict = {
        "dagster/row_count": MetadataValue.int(df.height),
        "dagster/column_schema": MetadataValue.table_schema(column_schema(df)),
        "row_count": MetadataValue.int(df.height),
        "preview": preview(df, columns),
    }
    if seconds is not None:
        meta["seconds"] = MetadataValue.float(round(seconds, 3))
    return meta


OWNERS = ["team:mmkg"]


def _png_markdown(fig, alt: str) -> MetadataValue:
    """A matplotlib figure as an inline PNG in markdown metadata (the UI renders data URIs)."""
    import base64
    import io

    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80, bbox_inches="tight")
    plt.close(fig)
    return MetadataValue.md(f"![{alt}](data:image/png;base64,{base64.b64encode(buf.getvalue()).decode()})")


def _figure(width: float = 5.0, height: float = 3.0):
    import matplotlib

    matplotlib.use("Agg", force=False)  # no display in a run worker
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(width, height))


def bar_plot(df: pl.DataFrame, column: str, title: str, n: int = 15, weight: str | None = None) -> MetadataValue:
    """Horizontal bars of the ``n`` most frequent values of ``column`` (summing ``weight`` when given)."""
    if df.is_empty():
        return MetadataValue.md("_empty_")
    agg = pl.col(weight).sum().alias("n") if weight else pl.len().alias("n")
    top = df.group_by(column).agg(agg).sort(["n", column], descending=[True, False]).head(n)
    labels = [str(v) for v in top[column].to_list()][::-1]
    fig, ax = _figure(5.0, 0.3 * len(labels) + 0.9)
    ax.barh(labels, top["n"].to_list()[::-1], color="#4c72b0")
    ax.set_title(title, fontsize=10)
    ax.tick_params(labelsize=8)
    return _png_markdown(fig, title)


def degree_plot(degree, kinds, title: str = "degree distribution") -> MetadataValue:
    """Log-log degree histogram per node kind: hubs and isolated nodes at a glance."""
    import numpy as np

    fig, ax = _figure()
    degree, kinds = np.asarray(degree), np.asarray(kinds)
    for kind in sorted(set(kinds.tolist())):
        d = degree[kinds == kind]
        values, freq = np.unique(d[d > 0], return_counts=True)
        ax.scatter(values, freq, s=12, label=f"{kind} ({len(d)}, {int((d == 0).sum())} isolated)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("degree")
    ax.set_ylabel("nodes")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7)
    return _png_markdown(fig, title)
