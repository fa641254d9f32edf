#!/usr/bin/env bash
# Set up (if needed), then run robolearn's test suite. Arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/setup.sh
# Two worker processes (pytest-xdist), a test module to each in turn: on 2 cores the suite
# takes about two thirds of one process's time, since much of it waits on subprocesses,
# browsers and servers. TEST_WORKERS=0 runs it in one process; -n N among the arguments
# overrides.
exec "${VENV:-.venv}/bin/python" -m pytest -n "${TEST_WORKERS:-2}" --dist loadscope "$@"
