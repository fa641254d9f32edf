#!/usr/bin/env bash
# Set up (if needed), then run robolearn's main job: the engine benchmark on the humanoid
# (physics steps/s of robolearn's cpu engine beside a bare mujoco.batch loop).
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/setup.sh
exec "${VENV:-.venv}/bin/python" benchmarks/engine_overhead.py "$@"
