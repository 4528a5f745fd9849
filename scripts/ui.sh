#!/usr/bin/env bash
# Opens the Dagster UI on the data root's own instance, the one the quick start, `mmkg index build` and
# `mmkg index update` write to: `mmkg ui` from the checkout (arguments pass through: --port, --data-root).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/mmkg ui "$@"
