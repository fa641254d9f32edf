"""A task's learning curve on this machine: evaluation metrics against env steps and time.

Trains with the real CLI (``robolearn train``), saving a checkpoint every ``--eval_every``
iterations, then evaluates each checkpoint with ``robolearn play --eval --json`` (the play
variant: no observation noise, no pushes; every env one whole episode). Writes a CSV and a
PNG plot and prints a markdown table. Wall-clock time is training time only.

    python benchmarks/learning_curve.py --task quadruped_walk --out docs/curves

On a task with a generated terrain it also records the curriculum's mean level over
training (overall and per sub-terrain type, from ``progress.jsonl``) and, with
``--terrain_level L``, a second evaluation with every env pinned to level L, reporting each
type's fall rate and tracking error there. ``--run DIR`` evaluates the checkpoints of a run
that trained already (e.g. one started by hand) instead of training.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
from pathlib import Path

COLUMNS = (
    "iteration",
    "env_steps",
    "wall_time_s",
    "train_mean_reward",
    "mean_return",
    "fall_rate",
    "lin_vel_error",
    "ang_vel_error",
    "success_rate",
    "body_pos_error",
    "anchor_pos_error",
    "joint_pos_error",
    "tracked_fraction",
)

EVAL_KEYS = {
    "lin_vel_error": "base_velocity/lin_vel_error",
    "ang_vel_error": "base_velocity/ang_vel_error",
    "body_pos_error": "motion/body_pos_error",
    "anchor_pos_error": "motion/anchor_pos_error",
    "joint_pos_error": "motion/joint_pos_error",
    "tracked_fraction": "motion/tracked_fraction",
}
"""Columns read from ``play --eval --json`` under another name: the velocity command's and
the motion-tracking command's."""


def robolearn(*args) -> str:
    cmd = [sys.executable, "-m", "robolearn", *map(str, args)]
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", required=True)
    parser.add_argument("--num_envs", type=int)
    parser.add_argument("--max_iterations", type=int)
    parser.add_argument("--eval_every", type=int, default=25)
    parser.add_argument("--eval_envs", type=int, default=256)
    parser.add_argument("--eval_from", type=int, default=0, help="skip earlier checkpoints")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--algo", help="the learner (robolearn train --algo); default: the task's")
    parser.add_argument("--log_root", help="keep the run here (default: a temporary folder)")
    parser.add_argument("--out", default="docs/curves", help="folder for the CSV and the plot")
    parser.add_argument("--run", help="evaluate this run folder's checkpoints; do not train")
    parser.add_argument("--terrain_level", type=int, help="also evaluate pinned to this level")
    parser.add_argument("overrides", nargs="*", help="passed to robolearn train")
    args = parser.parse_args()
    run = Path(args.run) if args.run else train_run(args)
    rows = [
        evaluate_checkpoint(args, run, ckpt)
        for ckpt in checkpoints(run)
        if int(ckpt.stem.split("_")[1]) >= args.eval_from
    ]
    write_outputs(args, rows)
    print(f"run folder: {run}")


def train_run(args) -> Path:
    """Train with the CLI; returns the run folder."""
    root = Path(args.log_root or tempfile.mkdtemp(prefix="curve-"))
    train = [
        "train",
        "--task",
        args.task,
        "--seed",
        args.seed,
        "--log_root",
        root,
        f"agent.save_interval={args.eval_every}",
        *args.overrides,
    ]
    if args.num_envs:
        train += ["--num_envs", args.num_envs]
    if args.algo:
        train += ["--algo", args.algo]
    if args.max_iterations:
        train += ["--max_iterations", args.max_iterations]
    robolearn(*train)
    (run,) = sorted((root / args.task).iterdir())[-1:]
    return run


def checkpoints(run: Path) -> list[Path]:
    return sorted(run.glob("model_*.pt"), key=lambda p: int(p.stem.split("_")[1]))


def evaluate_checkpoint(args, run: Path, ckpt: Path) -> dict:
    """One row: the checkpoint's training progress and its evaluation."""
    progress = {
        r["iteration"]: r
        for r in map(json.loads, (run / "progress.jsonl").read_text().splitlines())
    }
    it = int(ckpt.stem.split("_")[1])
    play = ["play", "--task", args.task, "--checkpoint", ckpt, "--eval", "--json"]
    play += ["--num_envs", args.eval_envs]
    # the env overrides the run trained with (a robot's model file, say) hold for its play
    play += [o for o in args.overrides if o.startswith("env.")]
    metrics = json.loads(robolearn(*play).strip().splitlines()[-1])
    p = progress[it]
    row = {
        "iteration": it,
        "env_steps": p["env_steps"],
        "wall_time_s": round(p["wall_time"], 1),
        "train_mean_reward": p["Train/mean_reward"],
        # tracking errors exist only for tasks with a velocity command (its step metrics)
        **{k: metrics.get(EVAL_KEYS.get(k, k)) for k in COLUMNS[4:]},
    }
    prefix = "Curriculum/terrain_levels/"
    row |= {f"train_level/{k[len(prefix) :]}": v for k, v in p.items() if k.startswith(prefix)}
    if args.terrain_level is not None and "terrain" in metrics:
        pinned = [*play, f"env.scene.terrain.level={args.terrain_level}"]
        at_level = json.loads(robolearn(*pinned).strip().splitlines()[-1])
        for name, stats in at_level["terrain"]["types"].items():
            row[f"falls@{args.terrain_level}/{name}"] = stats["fall_rate"]
            row[f"lin_err@{args.terrain_level}/{name}"] = stats[EVAL_KEYS["lin_vel_error"]]
    print(json.dumps(row), flush=True)
    return row


def write_outputs(args, rows: list[dict]) -> None:
    """The CSV, the plot and a markdown table."""
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    fields = list(dict.fromkeys(k for r in rows for k in r))
    with open(out_dir / f"{args.task}.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    plot(rows, args.task, out_dir / f"{args.task}.png")
    if rows and rows[-1].get("body_pos_error") is not None:
        print_tracking(rows)
        return
    print(
        "| iteration | env steps | wall clock | train reward | eval return | fall rate "
        "| lin vel err (m/s) | yaw rate err (rad/s) | success |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        err = lambda v: "-" if v is None else f"{v:.3f}"  # noqa: E731
        print(
            f"| {r['iteration']} | {r['env_steps']:,} | {r['wall_time_s'] / 60:.1f} min | "
            f"{_num(r['train_mean_reward'])} | {r['mean_return']:.2f} | {r['fall_rate']:.3f} | "
            f"{err(r['lin_vel_error'])} | {err(r['ang_vel_error'])} | "
            f"{err(r['success_rate'])} |"
        )
    met = first_meeting_targets(rows)
    if met is not None:
        print(
            f"\nwalking thresholds (falls < {TARGETS['fall_rate']:.0%}, linear error < "
            f"{TARGETS['lin_vel_error']} m/s, yaw-rate error < {TARGETS['ang_vel_error']} rad/s) "
            f"first met at iteration {met['iteration']}: {met['env_steps']:,} env steps, "
            f"{met['wall_time_s'] / 60:.1f} min"
        )
    elif rows and rows[-1]["lin_vel_error"] is not None:
        print("\nwalking thresholds not met at any checkpoint")
    print_columns(rows, [k for k in fields if k.startswith("train_level/")], "level")
    print_columns(rows, [k for k in fields if k.startswith("falls@")], "falls")


TARGETS = {"fall_rate": 0.05, "lin_vel_error": 0.25, "ang_vel_error": 0.3}
"""The walking thresholds of the velocity tasks: each metric below its value."""
TRACKING_TARGETS = {"fall_rate": 0.05, "body_pos_error": 0.05}
"""The motion-tracking tasks' thresholds: under 5% falls, body positions within 5 cm."""


def _num(value: float | None) -> str:
    """A table's number, or a dash (the train reward of an iteration in which no episode
    ended)."""
    return "-" if value is None else f"{value:.2f}"


def first_meeting_targets(rows: list[dict], targets: dict | None = None) -> dict | None:
    """The first row whose evaluation meets every threshold of ``targets`` (default:
    :data:`TARGETS`)."""
    for r in rows:
        if all(r.get(k) is not None and r[k] < v for k, v in (targets or TARGETS).items()):
            return r
    return None


def print_tracking(rows: list[dict]) -> None:
    """The markdown table of a motion-tracking task, and when it met its thresholds."""
    print(
        "| iteration | env steps | wall clock | train reward | eval return | fall rate "
        "| body pos err (m) | anchor pos err (m) | joint pos err (rad) | clip tracked |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['iteration']} | {r['env_steps']:,} | {r['wall_time_s'] / 60:.1f} min | "
            f"{_num(r['train_mean_reward'])} | {r['mean_return']:.2f} | {r['fall_rate']:.3f} | "
            f"{r['body_pos_error']:.3f} | {r['anchor_pos_error']:.3f} | "
            f"{r['joint_pos_error']:.3f} | "
            f"{r['tracked_fraction']:.3f} |"
        )
    met = first_meeting_targets(rows, TRACKING_TARGETS)
    if met is None:
        print("\ntracking thresholds (falls < 5%, body positions within 5 cm) not met")
    else:
        print(
            f"\ntracking thresholds (falls < 5%, body positions within 5 cm) first met at "
            f"iteration {met['iteration']}: {met['env_steps']:,} env steps, "
            f"{met['wall_time_s'] / 60:.1f} min"
        )


def print_columns(rows: list[dict], keys: list[str], what: str) -> None:
    """A markdown table of ``keys`` (named ``<kind>/<name>``) by iteration, if any."""
    if not keys:
        return
    names = [k.split("/", 1)[1] for k in keys]
    print("\n| iteration | " + " | ".join(f"{what}: {n}" for n in names) + " |")
    print("|---:|" + "---:|" * len(names))
    for r in rows:
        print(f"| {r['iteration']} | " + " | ".join(f"{r[k]:.2f}" for k in keys) + " |")


def plot(rows: list[dict], task: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    minutes = [r["wall_time_s"] / 60 for r in rows]
    levels = [k for k in (rows[-1] if rows else {}) if k.startswith("train_level/")]
    fig, axes = plt.subplots(1, 4 if levels else 3, figsize=(17 if levels else 13, 3.6))
    axes[0].plot(minutes, [r["mean_return"] for r in rows], "o-", label="eval return")
    axes[0].plot(minutes, [r["train_mean_reward"] for r in rows], ".--", label="training episodes")
    axes[0].set_ylabel("episode return")
    axes[0].legend()
    axes[1].plot(minutes, [r["fall_rate"] for r in rows], "o-", color="C3")
    axes[1].set_ylabel("fall rate")
    axes[1].set_ylim(-0.02, 1.02)
    if rows and rows[-1].get("body_pos_error") is not None:
        axes[2].plot(minutes, [r["body_pos_error"] for r in rows], "o-", label="body pos (m)")
        axes[2].plot(minutes, [r["tracked_fraction"] for r in rows], "o-", label="clip tracked")
        axes[2].set_ylabel("tracking")
        axes[2].legend()
    elif rows and rows[-1]["lin_vel_error"] is not None:
        axes[2].plot(minutes, [r["lin_vel_error"] for r in rows], "o-", label="linear (m/s)")
        axes[2].plot(minutes, [r["ang_vel_error"] for r in rows], "o-", label="yaw rate (rad/s)")
        axes[2].set_ylabel("tracking error")
        axes[2].legend()
    for k in levels:
        style = "o-" if k.endswith("/mean") else ".--"
        axes[3].plot(minutes, [r[k] for r in rows], style, label=k.split("/", 1)[1])
    if levels:
        axes[3].set_ylabel("terrain level (training)")
        axes[3].legend(fontsize=7)
    for ax in axes:
        ax.set_xlabel("training wall clock (min)")
        ax.grid(alpha=0.3)
    steps = rows[-1]["env_steps"] if rows else 0
    fig.suptitle(f"{task}: learning curve on this machine ({steps / 1e6:.1f}M env steps)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
