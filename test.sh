#!/usr/bin/env bash
# Set up (if needed), then run robolearn's test suite. Arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/setup.sh
exec "${VENV:-.venv}/bin/python" -m pytest "$@"
