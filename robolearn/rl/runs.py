"""Run folders and checkpoint files.

A training run lives in ``<log_root>/<experiment>/<YYYY-MM-DD_HH-MM-SS>[_<run_name>]/``:

    params/env.yaml, params/agent.yaml   the resolved configs
    params/run.yaml                      task, overrides, seed, engine: how to rebuild it
    params/versions.yaml                 package versions and the git state
    model_<iterations>.pt                checkpoints (written atomically)
    progress.jsonl                       one JSON object per iteration
    events.out.tfevents.*                TensorBoard scalars
    videos/, exported/                   when asked for
"""

from __future__ import annotations

import datetime as _dt
import re
from pathlib import Path

from robolearn.errors import RobolearnError

CHECKPOINT_RE = re.compile(r"^model_(\d+)\.pt$")


def new_run_dir(log_root: Path, experiment: str, run_name: str = "") -> Path:
    """A fresh run folder path (not created); an existing one is an error, never reused."""
    stamp = _dt.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    name = f"{stamp}_{run_name}" if run_name else stamp
    if run_name and not re.fullmatch(r"[A-Za-z0-9._-]+", run_name):
        raise RobolearnError(
            f"run name {run_name!r} may only hold letters, digits, '.', '_' and '-'"
        )
    path = log_root / experiment / name
    if path.exists():
        raise RobolearnError(f"run folder {path} already exists; choose another --run_name")
    return path


def list_runs(log_root: Path, experiment: str) -> list[Path]:
    """Run folders of an experiment, oldest first (their names start with a timestamp)."""
    root = log_root / experiment
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and (p / "params").is_dir())


def checkpoints(run_dir: Path) -> list[Path]:
    """Checkpoints of a run, by iteration."""
    found = [
        (int(m.group(1)), p)
        for p in run_dir.glob("model_*.pt")
        if (m := CHECKPOINT_RE.match(p.name))
    ]
    return [p for _, p in sorted(found)]


def resolve_run(log_root: Path, experiment: str, load_run: str | None) -> Path:
    """The run folder ``load_run`` names (a folder name, a regex, or a path), else the latest."""
    if load_run and Path(load_run).is_dir():
        return Path(load_run)
    runs = list_runs(log_root, experiment)
    if not runs:
        raise RobolearnError(f"no runs of {experiment!r} under {log_root / experiment}")
    if not load_run:
        return runs[-1]
    matching = [
        r for r in runs if re.fullmatch(load_run, r.name) or r.name.endswith(f"_{load_run}")
    ]
    if not matching:
        names = ", ".join(r.name for r in runs[-5:])
        raise RobolearnError(f"no run of {experiment!r} matches {load_run!r}; latest runs: {names}")
    return matching[-1]


def resolve_checkpoint(run_dir: Path, checkpoint: str | None) -> Path:
    """The checkpoint file in ``run_dir`` named by ``checkpoint`` (file name, regex), else the
    latest."""
    found = checkpoints(run_dir)
    if checkpoint:
        path = Path(checkpoint)
        if path.is_file():
            return path
        matching = [p for p in found if re.fullmatch(checkpoint, p.name) or p.name == checkpoint]
        if not matching:
            raise RobolearnError(
                f"no checkpoint {checkpoint!r} in {run_dir}; there: "
                f"{', '.join(p.name for p in found) or 'none'}"
            )
        return matching[-1]
    if not found:
        raise RobolearnError(f"run {run_dir} has no checkpoint (model_<iteration>.pt)")
    return found[-1]
