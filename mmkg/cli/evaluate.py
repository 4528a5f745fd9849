"""``mmkg eval ...``: retrieval and answers on a benchmark, beside the baselines, in one run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from mmkg.cli.common import Processes, console, err_console, eval_app, open_index

DATASETS = Path("../shared/datasets")
Methods = Annotated[
    str,
    typer.Option(
        "--methods",
        help="Comma list: bm25, dense, any strategy as NAME or NAME:PRESET (mkg, mg2:longdoc; mmkg strategies lists "
        "them), graph:<preset> (= mg2:<preset>), graph:all (every mg2 preset).",
    ),
]
Ks = Annotated[str, typer.Option("--k", help="Comma list of k values.")]
Out = Annotated[Path | None, typer.Option("--out", help="Output folder (default: <data-root>/results).")]
DataRoot = Annotated[
    Path | None,
    typer.Option("--data-root", help="Where the corpus copy, tables and index are built (default: .mmkg/eval/<set>)."),
]
EvalIndex = Annotated[
    Path | None, typer.Option("--index", help="Evaluate this existing index root; skip writing and building.")
]
Limit = Annotated[int | None, typer.Option("--limit", help="Only the first N questions.")]
Answers = Annotated[
    str,
    typer.Option(
        "--answers",
        help="Score the reader's short answers where questions carry gold answers: on, off, or only (no "
        "retrieval methods).",
    ),
]
AnswerStrategy = Annotated[
    str | None,
    typer.Option("--answer-strategy", help="Strategy[:preset] that retrieves for the answers (default: mg2)."),
]
SpanModel = Annotated[
    str | None,
    typer.Option("--span-model", help="Also score the span-model backend's answers with this local extractive QA "
                 "model (a save_pretrained folder of a SQuAD-style model) on the same evidence."),
]
Depth = Annotated[int, typer.Option("--depth", help="Chunks retrieved per query before mapping to units.")]
Reuse = Annotated[
    bool,
    typer.Option(
        "--reuse/--rebuild",
        help="Re-use the index in --data-root when it was published from the same corpus files "
        "(code changes are not detected: rebuild after changing the pipeline). --rebuild is a cold build "
        "(parse, vector and OCR caches cleared), so the speed report is the full cost.",
    ),
]


def _evaluate(
    dataset,
    write_corpus,
    name: str,
    data_root: Path | None,
    index: Path | None,
    methods: str,
    k: str,
    out: Path | None,
    limit: int | None,
    depth: int,
    processes: int | None,
    reuse: bool,
    corpus_root: Path | None = None,
    answers: str = "on",
    answer_strategy: str | None = None,
    span_model: str | None = None,
) -> None:
    """Build (or re-use, or take) an index, run every method, print the tables, write the report files.

    ``answers``: "on" also scores the reader's short answers where questions carry gold answers, "only"
    skips the retrieval methods, "off" skips the answers."""
    import time

    from rich.markdown import Markdown
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from mmkg.eval import make_methods, parse_methods, run_eval
    from mmkg.eval.runner import steps_for

    if answers not in ("on", "off", "only"):
        err_console.print(f"[red]error:[/] --answers must be on, off or only, not {answers!r}")
        raise typer.Exit(2)
    try:
        names = parse_methods(methods)
        ks = sorted({int(x) for x in k.split(",") if x.strip()})
        if answer_strategy is not None:
            from mmkg.retrieval import get_strategy

            get_strategy(answer_strategy)  # name[:preset]; unknown names fail here, before any build
        reader = None
        if span_model is not None and answers == "off":
            raise ValueError("--span-model scores answers: use it with --answers on or only")
        if span_model is not None:  # loaded before any build, so a wrong folder fails at once
            from mmkg.generation import GenerationError
            from mmkg.generation.span_model import SpanModelGenerator

            try:
                reader = SpanModelGenerator(span_model)
            except GenerationError as exc:
                raise ValueError(str(exc)) from exc
    except ValueError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    dataset = dataset.limit(limit)
    data_root = data_root or Path(".mmkg/eval") / name
    build = None
    if index is None:
        try:
            from pipelines.build import build_index  # Dagster is imported only when there is something to build
        except ImportError as exc:
            err_console.print(f"[red]error:[/] building an index needs the project's Dagster pipelines ({exc}); "
                          "pass --index to evaluate an existing one")  # fmt: skip
            raise typer.Exit(2) from exc

        if corpus_root is None:
            corpus_root = data_root / "corpus"
            corpus_root.mkdir(parents=True, exist_ok=True)
            write_corpus(corpus_root)
        console.print(f"Indexing [bold]{corpus_root}[/] into [bold]{data_root}[/] through the Dagster jobs")
        try:
            report = build_index(
                corpus_root, data_root, processes=processes, reuse=reuse, cold=not reuse,
                on_progress=lambda what, s: console.print(f"[green]✓[/] {what} in {s:.1f}s"),
            )  # fmt: skip
        except (RuntimeError, ValueError, FileNotFoundError) as exc:  # as `mmkg index build`: one line, no traceback
            err_console.print(f"[red]error:[/] {exc}")
            raise typer.Exit(1) from exc
        if report.reused:
            console.print(f"[yellow]re-using[/] index {report.index_version}: published from these corpus files")
        build = report.to_dict()
        index = data_root / "index"
    t0 = time.perf_counter()
    idx = open_index(index, None)
    open_s = time.perf_counter() - t0
    try:
        ms = make_methods(idx, names)
    except ValueError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    if answers != "only":
        with Progress(*columns, console=console) as bar:
            task = bar.add_task(f"{name}: {len(ms)} method(s)", total=steps_for(dataset, ms))
            try:
                result = run_eval(idx, dataset, ms, ks=ks, depth=depth, on_step=lambda: bar.advance(task))
            except ValueError as exc:  # questions that do not fit the index, bad k or depth
                err_console.print(f"[red]error:[/] {exc}")
                raise typer.Exit(2) from exc
        result.build, result.open_s = build, open_s
        rpath, mpath = result.write(out or data_root / "results")
        from mmkg.eval.report import markdown

        console.print(Markdown(markdown(result)))
        console.print(f"Per-question results: [bold]{rpath}[/]; report: [bold]{mpath}[/]")
    with_gold = sum(q.answer is not None for q in dataset.questions)
    if answers == "off" or not with_gold:
        if answers == "only":
            console.print(f"[yellow]no question of {name} carries a gold answer; nothing to score[/]")
        return
    from mmkg.eval import answers as answer_eval

    with Progress(*columns, console=console) as bar:
        task = bar.add_task(f"{name}: answers", total=with_gold)
        report = answer_eval.run_answers(idx, dataset, strategy=answer_strategy, on_step=lambda: bar.advance(task),
                                         span_model=reader)  # fmt: skip
    jpath, apath = answer_eval.write(report, out or data_root / "results")
    console.print(Markdown(answer_eval.markdown(report)))
    console.print(f"Per-question answers: [bold]{jpath}[/]; report: [bold]{apath}[/]")


def _dataset_error(exc: Exception) -> typer.Exit:
    err_console.print(f"[red]error:[/] {exc}")
    return typer.Exit(2)


@eval_app.command("twowiki")
def eval_twowiki(
    corpus: Annotated[Path, typer.Option(help="2Wiki corpus.json")] = DATASETS / "twowiki" / "corpus.json",
    questions: Annotated[
        list[Path], typer.Option(help="Questions with supporting_titles (and answers); repeat for several files.")
    ] = [DATASETS / "twowiki" / "questions_dev.json"],  # noqa: B006 - typer reads the default, never mutates it
    partitions: Annotated[int, typer.Option(help="Corpus partitions to split the passages into.")] = 1,
    methods: Methods = "bm25,dense,graph:default",
    k: Ks = "1,2,5,8,10",
    out: Out = None,
    data_root: DataRoot = None,
    index: EvalIndex = None,
    limit: Limit = None,
    depth: Depth = 50,
    processes: Processes = None,
    reuse: Reuse = False,
    answers: Answers = "on",
    answer_strategy: AnswerStrategy = None,
    span_model: SpanModel = None,
) -> None:
    """2WikiMultihopQA: passage recall@k, perfect retrieval@k and MRR over the whole corpus; answer EM and F1."""
    from mmkg.eval import DatasetError, TwoWiki

    try:
        tw = TwoWiki.load(corpus, questions)
    except DatasetError as exc:
        raise _dataset_error(exc) from exc
    _evaluate(tw.dataset, lambda root: tw.write_corpus(root, partitions), "twowiki", data_root, index, methods, k,
              out, limit, depth, processes, reuse, answers=answers, answer_strategy=answer_strategy,
              span_model=span_model)  # fmt: skip


@eval_app.command("mmlongbench")
def eval_mmlongbench(
    documents: Annotated[Path, typer.Option(help="Folder of PDFs.")] = DATASETS / "mmlongbench-dev" / "documents",
    questions: Annotated[Path, typer.Option(help="Questions with evidence_pages.")] = DATASETS
    / "mmlongbench-dev"
    / "questions_dev.json",
    methods: Methods = "bm25,dense,graph:default,graph:longdoc",
    k: Ks = "1,2,5,8,10",
    out: Out = None,
    data_root: DataRoot = None,
    index: EvalIndex = None,
    limit: Limit = None,
    depth: Depth = 50,
    processes: Processes = None,
    reuse: Reuse = False,
    answers: Answers = "on",
    answer_strategy: AnswerStrategy = None,
    span_model: SpanModel = None,
) -> None:
    """MMLongBench-Doc: page recall@k within each question's document and across the corpus, by evidence source;
    answer accuracy and F1 by the benchmark's rules."""
    from mmkg.eval import DatasetError, MMLongBench

    try:
        mb = MMLongBench.load(documents, questions)
    except DatasetError as exc:
        raise _dataset_error(exc) from exc
    _evaluate(mb.dataset, mb.write_corpus, "mmlongbench", data_root, index, methods, k, out, limit, depth, processes,
              reuse, answers=answers, answer_strategy=answer_strategy, span_model=span_model)  # fmt: skip


@eval_app.command("sample")
def eval_sample(
    corpus: Annotated[Path | None, typer.Option(help="Corpus root (default: the bundled sample corpus).")] = None,
    questions: Annotated[Path | None, typer.Option(help="Default: <corpus>/questions.json.")] = None,
    methods: Methods = "bm25,dense,graph:default",
    k: Ks = "1,2,5,8,10",
    out: Out = None,
    data_root: DataRoot = None,
    index: EvalIndex = None,
    limit: Limit = None,
    depth: Depth = 50,
    processes: Processes = None,
    reuse: Reuse = False,
    answers: Answers = "on",
    answer_strategy: AnswerStrategy = None,
    span_model: SpanModel = None,
) -> None:
    """The bundled sample corpus and its hand-written questions: the quick smoke evaluation."""
    from mmkg.eval import DatasetError, load_sample
    from mmkg.settings import SAMPLE_CORPUS

    corpus = corpus or SAMPLE_CORPUS  # wherever it runs: an `mmkg init` project has no sample_corpus/ of its own
    try:
        ds = load_sample(questions or corpus / "questions.json")
    except DatasetError as exc:
        raise _dataset_error(exc) from exc
    _evaluate(ds, None, "sample", data_root, index, methods, k, out, limit, depth, processes, reuse, corpus_root=corpus,
              answers=answers, answer_strategy=answer_strategy, span_model=span_model)  # fmt: skip


@eval_app.command("compare")
def eval_compare(
    a: Annotated[Path, typer.Argument(help="results.json of run A.")],
    b: Annotated[Path, typer.Argument(help="results.json of run B.")],
    metric: Annotated[str, typer.Option(help="Per-question metric to compare.")] = "perfect@8",
) -> None:
    """Questions whose metric differs between two runs, per scope and method."""
    from mmkg.eval import compare

    runs = []
    for path in (a, b):
        try:
            runs.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, json.JSONDecodeError) as exc:
            err_console.print(f"[red]error:[/] {path}: {exc}")
            raise typer.Exit(2) from exc
    diffs = compare(runs[0], runs[1], metric)
    t = Table(title=f"{metric}: {len(diffs)} difference(s)")
    for col in ("id", "scope", "method", "A", "B", "question"):
        t.add_column(col)
    for d in diffs:
        t.add_row(d["id"], d["scope"], d["method"], f"{d['a']:.2f}", f"{d['b']:.2f}", d["question"])
    console.print(t)


