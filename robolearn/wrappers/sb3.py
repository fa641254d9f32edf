"""The batched env as a Stable-Baselines3 ``VecEnv`` (``pip install 'robolearn[sb3]'``).

::

    from stable_baselines3 import PPO
    from robolearn.wrappers import make_env
    from robolearn.wrappers.sb3 import Sb3VecEnv

    env = Sb3VecEnv(make_env("cartpole_balance", num_envs=256))
    PPO("MlpPolicy", env, n_steps=16, batch_size=1024).learn(200_000)

All envs step together in one call of the robolearn env; tensors stay on its device until
SB3 takes them, as numpy, at the end of each step. SB3's autoreset convention: an env whose
episode ended has already started the next one, its last observation is in
``infos[i]["terminal_observation"]`` and ``infos[i]["TimeLimit.truncated"]`` says whether
the episode ended by its time limit; ``infos[i]["episode"]`` holds its return and length,
which SB3 logs (``rollout/ep_rew_mean``). Those infos are built for the envs that finished
only; the others get an empty dict.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from robolearn.env import ManagerBasedRLEnv
from robolearn.errors import RobolearnError
from robolearn.wrappers.spaces import ActionScaling, observation_space

try:
    from stable_baselines3.common.vec_env import VecEnv
    from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices, VecEnvStepReturn
except ImportError as exc:  # an optional extra: robolearn itself never imports this module
    raise RobolearnError(
        "the Stable-Baselines3 wrapper needs stable-baselines3: pip install 'robolearn[sb3]'"
    ) from exc


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy()


class Sb3VecEnv(VecEnv):
    """A ManagerBasedRLEnv (all its envs) as SB3's ``VecEnv`` over one observation group.

    The action space is ``[-1, 1]``, scaled to each action term's range
    (:class:`~robolearn.wrappers.spaces.ActionScaling`; ``normalize_actions=False`` keeps the
    task's units), and SB3 clips its Gaussian actions to it; a term with no finite range
    needs a ``clip`` (RobolearnError otherwise).
    ``get_attr``, ``set_attr`` and ``env_method`` reach the one batched robolearn env: a
    method runs once for every env, and its result is repeated for each index asked.
    """

    def __init__(
        self, env: ManagerBasedRLEnv, obs_group: str = "policy", normalize_actions: bool = True
    ) -> None:
        self.env = env
        self.obs_group = obs_group
        self.render_mode = None  # read by VecEnv.__init__ through get_attr
        self.action_scaling = ActionScaling(env, normalize_actions)
        super().__init__(env.num_envs, observation_space(env, obs_group), self.action_scaling.space)
        env.record_final_obs = True  # the pre-reset observation of the envs that finished
        self._actions: torch.Tensor | None = None
        self._returns = torch.zeros(env.num_envs, device=env.device)
        self._lengths = torch.zeros(env.num_envs, dtype=torch.long, device=env.device)
        self._started = time.monotonic()

    def reset(self) -> np.ndarray:
        """Reset every env (seeded by :meth:`seed`'s first seed, if given); (N, obs) float32."""
        obs, _ = self.env.reset(seed=self._seeds[0])
        self._reset_seeds()
        self._reset_options()
        self._returns.zero_()
        self._lengths.zero_()
        return _np(obs[self.obs_group])

    def step_async(self, actions: np.ndarray) -> None:
        actions = torch.as_tensor(actions, dtype=torch.float32).to(self.env.device)
        self._actions = self.action_scaling.to_env(actions)

    def step_wait(self) -> VecEnvStepReturn:
        if self._actions is None:
            raise RobolearnError("step_wait() without step_async(actions) first")
        obs, reward, terminated, time_outs, extras = self.env.step(self._actions)
        self._actions = None
        done = terminated | time_outs
        self._returns += reward
        self._lengths += 1
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        finished = done.nonzero().flatten()
        if finished.numel():
            self._finish(infos, finished, extras["final_obs"][self.obs_group], terminated)
        return _np(obs[self.obs_group]), _np(reward), _np(done), infos

    def _finish(
        self,
        infos: list[dict[str, Any]],
        ids: torch.Tensor,
        final_obs: torch.Tensor,
        terminated: torch.Tensor,
    ) -> None:
        """Fill the infos of the envs ``ids`` that finished, one host copy per quantity."""
        final = _np(final_obs.index_select(0, ids))
        truncated = _np(~terminated.index_select(0, ids)).tolist()
        returns = _np(self._returns.index_select(0, ids)).tolist()
        lengths = _np(self._lengths.index_select(0, ids)).tolist()
        elapsed = round(time.monotonic() - self._started, 6)
        for k, i in enumerate(_np(ids).tolist()):
            infos[i] = {
                "terminal_observation": final[k],
                "TimeLimit.truncated": truncated[k],
                "episode": {"r": returns[k], "l": lengths[k], "t": elapsed},
            }
        self._returns[ids] = 0.0
        self._lengths[ids] = 0

    def close(self) -> None:
        self.env.close()

    def _count(self, indices: VecEnvIndices) -> int:
        return len(list(self._get_indices(indices)))

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """The robolearn env's attribute (else this wrapper's), once per index."""
        owner = self.env if hasattr(self.env, attr_name) else self
        return [getattr(owner, attr_name)] * self._count(indices)

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Set the robolearn env's attribute (for every env: they are one object)."""
        setattr(self.env, attr_name, value)

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **kwargs: Any
    ) -> list[Any]:
        """Call the robolearn env's method once (it acts on every env); its result per index."""
        result = getattr(self.env, method_name)(*method_args, **kwargs)
        return [result] * self._count(indices)

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        """No gymnasium wrapper sits inside: False per index."""
        return [False] * self._count(indices)
