"""The action and observation spaces of the env, as gymnasium ``Box`` es, for every wrapper.

Spaces are bounded by what the terms know: the action space by each action term's range
(:meth:`~robolearn.managers.ActionManager.action_bounds`: its ``clip``, else the actions
that reach the actuators' ``ctrlrange``), the observation space by each observation term's
``clip``. One definition here, so gymnasium, Stable-Baselines3 and skrl see the same spaces.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch

from robolearn.env import ManagerBasedRLEnv
from robolearn.errors import RobolearnError

# An observation term with no clip has no bound the env knows; its values are still finite
# float32 numbers (a diverged env is reset before it is observed, and a term that returns
# NaN or inf is a bug that training stops on). Bounding by float32's finite range says
# exactly that, where an infinite bound would make gymnasium's checker warn.
_F32_MAX = float(np.finfo(np.float32).max)


def action_space(env: ManagerBasedRLEnv, normalize: bool = True) -> gym.spaces.Box:
    """One env's action space: float32, ``[-1, 1]`` (see :class:`ActionScaling`), or with
    ``normalize=False`` bounded by each action term's own range.

    Raises RobolearnError for a term with no finite range (it needs a ``clip``).
    """
    return ActionScaling(env, normalize).space


class ActionScaling:
    """Normalized actions ``u`` in ``[-1, 1]`` to the task's own: ``a = u x reach``, with
    ``reach = max(|low|, |high|)`` of each dimension's range.

    One factor per dimension, not an affine map onto ``[low, high]``: ``u = 0`` stays the
    task's action 0 (the default pose of a joint-position task, which an untrained policy's
    zero mean should hold), and every action the task can act on stays reachable. On the
    narrower side of an asymmetric range, ``u`` past ``low / reach`` saturates as the
    actuator's ``ctrlrange`` (or the term's clip) does. Tasks whose ranges are already
    ``[-1, 1]`` (cartpole's effort) see no change.
    """

    def __init__(self, env: ManagerBasedRLEnv, normalize: bool = True) -> None:
        low, high = env.action_manager.action_bounds()  # RobolearnError when unbounded
        self.normalize = normalize
        self.raw_space = gym.spaces.Box(
            low.numpy().astype(np.float32), high.numpy().astype(np.float32)
        )
        reach = torch.maximum(low.abs(), high.abs()).to(torch.float32)
        self.reach = reach.to(env.device)
        dim = low.shape[0]
        self.space = (
            gym.spaces.Box(-np.ones(dim, np.float32), np.ones(dim, np.float32))
            if normalize
            else self.raw_space
        )

    def to_env(self, actions: torch.Tensor) -> torch.Tensor:
        """The task's actions for ``actions`` in :attr:`space` (on the env's device)."""
        return actions * self.reach if self.normalize else actions


def observation_space(env: ManagerBasedRLEnv, group: str = "policy") -> gym.spaces.Box:
    """One env's observation space of ``group``: float32, each column bounded by its term's
    ``clip`` (then ``scale``), else by float32's finite range; shaped (channels, height,
    width) for an image group."""
    if group not in env.obs_buf:
        raise RobolearnError(
            f"observation group {group!r} not in the task; groups: {', '.join(env.obs_buf)}"
        )
    low, high = env.observation_manager.group_bounds(group)
    shape = env.observation_manager.group_shapes[group]  # (C, H, W) for an image group
    low, high = low.clamp(min=-_F32_MAX).reshape(shape), high.clamp(max=_F32_MAX).reshape(shape)
    return gym.spaces.Box(low.numpy().astype(np.float32), high.numpy().astype(np.float32))
