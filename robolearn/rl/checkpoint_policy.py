"""A checkpoint's policy, whichever learner made it: load it for an env and act with it.

The checkpoint names its learner (``algo``; :func:`robolearn.rl.learner.algorithm_of`), and
that learner turns it into a :class:`CheckpointPolicy`: what play, view, evaluate, export
and motion recording use, without asking which algorithm trained it. Where checkpoints are
found (run folders, the pretrained ones) is the application's (:mod:`robolearn.app.runs`).
"""

from __future__ import annotations

from pathlib import Path

import torch

from robolearn.rl.checkpoint import load_checkpoint
from robolearn.rl.learner import CheckpointPolicy, algorithm_of


def policy_of(env, data: dict) -> CheckpointPolicy:
    """The policy of a checkpoint's ``data`` acting on ``env``, made by the learner that
    wrote it."""
    return algorithm_of(data).policy(env, data)


def load_for_env(env, path: Path) -> tuple[CheckpointPolicy, dict]:
    """(the checkpoint's policy on ``env``, the checkpoint's data)."""
    data = load_checkpoint(path, map_location=env.device)
    return policy_of(env, data), data


@torch.inference_mode()
def act(policy, obs: dict[str, torch.Tensor], num_envs: int) -> torch.Tensor:
    from tensordict import TensorDict

    return policy(TensorDict(obs, batch_size=[num_envs]))


def start_episodes(policy, env) -> None:
    """Zero a recurrent policy's memory of the envs whose episodes just began (their
    ``episode_length_buf`` is 0): call it before each action. rsl-rl's models and
    ``load_policy``'s policies take the mask; a feed-forward policy ignores it."""
    reset = getattr(policy, "reset", None)
    if reset is not None:
        with torch.inference_mode():  # the state was made acting, in inference mode
            reset(env.episode_length_buf == 0)


def forget(policy) -> None:
    """Drop a recurrent policy's state of every env (the next call starts afresh, at any
    batch size); no effect on a feed-forward policy."""
    reset = getattr(policy, "reset", None)
    if reset is not None:
        with torch.inference_mode():
            reset()
