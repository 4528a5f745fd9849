"""What a corpus partition leaves under a data root, and removing it once the partition is gone.

The partitioned assets write one file (or folder) per partition: ``tables/<asset>/<partition>.parquet`` (the
Parquet IO manager), ``incidence/<asset>/<partition>/`` (the incidence matrices) and ``overlays/<partition>/``
(pictures with their detections drawn). When a partition's folder leaves the corpus, Dagster forgets the
partition, and the next publish leaves it out of the index. Its files stay on disk otherwise, and the SQL views
(``mmkg.tables``), the Index view's rejected files and anything else that globs a table folder would still show
its rows. The publish removes them (``remove_unregistered``).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path

#: data-root sub-folders holding one entry per partition under a folder per asset
_PER_ASSET = ("tables", "incidence")
#: data-root sub-folders holding one folder per partition
_PER_PARTITION = ("overlays",)


def partitions_on_disk(data_root: Path) -> dict[str, list[Path]]:
    """``{partition: [its files and folders]}`` for every partition the data root holds files of."""
    out: dict[str, list[Path]] = {}
    for top in _PER_ASSET:
        base = data_root / top
        if not base.is_dir():
            continue
        for asset in sorted(p for p in base.iterdir() if p.is_dir()):
            for entry in sorted(asset.iterdir()):
                key = entry.stem if entry.suffix == ".parquet" else entry.name if entry.is_dir() else None
                if key and not key.startswith("."):  # leave hidden temporaries of a writer alone
                    out.setdefault(key, []).append(entry)
    for top in _PER_PARTITION:
        base = data_root / top
        if base.is_dir():
            for entry in sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith(".")):
                out.setdefault(entry.name, []).append(entry)
    return out


def remove_unregistered(data_root: Path, registered: Iterable[str]) -> dict[str, int]:
    """Remove the files of every partition not in ``registered``; ``{partition: files and folders removed}``."""
    keep = set(registered)
    removed: dict[str, int] = {}
    for key, paths in partitions_on_disk(Path(data_root)).items():
        if key in keep:
            continue
        for path in paths:
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
        removed[key] = len(paths)
    return removed
