"""A published index survives races and damage: the publish lock, leftovers of dead publishes, checksums, rollback.

Publishes run in processes of their own (``tests/publish_worker.py``) from the hand-written art corpus's
partition tables, so two can race for real and a lock holder can be SIGKILLed.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ArtCorpus
from publish_worker import killed_then_republished
from typer.testing import CliRunner

from mmkg.cli import app
from mmkg.index import Index
from mmkg.index.integrity import IndexDamaged
from mmkg.index.lock import PublishLocked, publish_lock
from mmkg.index.manifest import CURRENT, current_version, list_versions
from mmkg.retrieval import retrieve
from mmkg.retrieval.smoke import self_check

WORKER = Path(__file__).parent / "publish_worker.py"
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(Path(__file__).resolve().parents[1])}


def _publish(data: Path, root: Path, partitions: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(WORKER), str(data), str(root), partitions],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)  # fmt: skip


def _copy_index(art: ArtCorpus, tmp_path: Path) -> Path:
    root = tmp_path / "index"
    shutil.copytree(art.data / "index", root)
    return root


def _cli(*args: str):
    return CliRunner().invoke(app, list(args))


def test_two_publishes_released_at_once_land_one_after_the_other(art: ArtCorpus, tmp_path: Path):
    root = tmp_path / "index"
    logs = [tmp_path / "a.err", tmp_path / "b.err"]
    with publish_lock(root):  # both start while a third holds the lock, then race for it when it is released
        procs = []
        for log, parts in zip(logs, ("art,other", "art"), strict=True):
            with log.open("w") as err:
                procs.append(subprocess.Popen([sys.executable, str(WORKER), str(art.data), str(root), parts],
                                              stdout=subprocess.PIPE, stderr=err, text=True, env=ENV))  # fmt: skip
        deadline = time.monotonic() + 180
        while not all("waiting for another publish" in log.read_text() for log in logs):
            assert time.monotonic() < deadline and all(p.poll() is None for p in procs), [x.read_text() for x in logs]
            time.sleep(0.2)
    outs = [p.communicate(timeout=300)[0].strip() for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [x.read_text() for x in logs]
    assert sorted(list_versions(root)) == sorted(outs) and current_version(root) in outs
    idx = Index.open(root)  # the last one to publish is current, and whole
    assert retrieve(idx, text="Where was Margit Holm born?", k=1).chunks[0].source_path == "art/margit_holm.md"
    for version in outs:
        out = _cli("index", "verify", "--index", str(root), "--version", version)
        assert out.exit_code == 0 and "all as published" in out.output, out.output


def test_no_wait_fails_at_once_naming_the_holder(tmp_path: Path):
    root = tmp_path / "index"
    with publish_lock(root):
        held = rf"another publish holds .*publish.lock \(pid {os.getpid()} on "
        with pytest.raises(PublishLocked, match=held), publish_lock(root, wait=False):
            pass
        t0 = time.monotonic()
        with pytest.raises(PublishLocked, match=r"waited 0s for the publish lock"), publish_lock(root, timeout=0.3):
            pass
        assert time.monotonic() - t0 < 5
    with publish_lock(root, wait=False):  # released: free again
        pass


def test_a_killed_holder_leaves_no_lock_behind(tmp_path: Path):
    root = tmp_path / "index"
    code = ("import sys, time; from pathlib import Path; from mmkg.index.lock import publish_lock\n"
            "with publish_lock(Path(sys.argv[1])):\n    print('held', flush=True); time.sleep(60)")  # fmt: skip
    holder = subprocess.Popen([sys.executable, "-c", code, str(root)], stdout=subprocess.PIPE, text=True, env=ENV)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    with pytest.raises(PublishLocked, match=rf"pid {holder.pid}"), publish_lock(root, wait=False):
        pass
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=10)
    with publish_lock(root, wait=False):  # the kernel released it with the process
        pass


def test_a_second_build_of_a_data_root_waits_for_the_first(tmp_path: Path):
    from mmkg.index.lock import BuildLocked, build_lock
    from pipelines.build import build_index

    data, corpus = tmp_path / "data", tmp_path / "corpus"
    corpus.mkdir()  # no partition folders: the build fails at once, once it holds the lock
    released, go = tmp_path / "released", tmp_path / "go"
    # the holder lets go only once the second build has said it waits (no sleep to race against)
    code = ("import sys, time; from pathlib import Path; from mmkg.index.lock import build_lock\n"
            "with build_lock(Path(sys.argv[1])):\n    print('held', flush=True)\n"
            "    t0 = time.monotonic()\n"
            "    while not Path(sys.argv[3]).exists() and time.monotonic() - t0 < 120:\n        time.sleep(0.05)\n"
            "    Path(sys.argv[2]).touch()")  # fmt: skip
    holder = subprocess.Popen([sys.executable, "-c", code, str(data), str(released), str(go)],
                              stdout=subprocess.PIPE, text=True, env=ENV)  # fmt: skip
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    with pytest.raises(BuildLocked, match=rf"another build of .*data is running \(pid {holder.pid} on "), \
            build_lock(data, wait=False):  # fmt: skip
        pass
    told: list[str] = []

    def waiting(message: str) -> None:
        told.append(message)
        go.touch()

    with pytest.raises(ValueError, match="has no partition folders"):
        build_index(corpus, data, on_wait=waiting)
    assert released.exists()  # it ran only once the first build was done (it marks that before letting go)
    holder.wait(timeout=30)
    assert len(told) == 1 and f"waiting for another build of {data} to finish (pid {holder.pid}" in told[0]


def test_a_publish_removes_what_dead_publishes_left(art: ArtCorpus, tmp_path: Path):
    root = _copy_index(art, tmp_path)
    partial = root / "versions" / "v20000101T000000000000-deadbeef"
    partial.mkdir()
    (partial / "graph.npz").write_bytes(b"half")
    (root / f".{CURRENT}-x1y2").write_text("v-half")
    p = _publish(art.data, root, "art")
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    assert not partial.exists() and not list(root.glob(f".{CURRENT}-*"))
    assert "removed what an interrupted publish left: versions/v20000101T000000000000-deadbeef, .CURRENT-x1y2" in err
    assert current_version(root) == out.strip()


def test_damage_is_reported_with_the_file_and_the_way_out(art: ArtCorpus, tmp_path: Path):
    root = _copy_index(art, tmp_path)
    version = current_version(root)
    data_file = sorted((root / "lance" / "chunks.lance" / "data").glob("*.lance"))[0]
    raw = bytearray(data_file.read_bytes())
    raw[len(raw) // 2 : len(raw) // 2 + 64] = bytes(b ^ 0xFF for b in raw[len(raw) // 2 : len(raw) // 2 + 64])
    data_file.write_bytes(bytes(raw))  # same size: only the checksum can tell
    Index.open(root, encoder=False)  # the cheap size check passes ...
    with pytest.raises(IndexDamaged, match=f"{data_file.name} is damaged"):  # ... and the full check (serve's) fails
        Index.open(root, encoder=False, verify=True)
    out = _cli("index", "verify", "--index", str(root))
    assert out.exit_code == 2 and f"{data_file.name} is damaged" in out.output.replace("\n", "")
    graph = root / "versions" / version / "graph.npz"
    graph.write_bytes(graph.read_bytes()[:100])  # truncated
    with pytest.raises(ValueError, match=r"graph.npz has 100 bytes, .* when published.*mmkg index rollback"):
        Index.open(root, encoder=False)
    out = _cli("index", "info", "--index", str(root))
    assert out.exit_code == 2 and "graph.npz has 100 bytes" in out.output and "Traceback" not in out.output
    (root / CURRENT).write_text("../../elsewhere/versions/v1\n")  # a path: never followed
    out = _cli("index", "info", "--index", str(root))
    assert out.exit_code == 2 and "is not a version name" in out.output
    (root / CURRENT).write_bytes(b"\xff\xfe\x00junk")
    out = _cli("index", "info", "--index", str(root))
    assert out.exit_code == 2 and "is not a version name" in out.output
    (root / CURRENT).write_text(version + "\n")
    (root / "versions" / version / "manifest.json").write_text('{"format_version": 1, "vers')
    out = _cli("index", "info", "--index", str(root))
    assert out.exit_code == 2 and "manifest.json is damaged (JSONDecodeError" in out.output.replace("\n", "")


def test_rollback_moves_current_back(art: ArtCorpus, tmp_path: Path):
    root = _copy_index(art, tmp_path)
    first = current_version(root)
    p = _publish(art.data, root, "art")
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err and current_version(root) == out.strip() != first
    res = _cli("index", "rollback", first, "--index", str(root))
    assert res.exit_code == 0 and current_version(root) == first
    listed = _cli("index", "versions", "--index", str(root)).output
    assert f"* {first}" in listed and f"  {out.strip()}" in listed
    res = _cli("index", "rollback", "v-nope", "--index", str(root))
    assert res.exit_code == 2 and "no published version v-nope" in res.output
    res = _cli("index", "rollback", "../x", "--index", str(root))
    assert res.exit_code == 2 and "is not a version name" in res.output


# -- a publish killed at a named point, then a different publish -----------------------------------------------

CI_POINTS = [
    "publish.locked",
    "publish.lance.chunks.changed",
    "publish.lance.objects.changed",
    "publish.files.payload",
    "publish.manifest.written",
    "publish.verified",
    "publish.current.moved",
]


@pytest.mark.parametrize("point", CI_POINTS)
def test_a_publish_killed_at_a_failpoint_never_spoils_the_next(art: ArtCorpus, tmp_path: Path, point: str):
    r = killed_then_republished(art.data, _copy_index(art, tmp_path), point, "art", "other",
                                "Which is the largest lake in Sweden?")  # fmt: skip
    assert r["killed_rc"] == -signal.SIGKILL  # it really died there
    if point != "publish.current.moved":
        assert r["current_after_kill"] == r["current_before"]  # CURRENT never moved to a half-published version
    assert r["second_rc"] == 0, r["second_err"]
    assert r["current"] == r["second_version"] and r["verify_rc"] == 0, r["verify"]
    assert r["partitions"] == ["other"] and {s.split("/")[0] for s in r["sources"]} == {"other"}
    assert r["leftovers"] == []


def test_failpoints_are_listed_and_a_misspelt_one_is_an_error(art: ArtCorpus, tmp_path: Path):
    listed = subprocess.run([sys.executable, "-m", "mmkg.faults"], capture_output=True, text=True, env=ENV, timeout=60)
    points = listed.stdout.split()
    assert set(CI_POINTS) <= set(points) and len(points) == len(set(points)) >= 20
    env = {**ENV, "MMKG_FAILPOINTS": "publish.lockd=kill"}
    run = subprocess.run([sys.executable, str(WORKER), str(art.data), str(tmp_path / "index"), "art"],
                         capture_output=True, text=True, env=env, timeout=300)  # fmt: skip
    assert run.returncode != 0 and "MMKG_FAILPOINTS: 'publish.lockd=kill' is not <point>=kill" in run.stderr
    assert not (tmp_path / "index").exists() or not list((tmp_path / "index").glob("versions/*"))


# -- retention: mmkg index gc ----------------------------------------------------------------------------------


def test_gc_keeps_current_the_newest_and_the_recently_opened_and_what_they_read(art: ArtCorpus, tmp_path: Path):
    from mmkg.index.integrity import verify
    from mmkg.index.manifest import Manifest

    root = _copy_index(art, tmp_path)
    for parts in ("art", "other", "art,other", "art"):  # four more versions, each a different state
        p = _publish(art.data, root, parts)
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    versions = list_versions(root)
    assert len(versions) == 5
    assert not (root / "versions" / versions[-1] / ".opened").exists()  # the publish's own check is not a reader
    long_ago = time.time() - 3600  # whatever a reader opened (the fixture's queries), an hour "ago" ...
    for v in versions:
        if (marker := root / "versions" / v / ".opened").exists():
            os.utime(marker, (long_ago, long_ago))
    (root / "versions" / versions[1] / ".opened").touch()  # ... and a reader opened this one a moment ago

    dry = _cli("index", "gc", "--keep", "2", "--index", str(root), "--dry-run")
    assert dry.exit_code == 0 and f"would remove {versions[0]}" in dry.output and list_versions(root) == versions
    res = _cli("index", "gc", "--keep", "2", "--index", str(root))
    assert res.exit_code == 0, res.output
    kept = list_versions(root)
    assert kept == [versions[1], versions[3], versions[4]]  # opened within the grace period, and the newest two
    assert not (root / "versions" / versions[0]).exists() and not (root / "versions" / versions[2]).exists()
    assert current_version(root) == versions[4]
    for v in kept:  # every kept version still opens and reads exactly what it pinned
        assert verify(root, Manifest.read(root / "versions" / v)) == []
        assert self_check(Index.open(root, version=v, encoder=False)) == []

    res = _cli("index", "gc", "--keep", "0", "--index", str(root))
    assert res.exit_code == 2 and "--keep must be at least 1" in res.output
    res = _cli("index", "gc", "--older-than", "soon", "--index", str(root))
    assert res.exit_code == 2 and "write a number and a unit" in res.output
    with publish_lock(root):
        res = _cli("index", "gc", "--index", str(root))
    assert res.exit_code == 2 and "Traceback" not in res.output


def test_each_publish_applies_the_retention_of_the_storage_resource(art: ArtCorpus, tmp_path: Path):
    """The retrieval_index asset keeps `keep_versions` versions after publishing (MMKG_KEEP_VERSIONS)."""
    from dagster import DagsterInstance
    from indexing import publish

    from pipelines.resources import default_resources
    from resources import StorageResource

    data = tmp_path / "data"
    shutil.copytree(art.data / "tables", data / "tables")
    shutil.copytree(art.data / "index", data / "index")
    resources = default_resources(art.corpus, data)
    resources["storage"] = StorageResource(data_root=str(data), keep_versions=1)
    instance = DagsterInstance.ephemeral()
    root = data / "index"

    def age_markers() -> None:  # as if every version had last been opened an hour ago
        for marker in root.glob("versions/*/.opened"):
            os.utime(marker, (time.time() - 3600, time.time() - 3600))

    for parts in (["art"], ["art", "other"]):  # two different states: two new versions
        # (a publish removes the files of partitions not registered: "other"'s went with the first one)
        shutil.copytree(art.data / "tables", data / "tables", dirs_exist_ok=True)
        known = instance.get_dynamic_partitions("corpus")
        instance.add_dynamic_partitions("corpus", [p for p in parts if p not in known])
        age_markers()
        publish(instance, resources)
    assert list_versions(root) == [current_version(root)]  # the copied version and the first new one are gone
    assert set(Index.open(root, encoder=False).manifest.partitions) == {"art", "other"}


# -- LanceDB history: compaction at publish, pruning to what the kept versions pin ------------------------------


def _lance_state(root: Path) -> tuple[dict[str, int], int]:
    import lancedb

    db = lancedb.connect(str(root / "lance"))
    versions = {n: len(db.open_table(n).list_versions()) for n in db.list_tables().tables}
    return versions, sum(1 for p in (root / "lance").rglob("*") if p.is_file())


def test_lance_history_is_compacted_and_pruned_to_what_kept_versions_read(art: ArtCorpus, tmp_path: Path):

    from mmkg.index.gc import collect
    from mmkg.index.history import PRUNED_LOG, pruned_files
    from mmkg.index.integrity import verify
    from mmkg.index.manifest import Manifest

    root = _copy_index(art, tmp_path)
    env = {**ENV, "MMKG_COMPACT_FRAGMENTS": "2"}  # compact as soon as a table has two small fragments
    for parts in ("art", "other", "art,other", "art", "other"):
        run = subprocess.run([sys.executable, str(WORKER), str(art.data), str(root), parts],
                             capture_output=True, text=True, env=env, timeout=300)  # fmt: skip
        assert run.returncode == 0, run.stderr
    before, files_before = _lance_state(root)
    assert before["chunks"] >= 10  # restore, delete, add and compaction versions of six publishes
    for marker in root.glob("versions/*/.opened"):
        os.utime(marker, (time.time() - 3600, time.time() - 3600))

    report = collect(root, keep=2)
    after, files_after = _lance_state(root)
    kept = list_versions(root)
    assert len(kept) == 2 and current_version(root) == kept[-1]
    assert report.lance_files_removed > 0 and files_after < files_before
    assert all(after[n] < before[n] for n in ("chunks", "sentences"))
    logged = pruned_files(root)
    manifests = [Manifest.read(root / "versions" / v) for v in kept]
    # a kept manifest lists files of older table versions it never read; the ones LanceDB pruned are logged ...
    assert any(rel in logged and not (root / rel).exists() for m in manifests for rel in m.files)
    for m in manifests:  # ... so every kept version still verifies, opens and answers
        assert verify(root, m) == []
        assert self_check(Index.open(root, version=m.version, encoder=False)) == []
    assert (root / PRUNED_LOG).exists() and not (root / ".lance-pruning.json").exists()
    # and a publish after the prune starts from the pinned, compacted tables
    run = subprocess.run([sys.executable, str(WORKER), str(art.data), str(root), "art"],
                         capture_output=True, text=True, env=env, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert _cli("index", "verify", "--index", str(root)).exit_code == 0


@pytest.mark.parametrize("point", ["lance.optimize.listed", "lance.optimize.done", "gc.folders.removed"])
def test_a_prune_killed_midway_loses_nothing_a_kept_version_reads(art: ArtCorpus, tmp_path: Path, point: str):
    from mmkg.index.history import PENDING, pruned_files
    from mmkg.index.integrity import verify
    from mmkg.index.manifest import Manifest

    root = _copy_index(art, tmp_path)
    for parts in ("art", "other", "art,other"):
        run = subprocess.run([sys.executable, str(WORKER), str(art.data), str(root), parts],
                             capture_output=True, text=True, env=ENV, timeout=300)  # fmt: skip
        assert run.returncode == 0, run.stderr
    for marker in root.glob("versions/*/.opened"):
        os.utime(marker, (time.time() - 3600, time.time() - 3600))
    code = ("import sys; from mmkg.index.gc import collect; "
            "collect(sys.argv[1], keep=1, compact=True)")  # fmt: skip
    killed = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True,
                            env={**ENV, "MMKG_FAILPOINTS": f"{point}=kill"}, timeout=300)  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    version = current_version(root)
    # right after the kill, with nobody holding the lock: what LanceDB removed is not taken for damage
    assert verify(root, Manifest.read(root / "versions" / version)) == []
    assert self_check(Index.open(root, encoder=False)) == []
    if point == "lance.optimize.done":
        assert (root / PENDING).exists() and pruned_files(root)
    run = subprocess.run([sys.executable, str(WORKER), str(art.data), str(root), "other"],
                         capture_output=True, text=True, env=ENV, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert not (root / PENDING).exists()  # the next holder of the lock settled it
    out = _cli("index", "verify", "--index", str(root))
    assert out.exit_code == 0, out.output
    assert retrieve(Index.open(root), text="Which is the largest lake in Sweden?", k=1).chunks


def test_readers_in_a_loop_during_publishes_and_retention_see_whole_versions(art: ArtCorpus, tmp_path: Path):
    """Two readers query throughout four publishes, each followed by retention: no errors, no mixed answers."""
    import json

    from mmkg.index.gc import collect

    root = _copy_index(art, tmp_path)
    stop = tmp_path / "stop"
    reader = str(Path(__file__).parent / "reader_worker.py")
    question = "Which is the largest lake in Sweden?"
    readers = [subprocess.Popen([sys.executable, reader, str(root), str(stop), question, *flag],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
               for flag in ([], ["--pinned"])]  # fmt: skip
    time.sleep(8)  # both have opened the first version and answered
    published = []
    for parts in ("other", "art", "art,other", "other"):
        run = subprocess.run([sys.executable, str(WORKER), str(art.data), str(root), parts],
                             capture_output=True, text=True, env=ENV, timeout=300)  # fmt: skip
        assert run.returncode == 0, run.stderr
        published.append(run.stdout.strip())
        collect(root, keep=1)  # versions readers opened in the last ten minutes stay
    time.sleep(2)
    stop.touch()
    fresh, pinned = (json.loads(p.communicate(timeout=120)[0].strip().splitlines()[-1]) for p in readers)
    assert fresh["errors"] == 0 and pinned["errors"] == 0, (fresh["messages"], pinned["messages"])
    assert fresh["mixed"] == 0 and pinned["mixed"] == 0
    assert len(fresh["versions"]) >= 3 and published[-1] in fresh["versions"]  # it followed the publishes
    assert len(pinned["versions"]) == 1 and pinned["distinct_answers"] == 1  # it kept reading what it opened
    assert fresh["queries"] > 20 and pinned["queries"] > 20


def _flip_middle(path: Path, n: int) -> None:
    raw = bytearray(path.read_bytes())
    mid = len(raw) // 2
    raw[mid : mid + n] = bytes(b ^ 0xFF for b in raw[mid : mid + n])
    path.write_bytes(bytes(raw))


def _edit_manifest(root: Path) -> None:
    import json

    path = root / "versions" / current_version(root) / "manifest.json"
    data = json.loads(path.read_text())
    data["lance_versions"].pop("objects")  # still valid JSON and a valid model: only the checksum can tell
    path.write_text(json.dumps(data))


def _junk_pinned_lance_version(root: Path) -> None:
    import json

    pinned = json.loads((root / "versions" / current_version(root) / "manifest.json").read_text())["lance_versions"]
    path = root / "lance" / "chunks.lance" / "_versions" / f"{2**64 - 1 - pinned['chunks']}.manifest"
    path.write_bytes(os.urandom(path.stat().st_size))


DAMAGE = {  # damage that keeps every size, or leaves versions without CURRENT: name -> (damage, what is named)
    "graph.npz flipped": (lambda r: _flip_middle(r / "versions" / current_version(r) / "graph.npz", 256), "graph.npz"),
    "chunks.parquet flipped": (
        lambda r: _flip_middle(r / "versions" / current_version(r) / "chunks.parquet", 512), "chunks.parquet"),
    "pinned LanceDB version junk": (_junk_pinned_lance_version, "_versions/"),
    "manifest edited": (_edit_manifest, "does not match its checksum"),
    "CURRENT deleted": (lambda r: (r / CURRENT).unlink(), "mmkg index rollback VERSION"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(DAMAGE))
def test_damage_a_size_check_cannot_see_ends_in_one_clear_line(art: ArtCorpus, tmp_path: Path, case: str):
    root = _copy_index(art, tmp_path)
    damage, named = DAMAGE[case]
    damage(root)
    out = _cli("query", "Where was Margit Holm born?", "--index", str(root))
    said = " ".join(out.output.split())  # rich wraps long lines at spaces, or inside a path too long for a line
    joined = out.output.replace("\n", "")
    assert out.exit_code == 2 and "Traceback" not in said, (out.exit_code, said, out.exception)
    assert named in said or named in joined, said
    assert "rollback" in said


def test_a_refused_publish_says_why_in_the_builds_one_line_error(tmp_path: Path, monkeypatch):
    """A build whose publish is refused raises one line that names the reason (the ``PublishError`` under Dagster's
    "Error occurred while executing op" wrapper), where the version went, and the run that holds the log."""
    from pipelines.build import build_index

    corpus = tmp_path / "corpus" / "notes"
    corpus.mkdir(parents=True)
    (corpus / "note.md").write_text("# A note\n\nThe crew toured schools across Ohio after the flight.\n")
    monkeypatch.setattr("mmkg.index.publish.verify_version", lambda *a, **k: ["a planted problem"])
    with pytest.raises(RuntimeError) as err:
        build_index(tmp_path / "corpus", tmp_path / "data")
    message = str(err.value)
    assert "publishing the index failed (step retrieval_index: " in message
    assert "failed its check after writing" in message and "a planted problem" in message
    assert "Error occurred while executing op" not in message and "mmkg ui --data-root" in message
    assert not (tmp_path / "data" / "index" / "CURRENT").exists()
