"""dagster-dask's executor, fixed for current dask.distributed and aware of Dagster pools.

dagster-dask 0.29's executor hands the DagsterRun to ``Client.submit`` as a bare argument. distributed >= 2025
walks tuple arguments looking for futures, and a DagsterRun (a NamedTuple) of a job with pools holds a
``RunOpConcurrency`` @record that refuses iteration, so every run fails before its first step. It also names
dask tasks ``<job>.<step>``, so two runs of one job on one cluster share futures (dagster issue #21418).
The executor below is upstream's with those two fixed, plus Dagster pools mapped to dask worker resources.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

from dagster import (
    Executor,
    Field,
    Permissive,
    executor,
    multiple_process_executor_requirements,
)
from dagster import _check as check
from dagster._core.events import DagsterEvent
from dagster._core.execution.context.system import PlanOrchestrationContext
from dagster._core.execution.plan.plan import ExecutionPlan
from dagster._core.execution.retries import RetryMode
from dagster._utils import iterate_with_context
from dagster_dask import dask_executor as _upstream_dask_executor
from dagster_dask.executor import DaskExecutor, get_dask_resource_requirements, query_on_dask_worker

_CLUSTERS = {  # cluster type -> (module, class), as upstream
    "local": ("dask.distributed", "LocalCluster"),
    "ssh": ("dask.distributed", "SSHCluster"),
    "yarn": ("dask_yarn", "YarnCluster"),
    "pbs": ("dask_jobqueue", "PBSCluster"),
    "moab": ("dask_jobqueue", "MoabCluster"),
    "sge": ("dask_jobqueue", "SGECluster"),
    "lsf": ("dask_jobqueue", "LSFCluster"),
    "slurm": ("dask_jobqueue", "SLURMCluster"),
    "oar": ("dask_jobqueue", "OARCluster"),
    "kube": ("dask_kubernetes", "KubeCluster"),
}


class _Opaque:
    """Carries arguments to a dask worker without dask looking inside them (it is not a tuple, list or dict)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def _step_on_worker(dependencies: list, args: _Opaque) -> list[DagsterEvent]:
    """Runs on the worker: rebuild the job there and execute one step (upstream's worker function)."""
    return list(query_on_dask_worker(dependencies, *args.value))


class PoolAwareDaskExecutor(DaskExecutor):
    """dagster-dask's executor, submitting each step with its run id in the task key and its pool's resources."""

    def __init__(self, cluster_type: str, cluster_configuration: dict, pool_resources: dict[str, dict]) -> None:
        super().__init__(cluster_type, cluster_configuration)
        self.pool_resources = pool_resources

    @property
    def retries(self) -> RetryMode:
        return RetryMode.DISABLED

    def _cluster(self, job_name: str) -> Any:
        if self.cluster_type == "existing":
            return self.cluster_configuration["address"]
        module, cls = _CLUSTERS[self.cluster_type]
        return getattr(importlib.import_module(module), cls)(**self.build_dict(job_name))

    def execute(self, plan_context: PlanOrchestrationContext, execution_plan: ExecutionPlan) -> Iterator[DagsterEvent]:
        import dask.distributed
        from dagster._core.errors import raise_execution_interrupts

        check.invariant(plan_context.instance.is_persistent, "Dask execution requires a persistent DagsterInstance")
        run = plan_context.dagster_run
        with dask.distributed.Client(self._cluster(plan_context.job_name)) as client:
            futures: dict[str, Any] = {}
            for level in execution_plan.get_steps_to_execute_by_level():
                for step in level:
                    deps = [futures[k] for step_input in step.step_inputs for k in step_input.dependency_keys]
                    resources = {
                        **self.pool_resources.get(step.pool or "", {}),
                        **get_dask_resource_requirements(step.tags),
                    }
                    args = (
                        plan_context.reconstructable_job, run, plan_context.run_config, [step.key],
                        plan_context.instance.get_ref(), execution_plan.known_state,
                    )  # fmt: skip
                    futures[step.key] = client.submit(
                        _step_on_worker,
                        deps,
                        _Opaque(args),
                        key=f"{plan_context.job_name}.{step.key}.{run.run_id}",
                        resources=resources or None,
                        pure=False,
                    )
            done = dask.distributed.as_completed(list(futures.values()), with_results=True)
            for _future, events in iterate_with_context(raise_execution_interrupts, done):
                yield from (check.inst(e, DagsterEvent) for e in events)


@executor(
    name="dask",
    requirements=multiple_process_executor_requirements(),
    config_schema={
        **_upstream_dask_executor.config_schema.as_field().config_type.fields,
        "pool_resources": Field(
            Permissive(),
            is_required=False,
            default_value={},
            description="Dagster pool -> dask worker resources each step of that pool claims, e.g. "
            "{gpu: {GPU: 1}} with workers started as `dask worker --resources GPU=1` on GPU machines.",
        ),
    },
)
def dask_executor(init_context) -> Executor:
    """Runs each step as a dask task on a dask.distributed cluster (config as dagster-dask's ``dask_executor``)."""
    config = init_context.executor_config
    ((cluster_type, cluster_configuration),) = config["cluster"].items()
    pools = {k: {str(r): float(n) for r, n in v.items()} for k, v in config.get("pool_resources", {}).items()}
    return PoolAwareDaskExecutor(cluster_type, cluster_configuration or {}, pools)
