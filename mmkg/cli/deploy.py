"""``mmkg deploy up / status / down``: a project's production topology (``pipelines.deploy``) from the CLI."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.table import Table

from mmkg.cli.common import CorpusOption, DataRootOption, app, console, err_console, roots

deploy_app = typer.Typer(
    help="Run the production topology: a code server, dagster-daemon with the sensors on, the Dagster UI and "
    "mmkg serve, as separate processes.",
    no_args_is_help=True,
)
app.add_typer(deploy_app, name="deploy")


def _pipelines():
    try:
        import pipelines.deploy as deploy
    except ImportError as exc:
        err_console.print(f"[red]error:[/] deploying needs the project's Dagster pipelines ({exc})")
        raise typer.Exit(2) from exc
    return deploy


@deploy_app.command("up")
def deploy_up(
    corpus: CorpusOption = None,
    data_root: DataRootOption = None,
    host: Annotated[str, typer.Option("--host", help="Address every process listens on.")] = "127.0.0.1",
    ui_port: Annotated[int, typer.Option("--ui-port", min=1, max=65535, help="The Dagster UI's port.")] = 3000,
    serve_port: Annotated[int, typer.Option("--serve-port", min=1, max=65535, help="mmkg serve's port.")] = 8000,
    sensor_interval: Annotated[
        int, typer.Option("--sensor-interval", min=5, help="Seconds between the corpus sensor's looks at the corpus.")
    ] = 30,
    timeout: Annotated[
        float, typer.Option("--timeout", min=10, help="Seconds to wait for everything to answer.")
    ] = 300,
) -> None:
    """Start the four processes in the background (logs under <data root>/logs/deploy-*.log) and return once each
    one answers; a corpus change is then re-indexed, published and served by itself."""
    corpus, data_root = roots(corpus, data_root)
    deploy = _pipelines()
    try:
        state = deploy.up(corpus, data_root, host=host, webserver_port=ui_port, serve_port=serve_port,
                          sensor_interval_s=sensor_interval, timeout_s=timeout, say=console.print)  # fmt: skip
    except deploy.DeployError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    console.print(f"deployed ({state['storage']} instance in {state['home']}); `mmkg deploy status` shows it, "
                  "`mmkg deploy down` stops it")  # fmt: skip


@deploy_app.command("status")
def deploy_status(data_root: DataRootOption = None, as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Each process (running or not, its address and log), the daemon's last heartbeat and each sensor's last tick."""
    from mmkg.cli.common import current_settings

    deploy = _pipelines()
    try:
        st = deploy.status(data_root or current_settings().data_root)
    except deploy.DeployError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    if as_json:
        print(json.dumps(st, indent=2, default=str))
        return
    t = Table(title=f"deployment of {st['data_root']} ({st['storage']}, since {st['started_at']})")
    for col in ("process", "state", "pid", "address", "log"):
        t.add_column(col)
    for name, p in st["processes"].items():
        t.add_row(name, "[green]running[/]" if p["alive"] else "[red]stopped[/]", str(p["pid"]), p["url"], p["log"])
    console.print(t)
    console.print(f"daemon heartbeat: {st['daemon_heartbeat'] or 'none yet'}")
    for tick in st["sensor_ticks"]:
        said = f"{tick['runs']} run(s) requested" if tick["runs"] else (tick["skip"] or tick["status"].lower())
        console.print(f"sensor {tick['sensor']}: last tick {tick['at']}, {said}")


@deploy_app.command("down")
def deploy_down(
    data_root: DataRootOption = None,
    timeout: Annotated[float, typer.Option("--timeout", min=1, help="Seconds before what is left is killed.")] = 7,
) -> None:
    """Stop every process `mmkg deploy up` started (SIGTERM, then SIGKILL after --timeout seconds): within 10 s."""
    from mmkg.cli.common import current_settings

    deploy = _pipelines()
    try:
        deploy.down(data_root or current_settings().data_root, timeout_s=timeout, say=console.print)
    except deploy.DeployError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
