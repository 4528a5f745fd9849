"""SQL over everything a data root holds: ``connect(data_root)`` is a DuckDB connection with a view per table.

- every partitioned table (``<data_root>/tables/<name>/<partition>.parquet``) is one view over all its
  partitions, read with ``union_by_name`` so a partition written by an older schema still reads;
- the global tables (``entity_catalog``, ``answers``) are views over their single file;
- the published index's current version is the schema ``idx`` (``idx.chunks``, ``idx.relations``,
  ``idx.cross_modal_links``, ...: the payload the readers quote from).

Views read the files on every query, so they always show what is on disk now. Nothing is copied.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

_NAME = re.compile(r"[a-z][a-z0-9_]*")


def _quote(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def views(data_root: Path) -> dict[str, Path]:
    """``{view name: parquet glob or file}`` for the tables under ``data_root`` and the current index version."""
    out: dict[str, Path] = {}
    tables = data_root / "tables"
    if tables.exists():
        for p in sorted(tables.iterdir()):
            if p.is_dir() and _NAME.fullmatch(p.name) and any(p.glob("*.parquet")):
                out[p.name] = p / "*.parquet"
            elif p.suffix == ".parquet" and _NAME.fullmatch(p.stem):
                out[p.stem] = p
    index = data_root / "index"
    if (index / "CURRENT").exists():
        from mmkg.index.manifest import current_version

        folder = index / "versions" / current_version(index)
        for p in sorted(folder.glob("*.parquet")):
            if _NAME.fullmatch(p.stem):
                out[f"idx.{p.stem}"] = p
    return out


def connect(data_root: Path | str, database: str = ":memory:") -> Any:
    """A DuckDB connection with a view per table of ``data_root`` (see the module docstring)."""
    import duckdb

    data_root = Path(data_root)
    found = views(data_root)
    if not found:
        raise FileNotFoundError(
            f"no tables under {data_root}: materialize some partitions first, or give the data root that holds "
            "tables/ (--data-root or MMKG_DATA_ROOT)"
        )
    con = duckdb.connect(database)
    if any(name.startswith("idx.") for name in found):
        con.execute("CREATE SCHEMA IF NOT EXISTS idx")
    for name, path in found.items():
        con.execute(
            f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM read_parquet({_quote(path)}, union_by_name = true)"
        )
    return con
