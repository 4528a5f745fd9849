"""The tags mmkg puts on Dagster runs, in a module that imports nothing (the build imports Dagster late).

- ``mmkg/trigger``: why the run ran: ``build`` or ``update`` (the CLI's commands), ``upload`` (``mmkg serve``
  re-indexing after an upload), ``sensor`` or ``schedule`` (the daemon's);
- ``mmkg/command``: the command line that started it (runs an mmkg process ran), so the UI's run list says more
  than "Manually launched";
- ``mmkg/reason`` and ``mmkg/fingerprint``: what the sensor or schedule saw (a changed folder, its fingerprint).
"""

TRIGGER_TAG = "mmkg/trigger"
COMMAND_TAG = "mmkg/command"
TRIGGERS = ("build", "update", "upload", "sensor", "schedule")
REASON_TAG = "mmkg/reason"
FINGERPRINT_TAG = "mmkg/fingerprint"
