#!/usr/bin/env bash
# Creates ./.venv (Python 3.11) and installs mmkg with its pinned dependencies. Idempotent:
# a second run only re-checks the pins.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-$(command -v python3.11 || command -v python3)}
if ! "$PY" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
  echo "mmkg needs Python 3.11 (found $("$PY" --version 2>&1) at $PY); set PYTHON=/path/to/python3.11" >&2
  exit 1
fi
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.mmkg-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ constraints.txt -nt "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  # constraints.txt pins every transitive dependency so installs repeat.
  .venv/bin/python -m pip install --quiet -c constraints.txt -e ".[dev]"
  touch "$stamp"
fi
