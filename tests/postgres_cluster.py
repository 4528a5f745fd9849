"""A throwaway PostgreSQL cluster for the production tests: ``initdb`` in a temporary folder, the server on a free
localhost port (and a socket in that folder), one database, removed afterwards.

Debian's ``postgresql`` package provides the programs (``.ci/run`` installs it). PostgreSQL refuses to run as root,
so under root the cluster belongs to the ``postgres`` user and its programs run through ``runuser``.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path


def _bin(name: str) -> str | None:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return found[-1] if found else shutil.which(name)


def available() -> str:
    """"" when a cluster can be made here, else why not."""
    if not _bin("initdb") or not _bin("pg_ctl"):
        return "PostgreSQL is not installed (Debian: apt-get install postgresql; .ci/run does)"
    if os.geteuid() == 0 and not shutil.which("runuser"):
        return "running as root without runuser, and PostgreSQL refuses to run as root"
    return ""


def libpq(url: str) -> str:
    """A SQLAlchemy URL as libpq writes it (no driver in the scheme)."""
    return url.replace("postgresql+psycopg2://", "postgresql://", 1)


class Cluster:
    """``start()``, ``stop()`` (an outage) and ``remove()``; ``url`` names the database."""

    def __init__(self, database: str = "mmkg") -> None:
        from conftest import free_port

        self.folder = Path(tempfile.mkdtemp(prefix="mmkg-pg-", dir="/tmp"))
        self.data = self.folder / "data"
        self.port = free_port()
        self.database = database
        self.user = "postgres" if os.geteuid() == 0 else os.environ.get("USER", "postgres")
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
        self.folder.chmod(0o755)
        self._run(_bin("initdb"), "-D", str(self.data), "-U", self.user, "-A", "trust", "-E", "UTF8", "--no-sync")
        self.start()
        self._run(_bin("createdb") or "createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", self.user, database)

    @property
    def url(self) -> str:
        """SQLAlchemy's URL, as MMKG_DAGSTER_POSTGRES_URL takes it."""
        return f"postgresql+psycopg2://{self.user}@127.0.0.1:{self.port}/{self.database}"

    @property
    def dsn(self) -> str:
        """libpq's URL of the same database, for psycopg2.connect."""
        return libpq(self.url)

    def _run(self, *cmd: str | None) -> None:
        args = [c for c in cmd if c is not None]
        if os.geteuid() == 0:
            args = ["runuser", "-u", "postgres", "--", *args]
        out = subprocess.run(args, capture_output=True, text=True, timeout=120, cwd=self.folder)
        if out.returncode:
            raise RuntimeError(f"{' '.join(args)} failed ({out.returncode}): {out.stderr or out.stdout}")

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run(_bin("pg_ctl"), "-D", str(self.data), "-o", options, "-l", str(self.folder / "server.log"), "-w",
                  "start")  # fmt: skip

    def stop(self) -> None:
        self._run(_bin("pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")

    def remove(self) -> None:
        with contextlib.suppress(RuntimeError):  # already stopped
            self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)
