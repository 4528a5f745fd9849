"""Which Dagster executor runs the steps: chosen by deployment (env var or run config), never by editing assets.

The asset definitions are the same everywhere; only the executor differs. ``MMKG_EXECUTOR`` picks the
executor of every job in ``pipelines.definitions``. Unset, it is the **in-process** executor: all of a
run's steps (assets and their checks) in the run's one process. Dagster's own default, one process
per step, paid a process start and a re-import of the definitions for every asset and every check:
materializing five cheap assets of one sample partition from ``dagster asset materialize`` took 49 s
with it and 7.7 s in-process (10 steps, same machine, benchmarks/RESULTS.md). The steps of one
partition form a chain, so little parallelism is lost; partitions still run in parallel as separate
runs, and the ``gpu`` pool still limits GPU steps across runs (the in-process executor claims pool
slots too). ``MMKG_EXECUTOR=multiprocess`` brings back one process per step. Executors that live in
optional packages (dask, celery, k8s, docker) are imported only when named, so loading the
definitions stays fast and a deployment installs just the one it uses.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path

from dagster import ExecutorDefinition, JobDefinition

# name -> "module:attribute" of the executor definition, and the pip package that provides it
EXECUTORS: dict[str, tuple[str, str]] = {
    "multiprocess": ("dagster:multiprocess_executor", "dagster"),
    "in_process": ("dagster:in_process_executor", "dagster"),
    "dask": ("pipelines.dask_executor:dask_executor", "dagster-dask"),
    "celery": ("dagster_celery:celery_executor", "dagster-celery"),
    "k8s": ("dagster_k8s:k8s_job_executor", "dagster-k8s"),
    "celery_k8s": ("dagster_celery_k8s:celery_k8s_job_executor", "dagster-celery-k8s"),
    "docker": ("dagster_docker:docker_executor", "dagster-docker"),
}
ENV_VAR = "MMKG_EXECUTOR"
DEFAULT = "in_process"


def load_executor(name: str) -> ExecutorDefinition:
    """The executor registered under ``name``; a clear error names the choices or the package to install."""
    if name not in EXECUTORS:
        raise ValueError(f"unknown executor {name!r} ({ENV_VAR}); choose one of: {', '.join(EXECUTORS)}")
    target, package = EXECUTORS[name]
    module_name, attr = target.split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise ImportError(f"executor {name!r} needs the {package} package: pip install {package} ({e})") from e
    return getattr(module, attr)


def executor_from_env() -> ExecutorDefinition:
    """The executor named by ``MMKG_EXECUTOR``, the in-process one when unset (see the module docstring)."""
    return load_executor(os.environ.get(ENV_VAR, "").strip() or DEFAULT)


def job_on(executor: str, job_name: str = "index_partition") -> JobDefinition:
    """A job of ``pipelines.definitions`` with its executor swapped: same assets, resources and selection."""
    from pipelines.definitions import defs

    return defs.resolve_job_def(job_name).with_executor_def(load_executor(executor))


def index_partition_on_dask() -> JobDefinition:
    """``index_partition`` on the dask executor; a module-level target for ``dagster.reconstructable``.

    Dask workers rebuild the job from this function, so it must be importable there (same code, same venv).
    """
    return job_on("dask", "index_partition")


def resources_run_config(corpus_root: Path | str, data_root: Path | str) -> dict:
    """Run config pointing every path-based resource at one corpus and data root.

    Run config travels with the run to every process that executes a step (dask or celery workers,
    k8s pods), so the paths do not depend on each worker's environment variables.
    """
    data = str(data_root).rstrip("/")
    return {
        "resources": {
            "corpus": {"config": {"root": str(corpus_root)}},
            "storage": {"config": {"data_root": data}},
            "parquet_io": {"config": {"base_dir": f"{data}/tables"}},
            "graph_io": {"config": {"base_dir": f"{data}/graph"}},
            "incidence_io": {"config": {"base_dir": f"{data}/incidence"}},
        }
    }
