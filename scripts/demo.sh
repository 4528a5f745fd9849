#!/usr/bin/env bash
# Quick start: set up, then materialize every asset for the bundled sample corpus and print a summary.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 YOLO_OFFLINE=1
exec .venv/bin/python -m pipelines.demo "$@"
