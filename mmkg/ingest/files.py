"""Which folders are partitions and which files a partition holds: no readers imported (``mmkg index status``)."""

from __future__ import annotations

from pathlib import Path


def list_partitions(corpus_root: Path | str) -> list[str]:
    """Partition keys: the visible sub-folders of the corpus root that hold a visible file. A folder emptied of
    its files is no partition: the next update removes its partition, as for a folder deleted (an empty one
    would be indexed as a partition of no documents, and its empty run would head the assets in the UI)."""
    root = Path(corpus_root)
    if not root.is_dir():
        raise FileNotFoundError(f"corpus root {root} does not exist or is not a folder (set MMKG_CORPUS_ROOT)")
    return sorted(p.name for p in root.iterdir()
                  if p.is_dir() and not p.name.startswith((".", "_")) and _holds_a_file(p))  # fmt: skip


def _holds_a_file(folder: Path) -> bool:
    return any(p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts)
               for p in folder.rglob("*"))  # fmt: skip


def partition_files(partition_dir: Path) -> list[Path]:
    """Every file under a partition folder, sorted, hidden files and folders left out."""
    return sorted(
        p
        for p in partition_dir.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(partition_dir).parts)
    )
