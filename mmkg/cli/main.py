"""The whole command line: every command module imported, so each has registered its commands on ``app``."""

from mmkg.cli import data, deploy, evaluate, index, query  # noqa: F401  (registration by import)
from mmkg.cli.common import app

if __name__ == "__main__":
    app()
