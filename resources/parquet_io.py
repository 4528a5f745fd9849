from __future__ import annotations

import re
from pathlib import Path

import polars as pl
from dagster import ConfigurableIOManager, InputContext, MetadataValue, OutputContext
from pydantic import Field

from mmkg import schemas
from mmkg.atomic import atomic_path
from mmkg.partitioned import PartitionedParquet, read_parquet_files
from mmkg.settings import get_settings

_SAFE_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-]*$")


class MissingPartitionError(FileNotFoundError):
    pass


class PolarsParquetIOManager(ConfigurableIOManager):
    """Polars frames as Parquet at ``<base_dir>/<asset>/<partition>.parquet`` (``<asset>.parquet`` unpartitioned).

    Frames are checked against the table's declared schema before writing, and written to a
    temporary file then renamed, so a reader never sees half a table. An unpartitioned asset that
    reads a partitioned one gets every partition concatenated (tables carry a ``partition`` column).
    """

    base_dir: str = Field(default=str(get_settings().data_root / "tables"), description="Folder of the Parquet tables.")

    def _path(self, asset: str, partition: str | None) -> Path:
        base = Path(self.base_dir) / asset
        if partition is None:
            return base.with_suffix(".parquet")
        if not _SAFE_KEY.match(partition):
            raise ValueError(f"partition key {partition!r} cannot be a file name: use letters, digits, '.', '_' or '-'")
        return base / f"{partition}.parquet"

    def handle_output(self, context: OutputContext, obj: pl.DataFrame) -> None:
        if obj is None:
            return
        asset = context.asset_key.path[-1]
        if not isinstance(obj, pl.DataFrame):
            raise TypeError(f"asset {asset} returned {type(obj).__name__}; this IO manager stores polars DataFrames")
        if asset in schemas.TABLES:
            obj = schemas.conform(obj, schemas.TABLES[asset], asset)
        partition = context.partition_key if context.has_partition_key else None
        path = self._path(asset, partition)
        with atomic_path(path) as tmp:
            obj.write_parquet(tmp, compression="zstd", statistics=True)
        # the row count is the asset's own dagster/row_count: one key, so the UI plots it once. For a partitioned
        # asset that is this partition's; the UI's asset page shows the latest one, so the table's total is here too
        meta: dict = {"path": MetadataValue.path(str(path)), "bytes": path.stat().st_size}
        if partition is not None:
            meta["partition"] = MetadataValue.text(partition)
            meta["rows_in_every_partition"] = MetadataValue.int(_rows_on_disk(path.parent))
        context.add_output_metadata(meta)

    def load_input(self, context: InputContext) -> pl.DataFrame | PartitionedParquet:
        """The asset's frame (every partition's, concatenated, for an unpartitioned reader).

        An input declared with ``AssetIn(..., metadata={"columns": [...]})`` reads only those columns:
        a check that compares ids need not read 384 floats per row (``graph_vectors_match_nodes``).
        One declared with ``metadata={"partitioned": True}`` gets the partitions' files unread
        (``mmkg.partitioned.PartitionedParquet``): the publish reads vectors a batch at a time.
        """
        asset = context.asset_key.path[-1]
        metadata = context.definition_metadata or {}
        columns = metadata.get("columns")
        if not context.has_asset_partitions:
            return self._read(asset, [self._path(asset, None)], columns)
        keys = sorted(context.asset_partition_keys)
        paths = [self._path(asset, k) for k in keys]
        if metadata.get("partitioned"):
            self._require(asset, paths)
            return PartitionedParquet(asset, dict(zip(keys, paths, strict=True)))
        return self._read(asset, paths, columns)

    def read(self, asset: str, partition: str | None, columns: list[str] | None = None) -> pl.DataFrame:
        """One partition's frame (the whole table when ``partition`` is None), as ``load_input`` reads it."""
        return self._read(asset, [self._path(asset, partition)], columns)

    def _require(self, asset: str, paths: list[Path]) -> None:
        missing = [p for p in paths if not p.exists()]
        if missing:
            names = ", ".join(p.stem for p in missing[:5]) + (" …" if len(missing) > 5 else "")
            raise MissingPartitionError(
                f"{asset}: no Parquet file for {names} under {Path(self.base_dir) / asset}; "
                f"materialize {asset} for those partitions first"
            )

    def _read(self, asset: str, paths: list[Path], columns: list[str] | None = None) -> pl.DataFrame:
        self._require(asset, paths)
        return read_parquet_files(asset, paths, columns)


def _rows_on_disk(folder: Path) -> int:
    """Rows of every partition file of a table, from the Parquet footers (no data is read)."""
    import pyarrow.parquet as pq

    return sum(pq.read_metadata(f).num_rows for f in folder.glob("*.parquet"))
