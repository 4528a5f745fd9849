"""Metadata helpers: what a data engineer sees for each materialization in the Dagster UI."""

from __future__ import annotations

import polars as pl
from dagster import MetadataValue


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


def table_metadata(df: pl.DataFrame, columns: list[str] | None = None, seconds: float | None = None) -> dict:
    meta: dict = {"row_count": MetadataValue.int(df.height), "preview": preview(df, columns)}
    if seconds is not None:
        meta["seconds"] = MetadataValue.float(round(seconds, 3))
    return meta
