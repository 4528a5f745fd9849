"""Generation group: answer a file of questions from the published index, with citations, into a table."""

import time
from pathlib import Path

import polars as pl
from dagster import AssetExecutionContext, AssetKey, Config, MetadataValue, Output, asset
from pydantic import Field

from assets._metadata import OWNERS, counts, preview
from mmkg.generation.batch import QuestionsError, answer_questions, load_questions
from resources import StorageResource
from resources.encoder import EncoderResource
from resources.generator import GeneratorResource


class AnswersConfig(Config):
    questions: str = Field(description="JSON or JSONL file of questions: {question, id?, image?, filters?} each.")
    strategy: str = Field(default="mg2", description="Retrieval strategy, NAME[:PRESET] (mmkg strategies).")
    task: str = Field(default="", description="Prompt task (qa, vqa, mkg_graph, ...) or a template file; empty: "
                      "the strategy's default.")  # fmt: skip
    k: int = Field(default=8, ge=1, description="Chunks retrieved per question.")
    budget: int = Field(default=1500, ge=50, description="Tokens of evidence in each prompt.")


@asset(
    deps=[AssetKey("retrieval_index")],
    group_name="generation",
    io_manager_key="parquet_io",
    owners=OWNERS,
    kinds={"parquet"},
    description="Answers to a file of questions, written by the generator resource's backend from the current "
    "index version's evidence, with citations (chunk, document, page, pictures); one row per question, failures "
    "kept with their error. For downstream jobs: <data_root>/tables/answers.parquet.",
)
def answers(
    context: AssetExecutionContext,
    config: AnswersConfig,
    storage: StorageResource,
    encoder: EncoderResource,
    generator: GeneratorResource,
):
    from mmkg.index import Index

    try:
        questions = load_questions(Path(config.questions))
    except QuestionsError as exc:
        raise ValueError(f"{exc}; set the asset's config 'questions' to a readable JSON/JSONL file") from exc
    index = Index.open(storage.path / "index", encoder=encoder.get(storage.path / "index"))
    gen = generator.get()
    t0 = time.perf_counter()
    step = max(1, len(questions) // 10)

    def progress(done: int, total: int) -> None:
        if done % step == 0 or done == total:
            context.log.info(f"answered {done}/{total} questions ({time.perf_counter() - t0:.1f}s)")

    table = answer_questions(index, questions, gen, config.strategy, config.task or None, config.k, config.budget,
                             on_answer=progress)  # fmt: skip
    ok = table.filter(pl.col("error") == "")
    return Output(
        table,
        metadata={
            "questions": table.height,
            "answered": ok.height,
            "failed": table.height - ok.height,
            "backend": f"{gen.name} ({gen.model})",
            "index_version": index.version,
            "mean_citations": MetadataValue.float(round(float(ok["citations"].list.len().mean() or 0.0), 2)),
            "mean_generate_ms": MetadataValue.float(round(float(ok["generate_ms"].mean() or 0.0), 1)),
            "errors": counts(table.filter(pl.col("error") != "").with_columns(
                pl.col("error").str.split(":").list.first()), "error"),
            "preview": preview(table, ["question", "answer", "error"], n=5),
        },
    )  # fmt: skip
