"""``mmkg``: query a published index and inspect it, without Dagster."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text
from typer.core import TyperGroup

from mmkg.settings import get_settings

try:  # typer 0.2x raises its vendored click's exceptions
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover - a typer on the click package
    import click.exceptions as click_errors  # type: ignore[no-redef]


class _Errors:
    """Standard error for mmkg's error lines: one line each, never wrapped; with ``--json``, a JSON object."""

    json = False  # set by _OneLineErrors from the command line

    def __init__(self) -> None:
        self.console = Console(stderr=True, soft_wrap=True)

    def print(self, message: str, **kwargs: Any) -> None:
        if self.json:
            text = Text.from_markup(message).plain.removeprefix("error: ")
            sys.stderr.write(json.dumps({"error": text}, ensure_ascii=False) + "\n")
            sys.stderr.flush()
        else:
            self.console.print(message, **kwargs)


class _OneLineErrors(TyperGroup):
    """A usage error (a bad option value, an unknown option, a missing argument) is one line on standard error
    with exit 2, like every other mmkg error, instead of click's framed box under the usage text."""

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:  # fmt: skip
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        argv = list(sys.argv[1:] if args is None else args)
        err_console.json = "--json" in argv
        try:
            rv = super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
        except click_errors.NoArgsIsHelpError as exc:  # `mmkg` alone: the help was printed
            sys.exit(exc.exit_code)
        except click_errors.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx is not None else "mmkg"
            err_console.print(f"[red]error:[/] {escape(exc.format_message())} (`{escape(where)} --help` lists the "
                              "options)")  # fmt: skip
            sys.exit(2)
        except click_errors.ClickException as exc:
            err_console.print(f"[red]error:[/] {escape(exc.format_message())}")
            sys.exit(exc.exit_code)
        except typer.Abort:
            err_console.print("[red]error:[/] aborted")
            sys.exit(1)
        sys.exit(rv if isinstance(rv, int) else 0)


app = typer.Typer(help="Build, query and operate mmkg indexes.", no_args_is_help=True, add_completion=False,
                  cls=_OneLineErrors)  # fmt: skip
index_app = typer.Typer(help="Build, update and inspect an index: build, update, status, info, versions, verify, "
                        "rollback.", no_args_is_help=True)  # fmt: skip
app.add_typer(index_app, name="index")
eval_app = typer.Typer(
    help="Evaluate retrieval on a benchmark: BM25, dense and graph presets side by side on one index.",
    no_args_is_help=True,
)
app.add_typer(eval_app, name="eval")
console = Console()
# errors go to standard error, results to standard output (also with --json), as git, dagster and graphrag do
err_console = _Errors()


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            console.print(f"mmkg {version('mmkg')}")
        except PackageNotFoundError:
            console.print("mmkg (not installed as a package)")
        raise typer.Exit()


@app.callback()
def _main(
    show_version: Annotated[
        bool, typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Build, query and operate mmkg indexes: mmkg init, then mmkg index build, then mmkg query."""
    # Model loading prints per-tensor progress bars on stderr; a command line wants its own output only.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    # LanceDB's Rust logger (lancedb's env_logger, read when lancedb is imported) warns on every table it
    # creates ("No existing dataset ... it will be created"); it reads LANCEDB_LOG. LANCE_LOG is pylance's.
    os.environ.setdefault("LANCEDB_LOG", "error")
    os.environ.setdefault("LANCE_LOG", "error")


DATA_ROOT_HELP = "Data root (default: $MMKG_DATA_ROOT, else data_root in ./mmkg.toml, else ./.mmkg)."
IndexPath = Annotated[
    Path | None,
    typer.Option(
        "--index",
        help="Index root (default: <data root>/index; the data root is $MMKG_DATA_ROOT, else data_root in "
        "./mmkg.toml, else ./.mmkg).",
        show_default=False,
    ),
]


def _settings():
    """The settings in effect; a bad ./mmkg.toml or MMKG_* value ends the command with one line, exit 2."""
    try:
        return get_settings()
    except ValueError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc


def _root(index: Path | None) -> Path:
    return index or _settings().data_root / "index"


def _check_index(index: Path | None) -> None:
    """A missing or broken index ends the command with one line before anything heavy is imported."""
    from mmkg.index.manifest import current_version

    try:
        current_version(_root(index))
    except (FileNotFoundError, ValueError) as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc


def _open(index: Path | None, version: str | None, encoder: bool = True):
    """The index (``encoder=False``: without loading the text/image model, for commands that read only tables)."""
    from mmkg.index import Index

    try:
        return Index.open(_root(index), version=version, encoder=None if encoder else False)
    except (FileNotFoundError, ValueError) as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc


def _params(pairs: list[str] | None) -> dict[str, str]:
    """``["k=v", ...]`` -> ``{"k": "v"}``; values stay strings and each strategy converts them to its types."""
    out = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--param {pair!r}: write it as NAME=VALUE (mmkg strategies lists the names)")
        out[key.strip()] = value.strip()
    return out


@app.command()
def query(
    text: Annotated[str | None, typer.Argument(help="Text query.")] = None,
    image: Annotated[Path | None, typer.Option("--image", help="Image query (file path).")] = None,
    video: Annotated[Path | None, typer.Option("--video", help="Video query (file path; strategy m3kg).")] = None,
    audio: Annotated[Path | None, typer.Option("--audio", help="Audio query (file path; strategy m3kg).")] = None,
    query_file: Annotated[
        Path | None, typer.Option("--query-file", help="Read the text query from this UTF-8 file ('-': stdin).")
    ] = None,
    k: Annotated[int, typer.Option("--k", min=1, max=1000, help="Chunks to return.")] = 5,
    strategy: Annotated[
        str, typer.Option("--strategy", help="Retrieval strategy, optionally NAME:PRESET (mmkg strategies lists them).")
    ] = "mg2",
    preset: Annotated[
        str | None,
        typer.Option("--preset", help="The strategy's preset (mg2: auto, which picks default or longdoc per query)."),
    ] = None,
    param: Annotated[
        list[str] | None, typer.Option("--param", help="Override a strategy parameter: NAME=VALUE (repeatable).")
    ] = None,
    doc: Annotated[list[str] | None, typer.Option("--doc", help="Only these doc_ids (repeatable).")] = None,
    partition: Annotated[list[str] | None, typer.Option("--partition", help="Only these partitions.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the full result as JSON.")] = False,
    index: IndexPath = None,
    version: Annotated[str | None, typer.Option(help="Pin a version (default: current).")] = None,
) -> None:
    """Retrieve the chunks that answer a text, image, video and/or audio query, with the evidence selected."""
    from mmkg.query import Query
    from mmkg.retrieval import get_strategy, search

    if query_file is not None:
        if text is not None:
            err_console.print("[red]error:[/] give the text query as an argument or with --query-file, not both")
            raise typer.Exit(2)
        text = _read_query_file(query_file)
    if text is None and image is None and video is None and audio is None:
        err_console.print("[red]error:[/] give a text query, --query-file, --image PATH, --video PATH or --audio PATH")
        raise typer.Exit(2)
    for what, path in (("image", image), ("video", video), ("audio", audio)):
        if path is not None and not path.is_file():
            err_console.print(f"[red]error:[/] {what} {path} not found")
            raise typer.Exit(2)
    try:
        overrides = _params(param)
        get_strategy(strategy, preset, **overrides)  # unknown names fail here, before any model loads
    except ValueError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    _check_index(index)  # after the arguments' own checks: a missing picture is named whatever the index
    filters = {key: vals for key, vals in (("doc_id", doc), ("partition", partition)) if vals}
    idx = _open(index, version)
    known = set(idx.documents["partition"].unique().to_list())
    unknown = sorted(set(partition or []) - known)
    if unknown:
        err_console.print(f"[red]error:[/] no partition {', '.join(map(repr, unknown))} in this index; "
                      f"partitions: {sorted(known)}")  # fmt: skip
        raise typer.Exit(2)
    try:
        result = search(idx,
            Query(text=text, image=image, video=video, audio=audio), k=k, strategy=strategy, preset=preset,
            filters=filters or None, **overrides,
        )  # fmt: skip
    except ValueError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    if as_json:
        print(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
        return
    console.print(
        f"[dim]index {result.version}, strategy {result.strategy} ({result.preset}), {result.seeds} seeds, "
        f"{result.timings_ms.get('total', 0.0):.0f} ms[/]"
    )
    for note in result.notes:
        console.print(f"[dim]{note}[/]")
    for c in result.chunks:
        where = c.source_path + (f" p.{c.page}" if c.page and c.t_start is None else "")
        if c.t_start is not None:
            where += f" {_clock(c.t_start)}–{_clock(c.t_end or c.t_start)}"
        console.print(f"\n[bold]{c.rank}. {c.title}[/]  [dim]{where}  score {c.score:.4f}[/]")
        console.print(c.text if len(c.text) <= 400 else c.text[:400] + "…")
        if c.sentences:
            console.print(f"  [green]best sentence[/] ({c.sentences[0].score:.2f}): {c.sentences[0].text}")
        for img in c.images:
            same = " [bold]the query picture[/]" if img.same_as_query else ""
            elsewhere = len({o.doc_id for o in img.occurrences} - {c.doc_id})
            also = f" [dim](also shown in {elsewhere} other document{'s' * (elsewhere != 1)})[/]" if elsewhere else ""
            console.print(f"  [cyan]image[/] {img.source}{same}{also}")
        for o in c.objects[:5]:
            console.print(f"  [yellow]object[/] {o.entity_name} ({o.backend}, σ={o.sigma:.2f})")
    if result.entities:
        ents = ", ".join(
            f"{e.name} ({e.score:.2f}{', hop ' + str(e.hop) if e.hop else ''})" for e in result.entities[:10]
        )
        console.print(f"\n[bold]entities[/] {ents}")
    for r in result.relations[:10]:
        console.print(f"[bold]triple[/] ⟨{r.subject}, {r.predicate}, {r.object}⟩ [dim]{r.score:.2f}  {r.sentence}[/]")
    frames = [m for m in result.media if m.via == "frame"]
    for m in frames[:5]:
        console.print(f"[magenta]frame[/] {m.source_path} at {_clock(m.t_start)} [dim]{m.score:.2f}[/]")


def _read_query_file(path: Path) -> str:
    """A long query from a file or stdin, as UTF-8 (the reader then applies its length cap)."""
    from mmkg.query import MAX_QUERY_CHARS

    try:
        data = sys.stdin.buffer.read(MAX_QUERY_CHARS * 4 + 1) if str(path) == "-" else path.read_bytes()
        return data.decode("utf-8")
    except FileNotFoundError:
        err_console.print(f"[red]error:[/] query file {path} not found")
    except UnicodeDecodeError as exc:
        err_console.print(f"[red]error:[/] query file {path} is not UTF-8 text (byte {exc.start}); re-save it as UTF-8")
    except OSError as exc:
        err_console.print(f"[red]error:[/] cannot read query file {path}: {exc}")
    raise typer.Exit(2)


def _clock(seconds: float) -> str:
    """12.4 -> 0:12.4; 3725 -> 1:02:05.0"""
    h, rest = divmod(float(seconds), 3600)
    m, s = divmod(rest, 60)
    return f"{int(h)}:{int(m):02d}:{s:04.1f}" if h else f"{int(m)}:{s:04.1f}"


@app.command()
def serve(
    index: IndexPath = None,
    host: Annotated[str, typer.Option("--host", help="Address to bind; anything but loopback needs an API key.")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option("--port", min=1, max=65535)] = 8000,
    api_key: Annotated[
        str | None, typer.Option("--api-key", envvar="MMKG_API_KEY", help="Required as Bearer token when set.")
    ] = None,
    corpus: Annotated[
        Path | None, typer.Option("--corpus", help="Corpus root that POST/DELETE /documents write into (off if unset).")
    ] = None,
    cors_origin: Annotated[
        list[str] | None, typer.Option("--cors-origin", help="Allow browser calls from this origin (repeatable).")
    ] = None,
    workers: Annotated[int, typer.Option("--workers", min=1, max=64, help="Query worker threads.")] = 2,
    answer_workers: Annotated[int, typer.Option("--answer-workers", min=1, max=16, help="Answer worker threads.")] = 1,
    backend: Annotated[
        str | None, typer.Option("--backend", help="A generation backend besides extractive: openai, llamacpp, ...")
    ] = None,
    model: Annotated[str | None, typer.Option("--model", help="Its model name or local path.")] = None,
    base_url: Annotated[str | None, typer.Option("--base-url", help="Its OpenAI-compatible endpoint.")] = None,
    reindex: Annotated[
        bool, typer.Option(help="After an upload or delete, run `mmkg index update` (with --corpus; "
                                "--no-reindex leaves it to a Dagster daemon's corpus sensor).")
    ] = True,
) -> None:
    """Serve the index over HTTP: the REST API (OpenAPI at /docs) and the web page at /."""
    _check_index(index)
    if backend and backend != "extractive":
        _check_backend(backend, model)
    import uvicorn

    from mmkg.api import ServeConfig, create_app
    from mmkg.generation import get_generator

    generators = {}
    if backend and backend != "extractive":
        options = {"base_url": base_url} if backend == "openai" and base_url else {}
        generators[backend] = lambda: get_generator(backend, model, **options)
    try:
        root = _root(index)
        # the update publishes into <data root>/index: the served index's parent is its data root
        command = (sys.executable, "-m", "mmkg.cli", "index", "update", "--corpus", str(corpus.resolve()),
                   "--data-root", str(root.resolve().parent)) if corpus is not None and reindex else None  # fmt: skip
        cfg = ServeConfig(
            index_root=root, corpus_root=corpus, host=host, api_key=api_key, cors_origins=cors_origin or [],
            query_workers=workers, answer_workers=answer_workers, generators=generators,
            default_backend=backend or "extractive", reindex_command=command,
        )  # fmt: skip
        api = create_app(cfg)
    except (FileNotFoundError, ValueError) as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    console.print(f"serving {cfg.index_root} version {api.state.holder.current().version} on http://{host}:{port}/ "
                  f"(API docs at /docs)")  # fmt: skip
    uvicorn.run(api, host=host, port=port, log_level="info", access_log=False)


def _print_reading(result: Any) -> None:
    """The reader's part of an answer: short answer and confidence, the span in its sentence, the graph path."""
    from rich.text import Text

    reading = result.reading
    if not reading:
        return
    head = Text("\nshort answer: ", style="dim")
    head.append(result.short_answer, style="bold")
    head.append(f"  ({result.answer_type.replace('_', '/')}, confidence {result.confidence:.2f})", style="dim")
    console.print(head)
    for sup in reading.get("support", [])[:2]:
        line = Text(f"  [{sup['label']}] ", style="bold")
        sentence, a, b = sup["sentence"], sup["start"], sup["end"]
        if 0 <= a < b <= len(sentence):
            line.append(sentence[:a]).append(sentence[a:b], style="bold green").append(sentence[b:])
        else:
            line.append(sentence)
        console.print(line)
    for step in reading.get("path", []):
        cite = f" [{step['label']}]" if step.get("label") else ""
        console.print(Text(f"  path: {step['subject']} -> {step['predicate']} -> {step['object']}{cite}", style="dim"))
    if reading.get("reason"):
        console.print(Text(f"  why: {reading['reason']}", style="dim"))


def _check_backend(backend: str, model: str | None) -> None:
    """The generation backend's name and model, checked without importing it (get_generator's rules)."""
    backends = ("extractive", "openai", "llamacpp", "transformers")
    if backend not in backends:
        err_console.print(f"[red]error:[/] unknown backend {backend!r}; choose one of {list(backends)}")
        raise typer.Exit(2)
    if backend == "openai" and not (model or os.environ.get("MMKG_LLM_MODEL")):
        err_console.print("[red]error:[/] the openai backend needs a model name: --model NAME or MMKG_LLM_MODEL")
        raise typer.Exit(2)
    if backend in ("llamacpp", "transformers") and not model:
        err_console.print(f"[red]error:[/] the {backend} backend needs --model (a local path)")
        raise typer.Exit(2)


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question.")],
    image: Annotated[Path | None, typer.Option("--image", help="A picture the question is about.")] = None,
    strategy: Annotated[str, typer.Option("--strategy", help="Retrieval strategy, NAME[:PRESET].")] = "mg2",
    param: Annotated[list[str] | None, typer.Option("--param", help="Strategy parameter NAME=VALUE.")] = None,
    backend: Annotated[
        str, typer.Option("--backend", help="extractive (default, no model), openai, llamacpp or transformers.")
    ] = "extractive",
    model: Annotated[
        str | None, typer.Option("--model", help="Model name (openai) or local path (llamacpp: .gguf; transformers).")
    ] = None,
    base_url: Annotated[
        str | None, typer.Option("--base-url", help="OpenAI-compatible endpoint (default: $MMKG_LLM_BASE_URL).")
    ] = None,
    task: Annotated[
        str | None, typer.Option("--task", help="Prompt: qa, vqa, mkg_graph, mg2_reasoning, ... or a template file.")
    ] = None,
    k: Annotated[int, typer.Option("--k", min=1, max=1000, help="Chunks to retrieve.")] = 8,
    budget: Annotated[int, typer.Option("--budget", help="Tokens of evidence in the prompt.")] = 1500,
    max_tokens: Annotated[int, typer.Option("--max-tokens", help="Longest answer, in tokens.")] = 512,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds to wait for the openai backend.")] = 60.0,
    stream: Annotated[bool, typer.Option("--stream", help="Print the answer as it is written.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole Answer as JSON.")] = False,
    index: IndexPath = None,
) -> None:
    """Answer a question from the index's evidence, with citations (document, page, picture region)."""
    _check_backend(backend, model)  # before the imports below, which load torch (seconds)
    _check_index(index)
    from mmkg.generation import GenerationError, answer, answer_stream, get_generator, load_template
    from mmkg.retrieval import get_strategy

    try:
        overrides = _params(param)
        get_strategy(strategy, None, **overrides)
        if task is not None:
            load_template(task)
        options = {"base_url": base_url, "timeout": timeout} if backend == "openai" else {}
        gen = get_generator(backend, model, **options)
    except (ValueError, GenerationError) as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    if image is not None and not image.is_file():
        err_console.print(f"[red]error:[/] image {image} not found")
        raise typer.Exit(2)
    idx = _open(index, None)
    kwargs = dict(image=image, strategy=strategy, task=task, k=k, budget=budget, max_tokens=max_tokens, **overrides)
    try:
        if stream and not as_json:
            result = None
            for piece in answer_stream(idx, question, gen, **kwargs):
                if isinstance(piece, str):
                    print(piece, end="", flush=True)
                else:
                    result = piece
            print()
        else:
            result = answer(idx, question, gen, **kwargs)
    except (ValueError, GenerationError) as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    assert result is not None
    if as_json:
        print(json.dumps(result.to_dict(), indent=2, ensure_ascii=False, default=str))
        return
    if not stream:
        console.print(result.text, markup=False, highlight=False)
    _print_reading(result)
    console.print(f"\n[dim]{result.backend} ({result.model}), task {result.task}, strategy {result.strategy}, "
                  f"{result.prompt_tokens}+{result.completion_tokens} tokens, {result.latency_ms}[/]")  # fmt: skip
    for c in result.citations:
        where = c.source_path + (f" p.{c.page}" if c.page else "")
        console.print(f"[bold][{c.label}][/] {c.title}  [dim]{where}[/]")
    if result.invalid_citations:
        console.print(f"[yellow]{result.invalid_citations} citation(s) named no evidence shown; dropped[/]")


@app.command()
def strategies(as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False) -> None:
    """The retrieval strategies a query can use: what each does, its presets, parameters and defaults."""
    from mmkg.retrieval import describe

    info = describe()
    if as_json:
        print(json.dumps(info, indent=2, default=str))
        return
    for s in info:
        console.print(f"\n[bold]{s['name']}[/]  [dim]answers {', '.join(s['modalities'])}; presets: "
                      f"{', '.join(s['presets'])} (default {s['default_preset']})[/]")  # fmt: skip
        console.print(s["summary"])
        t = Table(show_header=True, box=None, padding=(0, 1))
        for col in ("parameter", "default", "meaning"):
            t.add_column(col)
        for p in s["params"]:
            t.add_row(p["name"], str(p["default"]), p["doc"])
        console.print(t)
    console.print('\nUse: mmkg query "..." --strategy NAME[:PRESET] --param NAME=VALUE')


@index_app.command("info")
def index_info(index: IndexPath = None, as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Version, counts, encoder and size on disk of the current index."""
    from mmkg.index.integrity import describe

    try:
        info = describe(_root(index))  # the manifest only: no vectors, graph or model
    except (FileNotFoundError, ValueError) as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    if as_json:
        print(json.dumps(info, indent=2))
        return
    t = Table(show_header=False, title=f"mmkg index at {info['root']}")
    t.add_row("version", info["version"])
    t.add_row("created", info["created_at"])
    t.add_row("versions kept", str(len(info["versions"])))
    t.add_row("encoder", info["encoder"])
    t.add_row("partitions", ", ".join(info["partitions"]))
    for key, value in info["counts"].items():
        t.add_row(key, f"{value:,}")
    t.add_row("size on disk", f"{info['size_bytes'] / 2**20:.1f} MiB")
    console.print(t)


@index_app.command("versions")
def index_versions(index: IndexPath = None) -> None:
    """The published versions under the index root, oldest first; the current one is marked."""
    from mmkg.index.manifest import CURRENT, current_version, list_versions

    root = _root(index)
    versions = list_versions(root)
    if not versions:
        err_console.print(f"[red]error:[/] no published version under {root}")
        raise typer.Exit(2)
    try:
        current = current_version(root)
    except (FileNotFoundError, ValueError) as exc:
        current = None
        console.print(f"[yellow]{CURRENT}:[/] {exc}")
    for v in versions:
        console.print(f"{'*' if v == current else ' '} {v}")


@index_app.command("verify")
def index_verify(
    index: IndexPath = None,
    version: Annotated[str | None, typer.Option(help="Version to verify (default: the current one).")] = None,
) -> None:
    """Read every file of a version and compare it with the checksums its manifest recorded; exit 2 on damage."""
    from mmkg.index.integrity import open_version, verify

    root = _root(index)
    try:
        name, manifest = open_version(root, version, check_sizes=False)  # verify reports sizes with the digests
    except (FileNotFoundError, ValueError) as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    problems = verify(root, manifest)
    if problems:
        for line in problems:
            console.print(f"[red]damaged:[/] {line}")
        console.print(f"version {name}: {len(problems)} problem(s); `mmkg index rollback VERSION` points CURRENT at "
                      "another version, or publish again")  # fmt: skip
        raise typer.Exit(2)
    console.print(f"version {name}: {len(manifest.files):,} files verified, all as published")


@index_app.command("rollback")
def index_rollback(version: Annotated[str, typer.Argument(help="A version name from `mmkg index versions`.")],
                   index: IndexPath = None) -> None:  # fmt: skip
    """Point CURRENT at an earlier (or later) published version, atomically, after checking it opens."""
    from mmkg.index.lock import PublishLocked, publish_lock
    from mmkg.index.manifest import check_version_name, list_versions, set_current
    from mmkg.index.publish import verify_version
    from mmkg.retrieval.smoke import own_vector_probes

    root = _root(index)
    try:
        check_version_name(version, "the version asked for")
        if version not in list_versions(root):
            raise ValueError(f"no published version {version} under {root}; versions: {list_versions(root)}")
        with publish_lock(root, wait=False):
            problems = verify_version(root, version, own_vector_probes)
            if problems:
                raise ValueError(f"version {version} does not open cleanly: {'; '.join(problems)}")
            set_current(root, version)
    except (ValueError, PublishLocked) as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    console.print(f"CURRENT -> {version}")


def _duration(text: str | None, what: str):
    """``90s``, ``30m``, ``12h``, ``7d`` as a timedelta (None passes through)."""
    import re
    from datetime import timedelta

    if text is None:
        return None
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd])\s*", text)
    if not m:
        raise typer.BadParameter(f"{text!r}: write a number and a unit, e.g. 90s, 30m, 12h or 7d", param_hint=what)
    unit = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}[m.group(2)]
    return timedelta(**{unit: float(m.group(1))})


@index_app.command("gc")
def index_gc(
    index: IndexPath = None,
    keep: Annotated[
        int | None,
        typer.Option(help="Versions to keep, the current one included (default: keep_versions, MMKG_KEEP_VERSIONS)."),
    ] = None,
    older_than: Annotated[
        str | None, typer.Option(help="Only remove versions older than this (90s, 30m, 12h, 7d).")
    ] = None,
    grace: Annotated[str, typer.Option(help="Keep a version a reader opened within this long.")] = "10m",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would go; remove nothing.")] = False,
    compact: Annotated[
        bool, typer.Option("--compact", help="Compact every LanceDB table first, so all of them are pruned now.")
    ] = False,
) -> None:
    """Remove old published versions (never CURRENT, the newest --keep, or one opened within --grace)."""
    from mmkg.index.gc import collect
    from mmkg.index.lock import PublishLocked

    keep = keep if keep is not None else (_settings().keep_versions or 10**9)
    try:
        report = collect(_root(index), keep=keep, older_than=_duration(older_than, "--older-than"),
                         grace=_duration(grace, "--grace"), dry_run=dry_run, compact=compact)  # fmt: skip
    except (FileNotFoundError, ValueError, PublishLocked) as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    verb = "would remove" if dry_run else "removed"
    for v in report.removed:
        console.print(f"{verb} {v}")
    for v, why in report.kept.items():
        console.print(f"[dim]kept {v}: {why}[/]")
    n_pruned = report.lance_files_removed
    pruned = f" and {n_pruned} LanceDB file(s) no kept version reads" if n_pruned else ""
    console.print(f"{verb} {len(report.removed)} version(s){pruned}, {report.bytes_freed / 2**20:.1f} MiB")


# -- mmkg init, mmkg index build / update / status, mmkg ui ---------------------------------------------

CORPUS_HELP = "Corpus root: one sub-folder per partition (default: $MMKG_CORPUS_ROOT, else corpus_root in ./mmkg.toml)."
DataRootOption = Annotated[Path | None, typer.Option("--data-root", help=DATA_ROOT_HELP, show_default=False)]
CorpusOption = Annotated[Path | None, typer.Option("--corpus", help=CORPUS_HELP, show_default=False)]
Processes = Annotated[int | None, typer.Option("--processes", help="spaCy worker processes for the build.")]


def _roots(corpus: Path | None, data_root: Path | None) -> tuple[Path, Path]:
    """The corpus and data roots by the one rule: flag, then MMKG_* variable, then ./mmkg.toml, then the default."""
    settings = _settings()
    corpus, data_root = corpus or settings.corpus_root, data_root or settings.data_root
    if not corpus.is_dir():
        err_console.print(f"[red]error:[/] corpus root {corpus} is not a folder; pass --corpus, set MMKG_CORPUS_ROOT, "
                      "or run `mmkg init` for a project with corpus/")  # fmt: skip
        raise typer.Exit(2)
    return corpus, data_root


@app.command()
def init(
    folder: Annotated[
        Path, typer.Argument(help="Project folder to create (may exist, if it holds no project).")
    ] = Path("."),
    example: Annotated[bool, typer.Option(help="Copy one sample partition into corpus/.")] = True,
) -> None:
    """Create a project: corpus/ (one sub-folder per partition), a commented mmkg.toml and a .gitignore."""
    from mmkg.project import NEXT_STEPS, init_project

    try:
        written = init_project(folder, example=example)
    except FileExistsError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    for path in written:
        console.print(f"[green]created[/] {path}")
    question = "Which mission did the first woman to command a Space Shuttle lead?"
    print(NEXT_STEPS.format(folder=folder, question=question))  # commands to copy: never wrapped


def _root_env(corpus: Path, data_root: Path) -> dict[str, str]:
    """The roots as the MMKG_* variables the pipelines' resources default to, absolute (what `mmkg ui` passes)."""
    return {"MMKG_CORPUS_ROOT": str(corpus.resolve()), "MMKG_DATA_ROOT": str(data_root.resolve())}


@contextlib.contextmanager
def _environ(env: dict[str, str]) -> Iterator[None]:
    """``env`` in this process's environment for a while, then the variables as they were."""
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _build(corpus: Path, data_root: Path, **kwargs) -> object:
    """Run ``build_index`` under the live display (``mmkg.build_display``); library output goes to a log file.

    The roots are in this process's environment while the pipelines load, as `mmkg ui` hands them to its code
    location: the jobs the build runs then are the very jobs the UI loads (same snapshot), so the UI can
    re-execute the build's runs as they are.
    """
    from mmkg.build_display import build_display

    try:
        with _environ(_root_env(corpus, data_root)), build_display(console, data_root) as display:
            try:
                from pipelines.build import build_index  # Dagster: imported while the display already runs
            except ImportError as exc:
                raise _NoPipelines(str(exc)) from exc
            return build_index(
                corpus, data_root, on_start=display.start, on_progress=display.done, on_event=display.event, **kwargs
            )
    except _NoPipelines as exc:
        err_console.print(f"[red]error:[/] building an index needs the project's Dagster pipelines ({exc})")
        raise typer.Exit(2) from exc
    except (RuntimeError, ValueError, FileNotFoundError) as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(1) from exc


class _NoPipelines(Exception):
    pass


def _build_summary(report, data_root: Path) -> None:
    import polars as pl

    if report.reused:
        console.print(f"[green]up to date[/]: index {report.index_version} covers the corpus as it is; "
                      "nothing to build (--force builds anyway)")  # fmt: skip
        return
    t = Table(show_header=False, title=f"index {report.index_version}")
    t.add_row("partitions built", f"{len(report.partitions)}" + (f" (up to date: {len(report.skipped)})"
                                                                if report.skipped else ""))  # fmt: skip
    t.add_row("documents / pages / chunks", f"{report.documents:,} / {report.pages:,} / {report.chunks:,}")
    t.add_row("time", f"{_clock(report.wall_s)} (publish {_clock(report.publish_s)}), peak memory "
                      f"{report.peak_bytes / 2**30:.1f} GiB")  # fmt: skip
    files = [data_root / "tables" / "rejected_files" / f"{k}.parquet" for k in report.partitions]
    files = [f for f in files if f.exists()]
    if files:
        rejected = pl.concat([pl.read_parquet(f) for f in files], how="diagonal_relaxed")
        if rejected.height:
            by = dict(rejected.group_by("stage").len().iter_rows())
            t.add_row("rejected or cut", ", ".join(f"{n} {stage}" for stage, n in sorted(by.items())) +
                      "  (mmkg sql \"SELECT * FROM rejected_files\")")  # fmt: skip
    console.print(t)


@index_app.command("build")
def index_build(
    corpus: CorpusOption = None,
    data_root: DataRootOption = None,
    partition: Annotated[
        list[str] | None, typer.Option("--partition", "-p", help="Only these partitions (repeat the flag).")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Build even when the index matches the corpus.")] = False,
    cold: Annotated[bool, typer.Option("--cold", help="Clear the parse, vector and OCR caches first.")] = False,
    processes: Processes = None,
) -> None:
    """Index every partition of the corpus through the Dagster jobs (in this process) and publish a version.

    The runs land in the data root's Dagster instance, so `mmkg ui` shows them afterwards.
    """
    corpus, data_root = _roots(corpus, data_root)
    missing = sorted(set(partition or []) - {p.name for p in corpus.iterdir() if p.is_dir()})
    if missing:
        err_console.print(f"[red]error:[/] no partition folder {', '.join(missing)} under {corpus}")
        raise typer.Exit(2)
    console.print(f"Indexing [bold]{corpus}[/] into [bold]{data_root}[/]")
    report = _build(corpus, data_root, partitions=partition or None, reuse=not (force or cold), cold=cold,
                    processes=processes)  # fmt: skip
    _build_summary(report, data_root)


@index_app.command("update")
def index_update(corpus: CorpusOption = None, data_root: DataRootOption = None, processes: Processes = None) -> None:
    """Re-index only the partitions that changed (or are new, or whose last run failed), then publish."""
    corpus, data_root = _roots(corpus, data_root)
    report = _build(corpus, data_root, stale_only=True, processes=processes)
    for key, why in report.stale.items():
        console.print(f"  {key}: {why}")
    _build_summary(report, data_root)


@index_app.command("status")
def index_status(corpus: CorpusOption = None, data_root: DataRootOption = None,
                 as_json: Annotated[bool, typer.Option("--json")] = False) -> None:  # fmt: skip
    """Each partition's fingerprint and whether it is indexed, changed or new; the published version."""
    corpus, data_root = _roots(corpus, data_root)
    try:
        from pipelines.status import index_status as status_of
    except ImportError as exc:
        err_console.print(f"[red]error:[/] index status reads the Dagster instance; the project's pipelines are "
                      f"missing ({exc})")  # fmt: skip
        raise typer.Exit(2) from exc
    status = status_of(corpus, data_root)
    if as_json:
        print(json.dumps(status, indent=2, default=str))
        return
    t = Table(title=f"{corpus} -> {data_root}")
    for col in ("partition", "fingerprint", "state", "last ingest", "in the index"):
        t.add_column(col)
    colour = {"indexed": "green", "changed": "yellow", "never indexed": "yellow", "incomplete": "red",
              "removed": "red"}  # fmt: skip
    for row in status["partitions"]:
        state = row["state"]
        t.add_row(row["partition"], row["fingerprint"][:12], f"[{colour.get(state, 'white')}]{state}[/]",
                  row["last_ingest"] or "", "yes" if row["published"] else "no")  # fmt: skip
    console.print(t)
    pub = status["published"]
    console.print(f"published: {pub['version']} at {pub['created_at']}" if pub else "published: nothing yet")
    console.print(status["advice"])


@app.command()
def ui(
    port: Annotated[int, typer.Option("--port", "-p", min=1, max=65535, help="Port of the web server.")] = 3000,
    host: Annotated[
        str, typer.Option("--host", help="Address to listen on (0.0.0.0: every interface; the UI has no login).")
    ] = "127.0.0.1",
    corpus: CorpusOption = None,
    data_root: DataRootOption = None,
) -> None:
    """Open the Dagster UI (dagster dev) on this project: the runs `mmkg index build` and `update` made.

    It loads the installed pipelines.definitions on the data root's Dagster home, where the CLI's builds write.
    Its daemon runs the sensors and schedules switched on. Ctrl-C stops it.
    """
    import socket

    corpus, data_root = _roots(corpus, data_root)
    try:
        from pipelines.build import CODE_LOCATION, dagster_home
    except ImportError as exc:
        err_console.print(f"[red]error:[/] the Dagster UI needs the project's Dagster pipelines ({exc})")
        raise typer.Exit(2) from exc
    with socket.socket() as s:  # one line now rather than dagster dev's traceback later
        try:
            s.bind((host, port))
        except OSError as exc:
            err_console.print(f"[red]error:[/] cannot listen on {host}:{port} ({exc.strerror}); pass --port")
            raise typer.Exit(2) from exc
    home = dagster_home(data_root)
    env = {**os.environ, "DAGSTER_HOME": str(home), **_root_env(corpus, data_root)}
    for offline in ("HF_HUB_OFFLINE", "YOLO_OFFLINE"):  # runs read local models, as scripts/ui.sh had them
        env.setdefault(offline, "1")
    # -d: this folder, so an `mmkg init` project loads the installed pipelines (the checkout's own, there)
    # the module's name is the location's: the one the CLI's runs name (pipelines.build.code_location_origin)
    cmd = [sys.executable, "-m", "dagster", "dev", "-m", CODE_LOCATION, "-d", str(Path.cwd()),
           "-h", host, "-p", str(port)]  # fmt: skip
    console.print(f"Dagster UI on [bold]http://{host}:{port}[/] (DAGSTER_HOME={home}); Ctrl-C stops it")
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, cmd, env)  # dagster dev takes this process: Ctrl-C and signals reach it


# -- mmkg sql, mmkg graph export -----------------------------------------------------------------------

graph_app = typer.Typer(help="Export the published graph.", no_args_is_help=True)
FORMAT_HELP = "graphml (Gephi, igraph, NetworkX), json (node-link), parquet (nodes and edges tables)"
app.add_typer(graph_app, name="graph")


@app.command()
def sql(
    statement: Annotated[str, typer.Argument(help="A DuckDB SQL statement over the data root's tables.")],
    data_root: Annotated[Path | None, typer.Option("--data-root", help=DATA_ROOT_HELP)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Rows as JSON lines.")] = False,
    max_rows: Annotated[int, typer.Option("--max-rows", min=1, help="Rows shown in the table view.")] = 50,
) -> None:
    """SQL over every table: one view per table (all partitions), the current index version as schema idx.

    Examples: SELECT partition, count(*) FROM chunks GROUP BY partition;
    SELECT label, count(*) FROM entity_mentions GROUP BY label ORDER BY 2 DESC;
    SELECT image_entity, entity_name, score FROM idx.cross_modal_links WHERE method = 'spectral'.
    """
    import duckdb

    from mmkg.tables import connect

    root = data_root or _settings().data_root
    try:
        rel = connect(root).sql(statement)
    except (FileNotFoundError, duckdb.Error) as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    if rel is None:  # a statement without rows (CREATE, SET, ...)
        return
    columns, rows = rel.columns, rel.fetchall()
    if as_json:
        for row in rows:
            print(json.dumps(dict(zip(columns, row, strict=True)), ensure_ascii=False, default=str))
        return
    t = Table(*columns)
    for row in rows[:max_rows]:
        t.add_row(*(str(v) for v in row))
    console.print(t)
    if len(rows) > max_rows:
        console.print(f"[dim]{len(rows) - max_rows} more rows (--max-rows, or --json for all)[/]")


@graph_app.command("export")
def graph_export(
    out: Annotated[Path, typer.Option("--out", help="File to write (a folder for parquet).")],
    fmt: Annotated[str, typer.Option("--format", help=FORMAT_HELP)] = "graphml",
    index: IndexPath = None,
    version: Annotated[str | None, typer.Option(help="Pin a version (default: current).")] = None,
) -> None:
    """Write the published graph (chunk, picture and entity nodes; weighted undirected edges) for graph tools."""
    from mmkg.graph_export import FORMATS, export
    from mmkg.index import Index

    if fmt not in FORMATS:
        err_console.print(f"[red]error:[/] unknown format {fmt!r}; choose one of {list(FORMATS)}")
        raise typer.Exit(2)
    try:
        idx = Index.open(_root(index), version=version, encoder=False)  # no model: the graph only
    except (FileNotFoundError, ValueError) as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    written = export(idx, fmt, out)
    console.print(f"graph of {idx.version}: {idx.graph.n:,} nodes, {idx.graph.adjacency.nnz // 2:,} edges -> {written}")


# -- mmkg eval ---------------------------------------------------------------------------------------

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
        report = build_index(
            corpus_root, data_root, processes=processes, reuse=reuse, cold=not reuse,
            on_progress=lambda what, s: console.print(f"[green]✓[/] {what} in {s:.1f}s"),
        )  # fmt: skip
        if report.reused:
            console.print(f"[yellow]re-using[/] index {report.index_version}: published from these corpus files")
        build = report.to_dict()
        index = data_root / "index"
    t0 = time.perf_counter()
    idx = _open(index, None)
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
        report = answer_eval.run_answers(idx, dataset, strategy=answer_strategy, on_step=lambda: bar.advance(task))
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
) -> None:
    """2WikiMultihopQA: passage recall@k, perfect retrieval@k and MRR over the whole corpus; answer EM and F1."""
    from mmkg.eval import DatasetError, TwoWiki

    try:
        tw = TwoWiki.load(corpus, questions)
    except DatasetError as exc:
        raise _dataset_error(exc) from exc
    _evaluate(tw.dataset, lambda root: tw.write_corpus(root, partitions), "twowiki", data_root, index, methods, k,
              out, limit, depth, processes, reuse, answers=answers, answer_strategy=answer_strategy)  # fmt: skip


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
) -> None:
    """MMLongBench-Doc: page recall@k within each question's document and across the corpus, by evidence source;
    answer accuracy and F1 by the benchmark's rules."""
    from mmkg.eval import DatasetError, MMLongBench

    try:
        mb = MMLongBench.load(documents, questions)
    except DatasetError as exc:
        raise _dataset_error(exc) from exc
    _evaluate(mb.dataset, mb.write_corpus, "mmlongbench", data_root, index, methods, k, out, limit, depth, processes,
              reuse, answers=answers, answer_strategy=answer_strategy)  # fmt: skip


@eval_app.command("sample")
def eval_sample(
    corpus: Annotated[Path, typer.Option(help="Corpus root.")] = Path("sample_corpus"),
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
) -> None:
    """The bundled sample corpus and its hand-written questions: the quick smoke evaluation."""
    from mmkg.eval import DatasetError, load_sample

    try:
        ds = load_sample(questions or corpus / "questions.json")
    except DatasetError as exc:
        raise _dataset_error(exc) from exc
    _evaluate(ds, None, "sample", data_root, index, methods, k, out, limit, depth, processes, reuse, corpus_root=corpus,
              answers=answers, answer_strategy=answer_strategy)  # fmt: skip


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


if __name__ == "__main__":
    app()
