"""The web page's Index view reads the data root's files: the last build's record and log, and rejected files."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import polars as pl

from mmkg.api.index_view import _rejected, last_build


def test_last_build_says_what_the_data_root_records(tmp_path: Path):
    assert "no `mmkg index build`" in last_build(tmp_path, "v2")["status"]
    (tmp_path / "build_state.json").write_text(json.dumps({"index_version": "v2", "partitions": {"a": "f", "b": "g"}}))
    out = last_build(tmp_path, "v2")
    assert out["status"].startswith("succeeded") and out["published"] == "v2" and out["partitions"] == ["a", "b"]
    assert "answers from v3" in last_build(tmp_path, "v3")["status"]
    logs = tmp_path / "logs"
    logs.mkdir()
    log = logs / "build-20260101-000000.log"
    log.write_text("line one\n\nERROR: it broke\n")
    later = time.time() + 60  # a build that started after the publish it would have recorded
    os.utime(log, (later, later))
    out = last_build(tmp_path, "v2")
    assert "published nothing" in out["status"] and out["log"]["tail"] == ["line one", "ERROR: it broke"]


def test_rejected_files_of_every_partition(tmp_path: Path):
    assert _rejected(tmp_path).is_empty()
    folder = tmp_path / "tables" / "rejected_files"
    folder.mkdir(parents=True)
    row = {"partition": "b", "source_path": "b/x.pdf", "record_key": "", "stage": "ingest", "reason": "encrypted"}
    pl.DataFrame([row]).write_parquet(folder / "b.parquet")
    pl.DataFrame([{**row, "partition": "a", "source_path": "a/y.png", "reason": "too small"}]).write_parquet(
        folder / "a.parquet"
    )
    (folder / "c.parquet").write_bytes(b"not parquet")  # being rewritten: left out, not an error
    out = _rejected(tmp_path)
    assert out["source_path"].to_list() == ["a/y.png", "b/x.pdf"] and out["reason"].to_list()[1] == "encrypted"
