"""``python -m mmkg.cli``: the same command line as the ``mmkg`` executable."""

from mmkg.cli.main import app

app()
