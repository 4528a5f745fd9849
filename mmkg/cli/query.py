"""``mmkg query``, ``mmkg ask``, ``mmkg serve``, ``mmkg strategies``: reading a published index."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from mmkg.build_display import clock
from mmkg.cli.common import (
    IndexPath,
    app,
    check_index,
    console,
    current_settings,
    err_console,
    index_root,
    open_index,
    parse_params,
)

ChatFormat = Annotated[
    str | None,
    typer.Option("--chat-format", help="llamacpp: the GGUF's prompt format when the file names none (gemma, chatml, "
                                      "llama-3, ...; default: $MMKG_LLM_CHAT_FORMAT, else the file's template)."),
]  # fmt: skip


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
    from mmkg.query import Query, QueryError

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
    try:  # an empty or over-long text is refused here, before retrieval and the index are loaded
        the_query = Query(text=text, image=image, video=video, audio=audio)
    except QueryError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    from mmkg.retrieval import get_strategy, search

    try:
        overrides = parse_params(param)
        get_strategy(strategy, preset, **overrides)  # unknown names fail here, before any model loads
    except ValueError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    check_index(index)  # after the arguments' own checks: a missing picture is named whatever the index
    filters = {key: vals for key, vals in (("doc_id", doc), ("partition", partition)) if vals}
    idx = open_index(index, version)
    known = set(idx.documents["partition"].unique().to_list())
    unknown = sorted(set(partition or []) - known)
    if unknown:
        err_console.print(f"[red]error:[/] no partition {', '.join(map(repr, unknown))} in this index; "
                      f"partitions: {sorted(known)}")  # fmt: skip
        raise typer.Exit(2)
    try:
        result = search(idx, the_query, k=k, strategy=strategy, preset=preset, filters=filters or None,
                        **overrides)  # fmt: skip
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
            where += f" {clock(c.t_start)}–{clock(c.t_end or c.t_start)}"
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
        console.print(f"[magenta]frame[/] {m.source_path} at {clock(m.t_start)} [dim]{m.score:.2f}[/]")


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
        Path | None,
        typer.Option(
            "--corpus",
            help="Corpus root that POST/DELETE /documents write into (default: the project's corpus_root from "
            "./mmkg.toml or MMKG_CORPUS_ROOT, when --index is not given; else uploads are off).",
            show_default=False,
        ),
    ] = None,
    cors_origin: Annotated[
        list[str] | None, typer.Option("--cors-origin", help="Allow browser calls from this origin (repeatable).")
    ] = None,
    workers: Annotated[int, typer.Option("--workers", min=1, max=64, help="Query worker threads.")] = 2,
    answer_workers: Annotated[int, typer.Option("--answer-workers", min=1, max=16, help="Answer worker threads.")] = 1,
    backend: Annotated[
        str | None, typer.Option("--backend", help="A generation backend besides extractive: span-model, openai, ...")
    ] = None,
    model: Annotated[str | None, typer.Option("--model", help="Its model name or local path.")] = None,
    base_url: Annotated[str | None, typer.Option("--base-url", help="Its OpenAI-compatible endpoint.")] = None,
    chat_format: ChatFormat = None,
    reindex: Annotated[
        bool,
        typer.Option(
            help="After an upload or delete, run `mmkg index update` (with --corpus; "
            "--no-reindex leaves it to a Dagster daemon's corpus sensor)."
        ),
    ] = True,
) -> None:
    """Serve the index over HTTP: the REST API (OpenAPI at /docs) and the web page at /."""
    check_index(index)
    if backend and backend != "extractive":
        _check_backend(backend, model)
    import uvicorn

    from mmkg.api import ServeConfig, create_app
    from mmkg.generation import get_generator

    generators = {}
    if backend and backend != "extractive":
        options = _backend_options(backend, base_url=base_url, chat_format=chat_format)
        generators[backend] = lambda: get_generator(backend, model, **options)
    if corpus is None and index is None:  # the project's own index: its corpus takes the uploads
        settings = current_settings()
        if "corpus_root" in settings.model_fields_set and settings.corpus_root.is_dir():
            corpus = settings.corpus_root
    try:
        root = index_root(index)
        # the update publishes into <data root>/index: the served index's parent is its data root
        command = (sys.executable, "-m", "mmkg.cli", "index", "update", "--corpus", str(corpus.resolve()),
                   "--data-root", str(root.resolve().parent), "--trigger", "upload"
                   ) if corpus is not None and reindex else None  # fmt: skip
        cfg = ServeConfig(
            index_root=root, corpus_root=corpus, host=host, api_key=api_key, cors_origins=cors_origin or [],
            query_workers=workers, answer_workers=answer_workers, generators=generators,
            default_backend=backend or "extractive", reindex_command=command,
        )  # fmt: skip
        api = create_app(cfg)
    except (FileNotFoundError, ValueError) as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    import socket

    with socket.socket() as s:  # one line and exit 2 now, before claiming to serve, rather than uvicorn's later
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: a port in TIME_WAIT is free
        try:
            s.bind((host, port))
        except OSError as exc:
            err_console.print(f"[red]error:[/] cannot listen on {host}:{port} ({exc.strerror}); pass --port")
            raise typer.Exit(2) from exc
    console.print(f"serving {cfg.index_root} version {api.state.holder.current().version} on http://{host}:{port}/ "
                  f"(API docs at /docs)")  # fmt: skip
    if corpus is None:
        console.print("uploads are off: --corpus names the corpus root they go into")
    else:
        after = "`mmkg index update` re-indexes them" if reindex else "a Dagster daemon's corpus sensor picks them up"
        console.print(f"uploads go into {corpus}; {after}")
    uvicorn.run(api, host=host, port=port, log_level="info", access_log=False)


def _print_reading(result: Any) -> None:
    """The reader's part of an answer: short answer and confidence, the span in its sentence, the graph path."""
    from rich.text import Text

    reading = result.reading
    if not reading:
        return
    head = Text("\nshort answer: ", style="dim")
    head.append(result.short_answer, style="bold")
    by = f", read by {reading['model']}" if reading.get("model") else ""
    head.append(f"  ({result.answer_type.replace('_', '/')}, confidence {result.confidence:.2f}{by})", style="dim")
    if reading.get("abstained") and reading.get("guess"):
        # a low-confidence answer leads with the sentence a person can check, the guess marked as one
        head.append("\n  best guess, not stated: ", style="dim").append(reading["guess"], style="italic")
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


def _backend_options(backend: str, base_url: str | None = None, timeout: float | None = None,
                     chat_format: str | None = None) -> dict[str, Any]:  # fmt: skip
    """The keyword arguments of ``get_generator`` that the flags give this backend (an unset flag: its default)."""
    if backend == "openai":
        return {k: v for k, v in (("base_url", base_url), ("timeout", timeout)) if v is not None}
    if backend == "llamacpp" and chat_format:
        return {"chat_format": chat_format}
    return {}


def _check_backend(backend: str, model: str | None) -> None:
    """The generation backend's name and model, checked without importing it (get_generator's rules; the
    backends that read rather than write, ``READING_BACKENDS``, are the answer layer's, registered when that
    loads: it loads torch)."""
    from mmkg.llm import GENERATORS, READING_BACKENDS

    if backend not in READING_BACKENDS:
        try:
            GENERATORS.get(backend)  # installed plugins are looked up on a miss
        except ValueError:
            names = sorted({*READING_BACKENDS, *GENERATORS.names()})
            err_console.print(f"[red]error:[/] unknown generation backend {backend!r}; choose one of {names}")
            raise typer.Exit(2) from None
    if backend == "openai" and not (model or os.environ.get("MMKG_LLM_MODEL")):
        err_console.print("[red]error:[/] the openai backend needs a model name: --model NAME or MMKG_LLM_MODEL")
        raise typer.Exit(2)
    if backend in ("llamacpp", "span-model") and not model:
        err_console.print(f"[red]error:[/] the {backend} backend needs --model (a local path)")
        raise typer.Exit(2)


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question.")],
    image: Annotated[Path | None, typer.Option("--image", help="A picture the question is about.")] = None,
    strategy: Annotated[str, typer.Option("--strategy", help="Retrieval strategy, NAME[:PRESET].")] = "mg2",
    param: Annotated[list[str] | None, typer.Option("--param", help="Strategy parameter NAME=VALUE.")] = None,
    backend: Annotated[
        str,
        typer.Option(
            "--backend",
            help="extractive (default, no model), span-model (a local extractive QA "
            "model), openai, llamacpp or transformers.",
        ),
    ] = "extractive",
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="Model name (openai) or local path (llamacpp: .gguf; transformers "
            "and span-model: a save_pretrained folder).",
        ),
    ] = None,
    base_url: Annotated[
        str | None, typer.Option("--base-url", help="OpenAI-compatible endpoint (default: $MMKG_LLM_BASE_URL).")
    ] = None,
    chat_format: ChatFormat = None,
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
    check_index(index)
    from mmkg.generation import GenerationError, answer, answer_stream, get_generator, load_template
    from mmkg.retrieval import get_strategy

    try:
        overrides = parse_params(param)
        get_strategy(strategy, None, **overrides)
        if task is not None:
            load_template(task)
        gen = get_generator(backend, model, **_backend_options(backend, base_url=base_url, timeout=timeout,
                                                               chat_format=chat_format))  # fmt: skip
    except (ValueError, GenerationError) as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    if image is not None and not image.is_file():
        err_console.print(f"[red]error:[/] image {image} not found")
        raise typer.Exit(2)
    idx = open_index(index, None)
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
        # a recording is cited by its time span, as mmkg query and the web page show it; a page by its number
        where = c.source_path + (f" {clock(c.time_span[0])}–{clock(c.time_span[1])}" if c.time_span else
                                 f" p.{c.page}" if c.page else "")  # fmt: skip
        console.print(f"[bold][{c.label}][/] {c.title}  [dim]{where}[/]")
    if result.invalid_citations:
        console.print(f"[yellow]{result.invalid_citations} citation(s) named no evidence shown; dropped[/]")


@app.command()
def strategies(
    name: Annotated[str | None, typer.Argument(help="One strategy: its parameters and each preset's values.")] = None,
    preset: Annotated[
        list[str] | None, typer.Option("--preset", help="Show these presets' values (repeatable; default: the "
                                                        "default preset, or the presets it picks among).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """The retrieval strategies a query can use: one line each; with a NAME, its parameters and presets' values."""
    from mmkg.retrieval import describe

    info = describe()
    if name is not None:
        info = [s for s in info if s["name"] == name]
        if not info:
            err_console.print(f"[red]error:[/] no strategy {name!r}; known: {', '.join(s['name'] for s in describe())}")
            raise typer.Exit(2)
    if as_json:
        print(json.dumps(info, indent=2, default=str))
        return
    if name is None:  # the overview: what each is, in a few lines (the parameters behind `mmkg strategies NAME`)
        for s in info:
            others = ", ".join(p for p in s["presets"] if p != s["default_preset"]) or "no other"
            console.print(f"\n[bold]{s['name']}[/] (default preset {s['default_preset']}; also {others})")
            console.print(f"  {s['summary']}", highlight=False)
            console.print(f"  [dim]{len(s['params'])} parameters: mmkg strategies {s['name']}[/]")
        console.print('\nUse: mmkg query "..." --strategy NAME[:PRESET] --param NAME=VALUE')
        return
    s = info[0]
    shown = preset or s["routes"].get(s["default_preset"]) or [s["default_preset"]]
    if unknown := [p for p in shown if p not in s["presets"]]:
        err_console.print(f"[red]error:[/] {s['name']} has no preset {', '.join(map(repr, unknown))}; presets: "
                          f"{', '.join(s['presets'])}")  # fmt: skip
        raise typer.Exit(2)
    console.print(f"[bold]{s['name']}[/]: {s['summary']}", highlight=False)
    console.print(f"presets: {', '.join(s['presets'])}; default {s['default_preset']}")
    for p, among in s["routes"].items():
        console.print(f"{p} picks {' or '.join(among)} for each query: its values are those of the one it picks")
    t = Table(show_header=True, box=None, padding=(0, 1))
    t.add_column("parameter")
    for p in shown:
        t.add_column(p)
    t.add_column("what it does")
    for param in s["params"]:
        values = [str(param["presets"][p]) for p in shown]
        t.add_row(param["name"], *values, param["doc"])
    console.print(t)
    console.print(f'\nUse: mmkg query "..." --strategy {s["name"]}:PRESET --param NAME=VALUE')
