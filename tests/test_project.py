"""A project from the command line, as a new user runs it: init, build, an edit, status, update, query, sql, export.

Every command is the installed ``mmkg`` executable in a subprocess, run from the project folder with no
flags, so the data-root rule (flag, then MMKG_DATA_ROOT, then ./mmkg.toml, then ./.mmkg) is what finds
the corpus and the index.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

MMKG = str(Path(sys.executable).parent / "mmkg")


def run(cwd: Path, *args: str, env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("MMKG_")}
    proc = subprocess.run([MMKG, *args], cwd=cwd, env={**base, **(env or {})}, capture_output=True, text=True,
                          timeout=900)  # fmt: skip
    if check:
        assert proc.returncode == 0, f"mmkg {' '.join(args)}: {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stdout + proc.stderr
    return proc


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("proj") / "kb"
    out = run(folder.parent, "init", "kb")
    assert "mmkg index build" in out.stdout
    return folder


def test_init_writes_a_project_and_refuses_to_overwrite_it(project: Path):
    config = (project / "mmkg.toml").read_text(encoding="utf-8")
    assert 'corpus_root = "corpus"' in config and 'data_root = ".mmkg"' in config
    assert "# max_sentence_chars = 5000" in config  # every other setting: commented, with its default
    assert (project / "corpus" / "space").is_dir() and ".mmkg/" in (project / ".gitignore").read_text()
    again = run(project.parent, "init", "kb", check=False)
    assert again.returncode == 2 and "already an mmkg project" in again.stderr and not again.stdout


def test_build_edit_status_update_query_sql_export(project: Path):
    status = json.loads(run(project, "index", "status", "--json").stdout)
    assert [r["state"] for r in status["partitions"]] == ["never indexed"]
    assert not (project / ".mmkg").exists()  # reading the status creates nothing

    build = run(project, "index", "build")
    assert "partition space" in build.stdout and "published" in build.stdout
    assert "loading the pipelines" in build.stdout  # the time shown is the command's, not only the runs'
    assert (project / ".mmkg" / "index" / "CURRENT").exists()  # ./.mmkg of the project, from mmkg.toml
    instance_config = (project / ".mmkg" / "dagster_home" / "dagster.yaml").read_text(encoding="utf-8")
    assert "default_limit: 1" in instance_config  # the shipped config: one gpu-pool step at a time ...
    assert "run_monitoring:\n  enabled: true" in instance_config  # ... and dead runs marked failed
    assert "up to date" in run(project, "index", "build").stdout  # nothing changed: nothing rebuilt
    from dagster import DagsterInstance

    with DagsterInstance.from_ref(_instance_ref(project)) as instance:
        runs = [record.dagster_run for record in instance.get_run_records()]
        # runs the UI or a sensor queue go one per partition at a time (its re-executions of these runs too)
        limits = instance.get_concurrency_config().run_queue_config.tag_concurrency_limits
    assert {"key": "dagster/partition", "value": {"applyLimitPerUniqueValue": True}, "limit": 1} in limits
    assert sorted(r.job_name for r in runs) == ["index_partition", "publish_index"]
    # each run says why it ran and what started it (the UI said only "Manually launched")
    assert {(r.tags.get("mmkg/trigger"), r.tags.get("mmkg/command")) for r in runs} == {("build", "mmkg index build")}
    assert [r.tags.get("dagster/partition") for r in runs if r.job_name == "index_partition"] == ["space"]
    for made in runs:  # runs of the code location `mmkg ui` loads, so its job pages and timeline list them
        origin = made.remote_job_origin
        assert (origin.location_name, origin.repository_origin.repository_name) == ("pipelines.definitions",
                                                                                    "__repository__")  # fmt: skip
        assert origin.job_name == made.job_name
        assert made.job_code_origin.repository_origin.code_pointer.module == "pipelines.definitions"

    # a new partition and an edit to the old one: status names both, update runs exactly those
    (project / "corpus" / "notes").mkdir()
    (project / "corpus" / "notes" / "bridge.md").write_text(
        "# Tower Bridge\n\nTower Bridge crosses the River Thames in London. It opened in 1894.\n", encoding="utf-8"
    )
    status = json.loads(run(project, "index", "status", "--json").stdout)
    assert {r["partition"]: r["state"] for r in status["partitions"]} == {"notes": "never indexed", "space": "indexed"}
    hubble = project / "corpus" / "space" / "hubble_space_telescope.md"
    hubble.write_text(hubble.read_text(encoding="utf-8") + "\n\nThe telescope was named after Edwin Hubble.\n")
    status = json.loads(run(project, "index", "status", "--json").stdout)
    assert {r["partition"]: r["state"] for r in status["partitions"]} == {"notes": "never indexed", "space": "changed"}
    assert "mmkg index update" in status["advice"]

    update = run(project, "index", "update")
    assert "notes: never indexed" in update.stdout and "space: changed" in update.stdout
    status = json.loads(run(project, "index", "status", "--json").stdout)
    assert {r["state"] for r in status["partitions"]} == {"indexed"}
    assert all(r["published"] for r in status["partitions"])
    assert "up to date" in run(project, "index", "update").stdout

    # rolled back to the first build: the status says the served index is older than the corpus, and update
    # publishes the corpus as it is again (before, both said "up to date" and only --force recovered)
    first, newest = [line.strip(" *") for line in run(project, "index", "versions").stdout.splitlines()]
    run(project, "index", "rollback", first)
    status = json.loads(run(project, "index", "status", "--json").stdout)
    assert status["advice"].startswith(f"rolled back: CURRENT is {first}, the newest publish is {newest}"), status
    assert {r["partition"]: r["published"] for r in status["partitions"]} == {"notes": False, "space": False}
    update = run(project, "index", "update")
    assert f"publishing: CURRENT was pointed at {first}" in update.stderr and "nothing to build" not in update.stdout
    status = json.loads(run(project, "index", "status", "--json").stdout)
    assert all(r["published"] for r in status["partitions"]) and status["advice"].startswith("up to date"), status
    assert status["published"]["version"] not in (first, newest)

    query = json.loads(run(project, "query", "Which river does Tower Bridge cross?", "--k", "3", "--json").stdout)
    assert "Thames" in query["chunks"][0]["text"]
    rows = run(project, "sql", "SELECT partition, count(*) AS n FROM documents GROUP BY 1 ORDER BY 1", "--json")
    assert [json.loads(line)["partition"] for line in rows.stdout.splitlines()] == ["notes", "space"]
    run(project, "graph", "export", "--format", "json", "--out", "graph.json")
    graph = json.loads((project / "graph.json").read_text(encoding="utf-8"))
    assert any("Tower Bridge" in str(n) for n in graph["nodes"])

    # the data-root rule: MMKG_DATA_ROOT beats mmkg.toml, --data-root beats both
    other = project / "elsewhere"
    info = run(project, "index", "info", "--json", env={"MMKG_DATA_ROOT": str(other)}, check=False)
    # with --json the error is on standard error and standard output stays empty, for scripts that parse it
    assert info.returncode == 2 and str(other) in info.stderr and info.stdout == ""
    info = run(project, "index", "info", "--json", "--index", str(project / ".mmkg" / "index"),
               env={"MMKG_DATA_ROOT": str(other)})  # fmt: skip
    assert json.loads(info.stdout)["partitions"] == ["notes", "space"]

    # a folder emptied of its files (the folder left behind) is a folder removed: update deletes its dynamic
    # partition (the UI lists it no more, and no empty run heads the assets) and publishes without it
    (project / "corpus" / "notes" / "bridge.md").unlink()
    assert (project / "corpus" / "notes").is_dir()
    status = json.loads(run(project, "index", "status", "--json").stdout)
    assert {r["partition"]: r["state"] for r in status["partitions"]} == {"notes": "removed", "space": "indexed"}
    run(project, "index", "update")
    with DagsterInstance.from_ref(_instance_ref(project)) as instance:
        assert instance.get_dynamic_partitions("corpus") == ["space"]
    assert json.loads(run(project, "index", "info", "--json").stdout)["partitions"] == ["space"]
    status = json.loads(run(project, "index", "status", "--json").stdout)
    assert [(r["partition"], r["state"]) for r in status["partitions"]] == [("space", "indexed")]
    assert "up to date" in run(project, "index", "update").stdout
    # the plain SQL views agree with the index: the removed partition's rows left with it
    rows = run(project, "sql", "SELECT DISTINCT partition FROM documents UNION SELECT DISTINCT partition FROM chunks",
               "--json")  # fmt: skip
    assert [json.loads(line)["partition"] for line in rows.stdout.splitlines()] == ["space"]


def test_status_reads_its_snapshot_until_the_instance_changes(project: Path):
    """`mmkg index status` answers from the snapshot the build left in the instance's home (no Dagster import)
    while Dagster's run and event databases are unchanged, and reads Dagster again once they change."""
    run(project, "index", "build")
    home = project / ".mmkg" / "dagster_home"
    snap = home / "mmkg_status.json"
    assert snap.exists()  # the build leaves it
    fast = json.loads(run(project, "index", "status", "--json").stdout)
    assert {r["state"] for r in fast["partitions"]} == {"indexed"}
    snap.unlink()
    assert json.loads(run(project, "index", "status", "--json").stdout) == fast  # Dagster says the same
    # the snapshot is what is read: a fingerprint doctored in it shows, while the instance is unchanged
    data = json.loads(snap.read_text(encoding="utf-8"))
    data["records"]["recorded"]["space"] = "doctored"
    snap.write_text(json.dumps(data), encoding="utf-8")
    doctored = json.loads(run(project, "index", "status", "--json").stdout)
    assert [r["state"] for r in doctored["partitions"]] == ["changed"]
    # ... and a change to the instance (a run, a materialization, a partition registered from the UI) ends it
    from dagster import DagsterInstance

    with DagsterInstance.from_ref(_instance_ref(project)) as instance:
        instance.add_dynamic_partitions("corpus", ["registered-elsewhere"])
        instance.delete_dynamic_partition("corpus", "registered-elsewhere")
    assert json.loads(run(project, "index", "status", "--json").stdout) == fast
    assert json.loads(snap.read_text(encoding="utf-8"))["signature"] != data["signature"]


@contextlib.contextmanager
def _serving(project: Path) -> Iterator:
    """Plain `mmkg serve` from the project, stopped on exit; no traceback in its log. Yields the test_api ``Server``.

    No --corpus: the project's mmkg.toml names its corpus, so uploads are on and re-index (they were off)."""
    from conftest import free_port, stop_process_group, wait_until_up
    from test_api import Server

    port = free_port()
    log = project.parent / f"serve-{port}.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MMKG_", "DAGSTER_"))}
    with log.open("wb") as out:
        proc = subprocess.Popen([MMKG, "serve", "--port", str(port)], cwd=project, env=env,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    srv = Server(f"http://127.0.0.1:{port}", proc, log)
    try:
        wait_until_up(proc, lambda: srv.call("GET", "/health", timeout=2)[0] == 200, "mmkg serve", log, timeout=120)
        assert "uploads go into corpus; `mmkg index update` re-indexes them" in log.read_text()
        assert srv.json("GET", "/index/reindex")[1]["state"] != "off"
        yield srv
    finally:
        stop_process_group(proc)
    assert "Traceback" not in log.read_text()


def _settled(srv, timeout: float = 300) -> dict:
    """The server's re-index state once no update runs or waits."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = srv.json("GET", "/index/reindex")[1]
        if state["state"] == "idle" and not state["queued"]:
            return state
        time.sleep(1)
    raise AssertionError(f"the update did not finish in {timeout} s: {state}")


def _served(srv, partitions: list[str], timeout: float = 30) -> dict:
    """``GET /index`` once the server serves exactly ``partitions``."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:  # the holder looks for a newer version at most once a second
        info = srv.json("GET", "/index")[1]
        if info["partitions"] == partitions:
            return info
        time.sleep(0.5)
    raise AssertionError(f"never served {partitions}: {info}")


@pytest.mark.slow
def test_an_upload_to_mmkg_serve_is_indexed_and_served(project: Path):
    """`mmkg serve` from the project: an upload starts `mmkg index update` in the server, the new
    version is served once published (a query finds the upload), and deleting the partition's last file removes
    the folder and, after the next update, the partition."""
    from test_api import multipart

    run(project, "index", "build")
    with _serving(project) as srv:
        before = srv.json("GET", "/index")[1]
        idle = srv.json("GET", "/index/reindex")[1]
        assert (idle["state"], idle["runs"], idle["last"]) == ("idle", 0, None)
        text = b"# Ferries\n\nThe ferry Nordlys sails from Tromso to Harstad every morning at seven.\n"
        body, headers = multipart({"partition": "ferries"}, [("files", "ferries.md", text)])
        code, _, raw = srv.call("POST", "/documents", body, headers)
        res = json.loads(raw)
        assert code == 201 and "mmkg index update" in res["picked_up_by"], res
        assert res["reindex"]["runs"] == 1 and res["reindex"]["state"] in ("running", "idle")
        state = _settled(srv)
        assert state["last"]["returncode"] == 0, state["tail"]
        info = _served(srv, ["ferries", "space"])
        assert info["version"] != before["version"]
        hits = srv.json("POST", "/query", {"text": "Which ferry sails from Tromso to Harstad?", "k": 3})[1]
        assert "Nordlys" in hits["chunks"][0]["text"]
        overview = srv.json("GET", "/index/overview")[1]
        assert overview["reindex"]["last"]["returncode"] == 0 and overview["reindex"]["tail"]

        code, res = srv.json("DELETE", "/documents/ferries/ferries.md")
        assert code == 200 and res["removed"]["partition_removed"] is True and res["reindex"]["runs"] == 2
        assert not (project / "corpus" / "ferries").exists()
        assert _settled(srv)["last"]["returncode"] == 0
        _served(srv, ["space"])
    status = json.loads(run(project, "index", "status", "--json").stdout)
    assert [(r["partition"], r["state"]) for r in status["partitions"]] == [("space", "indexed")]
    from dagster import DagsterInstance, RunsFilter

    with DagsterInstance.from_ref(_instance_ref(project)) as instance:  # the server's updates say an upload ran them
        ferries = instance.get_runs(RunsFilter(tags={"dagster/partition": "ferries"}))
    assert ferries and {r.tags.get("mmkg/trigger") for r in ferries} == {"upload"}
    assert "mmkg index update --corpus" in ferries[0].tags["mmkg/command"]


@pytest.mark.slow
@pytest.mark.browser
def test_the_index_view_uploads_and_follows_the_reindex_in_chromium(project: Path, tmp_path: Path):
    """The page's Index view as a user drives it: upload a file into a new partition, watch the re-index run
    and the new version come in (the document listed, the view redrawn by itself), ask about it, then remove
    it again. Screenshots: test-artifacts/web-upload*.png (docs/ keeps copies)."""
    from test_browser import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, _ready

    _ready()
    from playwright.sync_api import sync_playwright

    run(project, "index", "build")
    upload = tmp_path / "lighthouses.md"
    upload.write_text("# Lighthouses\n\nThe lighthouse at Lindesnes was first lit in 1655 and guards the southern "
                      "tip of Norway.\n", encoding="utf-8")  # fmt: skip
    ARTIFACTS.mkdir(exist_ok=True)
    with _serving(project) as srv, sync_playwright() as p:
        before = srv.json("GET", "/index")[1]["version"]
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 1000})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("dialog", lambda d: d.accept())  # the removal asks to confirm
            page.goto(srv.url + "/#index", timeout=60_000)
            page.get_by_text("Add documents").wait_for(timeout=60_000)
            page.fill("#upload-partition", "lighthouses")
            page.set_input_files("#upload-files", str(upload))
            page.click("#upload-form button[type=submit]")
            page.get_by_text("saved lighthouses.md into lighthouses").wait_for(timeout=30_000)
            page.locator("#reindex-note", has_text="re-indexing").wait_for(timeout=30_000)  # follows the update
            page.screenshot(path=str(ARTIFACTS / "web-upload.png"), full_page=True)
            # ... and redraws once the new version is served
            page.locator("#reindex-note", has_text="re-indexed: version").wait_for(timeout=300_000)
            after = srv.json("GET", "/index")[1]
            assert after["version"] != before and after["partitions"] == ["lighthouses", "space"]
            assert after["version"] in page.inner_text("#reindex-note")
            assert after["version"] in page.inner_text("#version")  # the header names the served version too
            assert page.locator('button.remove[data-path="lighthouses/lighthouses.md"]').count() == 1
            assert "lighthouses/lighthouses.md" in page.inner_text("#index-body")
            page.screenshot(path=str(ARTIFACTS / "web-upload-done.png"), full_page=True)
            hits = srv.json("POST", "/query", {"text": "When was the Lindesnes lighthouse first lit?", "k": 3})[1]
            assert "1655" in hits["chunks"][0]["text"]

            # a refused upload says why and starts nothing
            runs = srv.json("GET", "/index/reindex")[1]["runs"]
            page.fill("#upload-partition", "../outside")
            page.set_input_files("#upload-files", str(upload))
            page.click("#upload-form button[type=submit]")
            page.locator("#upload-note.error").wait_for(timeout=30_000)
            assert "outside" in page.inner_text("#upload-note")
            assert srv.json("GET", "/index/reindex")[1]["runs"] == runs

            page.click('button.remove[data-path="lighthouses/lighthouses.md"]')
            page.get_by_text("removed lighthouses/lighthouses.md").wait_for(timeout=30_000)
            page.locator("#reindex-note", has_text="re-indexed: version").wait_for(timeout=300_000)
            assert srv.json("GET", "/index")[1]["partitions"] == ["space"]
            assert "lighthouses/lighthouses.md" not in page.inner_text("#index-body")
            assert not errors, errors
        finally:
            browser.close()


def _graphql(url: str, query: str) -> dict:
    import urllib.request

    req = urllib.request.Request(f"{url}/graphql", data=json.dumps({"query": query}).encode(),
                                 headers={"Content-Type": "application/json"})  # fmt: skip
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())["data"]


@pytest.fixture(scope="module")
def ui(project: Path) -> Iterator[tuple[str, dict[str, str], Path]]:
    """`mmkg ui` started from the built project folder, with no MMKG_/DAGSTER_ variables: (url, the runs the
    CLI made by id with their job, the server's log)."""
    import socket

    from conftest import free_port, http_ok, stop_process_group, wait_until_up
    from dagster import DagsterInstance

    run(project, "index", "build")  # up to date when the test above has built it
    with DagsterInstance.from_ref(_instance_ref(project)) as instance:
        made = {r.run_id: r.job_name for r in instance.get_runs()}
    assert {"index_partition", "publish_index"} <= set(made.values())

    with socket.socket() as busy:  # a port in use: one line, before anything starts
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = run(project, "ui", "--port", str(busy.getsockname()[1]), check=False)
    assert taken.returncode == 2 and "pass --port" in taken.stderr and not taken.stdout

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = project.parent / "ui.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MMKG_", "DAGSTER_"))}
    def as_a_background_job() -> None:  # `mmkg ui &` in a shell: SIGINT ignored, its own process group
        os.setsid()
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    with log.open("wb") as out:
        proc = subprocess.Popen([MMKG, "ui", "--port", str(port)], cwd=project, env=env, stdout=out,
                                stderr=subprocess.STDOUT, preexec_fn=as_a_background_job)  # fmt: skip
    try:
        wait_until_up(proc, lambda: http_ok(f"{url}/server_info"), f"mmkg ui at {url}", log, timeout=180, interval=1)
        yield url, made, log
        # SIGTERM to `mmkg ui` alone stops dagster dev and everything it started (they ignored it: five processes
        # had to be killed one by one)
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
        assert _group_left(proc.pid) == [], "processes left behind"
        said = log.read_text(encoding="utf-8", errors="replace")
        assert "stopped the Dagster UI (SIGTERM)" in said and "SupersessionWarning" not in said
    finally:
        stop_process_group(proc)
    assert proc.returncode is not None


def _group_left(pgid: int, wait_s: float = 10) -> list[str]:
    """The processes still in a process group after up to ``wait_s`` seconds (their command lines)."""
    import time

    from mmkg.processes import cmdline, group_members

    deadline = time.monotonic() + wait_s
    while (left := group_members(pgid)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return [cmdline(pid)[:200] for pid in left]


@pytest.mark.slow
def test_ui_shows_the_runs_the_cli_made(ui: tuple[str, dict[str, str], Path]):
    """`mmkg ui` from a project folder: dagster dev on 127.0.0.1 with the data root's instance, loading the
    installed pipelines (the folder has none of its own), and listing the runs `mmkg index build` made."""
    import time

    url, made, log = ui
    runs = _graphql(url, "{ runsOrError { ... on Runs { results { runId jobName } } } }")["runsOrError"]
    assert {r["runId"]: r["jobName"] for r in runs["results"]} == made
    # the code location is the installed pipelines.definitions, loaded from the project folder
    query = "{ workspaceOrError { ... on Workspace { locationEntries { name loadStatus locationOrLoadError { "
    query += "__typename ... on PythonError { message } } } } } }"
    deadline = time.monotonic() + 180
    while True:
        (entry,) = _graphql(url, query)["workspaceOrError"]["locationEntries"]
        if entry["loadStatus"] == "LOADED" or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert entry["name"] == "pipelines.definitions"
    assert entry["locationOrLoadError"]["__typename"] == "RepositoryLocation", entry["locationOrLoadError"]
    # each job's page lists the CLI's runs of it, and the UI loads the very job index_partition's runs ran
    for job in ("index_partition", "publish_index"):
        query = '{ pipelineOrError(params: {repositoryLocationName: "pipelines.definitions", repositoryName: '
        query += f'"__repository__", pipelineName: "{job}"}}) {{ ... on Pipeline {{ pipelineSnapshotId '
        query += "runs { runId pipelineSnapshotId } } } }"
        pipeline = _graphql(url, query)["pipelineOrError"]
        assert {r["runId"] for r in pipeline["runs"]} == {i for i, name in made.items() if name == job}
        if job == "index_partition":  # publish_index's snapshot varies with the hash seed (docs/dagster.md)
            assert {r["pipelineSnapshotId"] for r in pipeline["runs"]} == {pipeline["pipelineSnapshotId"]}
    assert url in log.read_text()


@pytest.mark.slow
@pytest.mark.browser
def test_the_ui_pages_show_the_cli_runs_in_chromium(ui: tuple[str, dict[str, str], Path]):
    """What a data engineer sees after `mmkg index build` and `mmkg ui`, in Chromium: the build's runs on the
    index_partition job page and on the Overview timeline, and an asset page with one row count and its columns
    described from the declared schemas. Screenshots go to test-artifacts/ (``docs/`` keeps copies)."""
    from test_browser import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, _ready

    _ready()
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    def dismiss(page) -> None:  # the UI's one-time "Join the Dagster community" dialog covers the page
        with contextlib.suppress(PlaywrightTimeout):
            page.get_by_role("button", name="Skip").click(timeout=3_000)

    url, made, _ = ui
    partition_runs = [i for i, job in made.items() if job == "index_partition"]
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            # the job page lists each of the build's index_partition runs (by the first 8 characters of its id)
            page.goto(f"{url}/locations/pipelines.definitions/jobs/index_partition/runs", timeout=120_000)
            page.get_by_text(partition_runs[0][:8]).first.wait_for(timeout=120_000)
            dismiss(page)
            body = page.inner_text("body")
            page.screenshot(path=str(ARTIFACTS / "ui-job-runs.png"))
            assert all(run_id[:8] in body for run_id in partition_runs), body[:2000]
            # the Overview timeline draws the code location's jobs that ran: index_partition among them
            page.goto(f"{url}/overview/activity/timeline", timeout=120_000)
            page.get_by_text("index_partition").first.wait_for(timeout=120_000)
            dismiss(page)
            page.get_by_role("button", name="1hr").click()  # the build's minutes, wide enough to see
            page.wait_for_timeout(1_000)
            # the timeline lists only jobs that ran in its window: the location has more jobs than these
            assert {"index_partition", "publish_index"} <= set(page.inner_text("body").split())
            page.screenshot(path=str(ARTIFACTS / "ui-timeline.png"))
            # an asset page: one row count, the columns described (mmkg.schemas)
            page.goto(f"{url}/assets/chunks", timeout=120_000)
            page.get_by_text("Columns").first.wait_for(timeout=120_000)
            page.get_by_text("chunk_id").first.wait_for(timeout=120_000)
            dismiss(page)
            page.wait_for_timeout(1_000)
            body = page.inner_text("body")
            page.screenshot(path=str(ARTIFACTS / "ui-asset-chunks.png"), full_page=True)
        finally:
            browser.close()
    from mmkg.schemas import DESCRIPTIONS

    shown = [desc for desc in DESCRIPTIONS["chunks"].values() if desc in body]
    assert len(shown) >= 3, body[:3000]  # the Columns tab, from the declared schema
    assert "row_count\n" not in body and "\nrows\n" not in body  # one row count, Dagster's own


def _instance_ref(project: Path):
    from dagster._core.instance.ref import InstanceRef

    return InstanceRef.from_dir(str((project / ".mmkg" / "dagster_home").resolve()))


def _gpu_slots(project: Path) -> list[tuple[str, str]]:
    """(run id, step) of each slot of the gpu pool that a run holds in the project's instance."""
    from dagster import DagsterInstance

    with DagsterInstance.from_ref(_instance_ref(project)) as instance:
        storage = instance.event_log_storage
        if "gpu" not in storage.get_concurrency_keys():
            return []
        return [(s.run_id, s.step_key) for s in storage.get_concurrency_info("gpu").claimed_slots]


def test_a_build_killed_inside_a_gpu_step_does_not_stall_the_next(tmp_path: Path):
    """A build SIGKILLed while its run holds the gpu pool's one slot never gives the slot back itself; the next
    build marks that run failed, gives the slot back and says so, and goes on (it used to wait for the slot
    forever, saying nothing)."""
    import time

    from dagster import DagsterInstance, DagsterRunStatus

    from pipelines.build import dagster_instance

    project = tmp_path / "kb"
    run(tmp_path, "init", "kb")
    with dagster_instance(project / ".mmkg"):  # the instance's storage made before two processes open it
        pass
    env = {k: v for k, v in os.environ.items() if not k.startswith("MMKG_")}
    build = subprocess.Popen([MMKG, "index", "build"], cwd=project, env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while not (held := _gpu_slots(project)):
            assert build.poll() is None and time.monotonic() < deadline, "the build never held the gpu slot"
            time.sleep(0.1)
    finally:
        build.kill()
        build.communicate(timeout=60)
    assert build.returncode == -signal.SIGKILL
    run_id, step = held[0]
    assert _gpu_slots(project) == held  # nobody gave it back
    out = run(project, "index", "build")
    said = " ".join(out.stderr.split())
    assert f"gave back the pool slot(s) gpu ({step}) that run {run_id[:8]} (FAILURE)" in said, said
    assert "published" in out.stdout and _gpu_slots(project) == []
    with DagsterInstance.from_ref(_instance_ref(project)) as instance:
        assert instance.get_run_by_id(run_id).status == DagsterRunStatus.FAILURE


def test_a_build_waiting_for_the_gpu_slot_names_the_run_that_holds_it(tmp_path: Path):
    """A run that is still going (a UI run: no mmkg pid) holds the gpu pool's one slot: the build's gpu step waits,
    and the build says for what (the pool, the run, its partition and step) once, then goes on when the slot
    is given back."""
    import time

    from dagster import DagsterInstance, DagsterRunStatus
    from dagster._core.storage.dagster_run import DagsterRun, make_new_run_id

    from pipelines.build import dagster_instance

    project = tmp_path / "kb"
    run(tmp_path, "init", "kb")
    with dagster_instance(project / ".mmkg"):
        pass
    other = make_new_run_id()
    with DagsterInstance.from_ref(_instance_ref(project)) as instance:
        instance.add_run(DagsterRun(job_name="index_partition", run_id=other, status=DagsterRunStatus.STARTED,
                                    tags={"dagster/partition": "elsewhere"}))  # fmt: skip
        storage = instance.event_log_storage
        storage.initialize_concurrency_limit_to_default("gpu")
        assert storage.claim_concurrency_slot("gpu", other, "embed").is_claimed
    env = {k: v for k, v in os.environ.items() if not k.startswith("MMKG_")}
    build = subprocess.Popen([MMKG, "index", "build"], cwd=project, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while "waits for a slot of pool" not in "".join(p.read_text() for p in project.glob(".mmkg/logs/build-*")):
            assert build.poll() is None and time.monotonic() < deadline, "the build never said it waits"
            time.sleep(0.5)
        time.sleep(2)
        assert build.poll() is None  # still waiting
    finally:
        with DagsterInstance.from_ref(_instance_ref(project)) as instance:
            instance.event_log_storage.free_concurrency_slots_for_run(other)
    out, err = build.communicate(timeout=300)
    assert build.returncode == 0, out + err
    said = " ".join((out + err).split())
    assert said.count("waits for a slot of pool 'gpu'") == 1, said
    assert f"its 1 slot is held by run {other[:8]} (index_partition, partition 'elsewhere', STARTED) in step embed" \
        in said, said
    assert "published" in said


def test_a_build_stopped_by_sigterm_says_interrupted_and_update_goes_on(tmp_path: Path):
    """SIGTERM (what a scheduler or `systemctl stop` sends) in the middle of a step: exit 130 and "interrupted" with
    the step, not a failure with Dagster's exception name; `mmkg index update` then builds and publishes."""
    import time

    project = tmp_path / "kb"
    run(tmp_path, "init", "kb")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MMKG_")}
    build = subprocess.Popen([MMKG, "index", "build"], cwd=project, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 300
    while " ingest started" not in "".join(p.read_text() for p in project.glob(".mmkg/logs/build-*")):
        assert build.poll() is None and time.monotonic() < deadline, "the build never started ingest"
        time.sleep(0.2)
    build.send_signal(signal.SIGTERM)
    out, err = build.communicate(timeout=120)
    said = " ".join((out + err).split())
    assert build.returncode == 130, said
    assert "partition space: interrupted (Ctrl-C or SIGTERM) in step" in said and "Interrupted" not in said, said
    assert "interrupted" in said.split("error:")[0] and "failed" not in said, said  # the step's line too
    assert "Traceback" not in said
    again = run(project, "index", "update")
    assert "published" in again.stdout + again.stderr


def test_a_bad_config_file_is_named(tmp_path: Path):
    (tmp_path / "mmkg.toml").write_text('corpus_rot = "corpus"\n', encoding="utf-8")
    out = run(tmp_path, "index", "status", check=False)
    assert out.returncode == 2 and "corpus_rot" in out.stderr and "corpus_root" in out.stderr


def test_a_build_leaves_a_partition_a_live_run_writes_and_clears_a_dead_ones_run(tmp_path: Path):
    """A run the UI started on a partition (STARTED in the data root's instance) stops a CLI build of that partition
    with the run named and what to do; a run an mmkg process started whose process is gone is marked failed, and
    the build goes on."""
    import socket

    from dagster import DagsterInstance, DagsterRunStatus
    from dagster._core.storage.dagster_run import DagsterRun, make_new_run_id

    project = tmp_path / "kb"
    run(tmp_path, "init", "kb")
    run(project, "index", "build")
    (project / "corpus" / "space" / "note.md").write_text("# Hubble\n\nHubble was launched in 1990.\n")
    run_id = make_new_run_id()
    with DagsterInstance.from_ref(_instance_ref(project)) as instance:
        instance.add_run(DagsterRun(job_name="index_partition", run_id=run_id, status=DagsterRunStatus.STARTED,
                                    tags={"dagster/partition": "space"}))  # fmt: skip
    busy = run(project, "index", "update", check=False)
    assert busy.returncode == 1, busy.stdout + busy.stderr
    said = " ".join(busy.stderr.split())
    assert f"run {run_id[:8]}" in said and "'space'" in said and "Dagster UI" in said and "Terminate" in said, said
    dead_pid = subprocess.Popen(["true"])  # a process that has ended: its pid names no live process
    dead_pid.wait()
    with DagsterInstance.from_ref(_instance_ref(project)) as instance:
        instance.add_run_tags(run_id, {"mmkg/pid": str(dead_pid.pid), "mmkg/host": socket.gethostname()})
    out = run(project, "index", "update")
    assert "published" in out.stdout
    with DagsterInstance.from_ref(_instance_ref(project)) as instance:
        assert instance.get_run_by_id(run_id).status == DagsterRunStatus.FAILURE
        ours = [r.dagster_run for r in instance.get_run_records() if r.dagster_run.run_id != run_id]
    assert ours and all(r.tags.get("mmkg/pid") and r.tags.get("mmkg/host") for r in ours)  # the CLI's runs say whose
    # each claimed its partition (marked starting) before it ran, and went on to succeed
    assert {r.status for r in ours} == {DagsterRunStatus.SUCCESS}
    with DagsterInstance.from_ref(_instance_ref(project)) as instance:
        for r in (r for r in ours if r.job_name == "index_partition"):
            kinds = [e.dagster_event.event_type_value for e in instance.all_logs(r.run_id) if e.dagster_event]
            assert kinds.index("PIPELINE_STARTING") < kinds.index("PIPELINE_START"), (r.job_name, kinds)
    # an instance config its owner edited, without the per-partition run limit, is kept and named at each build
    config = project / ".mmkg" / "dagster_home" / "dagster.yaml"
    text = config.read_text(encoding="utf-8")
    config.write_text(text[: text.index("  runs:")] + text[text.index("run_monitoring:") :], encoding="utf-8")
    (project / "corpus" / "space" / "note.md").write_text("# Hubble\n\nHubble was launched in April 1990.\n")
    edited = run(project, "index", "update")
    assert "note:" in edited.stderr and "concurrency.runs" in edited.stderr, edited.stderr
    assert "tag_concurrency_limits" not in config.read_text(encoding="utf-8")  # the owner's copy, kept
