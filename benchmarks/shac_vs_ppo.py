"""The differentiable learner (SHAC) against PPO: the same task on the same engine, several
seeds, return against env steps and against wall-clock time, printed as markdown.

    python benchmarks/shac_vs_ppo.py --seeds 0 1 2
    python benchmarks/shac_vs_ppo.py --task quadruped_walk --seeds 0 --learners shac ppo \
        --shac_envs 16 --horizon 16 --shac_iterations 15 --ppo_envs 64 --ppo_iterations 10 \
        --substeps 5 --threshold 5 --eval_envs 0 \
        --overrides env.rewards.joint_acc.weight=0 env.rewards.torques.weight=0 \
        env.rewards.feet_air_time.weight=0 env.rewards.undesired_contacts.weight=0

Each run is a ``robolearn train`` process (``--algo shac`` or PPO) on ``newton-cpu`` with
Newton's Featherstone solver; PPO also runs on the ``cpu`` engine (MuJoCo), the engine a
user would pick for PPO here, as a reference. "To threshold" is the first iteration whose
mean training return (the episodes that ended in it, with the exploration noise) reached
``--threshold``; "eval return" is the final policy's mean return over one episode of each
of ``--eval_envs`` envs (``robolearn play --eval``, deterministic actions, on the engine
it trained on).
Runs alternate between the learners, so that the machine's load falls on both alike.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile


def train(args, learner: str, seed: int, root: str) -> dict:
    engine = "cpu" if learner == "ppo-cpu" else "newton-cpu"
    cmd = [sys.executable, "-m", "robolearn", "train", "--task", args.task, "--seed", str(seed)]
    cmd += ["--engine", engine, "--log_root", root, "--run_name", f"{learner}_{seed}"]
    if learner == "shac":
        cmd += ["--algo", "shac", "--num_envs", str(args.shac_envs)]
        cmd += ["--max_iterations", str(args.shac_iterations), f"agent.shac.horizon={args.horizon}"]
    else:
        cmd += ["--max_iterations", str(args.ppo_iterations)]
        if args.ppo_envs:
            cmd += ["--num_envs", str(args.ppo_envs)]
    if engine.startswith("newton"):
        cmd += ["env.sim.newton.solver=featherstone", f"env.sim.newton.substeps={args.substeps}"]
    cmd += list(args.overrides)
    out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ})
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["?"])[-1]}
    run_dir = sorted(glob.glob(os.path.join(root, "*", f"*_{learner}_{seed}")))[-1]
    with open(os.path.join(run_dir, "progress.jsonl")) as f:
        records = [json.loads(line) for line in f]
    checkpoint = sorted(
        glob.glob(os.path.join(run_dir, "model_*.pt")),
        key=lambda p: int(p.rsplit("_", 1)[1][:-3]),
    )[-1]
    return {"records": records, "checkpoint": checkpoint, "engine": engine}


def evaluate(args, run: dict) -> float | None:
    if not args.eval_envs:
        return None
    cmd = [sys.executable, "-m", "robolearn", "play", "--task", args.task, "--checkpoint"]
    cmd += [run["checkpoint"], "--eval", "--num_envs", str(args.eval_envs)]
    cmd += ["--engine", run["engine"], "--json"]
    if run["engine"].startswith("newton"):
        cmd += [f"env.sim.newton.substeps={args.substeps}"]
    out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ})
    if out.returncode != 0:
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])["mean_return"]


def summarize(args, run: dict) -> dict:
    records = run["records"]
    curve = [
        (r["env_steps"], r["wall_time"] / 60, r["Train/mean_reward"])
        for r in records
        if r.get("Train/mean_reward") is not None
    ]
    reached = next(
        (r for r in records if (r.get("Train/mean_reward") or -1e9) >= args.threshold), None
    )
    returns = [r["Train/mean_reward"] for r in records if r.get("Train/mean_reward") is not None]
    return {
        "steps_to": reached["env_steps"] if reached else None,
        "minutes_to": reached["wall_time"] / 60 if reached else None,
        "final_train": statistics.mean(returns[-5:]) if returns else None,
        "env_steps": records[-1]["env_steps"],
        "minutes": records[-1]["wall_time"] / 60,
        "eval": evaluate(args, run),
        "curve": curve,
    }


def _at(curve: list, mark: float, axis: int) -> float | None:
    """The latest training return at or before ``mark`` on ``axis`` (0: env steps,
    1: minutes); None before the first, and past the run's end (it never got there)."""
    known = [point[2] for point in curve if point[axis] <= mark]
    if not known or mark > curve[-1][axis]:
        return None
    return known[-1]


def print_curves(results: dict, marks: list, axis: int, label: str) -> None:
    print(f"\nMean training return over the seeds, by {label}:\n")
    print("| learner | " + " | ".join(format(m, ",g") for m in marks) + " |")
    print("|---|" + "---:|" * len(marks))
    for learner, runs in results.items():
        ok = [r for r in runs if "error" not in r]
        cells = []
        for mark in marks:
            values = [_at(r["curve"], mark, axis) for r in ok]
            known = [v for v in values if v is not None]
            cells.append(f"{statistics.mean(known):.2f}" if len(known) == len(values) else "-")
        print(f"| {learner} | " + " | ".join(cells) + " |")


def _fmt(values: list, spec: str) -> str:
    known = [v for v in values if v is not None]
    if not known:
        return "not reached"
    text = " / ".join("-" if v is None else format(v, spec) for v in values)
    return text if len(known) == len(values) else f"{text} ({len(known)} of {len(values)})"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="cartpole_balance")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--shac_envs", type=int, default=64)
    p.add_argument("--horizon", type=int, default=32)
    p.add_argument("--shac_iterations", type=int, default=60)
    p.add_argument("--ppo_iterations", type=int, default=150)
    p.add_argument("--ppo_envs", type=int, default=None, help="default: the task's")
    p.add_argument("--eval_envs", type=int, default=64, help="0: no evaluation")
    p.add_argument("--substeps", type=int, default=2, help="Featherstone steps per physics step")
    p.add_argument("--threshold", type=float, default=4.0, help="training return to reach")
    p.add_argument("--learners", nargs="+", default=["shac", "ppo", "ppo-cpu"])
    p.add_argument("--overrides", nargs="*", default=[], help="env/agent overrides for all runs")
    p.add_argument(
        "--step_marks", type=float, nargs="+", default=[16384, 32768, 65536, 122880, 614400]
    )
    p.add_argument("--minute_marks", type=float, nargs="+", default=[0.05, 0.1, 0.2, 0.5, 1.0])
    p.add_argument("--json", help="also write every run's figures and curve here")
    p.add_argument("--report", help="print the tables of an earlier run's --json, train nothing")
    args = p.parse_args()
    if args.report:
        with open(args.report) as f:
            saved = json.load(f)
        args.task, args.seeds = saved["args"]["task"], saved["args"]["seeds"]
        args.threshold, args.json = saved["args"]["threshold"], None
        report(args, saved["results"])
        return
    results: dict[str, list[dict]] = {name: [] for name in args.learners}
    with tempfile.TemporaryDirectory() as root:
        for seed in args.seeds:
            for learner in args.learners:
                run = train(args, learner, seed, root)
                summary = {"error": run["error"]} if "error" in run else summarize(args, run)
                results[learner].append(summary)
                brief = {k: v for k, v in summary.items() if k != "curve"}
                print(learner, seed, json.dumps(brief), file=sys.stderr, flush=True)
    report(args, results)


def report(args, results: dict[str, list[dict]]) -> None:
    """The markdown tables of ``results`` (per learner, one summary per seed)."""
    print(f"\n{args.task}, seeds {args.seeds}; threshold: training return {args.threshold}\n")
    print(
        "| learner | engine | env steps to threshold | minutes to threshold | final training "
        "return | eval return | env steps | minutes |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for learner, runs in results.items():
        ok = [r for r in runs if "error" not in r]
        if len(ok) < len(runs):
            errors = [r["error"] for r in runs if "error" in r]
            print(f"| {learner} | | error: {errors[0]} | | | | | |")
            continue
        engine = "cpu (MuJoCo)" if learner == "ppo-cpu" else "newton-cpu featherstone"
        cols = [
            _fmt([r["steps_to"] for r in ok], ",.0f"),
            _fmt([r["minutes_to"] for r in ok], ".2f"),
            _fmt([r["final_train"] for r in ok], ".2f"),
            _fmt([r["eval"] for r in ok], ".2f"),
            f"{ok[0]['env_steps']:,}",
            _fmt([r["minutes"] for r in ok], ".2f"),
        ]
        print(f"| {learner} | {engine} | " + " | ".join(cols) + " |")
    print_curves(results, args.step_marks, 0, "env steps")
    print_curves(results, args.minute_marks, 1, "minutes of training")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "results": results}, f)


if __name__ == "__main__":
    main()
