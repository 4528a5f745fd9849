from dagster import DefaultSensorStatus, RunRequest, SensorEvaluationContext, SensorResult, sensor

from assets.partitions import corpus_partitions
from pipelines.jobs import partition_job
from resources import CorpusResource


@sensor(
    job=partition_job,
    minimum_interval_seconds=60,
    default_status=DefaultSensorStatus.STOPPED,
    description="Adds a dynamic partition for each new sub-folder of the corpus root and requests its run.",
)
def corpus_partition_sensor(context: SensorEvaluationContext, corpus: CorpusResource) -> SensorResult:
    known = set(context.instance.get_dynamic_partitions(corpus_partitions.name))
    new = [p for p in corpus.partitions() if p not in known]
    return SensorResult(
        run_requests=[RunRequest(partition_key=p, run_key=f"new-{p}") for p in new],
        dynamic_partitions_requests=[corpus_partitions.build_add_request(new)] if new else [],
    )
