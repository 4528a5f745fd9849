"""What every command group shares: the ``app`` and its groups, the consoles, the roots, opening an index."""

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
from rich.text import Text
from typer.core import TyperGroup

from mmkg.quiet import quiet_native_logs
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


def _in_order(names: list[str], order: list[str]) -> list[str]:
    """``names`` in ``order``; any it does not list after them, alphabetically."""
    return sorted(names, key=lambda n: (order.index(n) if n in order else len(order), n))


#: `mmkg --help` in the order of a first hour (make an index, ask it, share it, measure it), grouped under headings
COMMAND_PANELS = {
    "init": "Make an index", "index": "Make an index", "ui": "Make an index",
    "query": "Ask it", "ask": "Ask it", "strategies": "Ask it",
    "serve": "Share it", "sql": "Share it", "graph": "Share it", "deploy": "Share it",
    "eval": "Measure it",
}  # fmt: skip


class _Commands(_OneLineErrors):
    """The command group: its commands listed in ``COMMAND_PANELS``' order, under its headings (they came in the
    order the command modules happened to be imported)."""

    def list_commands(self, ctx: Any) -> list[str]:
        names = super().list_commands(ctx)
        for name in names:
            command = self.commands.get(name)
            if command is not None and name in COMMAND_PANELS:
                command.rich_help_panel = COMMAND_PANELS[name]  # type: ignore[attr-defined]
        return _in_order(names, list(COMMAND_PANELS))


app = typer.Typer(help="Build, query and operate mmkg indexes.", no_args_is_help=True, add_completion=False,
                  cls=_Commands)  # fmt: skip
class _IndexCommands(TyperGroup):
    """`mmkg index --help` in the order a user needs them: make, check, inspect, repair, clean."""

    ORDER = ("build", "update", "status", "info", "versions", "verify", "rollback", "gc")

    def list_commands(self, ctx: Any) -> list[str]:
        return _in_order(super().list_commands(ctx), list(self.ORDER))


index_app = typer.Typer(help="Build, update and inspect an index: build, update, status, info, versions, verify, "
                        "rollback, gc.", no_args_is_help=True, cls=_IndexCommands)  # fmt: skip
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
    # a command line wants its own output only: no progress bars of model loading, no LanceDB table-creation notes
    quiet_native_logs()


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


def current_settings():
    """The settings in effect; a bad ./mmkg.toml or MMKG_* value ends the command with one line, exit 2."""
    try:
        return get_settings()
    except ValueError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc


def index_root(index: Path | None) -> Path:
    return index or current_settings().data_root / "index"


def check_index(index: Path | None) -> None:
    """A missing or broken index ends the command with one line before anything heavy is imported."""
    from mmkg.index.manifest import current_version

    try:
        current_version(index_root(index))
    except (FileNotFoundError, ValueError) as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc


def open_index(index: Path | None, version: str | None, encoder: bool = True):
    """The index (``encoder=False``: without loading the text/image model, for commands that read only tables)."""
    from mmkg.index import Index

    try:
        return Index.open(index_root(index), version=version, encoder=None if encoder else False)
    except (FileNotFoundError, ValueError) as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc


def parse_params(pairs: list[str] | None) -> dict[str, str]:
    """``["k=v", ...]`` -> ``{"k": "v"}``; values stay strings and each strategy converts them to its types."""
    out = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--param {pair!r}: write it as NAME=VALUE (mmkg strategies lists the names)")
        out[key.strip()] = value.strip()
    return out


CORPUS_HELP = "Corpus root: one sub-folder per partition (default: $MMKG_CORPUS_ROOT, else corpus_root in ./mmkg.toml)."
DataRootOption = Annotated[Path | None, typer.Option("--data-root", help=DATA_ROOT_HELP, show_default=False)]
CorpusOption = Annotated[Path | None, typer.Option("--corpus", help=CORPUS_HELP, show_default=False)]
Processes = Annotated[int | None, typer.Option("--processes", help="spaCy worker processes for the build.")]


def roots(corpus: Path | None, data_root: Path | None) -> tuple[Path, Path]:
    """The corpus and data roots by the one rule: flag, then MMKG_* variable, then ./mmkg.toml, then the default."""
    settings = current_settings()
    corpus, data_root = corpus or settings.corpus_root, data_root or settings.data_root
    if not corpus.is_dir():
        err_console.print(f"[red]error:[/] corpus root {corpus} is not a folder; pass --corpus, set MMKG_CORPUS_ROOT, "
                      "or run `mmkg init` for a project with corpus/")  # fmt: skip
        raise typer.Exit(2)
    return corpus, data_root


def root_env(corpus: Path, data_root: Path) -> dict[str, str]:
    """The roots as the MMKG_* variables the pipelines' resources default to, absolute (what `mmkg ui` passes)."""
    return {"MMKG_CORPUS_ROOT": str(corpus.resolve()), "MMKG_DATA_ROOT": str(data_root.resolve())}


@contextlib.contextmanager
def environ(env: dict[str, str]) -> Iterator[None]:
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
