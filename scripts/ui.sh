#!/usr/bin/env bash
# Opens the Dagster UI on this project, sharing the instance the quick start wrote to.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export DAGSTER_HOME=${DAGSTER_HOME:-$PWD/.mmkg/dagster_home}
mkdir -p "$DAGSTER_HOME"
# the shipped instance config (gpu pool limit, no telemetry) unless this home has its own
[ -s "$DAGSTER_HOME/dagster.yaml" ] || cp pipelines/dagster.yaml "$DAGSTER_HOME/dagster.yaml"
export HF_HUB_OFFLINE=1 YOLO_OFFLINE=1
exec .venv/bin/dagster dev "$@"
