"""rsl-rl's symmetry extension on a robolearn env: the mirrored samples of a mini-batch.

``agent.algorithm.symmetry.use_data_augmentation=true`` (or ``use_mirror_loss``) names
:func:`mirror_batch` as rsl-rl's ``data_augmentation_func``; it builds the env's mirrors once
(:mod:`robolearn.mdp.mirror`: every observation group's columns and the action vector) and
returns each batch with its mirror image appended, as rsl-rl expects.
:class:`SharedForwardSymmetry` spares the update a second actor pass per mini-batch.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator
from typing import Any

import torch
import torch.nn.functional as F
from rsl_rl.extensions import Symmetry
from tensordict import TensorDict

from robolearn.errors import RobolearnError
from robolearn.mdp.mirror import Mirror, action_mirror, group_mirror


class EnvMirrors:
    """The mirrors of one env: per observation group, and of the action vector."""

    def __init__(self, env: Any) -> None:
        device = env.device
        groups = env.observation_manager.group_dims
        self.groups = {g: Mirror(group_mirror(env, g), device) for g in groups}
        self.actions = Mirror(action_mirror(env), device)

    def observations(self, obs: TensorDict) -> TensorDict:
        """``obs`` followed by its mirror image along the batch."""
        doubled = {k: torch.cat((v, self.groups[k](v))) for k, v in obs.items()}
        return TensorDict(doubled, batch_size=[2 * obs.batch_size[0]], device=obs.device)


_BUILT: weakref.WeakKeyDictionary[Any, EnvMirrors] = weakref.WeakKeyDictionary()


def env_mirrors(env: Any) -> EnvMirrors:
    """The mirrors of a ManagerBasedRLEnv (or an adapter around one, with ``.env``), built
    on first use; RobolearnError if a term cannot be mirrored."""
    base = getattr(env, "env", env)
    mirrors = _BUILT.get(base)
    if mirrors is None:
        mirrors = _BUILT[base] = EnvMirrors(base)
    return mirrors


@contextlib.contextmanager
def mirror_setting(setting: str) -> Iterator[None]:
    """Name ``setting``, the one that asked for mirrored samples, in a RobolearnError that
    building the mirrors raises, with the way out."""
    try:
        yield
    except RobolearnError as exc:
        raise RobolearnError(
            f"{setting} trains on mirrored samples, but {exc}; or turn {setting} off"
        ) from None


def mirror_batch(
    env: Any, obs: TensorDict | None = None, actions: torch.Tensor | None = None
) -> tuple[TensorDict | None, torch.Tensor | None]:
    """rsl-rl's data augmentation function: ``obs`` and ``actions`` with their mirror
    images appended along the batch (None stays None)."""
    mirrors = env_mirrors(env)
    if obs is not None:
        obs = mirrors.observations(obs)
    if actions is not None:
        actions = torch.cat((actions, mirrors.actions(actions)))
    return obs, actions


class SharedForwardSymmetry(Symmetry):
    """rsl-rl's ``Symmetry`` taking its mirror loss from the update's own actor pass.

    With data augmentation on, PPO's update has just run the actor over the mini-batch and
    its mirror image (the action distribution's means, kept by the actor); rsl-rl's
    ``compute_loss`` runs the actor a second time over a copy of the same observations, with
    the same weights, to get the same means: about a sixth of the update's work when the
    loss is only logged (``use_mirror_loss`` off, our default), and the same forward again
    when it is trained on. The loss and its gradient are the same from the first pass
    (tests/rl/test_symmetry.py compares both). Without augmentation the mirrored
    observations were never through the actor: :class:`robolearn.rl.ppo.PPO` keeps
    rsl-rl's own ``Symmetry`` then.
    """

    def compute_loss(self, actor: Any, batch: Any, original_batch_size: int) -> torch.Tensor:
        means = actor.output_mean
        _, mirrored = self.data_augmentation_func(
            env=self.env, obs=None, actions=means[:original_batch_size]
        )
        loss = F.mse_loss(means[original_batch_size:], mirrored.detach()[original_batch_size:])
        return loss if self.use_mirror_loss else loss.detach()
