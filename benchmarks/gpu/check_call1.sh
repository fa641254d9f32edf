#!/usr/bin/env bash
# The GPU check's first call, in the order that matters to users, for one 10-minute device
# call on one GPU of either kind (H100 or H200); useful on its own when there is no time for
# the second (check_call2.sh: the CUDA tests, the host waits, the large sizes, the G1,
# Newton, cameras, SHAC).
#
# On the GPU machine, from the repository root, after the wheels are in place:
#   bash .carry1/install-wheels && export PYTHONPATH=/tmp/site:$PYTHONPATH; bash benchmarks/gpu/check_call1.sh
# Here, on warp's CPU device and at toy sizes (tests/test_gpu_check.py):
#   ENGINE=warp-cpu TRAIN_ENVS=8 TRAIN_SECONDS=40 EVAL_ENVS=4 BENCH_ENVS=8 BUDGET=420 \
#     bash benchmarks/gpu/check_call1.sh
#
# In order: versions; `robolearn train --task humanoid_walk` at TRAIN_ENVS (4096) for
# TRAIN_SECONDS (360: 6 minutes, or what the budget leaves; stopped with SIGTERM, which saves a checkpoint); the last
# checkpoint's `play --eval` (the walking thresholds: under 5% falls, linear velocity error
# under 0.25 m/s, yaw rate error under 0.3 rad/s) and one video frame where the machine can
# render; then `robolearn bench` at BENCH_ENVS (4096) with the fused step and with the
# plain one. summary.json joins them: the wall-clock training time, env steps/s while
# training (from the run's progress), whether the thresholds are met, and bench's columns
# and shares (physics / managers / policy) for each step.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/gpu-check-1}
ENGINE=${ENGINE:-cuda}
TRAIN_ENVS=${TRAIN_ENVS:-4096}
TRAIN_SECONDS=${TRAIN_SECONDS:-360}
EVAL_ENVS=${EVAL_ENVS:-256}
BENCH_ENVS=${BENCH_ENVS:-4096}
BUDGET=${BUDGET:-560}
END_S=10
PY=${PYTHON:-python3}
. "$(dirname "$0")/check_lib.sh"  # the clock, step(), robolearn, versions.txt

# Training first: what users run. It gets what the evaluation, the frame and the two bench
# runs leave (about 220 s: the fused step compiles in its bench run), TRAIN_SECONDS at most.
avail=$(left)
train_s=$(( avail - 220 ))
train_s=$(( train_s < TRAIN_SECONDS ? train_s : TRAIN_SECONDS ))
if [ "$train_s" -lt 20 ]; then
  stamp "SKIPPED training: $avail s left of the budget" | tee -a "$OUT/skipped.txt"
else
  stamp "training humanoid_walk for $train_s s on $TRAIN_ENVS envs ($ENGINE)"
  # timeout sends SIGTERM: robolearn saves a checkpoint and exits cleanly.
  timeout --signal=TERM --kill-after=20 "$train_s" $PY -m robolearn train \
    --task humanoid_walk --engine "$ENGINE" --num_envs "$TRAIN_ENVS" --max_iterations 100000 \
    --log_root "$OUT/logs" --run_name gpu agent.save_interval=25 > "$OUT/train.log" 2>&1
  tail -n 3 "$OUT/train.log"
fi
run=$(ls -d "$OUT"/logs/humanoid_walk/*_gpu 2>/dev/null | tail -n 1)
[ -n "$run" ] && [ -f "$run/progress.jsonl" ] && cp "$run/progress.jsonl" "$OUT/progress.jsonl"
if [ -n "$run" ] && ls "$run"/model_*.pt >/dev/null 2>&1; then
  step "evaluating the last checkpoint" 60 20 "$OUT/eval.json" \
    $PY -m robolearn play --task humanoid_walk --engine "$ENGINE" --load_run gpu \
    --log_root "$OUT/logs" --eval --num_envs "$EVAL_ENVS" --json
  # One frame of the trained robot (offscreen OpenGL: skipped in one line where the
  # machine has no EGL).
  step "a video frame" 40 15 "$OUT/video.txt" \
    $PY -m robolearn play --task humanoid_walk --load_run gpu --log_root "$OUT/logs" \
    --num_envs 1 --video --video_length 2 --video_path "$OUT/frame.mp4"
else
  stamp "SKIPPED evaluation: training left no checkpoint" | tee -a "$OUT/skipped.txt"
fi

for fused in on off; do
  step "robolearn bench, $BENCH_ENVS envs, fused step $fused" 90 25 "$OUT/bench.jsonl" \
    $PY -m robolearn bench --task humanoid_walk --num_envs "$BENCH_ENVS" --engine "$ENGINE" \
    --seconds 3 --rounds 2 --train_iterations 2 --json "env.fused_step=$fused"
done

stamp "summary"
$PY - "$OUT" <<'EOF' | tee "$OUT/summary.txt"
import json, pathlib, sys

sys.path.insert(0, "benchmarks/gpu")
from json_rows import json_rows

out = pathlib.Path(sys.argv[1])
progress = json_rows(out / "progress.jsonl")
evals = json_rows(out / "eval.json")
ev = evals[-1] if evals else {}
# the command's metrics are named <command>/<metric> (base_velocity/lin_vel_error)
metrics = {k.split("/")[-1]: v for k, v in ev.items() if not isinstance(v, dict)}
targets = {"fall_rate": 0.05, "lin_vel_error": 0.25, "ang_vel_error": 0.3}
met = all(metrics.get(k) is not None and metrics[k] < v for k, v in targets.items()) if ev else None
last = progress[-1] if progress else {}
summary = {
    "train_iterations": last.get("iteration"),
    "train_env_steps": last.get("env_steps"),
    "train_wall_s": last.get("wall_time"),
    "train_env_steps_per_s": last.get("Perf/env_steps_per_s"),
    "eval": {k: metrics.get(k) for k in ("fall_rate", "lin_vel_error", "ang_vel_error", "mean_return")},
    "walking_thresholds_met": met,
    "bench": [
        {k: r.get(k) for k in ("fused_step", "num_envs", "physics_steps_per_s", "env_steps_per_s",
                               "env_steps_per_s_inference", "env_steps_per_s_training",
                               "share_physics", "share_managers", "share_policy")}
        for r in json_rows(out / "bench.jsonl")
    ],
}
(out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
print(json.dumps(summary, indent=1))
EOF
stamp "done; results in $OUT"
