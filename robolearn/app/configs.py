"""A run's configs: a task's (or a run folder's) env and agent configs with the overrides and the
flags applied and checked, for train, play, export and bench; and the run context."""

from __future__ import annotations

import copy
import dataclasses
import platform
import subprocess
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import torch

from robolearn.app.runs import RunParams, check_name
from robolearn.config import apply_override, parse_overrides
from robolearn.errors import RobolearnError
from robolearn.registry import TaskSpec, get_task
from robolearn.rl.config import AgentCfg
from robolearn.rl.distributed import SINGLE, DistInfo, Monitor
from robolearn.sim import resolve_engine

DEVICES_HELP = "auto, cpu, cuda or cuda:N"


SEED_MAX = 2**32 - 1
"""Seeds are 0 to 2**32 - 1: what every random generator a user may bring accepts."""


def resolve_device_engine(device: str, engine: str | None) -> str | None:
    """The engine to run, from ``--device`` and ``--engine``: the policy runs on the engine's
    device, so the two must agree. None when neither flag chose one: the task's config
    (``env.sim.engine``, ``auto`` unless overridden) decides."""
    if device not in ("auto", "cpu") and not device.startswith("cuda"):
        raise RobolearnError(f"unknown device {device!r}; valid: {DEVICES_HELP}")
    if engine is None:
        return {"auto": None, "cpu": "cpu"}.get(device, device)
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
class RunContext:
    """What the steps of one command's run share once the flags are read: the task, where
    it runs, the process group it is part of, and where its lines go.

    ``robolearn train`` makes one after starting the process group (if any); its steps take
    it instead of each of these as a parameter of its own."""

    task: str
    """The task's registered name."""
    engine: str | None
    """The engine ``--device`` and ``--engine`` chose; None lets the task's config
    (``env.sim.engine``) decide."""
    log: Callable[[str], None] = print
    """Where progress lines go (nowhere on the ranks of a distributed run other than 0)."""
    dist: DistInfo = SINGLE
    """This process's rank in a distributed run (:data:`~robolearn.rl.distributed.SINGLE`
    alone)."""
    monitor: Monitor | None = None
    """The collectives that keep the ranks of a distributed run together; None alone."""
    threads: int | None = None
    """The physics threads of this rank (a distributed run shares the cores out); None
    keeps the config's."""


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
    replayed: Sequence[str] = (),
    num_envs: int | None = None,
    engine: str | None = None,
    seed: int | None = None,
    max_iterations: int | None = None,
) -> Setup:
    """Configs for ``task`` with overrides and flags applied, validated before anything runs.

    ``replayed`` are a run's recorded overrides, applied first (a checkpoint's, on the play
    variant): removing a term the variant already lacks is no error there."""
    spec = get_task(task)
    env_cfg, agent_cfg = spec.make_env_cfg(play=play), spec.agent_cfg()
    return finish_setup(
        spec,
        env_cfg,
        agent_cfg,
        overrides,
        replayed=replayed,
        num_envs=num_envs,
        engine=engine,
        seed=seed,
        max_iterations=max_iterations,
    )


def finish_setup(
    spec: TaskSpec,
    env_cfg: Any,
    agent_cfg: AgentCfg,
    overrides: list[str],
    *,
    earlier_overrides: Sequence[str] = (),
    replayed: Sequence[str] = (),
    num_envs: int | None = None,
    engine: str | None = None,
    seed: int | None = None,
    max_iterations: int | None = None,
) -> Setup:
    """``env_cfg`` and ``agent_cfg`` (a task's, or a run's reloaded from its params/) with
    ``overrides`` and the flags applied on top, validated before anything runs.

    ``earlier_overrides`` are those already in the configs (a reloaded run's); the Setup
    records them before ``overrides``, so that the task plus the recorded list rebuilds
    the configs (what ``--resume`` and ``play`` do).
    """
    flags = flag_overrides(
        num_envs=num_envs, engine=engine, seed=seed, max_iterations=max_iterations
    )
    for items, lenient in ((list(replayed), True), (overrides, False), (flags, False)):
        env_over, agent_over = split_overrides(items)
        for path, value in env_over:
            apply_override(env_cfg, path, value, root_name="env", absent_removal_ok=lenient)
        for path, value in agent_over:
            apply_override(agent_cfg, path, value, root_name="agent", absent_removal_ok=lenient)
    if not agent_cfg.experiment_name:
        agent_cfg.experiment_name = spec.name
    try:
        _check(env_cfg, agent_cfg)
    except RobolearnError as exc:  # a value a flag set is named as the flag
        raise RobolearnError(_as_flags(str(exc), flags)) from exc
    return Setup(spec, env_cfg, agent_cfg, [*earlier_overrides, *replayed, *overrides])


FLAG_PATHS = {
    "num_envs": "env.scene.num_envs",
    "engine": "env.sim.engine",
    "seed": "env.seed",
    "max_iterations": "agent.max_iterations",
}
"""The config field each run flag sets: ``--num_envs N`` is ``env.scene.num_envs=N``, and
so on, so that a flag and an override are one path through the configs."""


def flag_overrides(**flags: Any) -> list[str]:
    """The flags given (not None) as the overrides they stand for (:data:`FLAG_PATHS`),
    applied after the user's overrides; the run records its overrides without them (a
    checkpoint's flags are its ``seed`` and ``num_envs``)."""
    return [f"{FLAG_PATHS[name]}={value}" for name, value in flags.items() if value is not None]


def _as_flags(message: str, flags: list[str]) -> str:
    """An error about a field a flag set, naming the flag the user typed (env errors name
    a field without ``env.``, agent errors with ``agent.``)."""
    for flag, path in FLAG_PATHS.items():
        name = path.removeprefix("env.")
        if message.startswith(f"{name} ") and any(i.startswith(f"{path}=") for i in flags):
            return f"--{flag}{message[len(name) :]}"
    return message


def _check(env_cfg: Any, agent_cfg: AgentCfg) -> None:
    """Every check of a run's configs that needs no model, once, after all overrides."""
    num_envs = env_cfg.scene.num_envs
    if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
        raise RobolearnError(f"scene.num_envs must be >= 1 (an integer), got {num_envs!r}")
    resolve_engine(env_cfg.sim.engine)  # an unknown or unavailable engine fails here, early
    seed = env_cfg.seed
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= SEED_MAX:
        raise RobolearnError(f"the seed must be an integer from 0 to {SEED_MAX}, got {seed}")
    check_name(agent_cfg.experiment_name, "agent.experiment_name")
    agent_cfg.validate()
    _check_agent_fits_env(agent_cfg, env_cfg)
    from robolearn.env import check_cfg

    check_cfg(env_cfg)


def setup_from_run(
    source: RunParams,
    overrides: list[str],
    *,
    num_envs: int | None = None,
    engine: str | None = None,
    seed: int | None = None,
    max_iterations: int | None = None,
) -> Setup:
    """The configs a run started with (its params/), with ``overrides`` and the flags on
    top: the start of ``robolearn train --from``.

    The configs are checked as loaded first, so that a value edited into params/ by hand
    is an error naming the folder, not one that looks like the command line's."""
    try:
        finish_setup(
            get_task(source.task),
            copy.deepcopy(source.env_cfg),
            copy.deepcopy(source.agent_cfg),
            [],
            earlier_overrides=source.overrides,
        )
    except RobolearnError as exc:
        raise RobolearnError(f"{source.run_dir / 'params'}: {exc}") from exc
    return finish_setup(
        get_task(source.task),
        source.env_cfg,
        source.agent_cfg,
        overrides,
        earlier_overrides=source.overrides,
        num_envs=num_envs,
        engine=engine,
        seed=seed,
        max_iterations=max_iterations,
    )


def _check_agent_fits_env(agent_cfg: AgentCfg, env_cfg: Any) -> None:
    """The agent reads observation groups the task has, in batches the rollout can fill."""
    groups = list(env_cfg.observations)
    for role, names in agent_cfg.obs_groups.items():
        unknown = [n for n in names if n not in groups]
        if unknown:
            raise RobolearnError(
                f"agent.obs_groups.{role} names {', '.join(map(repr, unknown))}; "
                f"the task's observation groups: {', '.join(groups)}"
            )
    batch = env_cfg.scene.num_envs * agent_cfg.num_steps_per_env
    if agent_cfg.algorithm.num_mini_batches > batch:
        raise RobolearnError(
            f"agent.algorithm.num_mini_batches ({agent_cfg.algorithm.num_mini_batches}) exceeds "
            f"the rollout's {batch} samples (num_envs x num_steps_per_env)"
        )


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
    out.update(_git_state(Path(__file__).resolve().parents[2]))
    return out


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _git_state(root: Path) -> dict[str, Any]:
    """The commit and dirtiness of robolearn's own checkout; nothing for an installed copy.

    ``root`` is the folder above the robolearn package. Only when it is the top of a git
    checkout is that checkout robolearn's: an installed robolearn sits in site-packages,
    and a virtual environment inside a user's repository would otherwise record the
    user's commit as robolearn's.
    """
    top = _git(root, "rev-parse", "--show-toplevel")
    if top is None or Path(top).resolve() != root:
        return {}
    commit = _git(root, "rev-parse", "HEAD")
    status = _git(root, "status", "--porcelain")
    if commit is None or status is None:
        return {}
    return {"git_commit": commit, "git_dirty": bool(status)}
