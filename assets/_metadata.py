"""Metadata helpers: what a data engineer sees for each materialization in the Dagster UI."""

from __future__ import annotations

import polars as pl
from dagster import MetadataValue, TableColumn, TableSchema

from mmkg import schemas

#: the most columns a preview shows, and the most characters of one cell: the asset page shows the
#: table inline, beside the other metadata, so a wider one wraps or scrolls out of sight
PREVIEW_COLUMNS = 6
PREVIEW_WIDTH = 40


def rounded(value: float, digits: int = 4) -> float:
    """``value`` without float32 noise (0.9824000000953674 -> 0.9824): ``digits`` decimals, or as
    many significant digits below 1 (0.000123456 -> 0.0001235)."""
    if value != value or abs(value) == float("inf") or value == 0:
        return value
    if abs(value) >= 1:
        return round(value, digits)
    return float(f"{value:.{digits}g}")


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(rounded(value))
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_text(v)}" for k, v in value.items()) + "}"
    return str(value)


def _cell(value: object, width: int) -> str:
    s = _text(value).replace("\n", " ").replace("|", "\\|")
    return s if len(s) <= width else s[: width - 1] + "…"


def preview(
    df: pl.DataFrame, columns: list[str] | None = None, n: int = 5, width: int = PREVIEW_WIDTH
) -> MetadataValue:
    """Markdown table of the first ``n`` rows, shown inline in the asset page: at most
    ``PREVIEW_COLUMNS`` columns (the others named below it), floats rounded, long cells cut."""
    cols = [c for c in (columns or df.columns) if c in df.columns]
    hidden = cols[PREVIEW_COLUMNS:] if columns is None else []
    cols = cols[:PREVIEW_COLUMNS]
    head = df.select(cols).head(n)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_cell(v, width) for v in row) + " |" for row in head.iter_rows()]
    notes = []
    if df.height > n:
        notes.append(f"{df.height - n:,} more rows")
    if hidden:
        notes.append(f"{len(hidden)} more columns: {', '.join(hidden)}")
    if notes:
        lines.append("\n_" + "; ".join(notes) + "_")
    return MetadataValue.md("\n".join(lines))


def counts(df: pl.DataFrame, column: str, n: int = 10) -> MetadataValue:
    """Top values of a column as a small markdown table."""
    if df.is_empty():
        return MetadataValue.md("_empty_")
    top = df.group_by(column).len().sort(["len", column], descending=[True, False]).head(n)
    return preview(top.rename({"len": "rows"}), n=n)


def column_schema(df: pl.DataFrame, table: str | None = None, extra: dict[str, str] | None = None) -> TableSchema:
    """The table's columns and Polars dtypes, with what each means (``mmkg.schemas.DESCRIPTIONS[table]``,
    then ``extra``): the asset page's Columns tab."""
    described = {**schemas.DESCRIPTIONS.get(table or "", {}), **(extra or {})}
    return TableSchema(
        columns=[TableColumn(name, str(dtype), description=described.get(name)) for name, dtype in df.schema.items()]
    )


def table_metadata(
    df: pl.DataFrame,
    columns: list[str] | None = None,
    seconds: float | None = None,
    *,
    table: str,
    shown: pl.DataFrame | None = None,
) -> dict[str, MetadataValue]:
    """Row count, described column schema, preview and (when timed) seconds: what every table asset reports.

    ``dagster/row_count`` and ``dagster/column_schema`` are Dagster's standard keys: the UI plots the
    row count over materializations and lists the columns with their types and descriptions. The
    row count is ``df``'s, the table written; ``shown`` (default ``df``) is what the preview shows,
    e.g. the linked rows first.
    """
    meta: dict[str, MetadataValue] = {
        "dagster/row_count": MetadataValue.int(df.height),
        "dagster/column_schema": MetadataValue.table_schema(column_schema(df, table)),
        "preview": preview(df if shown is None else shown, columns),
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
