"""Check that a refactor left learning bit-identical: train every shipped task briefly at two
commits and compare the checkpoints tensor by tensor.

    python benchmarks/same_learning.py BASE_COMMIT            # HEAD's working tree vs BASE
    python benchmarks/same_learning.py BASE --tasks cartpole_balance --iterations 3

Each side trains ``--iterations`` iterations of ``--num_envs`` envs on ``cpu`` with one
seed; the base side runs from a temporary ``git worktree`` of BASE with this checkout's
virtual environment. The result is one line a task: identical, or the first tensor that
differs and by how much. Exit status 1 when any task differs.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
from train_command import train_command

ROOT = Path(__file__).resolve().parent.parent
TASKS = [
    "cartpole_balance",
    "humanoid_walk",
    "humanoid_walk_rough",
    "quadruped_walk",
    "quadruped_walk_rough",
]


def train(tree: Path, task: str, log_root: Path, iterations: int, num_envs: int) -> Path:
    """Train ``task`` from the checkout at ``tree``; the run folder it wrote."""
    env = dict(os.environ, PYTHONPATH=str(tree), OMP_NUM_THREADS="1")
    cmd = train_command(task, num_envs, iterations, log_root, "--seed", "1", "--device", "cpu")
    subprocess.run(cmd, cwd=tree, env=env, check=True, stdout=subprocess.DEVNULL)
    runs = sorted(p for p in log_root.rglob("model_*.pt"))
    if not runs:
        raise SystemExit(f"{task}: no checkpoint written under {log_root}")
    return max(runs, key=lambda p: int(p.stem.split("_")[1]))


def first_difference(a: object, b: object, path: str = "") -> str | None:
    """Where two checkpoint trees differ, or None when they are bit-identical."""
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"{path}: shape/dtype {tuple(a.shape)}/{a.dtype} vs {tuple(b.shape)}/{b.dtype}"
        if not torch.equal(a, b):
            gap = (a.double() - b.double()).abs().max().item() if a.is_floating_point() else "?"
            return f"{path}: values differ (max gap {gap})"
        return None
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return f"{path}: keys {sorted(map(str, a.keys() ^ b.keys()))} on one side only"
        for key in a:
            found = first_difference(a[key], b[key], f"{path}/{key}")
            if found:
                return found
        return None
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return f"{path}: lengths {len(a)} vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = first_difference(x, y, f"{path}[{i}]")
            if found:
                return found
        return None
    return None if a == b else f"{path}: {a!r} vs {b!r}"


def compared(base: Path, head: Path) -> str | None:
    """The learned state (model, optimizer, iterations) of two checkpoints compared."""
    a = torch.load(base, weights_only=True)
    b = torch.load(head, weights_only=True)
    keys = ("model", "optimizer", "iterations")
    return first_difference({k: a.get(k) for k in keys}, {k: b.get(k) for k in keys})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", help="the commit to compare against")
    parser.add_argument("--tasks", nargs="+", default=TASKS)
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--num_envs", type=int, default=64)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="same_learning_"))
    base_tree = work / "base"
    subprocess.run(
        ["git", "worktree", "add", "--detach", "-q", str(base_tree), args.base],
        cwd=ROOT,
        check=True,
    )
    # The editable install maps robolearn.tasks (and robots, assets, envs) to THIS checkout's
    # top-level folders; links inside the base tree's package make the base import its own.
    for name in ("robots", "tasks", "assets", "envs"):
        if (base_tree / name).is_dir() and not (base_tree / "robolearn" / name).exists():
            (base_tree / "robolearn" / name).symlink_to(base_tree / name)
    failed = False
    try:
        for task in args.tasks:
            a = train(base_tree, task, work / "runs_base" / task, args.iterations, args.num_envs)
            b = train(ROOT, task, work / "runs_head" / task, args.iterations, args.num_envs)
            gap = compared(a, b)
            failed |= gap is not None
            print(f"{task}: " + ("identical" if gap is None else f"DIFFERS at {gap}"), flush=True)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(base_tree)], cwd=ROOT)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
