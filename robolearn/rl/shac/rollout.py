"""A task's env stepped with gradients: actions in, differentiable observations and
rewards out, through a Newton engine built for gradients.

The env steps as always (its managers terminate, reward, reset, resample commands and
observe; the physics is the engine's recorded step, :mod:`robolearn.sim.newton_grad`).
Beside it, the rollout keeps the state with its autograd history, and evaluates the task's
own reward and observation terms on it (:meth:`~robolearn.scene.Scene.reading_state`).
Every value it returns is the env's; only the gradient paths are the rollout's (a
straight-through sum, ``ours + (env's - ours).detach()``), so a reset, a push or action
noise changes what the learner sees exactly as it changes the env, and cuts the gradient
where the state was replaced.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from robolearn.env import ManagerBasedRLEnv
from robolearn.errors import RobolearnError
from robolearn.managers import ActionTerm
from robolearn.managers.differentiable import is_differentiable


@dataclass
class StepResult:
    """One differentiable env step."""

    obs: torch.Tensor
    """(N, obs_dim) the policy's next observation (after the resets), differentiable."""
    reward: torch.Tensor
    """(N,) the env's reward for the step, differentiable in the action and the state."""
    final_obs: torch.Tensor
    """(N, obs_dim) the observation of the state the step reached, before any reset: what
    a finished episode ended in (equal to ``obs`` where no reset happened)."""
    terminated: torch.Tensor
    """(N,) bool: episodes that failed in this step."""
    time_outs: torch.Tensor
    """(N,) bool: episodes cut by their time limit in this step."""
    extras: dict
    """The env's extras (``log`` holds the finished episodes' statistics)."""


def _straight(ours: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """``value`` with ``ours``'s gradient path."""
    return ours + (value - ours).detach()


class DifferentiableRollout:
    """Steps ``env`` with gradients from its actions to its rewards and observations.

    Args:
        env: a task's env on ``newton`` or ``newton-cpu`` built for gradients
            (``env.sim.newton.differentiable``, a differentiable solver).
        obs_group: the observation group the policy reads.
        max_step_gain: the most an env step may amplify the gradient with respect to the
            state, per env (None: exact gradients; see
            :func:`robolearn.sim.newton_grad.grad_step`).

    Raises:
        RobolearnError: an engine without gradients, or a reward term, observation term or
            action term the gradient cannot pass through (named).
    """

    def __init__(
        self, env: ManagerBasedRLEnv, obs_group: str = "policy", max_step_gain: float | None = None
    ) -> None:
        self.env = env
        self.engine = env.scene.engine
        self.obs_group = obs_group
        self.max_step_gain = max_step_gain
        _check_env(env, obs_group)
        self.num_envs = env.num_envs
        self.num_actions = env.action_manager.total_action_dim
        self._qpos = self.engine.qpos.detach().clone()
        self._qvel = self.engine.qvel.detach().clone()
        self._prev_action = env.action_manager.action.detach().clone()

    # ---- the state ----------------------------------------------------------------------

    def detach(self) -> None:
        """Start the next gradients here: forget the history of the state and actions
        (called at the start of each learning iteration)."""
        self._qpos = self._qpos.detach()
        self._qvel = self._qvel.detach()
        self._prev_action = self._prev_action.detach()

    def observe(self) -> torch.Tensor:
        """The policy's observation of the current state (the env's values),
        differentiable in it."""
        ours = self._observe(self._qpos, self._qvel, self._prev_action)
        return _straight(ours, self.env.obs_buf[self.obs_group])

    def _observe(self, qpos, qvel, action) -> torch.Tensor:
        am = self.env.action_manager
        with self.env.scene.reading_state(qpos, qvel), _actions_reading(am, action, None):
            obs = self.env.observation_manager.compute(update_history=False)[self.obs_group]
        return obs

    # ---- the step -----------------------------------------------------------------------

    def ctrl_of(self, actions: torch.Tensor) -> torch.Tensor:
        """(N, nu) the controls the action terms write for ``actions``, differentiable in
        them (each term's clip, scale and offset; controls of other actuators as they are)."""
        am = self.env.action_manager
        ctrl = self.env.scene.command.detach().clone()
        start = 0
        for term in am.terms.values():
            part = actions[:, start : start + term.action_dim]
            if term.cfg.clip is not None:
                part = part.clamp(*term.cfg.clip)
            ctrl[:, term.actuator_ids] = term.command_of(part).to(ctrl.dtype)
            start += term.action_dim
        return ctrl

    def step(self, actions: torch.Tensor) -> StepResult:
        """One env step under ``actions`` (N, num_actions) with autograd history."""
        env, engine = self.env, self.engine
        am = env.action_manager
        prev = _straight(self._prev_action, am.action)  # the env's last action, our path
        ctrl = self.ctrl_of(actions)
        engine.differentiate_next_step(self._qpos, self._qvel, ctrl, self.max_step_gain)
        _, reward_env, terminated, time_outs, extras = env.step(actions.detach())
        qpos, qvel = engine.grad_outputs
        reward = _straight(self._reward(qpos, qvel, actions, prev), reward_env)
        final_obs = self._observe(qpos, qvel, actions)
        # the env's state now: ours where the step left it, the env's where a reset, an
        # event or a push replaced it (there the gradient stops)
        kept = ~(terminated | time_outs)
        kept &= (engine.qpos == qpos.detach()).all(-1) & (engine.qvel == qvel.detach()).all(-1)
        keep = kept.unsqueeze(-1)
        self._qpos = torch.where(keep, qpos, engine.qpos.detach().clone())
        self._qvel = torch.where(keep, qvel, engine.qvel.detach().clone())
        # a reset forgets the last action: no gradient from the next episode into this one
        self._prev_action = torch.where(
            keep, _straight(actions, am.action), am.action.detach().clone()
        )
        obs = self.observe()
        final_obs = torch.where(keep, obs, final_obs)
        return StepResult(obs, reward, final_obs, terminated, time_outs, extras)

    def _reward(self, qpos, qvel, action, prev) -> torch.Tensor:
        """The task's reward terms (weight x value x step dt) at the differentiable state,
        summed; an env whose physics diverged earns nothing, as in the env."""
        env = self.env
        with (
            env.scene.reading_state(qpos, qvel),
            _actions_reading(env.action_manager, action, prev),
        ):
            total = env.reward_manager.weighted_sum(env.step_dt)
        return torch.where(env.diverged, torch.zeros_like(total), total)


@contextlib.contextmanager
def _actions_reading(am, action: torch.Tensor | None, prev: torch.Tensor | None) -> Iterator[None]:
    """Terms that read the action manager's raw actions read these (with their history)."""
    saved = am.action, am.prev_action
    if action is not None:
        am.action = _straight(action, saved[0])
    if prev is not None:
        am.prev_action = prev
    try:
        yield
    finally:
        am.action, am.prev_action = saved


def _check_env(env: ManagerBasedRLEnv, obs_group: str) -> None:
    """Refuse, by name, what the gradient cannot pass through."""
    engine = env.scene.engine
    if not getattr(engine, "differentiable", False):
        raise RobolearnError(
            f"differentiable training needs a Newton engine built for gradients, and this "
            f"env runs on {engine.name}: use --engine newton-cpu (or newton) with "
            "env.sim.newton.solver=featherstone or semi_implicit"
        )
    if env.scene.drive is not None or env.scene.model_delay is not None:
        raise RobolearnError(
            "differentiable training cannot pass through robolearn's explicit motor models "
            "or actuator delays (scene.actuators); use MuJoCo's own actuators"
        )
    for name, cfg in env.cfg.rewards.items():
        if cfg.weight != 0.0 and not is_differentiable(cfg.func):
            raise RobolearnError(
                f"rewards.{name} ({_name_of(cfg.func)}) is not differentiable: it reads state "
                "the gradient does not reach; set its weight to 0 for differentiable "
                "training, or mark a term of your own with robolearn.mdp.differentiable"
            )
    groups = env.cfg.observations
    if obs_group not in groups:
        raise RobolearnError(f"the task has no observation group {obs_group!r}")
    group = groups[obs_group]
    for name, cfg in group.terms.items():
        if not is_differentiable(cfg.func):
            raise RobolearnError(
                f"observations.{obs_group}.{name} ({_name_of(cfg.func)}) is not "
                "differentiable: it reads state the gradient does not reach"
            )
        if cfg.history_length or group.history_length or max(cfg.latency) > 0:
            raise RobolearnError(
                f"observations.{obs_group}.{name} has a history or a latency, which "
                "differentiable training does not pass gradients through; remove it"
            )
    if group.image_shape is not None:
        raise RobolearnError(f"observations.{obs_group} is an image group")
    for name, term in env.action_manager.terms.items():
        cls = type(term)
        if (
            cls.process_actions is not ActionTerm.process_actions
            or cls.apply_actions is not ActionTerm.apply_actions
        ):
            raise RobolearnError(
                f"actions.{name} ({cls.__name__}) maps actions to controls with a map of its "
                "own, which differentiable training does not pass gradients through; use a "
                "joint position or effort action"
            )


def _name_of(func) -> str:
    return getattr(func, "__name__", type(func).__name__)
