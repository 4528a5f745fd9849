from __future__ import annotations

from pathlib import Path

from dagster import ConfigurableIOManager, InputContext, MetadataValue, OutputContext
from pydantic import Field

from mmkg.incidence import Incidence
from mmkg.settings import get_settings


class IncidenceIOManager(ConfigurableIOManager):
    """A dict of named ``Incidence`` matrices as ``<base_dir>/<asset>/<partition>/<name>.npz`` (no pickle)."""

    base_dir: str = Field(default=str(get_settings().data_root / "incidence"), description="Folder of the npz files.")

    def _dir(self, asset: str, partition: str) -> Path:
        return Path(self.base_dir) / asset / partition

    def handle_output(self, context: OutputContext, obj: dict[str, Incidence]) -> None:
        asset = context.asset_key.path[-1]
        folder = self._dir(asset, context.partition_key)
        meta = {}
        for name, inc in obj.items():
            inc.save(folder / f"{name}.npz")
            meta[f"{name}_shape"] = MetadataValue.text(f"{inc.shape[0]} x {inc.shape[1]}")
            meta[f"{name}_nnz"] = int(inc.matrix.nnz)
        context.add_output_metadata({"path": MetadataValue.path(str(folder)), **meta})

    def read(self, asset: str, partition: str) -> dict[str, Incidence]:
        """One partition's matrices, by name (what ``load_input`` gives a partitioned reader)."""
        folder = self._dir(asset, partition)
        files = sorted(folder.glob("*.npz"))
        if not files:
            raise FileNotFoundError(f"{asset}: no matrices for partition {partition} in {folder}; materialize it first")
        return {f.stem: Incidence.load(f) for f in files}

    def load_input(self, context: InputContext) -> dict[str, dict[str, Incidence]] | dict[str, Incidence]:
        asset = context.asset_key.path[-1]
        keys = sorted(context.asset_partition_keys)
        if len(keys) == 1 and context.has_partition_key:
            return self.read(asset, keys[0])
        return {k: self.read(asset, k) for k in keys}
