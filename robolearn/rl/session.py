"""Building a task's env and agent from command-line choices, for train, play and export."""

from __future__ import annotations

import dataclasses
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

import torch

from robolearn.config import apply_override, parse_overrides
from robolearn.errors import RobolearnError
from robolearn.registry import TaskSpec, get_task
from robolearn.rl.config import AgentCfg

DEVICES_HELP = "auto, cpu, cuda or cuda:N"


def resolve_device_engine(device: str, engine: str | None) -> str:
    """The engine to run, from ``--device`` and ``--engine``: the policy runs on the engine's
    device, so the two must agree."""
    if device not in ("auto", "cpu") and not device.startswith("cuda"):
        raise RobolearnError(f"unknown device {device!r}; valid: {DEVICES_HELP}")
    if engine is None:
        return {"auto": "auto", "cpu": "cpu"}.get(device, device)
    on_gpu = engine.startswith("cuda")
    if device == "cpu" and on_gpu:
        raise RobolearnError("--device cpu with --engine cuda: policy and physics share one device")
    if device.startswith("cuda") and not on_gpu:
        raise RobolearnError(
            f"--device {device} with --engine {engine}: the {engine} engine keeps its state in "
            "host memory; use --device cpu, or --engine cuda to train on the GPU"
        )
    return engine


def split_overrides(items: list[str]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """``env.x=1 agent.y=2`` into env and agent overrides; other prefixes are errors."""
    env, agent = [], []
    for key, value in parse_overrides(items):
        head, _, rest = key.partition(".")
        if head == "env" and rest:
            env.append((rest, value))
        elif head == "agent" and rest:
            agent.append((rest, value))
        else:
            raise RobolearnError(
                f"override {key!r} must start with 'env.' or 'agent.' "
                "(e.g. env.rewards.track_lin_vel_xy.weight=2.0, agent.algorithm.learning_rate=3e-4)"
            )
    return env, agent


@dataclasses.dataclass
class Setup:
    """A task's configs with the user's choices applied."""

    spec: TaskSpec
    env_cfg: Any
    agent_cfg: AgentCfg
    overrides: list[str]


def build_setup(
    task: str,
    overrides: list[str],
    *,
    play: bool = False,
    num_envs: int | None = None,
    engine: str | None = None,
    seed: int | None = None,
    max_iterations: int | None = None,
) -> Setup:
    """Configs for ``task`` with overrides and flags applied, validated before anything runs."""
    spec = get_task(task)
    env_cfg, agent_cfg = spec.make_env_cfg(play=play), spec.agent_cfg()
    env_over, agent_over = split_overrides(overrides)
    for path, value in env_over:
        apply_override(env_cfg, path, value, root_name="env")
    for path, value in agent_over:
        apply_override(agent_cfg, path, value, root_name="agent")
    if num_envs is not None:
        if num_envs < 1:
            raise RobolearnError(f"--num_envs must be >= 1, got {num_envs}")
        env_cfg.scene.num_envs = num_envs
    if engine is not None:
        env_cfg.sim.engine = engine
    if seed is not None:
        env_cfg.seed = seed
    if max_iterations is not None:
        if max_iterations < 1:
            raise RobolearnError(f"--max_iterations must be >= 1, got {max_iterations}")
        agent_cfg.max_iterations = max_iterations
    if not agent_cfg.experiment_name:
        agent_cfg.experiment_name = spec.name
    return Setup(spec, env_cfg, agent_cfg, list(overrides))


def versions() -> dict[str, Any]:
    """Versions of what a run depends on, and the git state of robolearn's checkout."""
    out: dict[str, Any] = {"python": platform.python_version(), "platform": platform.platform()}
    for dist in (
        "robolearn",
        "torch",
        "mujoco",
        "mujoco-warp",
        "warp-lang",
        "rsl-rl-lib",
        "gymnasium",
        "tensordict",
        "numpy",
    ):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    out["cuda"] = torch.version.cuda if torch.cuda.is_available() else None
    root = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        if commit.returncode == 0:
            status = subprocess.run(
                ["git", "-C", str(root), "status", "--porcelain"],
                capture_output=True,
                text=True,
                timeout=10,
            )
            out["git_commit"] = commit.stdout.strip()
            out["git_dirty"] = bool(status.stdout.strip())
    except (OSError, subprocess.TimeoutExpired):
        pass
    return out
