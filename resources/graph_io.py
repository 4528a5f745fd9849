from __future__ import annotations

from pathlib import Path

from dagster import ConfigurableIOManager, InputContext, MetadataValue, OutputContext
from pydantic import Field

from mmkg.graph import Graph
from mmkg.settings import get_settings


class GraphIOManager(ConfigurableIOManager):
    """The global graph as ``<base_dir>/<asset>/graph.npz`` (CSR, pickle-free) plus ``nodes.parquet``."""

    base_dir: str = Field(default=str(get_settings().data_root / "graph"), description="Folder of the graph files.")

    def handle_output(self, context: OutputContext, obj: Graph) -> None:
        folder = Path(self.base_dir) / context.asset_key.path[-1]
        obj.save(folder)
        context.add_output_metadata({"path": MetadataValue.path(str(folder))})

    def load_input(self, context: InputContext) -> Graph:
        folder = Path(self.base_dir) / context.asset_key.path[-1]
        if not (folder / "graph.npz").exists():
            raise FileNotFoundError(f"no graph at {folder}; materialize the graph asset first")
        return Graph.load(folder)
