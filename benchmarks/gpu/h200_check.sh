#!/usr/bin/env bash
# The GPU check of the cuda engine (issue 9), one script, well under 10 minutes on an H200.
#
# On the GPU machine, from the repository root, after the wheels are in place:
#   bash .carry1/install-wheels && export PYTHONPATH=/tmp/site:$PYTHONPATH; bash benchmarks/gpu/h200_check.sh
# Here, on warp's CPU device and at toy sizes (how this script is tested without a GPU):
#   ENGINE=warp-cpu SIZES="32" TRAIN_ENVS=32 TRAIN_SECONDS=60 bash benchmarks/gpu/h200_check.sh
#
# Writes everything under $OUT (default /tmp/gpu-check): versions, test log, bench and bare
# mujoco_warp JSON lines, syncs per env step, the training run's progress and evaluation.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/gpu-check}
ENGINE=${ENGINE:-cuda}
SIZES=${SIZES:-"4096 16384"}
TRAIN_ENVS=${TRAIN_ENVS:-4096}
TRAIN_SECONDS=${TRAIN_SECONDS:-240}
BUDGET=${BUDGET:-540}  # seconds for the whole script: one device call allows 600
PY=${PYTHON:-python3}
mkdir -p "$OUT"
start=$(date +%s)
stamp() { echo "[$(( $(date +%s) - start )) s] $*"; }

# robolearn itself: from a wheel carried in dist/ (the GPU machine has no setuptools run),
# else from this checkout's own install.
if ls dist/robolearn-*.whl >/dev/null 2>&1 && ! $PY -c "import robolearn.tasks" 2>/dev/null; then
  $PY -m pip install -q --no-deps --no-index --no-compile --target /tmp/site dist/robolearn-*.whl
  export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
fi
stamp "versions"
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null || echo "no nvidia-smi"
  $PY -c "import sys, torch, warp, mujoco, mujoco_warp, rsl_rl, robolearn; print(sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'warp', warp.__version__, 'mujoco', mujoco.__version__, 'mujoco_warp', mujoco_warp.__version__, 'robolearn', robolearn.__version__)"
} | tee "$OUT/versions.txt"

if [ "$ENGINE" = cuda ]; then
  stamp "tests that need CUDA"
  $PY -m pytest -q -p no:cacheprovider -m cuda tests/test_cuda.py 2>&1 | tee "$OUT/tests.log"
  stamp "synchronisations per env step"
  $PY benchmarks/gpu/count_syncs.py --task humanoid_walk --num_envs 4096 --steps 50 | tee "$OUT/syncs.json"
fi

for n in $SIZES; do
  stamp "bare mujoco_warp step, $n envs"
  $PY benchmarks/gpu/bare_mjwarp.py --task humanoid_walk --num_envs "$n" --engine "$ENGINE" --seconds 5 | tee -a "$OUT/bare.jsonl"
  stamp "robolearn bench, $n envs"
  $PY -m robolearn bench --task humanoid_walk --num_envs "$n" --engine "$ENGINE" --seconds 4 --rounds 2 --train_iterations 3 --json | tee -a "$OUT/bench.jsonl"
done

# Train for what is left of the budget (cold kernel compilation on a fresh machine takes
# an unknown share of it), keeping ~60 s for the evaluation.
left=$(( BUDGET - ($(date +%s) - start) - 60 ))
train_s=$(( left < TRAIN_SECONDS ? left : TRAIN_SECONDS ))
if [ "$train_s" -lt 30 ]; then
  stamp "no time left to train within the ${BUDGET} s budget"; exit 0
fi
stamp "training humanoid_walk for $train_s s on $TRAIN_ENVS envs"
# timeout sends SIGTERM: robolearn saves a checkpoint and exits cleanly.
timeout --signal=TERM "$train_s" $PY -m robolearn train --task humanoid_walk --engine "$ENGINE" \
  --num_envs "$TRAIN_ENVS" --max_iterations 100000 --log_root "$OUT/logs" --run_name gpu \
  agent.save_interval=25 > "$OUT/train.log" 2>&1
tail -n 3 "$OUT/train.log"
run=$(ls -d "$OUT"/logs/humanoid_walk/*_gpu | tail -n 1)
cp "$run/progress.jsonl" "$OUT/progress.jsonl"
stamp "evaluating the last checkpoint"
$PY -m robolearn play --task humanoid_walk --engine "$ENGINE" --load_run gpu --log_root "$OUT/logs" \
  --eval --num_envs 256 --json | tee "$OUT/eval.json"
stamp "done; results in $OUT"
