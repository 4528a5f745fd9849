#!/usr/bin/env bash
# Quick start: set up, then run the linter and the test suite (extra pytest arguments pass through).
set -euo pipefail
cd "$(dirname "$0")/.."
MMKG_EXTRAS=dev,llm bash scripts/setup.sh
export HF_HUB_OFFLINE=1 YOLO_OFFLINE=1
.venv/bin/ruff check .
exec .venv/bin/python -m pytest "$@"
