#!/usr/bin/env bash
# The GPU check's third call: the off-policy learners on the GPU (issue 59), for one
# 10-minute device call on one GPU of either kind (H100 or H200).
#
# On the GPU machine, from the repository root, after the wheels are in place:
#   bash .carry1/install-wheels && export PYTHONPATH=/tmp/site:$PYTHONPATH; bash benchmarks/gpu/check_call3.sh
# Here, on warp's CPU device and at toy sizes (tests/test_gpu_check.py):
#   ENGINE=warp-cpu TRAIN_ENVS=8 TRAIN_SECONDS=30 EVAL_ENVS=4 SPLIT_ENVS=16 SPLIT_SECONDS=20 \
#     BUDGET=300 bash benchmarks/gpu/check_call3.sh
#
# In order: versions; for each learner of ALGOS (td3, sac, and ppo_pipelined: PPO with
# `agent.pipelined=true`, its collector on a CUDA stream of its own), `robolearn train --task
# humanoid_walk --algo A` at TRAIN_ENVS (4096) for TRAIN_SECONDS (180, or what the budget
# leaves; SIGTERM saves a checkpoint) and its last checkpoint's `play --eval` against the
# walking thresholds; then the cpu engine's physics feeding a learner on the GPU
# (agent.offpolicy.learner_device=cuda, the steps through pinned host memory) at
# SPLIT_ENVS for SPLIT_SECONDS. summary.json: per learner the env steps/s while training,
# the env steps and seconds trained, the evaluation and whether it walks.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/gpu-check-3}
ENGINE=${ENGINE:-cuda}
ALGOS=${ALGOS:-"td3 sac ppo_pipelined"}
TRAIN_ENVS=${TRAIN_ENVS:-4096}
TRAIN_SECONDS=${TRAIN_SECONDS:-180}
EVAL_ENVS=${EVAL_ENVS:-256}
SPLIT_ENVS=${SPLIT_ENVS:-1024}
SPLIT_SECONDS=${SPLIT_SECONDS:-45}
BUDGET=${BUDGET:-560}
END_S=10
PY=${PYTHON:-python3}
. "$(dirname "$0")/check_lib.sh"  # the clock, step(), robolearn, versions.txt

to_run=$(echo $ALGOS | wc -w)
for algo in $ALGOS; do
  # each learner's share of what is left to the learners not yet run, less its evaluation
  # and the split run
  avail=$(left)
  train_s=$(( (avail - SPLIT_SECONDS - 40) / to_run - 70 ))
  to_run=$(( to_run - 1 ))
  train_s=$(( train_s < TRAIN_SECONDS ? train_s : TRAIN_SECONDS ))
  if [ "$train_s" -lt 15 ]; then
    stamp "SKIPPED $algo: $avail s left of the budget" | tee -a "$OUT/skipped.txt"
    continue
  fi
  case "$algo" in
    ppo_pipelined) learner=(--algo ppo agent.pipelined=true) ;;
    *) learner=(--algo "$algo") ;;
  esac
  stamp "training humanoid_walk with $algo for $train_s s on $TRAIN_ENVS envs ($ENGINE)"
  timeout --signal=TERM --kill-after=20 "$train_s" $PY -m robolearn train \
    --task humanoid_walk "${learner[@]}" --engine "$ENGINE" --num_envs "$TRAIN_ENVS" \
    --max_iterations 100000 --log_root "$OUT/logs" --run_name "$algo" \
    agent.save_interval=10 > "$OUT/train_$algo.log" 2>&1
  tail -n 2 "$OUT/train_$algo.log"
  run=$(ls -d "$OUT"/logs/humanoid_walk/*_"$algo" 2>/dev/null | tail -n 1)
  [ -n "$run" ] && [ -f "$run/progress.jsonl" ] && cp "$run/progress.jsonl" "$OUT/progress_$algo.jsonl"
  if [ -n "$run" ] && ls "$run"/model_*.pt >/dev/null 2>&1; then
    step "evaluating $algo's last checkpoint" 60 20 "$OUT/eval_$algo.json" \
      $PY -m robolearn play --task humanoid_walk --engine "$ENGINE" --load_run "$algo" \
      --log_root "$OUT/logs" --eval --num_envs "$EVAL_ENVS" --json
  else
    stamp "SKIPPED evaluating $algo: training left no checkpoint" | tee -a "$OUT/skipped.txt"
  fi
done

# The physics on the CPU's cores, the learner on the GPU.
if [ "$ENGINE" = cuda ]; then SPLIT_DEVICE=cuda; else SPLIT_DEVICE=cpu; fi
avail=$(left)
if [ "$avail" -ge $(( SPLIT_SECONDS + 10 )) ]; then
  stamp "cpu engine feeding a td3 learner on $SPLIT_DEVICE, $SPLIT_ENVS envs, $SPLIT_SECONDS s"
  timeout --signal=TERM --kill-after=20 "$SPLIT_SECONDS" $PY -m robolearn train \
    --task humanoid_walk --algo td3 --engine cpu --num_envs "$SPLIT_ENVS" \
    --max_iterations 100000 --log_root "$OUT/logs" --run_name split \
    "agent.offpolicy.learner_device=$SPLIT_DEVICE" > "$OUT/train_split.log" 2>&1
  tail -n 2 "$OUT/train_split.log"
  run=$(ls -d "$OUT"/logs/humanoid_walk/*_split 2>/dev/null | tail -n 1)
  [ -n "$run" ] && [ -f "$run/progress.jsonl" ] && cp "$run/progress.jsonl" "$OUT/progress_split.jsonl"
else
  stamp "SKIPPED the cpu engine feeding the GPU: $avail s left" | tee -a "$OUT/skipped.txt"
fi

stamp "summary"
$PY - "$OUT" $ALGOS split <<'EOF' | tee "$OUT/summary.txt"
import json, pathlib, sys

sys.path.insert(0, "benchmarks/gpu")
from json_rows import json_rows

out = pathlib.Path(sys.argv[1])
targets = {"fall_rate": 0.05, "lin_vel_error": 0.25, "ang_vel_error": 0.3}
summary = {}
for name in sys.argv[2:]:
    progress = json_rows(out / f"progress_{name}.jsonl")
    evals = json_rows(out / f"eval_{name}.json")
    ev = evals[-1] if evals else {}
    metrics = {k.split("/")[-1]: v for k, v in ev.items() if not isinstance(v, dict)}
    met = all(metrics.get(k) is not None and metrics[k] < v for k, v in targets.items()) if ev else None
    last = progress[-1] if progress else {}
    rates = [r.get("Perf/env_steps_per_s") for r in progress[2:] if r.get("Perf/env_steps_per_s")]
    summary[name] = {
        "train_iterations": last.get("iteration"),
        "train_env_steps": last.get("env_steps"),
        "train_wall_s": last.get("wall_time"),
        "train_env_steps_per_s": sum(rates) / len(rates) if rates else None,
        "eval": {k: metrics.get(k) for k in ("fall_rate", "lin_vel_error", "ang_vel_error", "mean_return")},
        "walking_thresholds_met": met,
    }
(out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
print(json.dumps(summary, indent=1))
EOF
stamp "done; results in $OUT"
