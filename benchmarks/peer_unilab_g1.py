"""The Unitree G1 side by side with UniLab 1.5.2 on this CPU: env steps/s while training,
robolearn's g1_walk against UniLab's ``g1_walk_flat`` on its two CPU learners.

UniLab runs from a virtual environment of its own (``--unilab_bin``: the folder of its
``train`` command; made with ``python -m venv V && V/bin/pip install torch==2.13.0
"unilab[mujoco]==1.5.2"`` and a constraints file holding torch at the CPU build). Its G1
meshes download at first use, which fails offline: its MJCF is in the wheel
(``unilab/assets/robots/g1/{scene_flat,g1}.xml``), and Menagerie's ``unitree_g1`` meshes
have the same file names, so a folder holding those two files and an ``assets/`` of the
meshes, at a path without ``robots/`` in it (that path is what triggers the download), is
``--unilab_scene``. Its SAC and FlashSAC refuse to run without CUDA or MPS; its PPO
(rsl-rl 5.5) and APPO (a collector process and a V-trace learner) run on the CPU.

Each side's own train command runs a few iterations, the sides in turn for ``--rounds``:
robolearn's median ``Perf/env_steps_per_s`` of ``progress.jsonl`` after the first
iteration, UniLab PPO's median "Steps per second" line after the first, UniLab APPO's env
steps over its training wall time (its ``run_summary.json``; it prints no per-iteration
line when piped). Each stack trains its own task with its own agent: UniLab 2048 envs, 24
steps each per iteration, 512-256-128 MLPs, 29 joints driven, physics at 150 Hz (3 steps
per env step); g1_walk 1024 envs, 24 steps, 128-128-128 MLPs and the mirrored update, 13
joints driven, 100 Hz (2 steps). ``g1_walk@150Hz`` runs g1_walk at UniLab's rate.

    python benchmarks/peer_unilab_g1.py --unilab_bin /work/unilab_venv/bin \\
        --unilab_scene /work/unilab_g1/scene_flat.xml --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

AT_150_HZ = ["env.sim.physics_dt=0.006666666666666667", "env.decimation=3"]


def robolearn_rate(iterations: int, overrides: list[str], root: Path) -> float:
    """g1_walk's training env steps/s: the median iteration after the first."""
    cmd = [sys.executable, "-m", "robolearn", "train", "--task", "g1_walk", "--seed", "1"]
    cmd += ["--max_iterations", str(iterations), "--log_root", str(root), *overrides]
    subprocess.run(cmd, check=True, capture_output=True)
    (progress,) = root.glob("g1_walk/*/progress.jsonl")
    rows = [json.loads(line) for line in progress.read_text().splitlines()]
    return statistics.median(r["Perf/env_steps_per_s"] for r in rows[1:])


def unilab_rate(args, algo: str, root: Path) -> float:
    """UniLab's training env steps/s on ``algo`` (ppo or appo)."""
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    iterations = args.unilab_iterations if algo == "ppo" else args.appo_iterations
    cmd = [str(Path(args.unilab_bin) / "train"), "--algo", algo, "--task", "g1_walk_flat"]
    cmd += ["--sim", "mujoco", f"env.scene.model_file={args.unilab_scene}"]
    cmd += ["training.device=cpu", "training.no_play=true", f"algo.max_iterations={iterations}"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=root, env=env)
    if algo == "ppo":
        rates = [float(m) for m in re.findall(r"Steps per second:\s*([\d.]+)", out.stdout)]
        return statistics.median(rates[1:])
    (summary,) = root.glob("logs/appo/*/*/run_summary.json")
    facts = json.loads(summary.read_text())
    return facts["total_env_steps"] / facts["training_wall_time_sec"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--unilab_bin", required=True, help="the bin folder of UniLab's venv")
    parser.add_argument("--unilab_scene", required=True, help="its scene_flat.xml, meshes local")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--iterations", type=int, default=6, help="robolearn's per run")
    parser.add_argument("--unilab_iterations", type=int, default=4, help="UniLab PPO's per run")
    parser.add_argument("--appo_iterations", type=int, default=3, help="UniLab APPO's per run")
    args = parser.parse_args()
    sides = {
        "robolearn g1_walk (PPO)": lambda root: robolearn_rate(args.iterations, [], root),
        "robolearn g1_walk@150Hz (PPO)": lambda root: robolearn_rate(
            args.iterations, AT_150_HZ, root
        ),
        "UniLab g1_walk_flat (PPO)": lambda root: unilab_rate(args, "ppo", root),
        "UniLab g1_walk_flat (APPO)": lambda root: unilab_rate(args, "appo", root),
    }
    results: dict[str, list[float]] = {name: [] for name in sides}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for name, run in sides.items():
                slug = re.sub(r"\W+", "_", name)
                root = Path(tmp) / f"{slug}_{r}"  # a folder per run: one run folder each
                root.mkdir()
                results[name].append(run(root))
                print(f"round {r}: {name}: {results[name][-1]:,.0f} env steps/s", flush=True)
    base = max(results["UniLab g1_walk_flat (PPO)"])
    print("\n| side | env steps/s (rounds) | best | vs UniLab PPO |\n|---|---|---:|---:|")
    for name, rates in results.items():
        listed = " / ".join(f"{x:,.0f}" for x in rates)
        print(f"| {name} | {listed} | {max(rates):,.0f} | {max(rates) / base:.2f}x |")


if __name__ == "__main__":
    main()
