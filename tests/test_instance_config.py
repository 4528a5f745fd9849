"""The data root's Dagster instance: its config shipped when missing, upgraded while untouched, a user's own kept;
and the runs in it that a build checks before it writes a partition."""

from __future__ import annotations

import hashlib
import logging
import os
import re
import socket
import subprocess
from pathlib import Path

import pytest

from pipelines.build import INSTANCE_CONFIG, SHIPPED_MARKER, PartitionBusy, _clear_partitions, dagster_home

OLD_SHIPPED = Path(__file__).parent / "data" / "dagster_yaml_1b84469.yaml"  # pipelines/dagster.yaml at 1b84469


def _limits(home: Path) -> list:
    from dagster import DagsterInstance
    from dagster._core.instance.ref import InstanceRef

    with DagsterInstance.from_ref(InstanceRef.from_dir(str(home))) as instance:
        return instance.get_concurrency_config().run_queue_config.tag_concurrency_limits


PARTITION_LIMIT = {"key": "dagster/partition", "value": {"applyLimitPerUniqueValue": True}, "limit": 1}


def test_a_new_home_gets_the_shipped_config_and_remembers_it(tmp_path: Path):
    home = dagster_home(tmp_path)
    assert (home / "dagster.yaml").read_bytes() == INSTANCE_CONFIG.read_bytes()
    assert (home / SHIPPED_MARKER).read_text().strip() == hashlib.sha256(INSTANCE_CONFIG.read_bytes()).hexdigest()
    assert PARTITION_LIMIT in _limits(home)


def test_the_shipped_config_copied_by_hand_is_marked_untouched(tmp_path: Path):
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_bytes(INSTANCE_CONFIG.read_bytes())
    dagster_home(tmp_path)
    assert (home / SHIPPED_MARKER).read_text().strip() == hashlib.sha256(INSTANCE_CONFIG.read_bytes()).hexdigest()


def test_an_untouched_copy_an_earlier_release_shipped_is_upgraded(tmp_path: Path):
    # a data root made before runs were limited per partition: its copy lacks the limit, and nobody edited it
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_bytes(OLD_SHIPPED.read_bytes())
    assert PARTITION_LIMIT not in _limits(home)
    dagster_home(tmp_path)
    assert (home / "dagster.yaml").read_bytes() == INSTANCE_CONFIG.read_bytes()
    assert PARTITION_LIMIT in _limits(home)


def test_a_copy_the_marker_names_is_upgraded_by_a_later_release(tmp_path: Path):
    # what a future release finds: the copy this one wrote, untouched, and the marker naming it
    home = tmp_path / "dagster_home"
    home.mkdir()
    earlier = b"# an earlier shipped config\ntelemetry:\n  enabled: false\n"
    (home / "dagster.yaml").write_bytes(earlier)
    (home / SHIPPED_MARKER).write_text(hashlib.sha256(earlier).hexdigest() + "\n")
    dagster_home(tmp_path)
    assert (home / "dagster.yaml").read_bytes() == INSTANCE_CONFIG.read_bytes()


def test_a_users_own_config_is_kept_and_what_it_lacks_is_named(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    home = tmp_path / "dagster_home"
    home.mkdir()
    own = OLD_SHIPPED.read_bytes().replace(b"start_timeout_seconds: 180", b"start_timeout_seconds: 600")
    (home / "dagster.yaml").write_bytes(own)
    with caplog.at_level(logging.WARNING, logger="pipelines.build"):
        dagster_home(tmp_path)
    assert (home / "dagster.yaml").read_bytes() == own  # edited by its owner: never replaced
    assert "concurrency.runs" in caplog.text and str(home / "dagster.yaml") in caplog.text
    caplog.clear()
    (home / "dagster.yaml").write_bytes(INSTANCE_CONFIG.read_bytes() + b"# mine\n")  # own, and lacks nothing
    with caplog.at_level(logging.WARNING, logger="pipelines.build"):
        dagster_home(tmp_path)
    assert caplog.text == ""
    (home / "dagster.yaml").write_bytes(b"")  # an empty config is no config: the shipped one is written
    dagster_home(tmp_path)
    assert (home / "dagster.yaml").read_bytes() == INSTANCE_CONFIG.read_bytes()


def test_a_build_checks_the_runs_writing_its_partitions(tmp_path: Path):
    from dagster import DagsterInstance, DagsterRunStatus
    from dagster._core.instance.ref import InstanceRef
    from dagster._core.storage.dagster_run import DagsterRun, make_new_run_id

    ended = subprocess.Popen(["true"])
    ended.wait()  # its pid names no live process
    alive = subprocess.Popen(["sleep", "60"])
    here = socket.gethostname()
    home = dagster_home(tmp_path)
    try:
        with DagsterInstance.from_ref(InstanceRef.from_dir(str(home))) as instance:

            def add(partition: str, status: DagsterRunStatus, **tags: str) -> str:
                run_id = make_new_run_id()
                instance.add_run(DagsterRun(job_name="index_partition", run_id=run_id, status=status,
                                            tags={"dagster/partition": partition, **tags}))  # fmt: skip
                return run_id

            dead = add("a", DagsterRunStatus.STARTED, **{"mmkg/pid": str(ended.pid), "mmkg/host": here})
            mine = add("a", DagsterRunStatus.STARTED, **{"mmkg/pid": str(os.getpid()), "mmkg/host": here})
            done = add("a", DagsterRunStatus.SUCCESS)
            other = add("b", DagsterRunStatus.STARTED)  # another partition: not this build's business
            _clear_partitions(instance, ["a"], tmp_path)  # nothing live writes "a"
            status = {r: instance.get_run_by_id(r).status for r in (dead, mine, done, other)}
            assert status == {dead: DagsterRunStatus.FAILURE, mine: DagsterRunStatus.FAILURE,
                              done: DagsterRunStatus.SUCCESS, other: DagsterRunStatus.STARTED}  # fmt: skip
            with pytest.raises(PartitionBusy, match=r"partition 'b' .* by the Dagster UI, a sensor or a schedule"):
                _clear_partitions(instance, ["a", "b"], tmp_path)
            live = add("c", DagsterRunStatus.STARTED, **{"mmkg/pid": str(alive.pid), "mmkg/host": here})
            said = rf"run {live[:8]} .* by mmkg process {alive.pid} on {re.escape(here)}"
            with pytest.raises(PartitionBusy, match=said):
                _clear_partitions(instance, ["c"], tmp_path)
            assert instance.get_run_by_id(live).status == DagsterRunStatus.STARTED  # a live one is left alone
    finally:
        alive.kill()
        alive.wait()


def test_a_partition_run_claims_its_partition_before_it_runs(tmp_path: Path):
    """A build's run of a partition is marked starting (what the UI's queue counts) before it looks for other
    runs of the partition; a run found writing it cancels the build's run and leaves the other alone."""
    from dagster import DagsterInstance, DagsterRunStatus, RunsFilter
    from dagster._core.instance.ref import InstanceRef
    from dagster._core.storage.dagster_run import ACTIVE_RUN_STATUSES, DagsterRun, make_new_run_id

    from pipelines.build import _claim

    ours = {"mmkg/pid": str(os.getpid()), "mmkg/host": socket.gethostname()}
    with DagsterInstance.from_ref(InstanceRef.from_dir(str(dagster_home(tmp_path)))) as instance:

        def add(partition: str, status: DagsterRunStatus, **tags: str) -> DagsterRun:
            run = DagsterRun(job_name="index_partition", run_id=make_new_run_id(), status=status,
                             tags={"dagster/partition": partition, **tags})  # fmt: skip
            return instance.add_run(run)

        def active(partition: str) -> set[str]:
            filters = RunsFilter(statuses=ACTIVE_RUN_STATUSES, tags={"dagster/partition": partition})
            return {r.dagster_run.run_id for r in instance.get_run_records(filters)}

        mine = add("a", DagsterRunStatus.NOT_STARTED, **ours)
        assert active("a") == set()  # created, not yet counted by the queue
        claimed = _claim(instance, mine, "a", tmp_path)
        assert claimed.status == DagsterRunStatus.STARTING  # not taken for this process's abandoned run
        assert active("a") == {mine.run_id}  # a run queued for "a" from now on waits for it

        ui = add("b", DagsterRunStatus.STARTED)  # launched from the UI after the build's first look
        late = add("b", DagsterRunStatus.NOT_STARTED, **ours)
        with pytest.raises(PartitionBusy, match=rf"partition 'b' is being written by run {ui.run_id[:8]}"):
            _claim(instance, late, "b", tmp_path)
        assert instance.get_run_by_id(late.run_id).status == DagsterRunStatus.CANCELED
        assert instance.get_run_by_id(ui.run_id).status == DagsterRunStatus.STARTED


def test_postgres_storage_follows_the_variable_and_a_plain_url_is_refused(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch):  # fmt: skip
    """MMKG_DAGSTER_POSTGRES_URL adds the storage block (the URL itself stays in the environment); without it the
    SQLite config comes back; a postgresql:// URL is refused with the form to write."""
    import yaml

    monkeypatch.setenv("MMKG_DAGSTER_POSTGRES_URL", "postgresql+psycopg2://mmkg:secret@127.0.0.1:5432/mmkg")
    config = (dagster_home(tmp_path) / "dagster.yaml").read_text(encoding="utf-8")
    assert yaml.safe_load(config)["storage"] == {"postgres": {"postgres_url": {"env": "MMKG_DAGSTER_POSTGRES_URL"}}}
    assert "secret" not in config
    monkeypatch.delenv("MMKG_DAGSTER_POSTGRES_URL")
    assert (dagster_home(tmp_path) / "dagster.yaml").read_bytes() == INSTANCE_CONFIG.read_bytes()
    monkeypatch.setenv("MMKG_DAGSTER_POSTGRES_URL", "postgresql://mmkg@127.0.0.1/mmkg")
    with pytest.raises(ValueError, match=r"postgresql\+psycopg2://USER\[:PASSWORD\]@HOST:PORT/DATABASE"):
        dagster_home(tmp_path)
