"""The data root's Dagster instance config: shipped when missing, upgraded while untouched, a user's own kept."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import pytest

from pipelines.build import INSTANCE_CONFIG, SHIPPED_MARKER, dagster_home

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
