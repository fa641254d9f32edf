"""Policies from checkpoints: a runner holding a checkpoint's policy, and acting with it.

Where checkpoints are found (run folders, the pretrained ones) is the application's
(:mod:`robolearn.app.runs`)."""

from __future__ import annotations

from pathlib import Path

import torch

from robolearn.errors import RobolearnError
from robolearn.rl.checkpoint import load_checkpoint


def build_runner(env, data: dict):
    """An rsl-rl runner around ``env`` holding the checkpoint's policy (no optimizer state)."""
    from robolearn.wrappers.rsl_rl import RslRlVecEnv

    if data.get("algo") == "shac":
        raise RobolearnError(
            "this is a SHAC checkpoint (robolearn train --algo shac), which holds no rsl-rl "
            "runner: load it with robolearn.rl.policy.policy_of"
        )
    from robolearn.rl.runner import Runner

    vec = RslRlVecEnv(env)
    runner = Runner(
        vec,
        data["agent"],
        device=str(env.device),
        meta={"task": data.get("task"), "overrides": list(data.get("overrides", []))},
    )
    try:
        runner.restore(data, training_state=False)
    except RuntimeError as exc:  # shapes do not match: another task or other overrides
        raise RobolearnError(
            f"the checkpoint's policy does not fit this env ({str(exc).splitlines()[0][:200]}); "
            "was it trained with other observation or action settings?"
        ) from exc
    return runner


class ShacPolicy:
    """A SHAC checkpoint's actor as a policy on observation TensorDicts: its deterministic
    action (the mean, without the exploration noise)."""

    def __init__(self, env, data: dict) -> None:
        from robolearn.rl.config import ShacCfg
        from robolearn.rl.shac import ShacActor

        cfg = ShacCfg(**{**data["agent"]["shac"], "horizon": 1})
        obs_dim = env.observation_manager.group_dims["policy"]
        self.actor = ShacActor(obs_dim, env.action_manager.total_action_dim, cfg).to(env.device)
        try:
            self.actor.load_state_dict(data["model"]["actor"])
        except RuntimeError as exc:
            raise RobolearnError(
                f"the checkpoint's policy does not fit this env "
                f"({str(exc).splitlines()[0][:200]}); was it trained with other settings?"
            ) from exc
        self.actor.eval()
        self.meta = {"task": data.get("task"), "overrides": list(data.get("overrides", []))}
        """What an export records of the run (as a PPO runner's ``meta``)."""

    def __call__(self, obs) -> torch.Tensor:
        return self.actor(obs["policy"], deterministic=True)


def policy_of(env, data: dict):
    """(policy callable on observation TensorDicts, rsl-rl runner or None) of a checkpoint's
    data: a PPO checkpoint's through rsl-rl, a SHAC checkpoint's actor."""
    if data.get("algo") == "shac":
        return ShacPolicy(env, data), None
    runner = build_runner(env, data)
    return runner.get_inference_policy(device=str(env.device)), runner


def load_for_env(env, path: Path):
    """(policy callable on observation TensorDicts, its rsl-rl runner (None for a SHAC
    checkpoint), checkpoint data) for ``env``."""
    data = load_checkpoint(path, map_location=env.device)
    policy, runner = policy_of(env, data)
    return policy, runner, data


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
