"""A registered task's env built by name, with overrides as the command line takes them:
what every wrapper is given."""

from __future__ import annotations

from collections.abc import Sequence

from robolearn.config import apply_override, parse_overrides
from robolearn.env import ManagerBasedRLEnv
from robolearn.errors import RobolearnError


def make_env(
    task: str,
    num_envs: int | None = None,
    engine: str | None = None,
    play: bool = False,
    overrides: Sequence[str] = (),
) -> ManagerBasedRLEnv:
    """Build a registered task's ManagerBasedRLEnv with optional num_envs and engine, and
    overrides as the command line takes them (``["env.actions.joint_pos.clip=[-1,1]"]``)."""
    from robolearn.registry import get_task

    cfg = get_task(task).make_env_cfg(play=play)
    if isinstance(overrides, str):
        overrides = [overrides]
    for key, value in parse_overrides(list(overrides)):
        head, _, path = key.partition(".")
        if head != "env" or not path:
            raise RobolearnError(
                f"override {key!r} must start with 'env.' (e.g. env.actions.joint_pos.clip=[-1,1])"
            )
        apply_override(cfg, path, value, root_name="env")
    if num_envs is not None:
        cfg.scene.num_envs = num_envs
    if engine is not None:
        cfg.sim.engine = engine
    return ManagerBasedRLEnv(cfg)
