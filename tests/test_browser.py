"""Browser check of the Dagster UI: the webserver serves this project's asset graph, and it renders in Chromium.

Starts ``dagster-webserver`` on localhost against a fresh instance (one partition's ingest materialized, so the
UI has real state to read), drives Debian's headless Chromium with Playwright, and saves a screenshot to
``test-artifacts/ui-asset-graph.png``. Also runnable as a script to capture ``docs/ui-asset-graph.png`` from an
existing instance (see ``main``).
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import http_ok, stop_process_group, wait_until_up

PROJECT = Path(__file__).resolve().parent.parent
SAMPLE_CORPUS = PROJECT / "sample_corpus"
CHROMIUM = Path(os.environ.get("MMKG_CHROMIUM", "/usr/bin/chromium"))
ARTIFACTS = PROJECT / "test-artifacts"
# asset nodes from every group: ingest, text, vision, embeddings, graph (global), index (global), generation
ASSETS = ("documents", "chunks", "entities", "objects", "chunk_vectors", "graph", "retrieval_index", "answers")
GROUPS = ("ingest", "text", "vision", "embeddings", "graph", "index", "generation")  # the lineage, collapsed
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--disable-quic",
]  # fmt: skip

pytestmark = pytest.mark.browser


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_webserver(home: Path, data_root: Path, log: Path, timeout: float = 240) -> tuple[subprocess.Popen, str]:
    """``dagster-webserver`` for this project's workspace on a free localhost port; returns once it answers."""
    port = _free_port()
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "MMKG_DATA_ROOT": str(data_root),
        "MMKG_CORPUS_ROOT": os.environ.get("MMKG_CORPUS_ROOT", str(SAMPLE_CORPUS)),
        "HF_HUB_OFFLINE": "1",
        "YOLO_OFFLINE": "1",
    }
    exe = Path(sys.executable).parent / "dagster-webserver"
    cmd = [str(exe), "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=PROJECT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    wait_until_up(proc, lambda: http_ok(f"{url}/server_info", timeout=5), f"dagster-webserver at {url}", log,
                  timeout=timeout, interval=1)  # fmt: skip
    return proc, url


def capture_asset_graph(
    url: str, out: Path, names: tuple[str, ...] = ASSETS, size: tuple[int, int] = (1800, 2400), zoom_out: int = 3,
    groups_out: Path | None = None,
) -> list[str]:
    """Open the global asset lineage with every group expanded, wait for the asset nodes, save a screenshot.

    ``groups_out``: first a screenshot of the lineage as it opens, groups collapsed, at the default zoom (the
    pipeline's flow from group to group). The expanded graph only renders nodes inside the viewport, so it is
    zoomed out until the whole pipeline fits. Returns the names found as graph nodes.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    out.parent.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": size[0], "height": size[1]})
            page.goto(f"{url}/asset-groups", timeout=120_000)
            page.get_by_text("Global asset lineage").first.wait_for(timeout=120_000)
            skip = page.get_by_role("button", name="Skip")  # first-visit "join the community" dialog
            try:
                skip.wait_for(timeout=5_000)
                skip.click()
            except PlaywrightTimeout:  # the dialog is shown once per instance; absent is fine
                pass
            graph = page.locator("foreignObject")  # graph nodes are HTML inside the SVG; the sidebar is not
            graph.get_by_text("ingest", exact=True).first.wait_for(timeout=60_000)  # collapsed group boxes
            if groups_out is not None:
                for group in GROUPS:
                    graph.get_by_text(group, exact=True).first.wait_for(state="visible", timeout=60_000)
                page.wait_for_timeout(1_000)
                page.screenshot(path=str(groups_out))
            page.locator("body").click(position={"x": size[0] - 300, "y": size[1] - 150})
            page.keyboard.press("Alt+e")  # "Expand all groups"
            # expanded, the pipeline no longer fits the viewport (only visible nodes render): zoom out first
            graph.get_by_text("chunk_vectors", exact=True).first.wait_for(state="attached", timeout=60_000)
            page.wait_for_timeout(1_000)
            for _ in range(zoom_out):
                page.locator("button:has([aria-label=zoom_out])").click()
                page.wait_for_timeout(300)
            try:
                for name in names:
                    graph.get_by_text(name, exact=True).first.wait_for(state="visible", timeout=60_000)
            except PlaywrightTimeout:
                page.screenshot(path=str(out.with_name(out.stem + "-failed.png")))
                raise
            page.wait_for_timeout(1_500)  # let the zoom animation settle before the picture
            page.screenshot(path=str(out))
            return [n for n in names if graph.get_by_text(n, exact=True).count()]
        finally:
            browser.close()


def _ready() -> None:
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} not found: install Debian's chromium package (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")


@pytest.fixture(scope="module")
def webserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    _ready()
    from dagster import DagsterInstance, materialize

    from assets import ingest
    from mmkg.ingest import list_partitions
    from pipelines.resources import default_resources

    base = tmp_path_factory.mktemp("ui")
    home, data = base / "dagster_home", base / "data"
    home.mkdir()
    (home / "dagster.yaml").touch()
    with DagsterInstance.local_temp(str(home)) as instance:
        instance.add_dynamic_partitions("corpus", list_partitions(SAMPLE_CORPUS))
        result = materialize(
            [ingest.ingest],
            partition_key="space",
            instance=instance,
            resources=default_resources(SAMPLE_CORPUS, data),
            run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}},
        )
        assert result.success
    proc, url = start_webserver(home, data, base / "webserver.log")
    try:
        yield url, data
    finally:
        stop_process_group(proc)


def test_asset_graph_renders(webserver):
    url, _ = webserver
    out, groups = ARTIFACTS / "ui-asset-graph.png", ARTIFACTS / "ui-asset-groups.png"
    out.unlink(missing_ok=True)
    groups.unlink(missing_ok=True)
    seen = capture_asset_graph(url, out, groups_out=groups)
    assert seen == list(ASSETS)
    assert out.stat().st_size > 20_000 and groups.stat().st_size > 20_000  # rendered pages, not blank ones


def test_asset_page_reads_the_instance(webserver):
    """The documents page shows the one partition materialized before the server started, of three."""
    _ready()
    from playwright.sync_api import sync_playwright

    url, data = webserver
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"{url}/assets/documents?view=partitions", timeout=120_000)
            page.get_by_text("Materialized (1)").first.wait_for(timeout=120_000)
            body = page.inner_text("body")
            page.screenshot(path=str(ARTIFACTS / "ui-documents-partitions.png"))
        finally:
            browser.close()
    assert "Missing (2)" in body and "Failed (0)" in body
    assert all(key in body for key in ("computing_history", "nature_and_objects", "space"))
    assert (data / "tables" / "documents" / "space.parquet").exists()


def main() -> None:
    """Capture the asset graph of an existing instance, e.g. after ``python -m pipelines.demo``, for the README."""
    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--dagster-home", type=Path, required=True)
    ap.add_argument("--data-root", type=Path, required=True)
    ap.add_argument("--out", type=Path, default=PROJECT / "docs" / "ui-asset-graph.png")
    ap.add_argument("--groups-out", type=Path, default=PROJECT / "docs" / "ui-asset-groups.png")
    args = ap.parse_args()
    proc, url = start_webserver(args.dagster_home.resolve(), args.data_root.resolve(), Path("/tmp/mmkg-webserver.log"))
    try:
        print(capture_asset_graph(url, args.out, groups_out=args.groups_out), "->", args.out, args.groups_out)
    finally:
        stop_process_group(proc)


if __name__ == "__main__":
    main()
