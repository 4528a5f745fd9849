"""``mmkg``: the command line, one module per command group over one set of shared options and helpers.

- ``common``: the ``app`` and its groups, the consoles (results on standard output, errors on standard
  error), the root rule (flag, ``MMKG_*``, ``./mmkg.toml``, ``./.mmkg``) and opening an index;
- ``query``: ``mmkg query``, ``ask``, ``serve``, ``strategies``;
- ``index``: ``mmkg init``, ``mmkg index build / update / status / info / versions / verify / rollback / gc``
  and ``mmkg ui`` (the ones that build import the Dagster pipelines, lazily: reading commands do not);
- ``data``: ``mmkg sql``, ``mmkg graph export``;
- ``evaluate``: ``mmkg eval twowiki / mmlongbench / sample / compare``;
- ``deploy``: ``mmkg deploy up / status / down`` (``pipelines.deploy``: the production topology).

Each command module registers its commands on ``app`` when imported; ``mmkg.cli.main`` imports them all.
"""

from mmkg.cli.main import app

__all__ = ["app"]
