#!/usr/bin/env bash
# Set up (if needed), then run robolearn's main job: train humanoid_walk with the task's
# defaults on this machine (the CPU engine without a GPU). Arguments go to robolearn train.
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/setup.sh
exec "${VENV:-.venv}/bin/robolearn" train --task humanoid_walk "$@"
