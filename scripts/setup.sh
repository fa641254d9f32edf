#!/usr/bin/env bash
# Set up a fresh machine for robolearn; safe to run again (it skips what is done).
#
#   VENV=path   the virtual environment to create or reuse (default .venv)
#   PYTHON=...  the interpreter that creates it (default python3)
#   TORCH_SPEC  the torch to install when the venv has none (default torch==2.13.0, which
#               pip takes from local disk as a CPU build where one is provided; an open
#               range would pull a multi-GB CUDA build)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3}
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0}

# Debian packages: Mesa's EGL and OSMesa for headless rendering (videos, viewer frames);
# Chromium and Xvfb, which the tests of the web and native viewers drive; a C++ compiler and
# Python's headers, with which torch.compile builds its CPU kernels (agent.policy.compile).
debs=(libegl1 libgl1 libgl1-mesa-dri libosmesa6 chromium xvfb g++ python3-dev)
missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "setup: installing Debian packages: ${missing[*]}"
    # apt's chatter (debconf's notes, progress) only when it fails
    if ! out=$(apt-get update -qq 2>&1 && DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -qq "${missing[@]}" 2>&1); then
      echo "$out" >&2
      echo "setup: installing the Debian packages failed" >&2
      exit 1
    fi
  else
    echo "setup: missing Debian packages (install them as root): ${missing[*]}" >&2
  fi
fi

if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: creating virtual environment $VENV"
  "$PYTHON" -m venv "$VENV"
fi
py="$VENV/bin/python"
quiet() { "$@" 2>&1 | grep -v "^WARNING: Location" || true; }
if ! "$py" -c "import setuptools, wheel" 2>/dev/null; then
  quiet "$py" -m pip install -q --upgrade pip setuptools wheel
fi
if ! "$py" -c "import torch" 2>/dev/null; then
  echo "setup: installing $TORCH_SPEC"
  quiet "$py" -m pip install -q "$TORCH_SPEC"
fi
stamp="$VENV/.robolearn-installed"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "setup: installing robolearn and its dependencies into $VENV"
  # sb3 and skrl: the tests train cartpole through robolearn's wrappers for both learners;
  # sweep: the tests run sweeps on a local Ray.
  # setuptools warns on every editable install that folders named like the package may
  # shadow it: a general caution, not a problem of this install (9 lines that look like one)
  PYTHONWARNINGS="ignore:Editable installation${PYTHONWARNINGS:+,$PYTHONWARNINGS}" \
    "$py" -m pip install -q -e ".[dev,video,viewer,sb3,skrl,newton,sweep]" 2>&1 | grep -v "^WARNING: Location" || true
  # importing warp prints its banner (and, without an NVIDIA driver, a warning that is no
  # failure here): shown only if the check fails
  if ! check=$("$py" -c "import robolearn, mujoco, mujoco_warp, warp, rsl_rl, torch, stable_baselines3, skrl, ray.tune, optuna" 2>&1); then
    echo "$check" >&2
    echo "setup: the install is incomplete" >&2
    exit 1
  fi
  touch "$stamp"
fi
