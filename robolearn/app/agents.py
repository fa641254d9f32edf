"""A runner for a task's env and agent config: the networks sized to the env's observation
groups (a CNN for each image group), and for distillation the teacher's checkpoint found,
checked and loaded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from robolearn.app.runs import pretrained_path
from robolearn.errors import RobolearnError
from robolearn.rl.checkpoint import load_checkpoint
from robolearn.rl.config import AgentCfg
from robolearn.rl.runner import Runner

PRETRAINED = "pretrained:"
"""Prefix of ``agent.distillation.teacher`` and ``agent.init_from`` naming a checkpoint
shipped with robolearn."""


def image_groups(env) -> set[str]:
    """The env's observation groups delivered as images (channels, height, width)."""
    shapes = env.observation_manager.group_shapes
    return {name for name, shape in shapes.items() if len(shape) == 3}


def checkpoint_path(spec: str) -> Path:
    """The checkpoint ``agent.distillation.teacher`` or ``agent.init_from`` names:
    ``pretrained:<task>`` or a path."""
    if spec.startswith(PRETRAINED):
        return pretrained_path(spec[len(PRETRAINED) :])
    return Path(spec).expanduser()


def load_teacher(spec: str, device: str) -> dict[str, Any]:
    """The teacher's checkpoint data; a checkpoint that holds no PPO actor (a distilled
    student's, say) is a RobolearnError."""
    data = load_checkpoint(checkpoint_path(spec), map_location=device)
    agent = data.get("agent") or {}
    if "actor" not in agent or "actor_state_dict" not in data["model"]:
        raise RobolearnError(
            f"agent.distillation.teacher {spec} holds no PPO policy (no actor); a teacher "
            "is a checkpoint trained with PPO"
        )
    return data


def make_runner(env, agent_cfg: AgentCfg, vec_env=None, **runner_kwargs: Any) -> Runner:
    """A :class:`Runner` of ``agent_cfg`` on ``env`` (``vec_env``: rsl-rl's view of it, made
    here if None), with the teacher loaded for distillation; ``runner_kwargs`` go to the
    runner (``run_dir``, ``meta``, ``dist_info``, ``monitor``). ``meta["agent"]``, when
    given as None, is filled with the rsl-rl config the checkpoints record, and
    ``meta["obs_shapes"]`` with each observation group's shape."""
    from robolearn.wrappers.rsl_rl import RslRlVecEnv

    device = str(env.device)
    teacher = None
    if agent_cfg.distillation.enabled:
        teacher = load_teacher(agent_cfg.distillation.teacher, device)
    agent = agent_cfg.to_rsl_rl(
        device,
        image_groups=image_groups(env),
        teacher=None if teacher is None else teacher["agent"]["actor"],
    )
    meta = runner_kwargs.get("meta")
    if meta is not None and "agent" in meta and meta["agent"] is None:
        meta["agent"] = agent
        # what rebuilds an image or recurrent actor without the env (load_policy)
        shapes = env.observation_manager.group_shapes
        meta["obs_shapes"] = {name: list(shape) for name, shape in shapes.items()}
    runner = Runner(vec_env or RslRlVecEnv(env), agent, device=device, **runner_kwargs)
    if teacher is not None:
        runner.load_teacher(teacher, agent_cfg.distillation.teacher)
    if agent_cfg.init_from:
        runner.load_weights(
            load_checkpoint(checkpoint_path(agent_cfg.init_from), map_location=device),
            f"agent.init_from {agent_cfg.init_from}",
        )
    return runner
