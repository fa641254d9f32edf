# The shared part of the two GPU check calls (check_call1.sh, check_call2.sh), sourced
# by each after it set OUT, ENGINE, BUDGET and END_S: the clock, the step runner, robolearn
# itself, and the versions.
mkdir -p "$OUT/stderr"
start=$(date +%s)
deadline=$(( start + BUDGET ))
stamp() { echo "[$(( $(date +%s) - start )) s] $*"; }
left() { echo $(( deadline - $(date +%s) - END_S )); }

# step NAME CAP MIN FILE CMD...: run CMD, its stdout shown and appended to FILE, its stderr
# in $OUT/stderr/, limited to CAP seconds or what is left of the budget if less; skipped
# when fewer than MIN seconds are left. Returns CMD's status (1 when skipped).
step() {
  local name=$1 cap=$2 min=$3 file=$4
  shift 4
  local avail slug limit rc
  avail=$(left)
  if [ "$avail" -lt "$min" ]; then
    stamp "SKIPPED $name: $avail s left of the budget, it needs $min s" | tee -a "$OUT/skipped.txt"
    return 1
  fi
  limit=$(( cap < avail ? cap : avail ))
  slug=$(echo "$name" | tr -c 'A-Za-z0-9\n' '_')
  stamp "$name (limit $limit s)"
  timeout --signal=TERM --kill-after=10 "$limit" "$@" 2> "$OUT/stderr/$slug.log" | tee -a "$file"
  rc=${PIPESTATUS[0]}
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    stamp "STOPPED $name: it ran out of its $limit s" | tee -a "$OUT/skipped.txt"
  elif [ "$rc" -ne 0 ]; then
    stamp "FAILED $name (exit $rc); the end of its stderr:"
    tail -n 15 "$OUT/stderr/$slug.log"
  fi
  return "$rc"
}

# Seconds of each timed measurement at n envs: fewer at the largest size, where every
# call costs most, so that the three sizes fit the budget.
measure_s() { if [ "$1" -ge 65536 ]; then echo 2; else echo 3; fi; }

# robolearn itself: this checkout's own install; else a wheel carried in dist/; else the
# checkout as it is, with envs/, tasks/ and assets/ linked under robolearn/ where the
# package's layout (pyproject's package-dir) puts them: no build on the GPU machine.
if ! $PY -c "import robolearn.tasks" 2>/dev/null; then
  if ls dist/robolearn-*.whl >/dev/null 2>&1; then
    $PY -m pip install -q --no-deps --no-index --no-compile --target /tmp/site dist/robolearn-*.whl
    export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
  else
    for d in envs tasks assets; do [ -e "robolearn/$d" ] || ln -s "../$d" "robolearn/$d"; done
    export PYTHONPATH=$PWD:${PYTHONPATH:-}
  fi
fi
stamp "budget $BUDGET s; engine $ENGINE"
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null || echo "no nvidia-smi"
  $PY -c "import sys, torch, warp, mujoco, mujoco_warp, rsl_rl, robolearn; print(sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'warp', warp.__version__, 'mujoco', mujoco.__version__, 'mujoco_warp', mujoco_warp.__version__, 'robolearn', robolearn.__version__)"
} | tee "$OUT/versions.txt"
