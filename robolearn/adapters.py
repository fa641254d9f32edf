"""Adapters from ManagerBasedRLEnv to the interfaces learners expect.

* :class:`RslRlVecEnv`: rsl-rl's ``VecEnv`` (TensorDict observations by group, ``dones``,
  ``extras["time_outs"]`` and ``extras["log"]``), on the env's device, no copies.
* :class:`GymVectorEnv`: gymnasium's ``VectorEnv`` with same-step autoreset: numpy arrays,
  ``terminated`` and ``truncated`` apart, the pre-reset observation in
  ``infos["final_obs"]`` for the envs that finished (mask ``infos["_final_obs"]``).
  ``gymnasium.make_vec("robolearn/<task>-v0", num_envs=N)`` builds one.
* :class:`GymEnv`: one env as a gymnasium ``Env`` (``gymnasium.make``), with
  ``render_mode="rgb_array"`` (offscreen, as robolearn's videos) or ``"human"`` (a window).

Spaces are bounded by what the terms know: the action space by each action term's range
(:meth:`~robolearn.managers.ActionManager.action_bounds`: its ``clip``, else the actions
that reach the actuators' ``ctrlrange``), the observation space by each observation term's
``clip``. By default the action space is normalized to ``[-1, 1]`` (:class:`ActionScaling`),
as gymnasium's and SB3's checkers recommend; ``normalize_actions=False`` gives the task's
own action units. Stable-Baselines3 and skrl wrappers over the same env: :mod:`robolearn.wrappers`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space
from rsl_rl.env import VecEnv
from tensordict import TensorDict

from robolearn.config import apply_override, parse_overrides
from robolearn.env import ManagerBasedRLEnv
from robolearn.errors import RobolearnError

RENDER_MODES = ("rgb_array", "human")

# An observation term with no clip has no bound the env knows; its values are still finite
# float32 numbers (a diverged env is reset before it is observed, and a term that returns
# NaN or inf is a bug that training stops on). Bounding by float32's finite range says
# exactly that, where an infinite bound would make gymnasium's checker warn.
_F32_MAX = float(np.finfo(np.float32).max)


def ended_episode_log(log: dict[str, Any]) -> dict[str, float]:
    """The env's ``extras["log"]`` as Python numbers, without the statistics of ended
    episodes that are NaN because none ended in the step (one host read for all): what a
    learner that logs numbers (gymnasium's infos, skrl) is given."""
    tensors = {k: v for k, v in log.items() if isinstance(v, torch.Tensor)}
    values = (
        torch.stack([v.detach().float().reshape(()) for v in tensors.values()]).cpu().tolist()
        if tensors
        else []
    )
    numbers = dict(zip(tensors, values, strict=True))
    numbers.update({k: float(v) for k, v in log.items() if k not in tensors})
    return {k: v for k, v in numbers.items() if v == v}  # NaN != NaN


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


class RslRlVecEnv(VecEnv):
    """A ManagerBasedRLEnv as rsl-rl's VecEnv."""

    def __init__(self, env: ManagerBasedRLEnv) -> None:
        self.env = env
        self.num_envs = env.num_envs
        self.num_actions = env.num_actions
        self.max_episode_length = env.max_episode_length
        self.device = env.device
        self.cfg = env.cfg

    @property
    def episode_length_buf(self) -> torch.Tensor:
        return self.env.episode_length_buf

    @episode_length_buf.setter
    def episode_length_buf(self, value: torch.Tensor) -> None:
        # rsl-rl randomizes episode lengths at the start of training to spread resets.
        self.env.episode_length_buf[:] = value

    def _obs(self, groups: dict[str, torch.Tensor]) -> TensorDict:
        return TensorDict(groups, batch_size=[self.num_envs], device=self.device)

    def get_observations(self) -> TensorDict:
        return self._obs(self.env.obs_buf)

    def step(self, actions: torch.Tensor) -> tuple[TensorDict, torch.Tensor, torch.Tensor, dict]:
        obs, reward, terminated, time_outs, extras = self.env.step(actions)
        dones = (terminated | time_outs).long()
        return self._obs(obs), reward, dones, {"time_outs": time_outs, "log": extras["log"]}

    def reset(self) -> TensorDict:
        obs, _ = self.env.reset()
        return self._obs(obs)

    def close(self) -> None:
        self.env.close()


class EnvView:
    """Frames of env 0 for ``render()``: ``rgb_array`` through robolearn's offscreen
    renderer (the one videos use, with the commands' markers), or ``human`` in MuJoCo's
    own window. Built on the first frame, so an env that never renders pays nothing."""

    def __init__(self, env: ManagerBasedRLEnv, mode: str | None) -> None:
        check_render_mode(mode)
        self.env, self.mode = env, mode
        self._renderer = None
        self._window = None
        self._data = None

    def render(self) -> np.ndarray | None:
        """An (H, W, 3) uint8 frame (``rgb_array``), or None after drawing the window."""
        if self.mode == "rgb_array":
            return self._frame()
        if self.mode == "human":
            self._show()
        return None

    def _frame(self) -> np.ndarray:
        from robolearn.render.markers import collect_markers
        from robolearn.render.video import EnvRenderer, track_body_of

        if self._renderer is None:
            self._renderer = EnvRenderer(self.env.scene.engine, track_body=track_body_of(self.env))
        return self._renderer.frame(0, markers=collect_markers(self.env, 0))

    def _show(self) -> None:
        import mujoco
        import mujoco.viewer

        model = self.env.scene.engine.model
        if self._window is None:
            self._data = mujoco.MjData(model)
            self._window = mujoco.viewer.launch_passive(model, self._data)
        if not self._window.is_running():  # the user closed the window: stop drawing
            return
        with self._window.lock():
            # the window draws a host MjData: mirror env 0 into it (any engine, any device)
            self.env.scene.engine.copy_state_to(0, self._data)
            mujoco.mj_forward(model, self._data)
        self._window.sync()

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
        if self._window is not None:
            self._window.close()
            self._window = None
            # MuJoCo's window thread tears the window down after close() returns; GLFW
            # terminated at exit under a live render loop crashes the process
            for thread in threading.enumerate():
                if "_launch_internal" in thread.name:
                    thread.join(10.0)


def has_display() -> bool:
    """Whether a window can open: a display, and MuJoCo on GLFW (robolearn picks EGL only
    where there is no display)."""
    display = os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    return bool(display) and os.environ.get("MUJOCO_GL", "glfw") in ("glfw", "")


def available_render_modes() -> list[str]:
    """The render modes this machine offers: ``rgb_array``, and ``human`` with a display."""
    return ["rgb_array", "human"] if has_display() else ["rgb_array"]


def check_render_mode(mode: str | None) -> None:
    """Raise RobolearnError for a render mode robolearn lacks or this machine cannot show."""
    if mode is not None and mode not in RENDER_MODES:
        raise RobolearnError(
            f"render_mode {mode!r} is not one of: {', '.join(available_render_modes())}"
        )
    if mode == "human":
        _check_display()


def _check_display() -> None:
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        raise RobolearnError(
            "render_mode='human' needs a display (DISPLAY is not set); on a headless machine "
            "use render_mode='rgb_array', or run under Xvfb"
        )
    if not has_display():
        raise RobolearnError(
            f"render_mode='human' needs MUJOCO_GL=glfw (now {os.environ['MUJOCO_GL']}); unset it"
        )


class GymVectorEnv(gym.vector.VectorEnv):
    """A ManagerBasedRLEnv as a gymnasium VectorEnv over one observation group.

    ``render()`` (with ``render_mode="rgb_array"``) returns one frame, of env 0: a batch of
    thousands of envs is watched through one of them, as ``robolearn play --video`` does.
    """

    metadata: ClassVar[dict] = {"autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(
        self,
        env: ManagerBasedRLEnv,
        obs_group: str = "policy",
        render_mode: str | None = None,
        normalize_actions: bool = True,
    ) -> None:
        self.single_observation_space = observation_space(env, obs_group)
        self.action_scaling = ActionScaling(env, normalize_actions)
        self.single_action_space = self.action_scaling.space
        self.env = env
        self.obs_group = obs_group
        self.num_envs = env.num_envs
        self.render_mode = render_mode
        self._view = EnvView(env, render_mode)
        self.metadata = {
            "autoreset_mode": AutoresetMode.SAME_STEP,
            "render_modes": available_render_modes(),
            "render_fps": 1.0 / env.step_dt,
        }
        env.record_final_obs = True
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)

    @staticmethod
    def _np(t: torch.Tensor) -> np.ndarray:
        return t.detach().cpu().numpy()

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        obs, _ = self.env.reset(seed=seed)
        return self._np(obs[self.obs_group]), {}

    def step(self, actions):
        action = torch.as_tensor(np.asarray(actions), dtype=torch.float32, device=self.env.device)
        obs, reward, terminated, time_outs, extras = self.env.step(
            self.action_scaling.to_env(action)
        )
        done = terminated | time_outs
        infos: dict[str, Any] = {"log": ended_episode_log(extras["log"])}
        if bool(done.any()):
            infos["final_obs"] = self._np(extras["final_obs"][self.obs_group])
            infos["_final_obs"] = self._np(done)
        return (
            self._np(obs[self.obs_group]),
            self._np(reward),
            self._np(terminated),
            self._np(time_outs),
            infos,
        )

    def render(self) -> np.ndarray | None:
        """Env 0's frame (``rgb_array``), or None after drawing the window (``human``)."""
        return self._view.render()

    def close_extras(self, **kwargs: Any) -> None:
        self._view.close()
        self.env.close()


class GymEnv(gym.Env):
    """One env of a task as a plain gymnasium Env (``gymnasium.make("robolearn/<task>-v0")``).

    For single-env tools and checks; training wants the vector env. When an episode ends,
    ``step`` returns its final observation, and the next ``reset`` starts a new one.
    ``render_mode``: ``"rgb_array"`` (offscreen frames, as videos) or ``"human"`` (a window;
    needs a display). Actions are normalized to ``[-1, 1]`` unless ``normalize_actions`` is
    False (:class:`ActionScaling`).
    """

    def __init__(
        self,
        env: ManagerBasedRLEnv,
        obs_group: str = "policy",
        render_mode: str | None = None,
        normalize_actions: bool = True,
    ) -> None:
        if env.num_envs != 1:
            raise RobolearnError(f"GymEnv holds one env, got {env.num_envs}")
        self._vec = GymVectorEnv(env, obs_group, render_mode, normalize_actions)
        self.env = env
        self.render_mode = render_mode
        self.metadata = {
            "render_modes": available_render_modes(),
            "render_fps": 1.0 / env.step_dt,
        }
        self.observation_space = self._vec.single_observation_space
        self.action_space = self._vec.single_action_space

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        obs, info = self._vec.reset(seed=seed, options=options)
        return obs[0], info

    def step(self, action):
        obs, reward, terminated, truncated, info = self._vec.step(np.asarray(action)[None])
        if "final_obs" in info:
            obs = info["final_obs"]
        return obs[0], float(reward[0]), bool(terminated[0]), bool(truncated[0]), info

    def render(self) -> np.ndarray | None:
        """An (H, W, 3) uint8 frame (``rgb_array``), or None after drawing the window."""
        return self._vec.render()

    def close(self) -> None:
        self._vec.close()


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


def make_gym_vector_env(
    num_envs: int = 1,
    task: str = "",
    engine: str | None = None,
    render_mode: str | None = None,
    overrides: Sequence[str] = (),
    normalize_actions: bool = True,
    **kwargs: Any,
) -> GymVectorEnv:
    """gymnasium's vector entry point for ``robolearn/<task>-v0``."""
    kwargs.pop("max_episode_steps", None)  # episodes end by the task's own time-out term
    if kwargs:
        raise RobolearnError(f"unexpected arguments for {task}: {', '.join(kwargs)}")
    check_render_mode(render_mode)  # before the env is built, which takes a while
    env = make_env(task, num_envs=num_envs, engine=engine, overrides=overrides)
    return GymVectorEnv(env, render_mode=render_mode, normalize_actions=normalize_actions)


def make_gym_env(
    task: str = "",
    engine: str | None = None,
    render_mode: str | None = None,
    overrides: Sequence[str] = (),
    normalize_actions: bool = True,
    **kwargs: Any,
) -> GymEnv:
    """gymnasium's single-env entry point for ``robolearn/<task>-v0``."""
    kwargs.pop("max_episode_steps", None)
    if kwargs:
        raise RobolearnError(f"unexpected arguments for {task}: {', '.join(kwargs)}")
    check_render_mode(render_mode)
    env = make_env(task, num_envs=1, engine=engine, overrides=overrides)
    return GymEnv(env, render_mode=render_mode, normalize_actions=normalize_actions)
