"""ManagerBasedRLEnv: the env step, read top to bottom from action to observation.

    actions (num_envs, num_actions)
      -> ActionManager.process_action     scale, offset, clip into actuator targets
      -> ActionManager.apply_action        write ctrl (a view of engine memory)
      -> Scene.step(decimation)            targets are constant over the substeps
      -> divergence guard                  envs whose physics went non-finite
      -> TerminationManager                failures and time-outs, kept apart
      -> RewardManager                     weighted terms x step_dt, episode sums
      -> reset the finished envs           curriculum, events "reset", commands, logs
      -> CommandManager, EventManager      resampling timers, "interval" events
      -> ObservationManager                groups: noise, clip, scale, history
    -> obs, reward, terminated, time_outs, extras

Everything is batched over envs on the engine's device; there is no Python loop over envs.
An env whose state goes non-finite is reset like a terminated one, and the other envs carry
on. Its divergence is counted in ``extras["log"]["Episode_Termination/nonfinite"]`` and
nowhere else: no termination term fires for it, its reward for the step is zero, the step
is left out of its episode sums, and its episode is left out of the ``Episode_Reward/*``
and ``Metrics/*`` means (its terms read a state that was garbage).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from robolearn.errors import RobolearnError
from robolearn.managers import (
    ActionManager,
    ActionTermCfg,
    CommandManager,
    CommandTermCfg,
    CurriculumManager,
    CurriculumTermCfg,
    EnvRows,
    EventManager,
    EventTermCfg,
    ObservationGroupCfg,
    ObservationManager,
    RewardManager,
    RewardTermCfg,
    TermCfg,
    TerminationManager,
    TerminationTermCfg,
)
from robolearn.managers.base import none_selected
from robolearn.managers.fused import Region, fused_wanted, opaque_engine_calls
from robolearn.scene import Scene, SceneCfg, SimCfg
from robolearn.sim.host_sync import host_syncs_allowed
from robolearn.threads import single_threaded


@dataclass
class MetricTermCfg(TermCfg):
    """An evaluation metric: ``func(env, **params)`` -> (num_envs,) values of the current
    state (bools count as 0 and 1).

    ``robolearn play --eval`` evaluates it after every env step and reports its mean over the
    steps of every evaluated episode in its output's ``metrics`` (docs/training.md,
    "Evaluation output"); training never calls it, so a metric costs nothing there.
    """


@dataclass
class SuccessTermCfg(TermCfg):
    """A task's success: ``func(env, **params)`` -> (num_envs,) bool, whether the goal is
    met now (an object within 2 cm of its goal, a drawer open 20 cm).

    ``robolearn play --eval`` reports ``success_rate``: the share of episodes in which it
    held over the last ``hold_s`` seconds of the episode (at the last step, where 0).
    Training never calls it.
    """

    hold_s: float = 0.0
    """Seconds the condition must have held when the episode ends."""


@dataclass
class ManagerBasedRLEnvCfg:
    """A task: the world, the timing, and the terms of each manager.

    Rewards are scaled by the env step's duration (``physics_dt x decimation``); see
    :mod:`robolearn.managers.reward`.
    """

    scene: SceneCfg = field(default_factory=SceneCfg)
    """The MJCF, number of envs and default state."""
    sim: SimCfg = field(default_factory=SimCfg)
    """The engine and its settings."""
    decimation: int = 4
    """Physics steps per env (policy) step."""
    episode_length_s: float = 20.0
    """Episode length in seconds, after which the ``time_out`` termination fires."""
    seed: int = 42
    """Seeds torch's generators when the env is built; every random term draws from them."""
    actions: dict[str, ActionTermCfg] = field(default_factory=dict)
    """Action terms, in the order their slices appear in the action vector."""
    observations: dict[str, ObservationGroupCfg] = field(default_factory=dict)
    """Observation groups (``policy``, optionally ``critic``)."""
    rewards: dict[str, RewardTermCfg] = field(default_factory=dict)
    """Reward terms; each step's reward is the sum of weight x value x step_dt."""
    terminations: dict[str, TerminationTermCfg] = field(default_factory=dict)
    """Termination terms; at least one must be a ``time_out``."""
    events: dict[str, EventTermCfg] = field(default_factory=dict)
    """Startup, reset and interval events (randomization, pushes, initial states)."""
    commands: dict[str, CommandTermCfg] = field(default_factory=dict)
    """Command terms (e.g. base velocity)."""
    curriculum: dict[str, CurriculumTermCfg] = field(default_factory=dict)
    """Curriculum terms, evaluated for the envs that reset."""
    metrics: dict[str, MetricTermCfg] = field(default_factory=dict)
    """Measures of success that evaluation reports (e.g. a reaching task's share of steps
    held at the target); the env itself never evaluates them."""
    success: SuccessTermCfg | None = None
    """What counts as a successful episode, for evaluation's ``success_rate``; None: the
    task reports none."""
    fused_step: str = "auto"
    """Whether the managers' part of the env step runs compiled into fused kernels
    (:mod:`robolearn.managers.fused`): ``on``, ``off`` (the plain step, one torch op at a
    time), or ``auto``: on a GPU only."""


class ManagerBasedRLEnv:
    """Many envs of one task, stepped together on one device."""

    def __init__(self, cfg: ManagerBasedRLEnvCfg) -> None:
        _check_timing(cfg)
        _check_success(cfg.success)
        self.cfg = cfg
        torch.manual_seed(cfg.seed)
        self.scene = Scene(cfg.scene, cfg.sim)
        engine = self.scene.engine
        # the step's substeps are known now: the Warp engines capture their graphs here
        self.scene.prepare(cfg.decimation)
        self.num_envs = self.scene.num_envs
        self.device = engine.device
        self.physics_dt = engine.physics_dt
        self.step_dt = self.physics_dt * cfg.decimation
        self.max_episode_length_s = cfg.episode_length_s
        self.max_episode_length = math.ceil(cfg.episode_length_s / self.step_dt)
        self.all_env_ids = torch.arange(self.num_envs, device=self.device)
        self.episode_length_buf = torch.zeros(self.num_envs, dtype=torch.long, device=self.device)
        """(N,) env steps since each env's last reset."""
        self.common_step_counter = 0
        """Env steps taken since the env was built (the same for all envs)."""
        self.nonfinite_resets = torch.zeros((), dtype=torch.long, device=self.device)
        """Envs reset because their physics went non-finite, since the env was built (a
        0-d tensor on the env's device: the step does not wait to read it)."""
        self.diverged = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
        """(N,) bool: envs whose physics went non-finite in the latest step."""
        self.divergences = torch.zeros(self.num_envs, dtype=torch.long, device=self.device)
        """(N,) how often each env's physics diverged since the env was built."""
        self.first_step_endings = torch.zeros((), dtype=torch.long, device=self.device)
        """Episodes that failed or diverged on their first step since the env was built:
        what tells the training health check that every episode ends at once (0-d, on the
        env's device)."""
        self.record_final_obs = False
        """Put each step's pre-reset observations in ``extras["final_obs"]`` (costs one more
        observation pass per step; the gymnasium adapter turns it on)."""
        self.extras: dict = {"log": {}}
        self._nan = torch.tensor(math.nan, device=self.device)
        self._log_keys: list[str] = []
        self.reset_terminated = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
        self.reset_time_outs = torch.zeros_like(self.reset_terminated)
        self.host_masks = engine.host_side
        """Whether the managers read masks on the host (see :class:`EnvRows`): on the cpu
        engine, except in the fused step, which computes every env's rows as a GPU does."""
        self.reset_rows: tuple[EnvRows, ...] = ()
        """While envs reset: :class:`EnvRows` of the reset's masks (the envs that reset, the
        episodes the logs average), found once for every manager that writes their rows
        (:meth:`EnvRows.of`); empty otherwise, so that no mask changed in place later is
        taken for one of them."""
        self._build_managers()

    def _build_managers(self) -> None:
        cfg = self.cfg
        # Commands first: observations and rewards read them while the others are built.
        self.command_manager = CommandManager(cfg.commands, self)
        self.action_manager = ActionManager(cfg.actions, self)
        self.event_manager = EventManager(cfg.events, self)
        self.termination_manager = TerminationManager(cfg.terminations, self)
        self.reward_manager = RewardManager(cfg.rewards, self)
        self.curriculum_manager = CurriculumManager(cfg.curriculum, self)
        self.event_manager.apply("startup")
        # every episode length is 0 already
        self._begin_episodes(torch.ones(self.num_envs, dtype=torch.bool, device=self.device))
        # Observations last: building them computes one observation (it sizes the groups),
        # which must be of the reset state; a new manager has nothing to reset.
        self.observation_manager = ObservationManager(cfg.observations, self)
        self.obs_buf = self.observation_manager.compute()
        self._fused = None
        if fused_wanted(cfg.fused_step, self.device):
            self._fused = FusedStep(self)
            # static shapes and no host decision, for the compiler: every env's rows
            self.host_masks = False

    @property
    def fused(self) -> bool:
        """Whether the env step runs fused (``cfg.fused_step``; see
        :mod:`robolearn.managers.fused`)."""
        return self._fused is not None

    # ---- sizes ------------------------------------------------------------------------

    @property
    def num_actions(self) -> int:
        return self.action_manager.total_action_dim

    # ---- the step ---------------------------------------------------------------------

    def step(self, action: torch.Tensor):
        """Advance every env by one policy step.

        Returns:
            (obs, reward, terminated, time_outs, extras): obs is a dict of groups; reward
            (N,) float32; terminated and time_outs (N,) bool; extras["log"] holds episode
            statistics of the envs that reset in this step.
        """
        # torch on one thread while MuJoCo's batch holds the cores (robolearn.threads)
        with single_threaded(self.device):
            return self._step(action)

    def _step(self, action: torch.Tensor):
        if self._fused is not None:
            return self._fused.step(action.to(self.device))
        self.action_manager.process_action(action.to(self.device))
        self.action_manager.apply_action()
        self.scene.step(self.cfg.decimation)

        self.episode_length_buf += 1
        self.common_step_counter += 1
        diverged = self.scene.engine.diverged()
        self.diverged = diverged
        self.divergences += diverged

        # A diverged env's terms read garbage (NaN, or MuJoCo's reset to qpos0 mid-step):
        # no termination term fires for it (it counts as nonfinite alone) and its step earns
        # nothing, in the reward and in the episode sums. On the cpu engine a step where
        # none diverged (nearly all) is known for free, and needs none of that.
        if none_selected(self, diverged):
            dones = self.termination_manager.compute()
            self.reset_terminated = self.termination_manager.terminated
            reward = self.reward_manager.compute(self.step_dt)
        else:
            dones = self.termination_manager.compute(exclude=diverged) | diverged
            self.reset_terminated = self.termination_manager.terminated | diverged
            reward = self.reward_manager.compute(self.step_dt, exclude=diverged)
        self.reset_time_outs = self.termination_manager.time_outs

        self.extras = {"log": {}}
        if self.record_final_obs:
            # The observation the finished episodes ended in, before their reset overwrites
            # it (gymnasium's same-step autoreset hands it out). History terms repeat the
            # current value here rather than advancing their history.
            self.extras["final_obs"] = self.observation_manager.compute(update_history=False)
        self._reset_finished(dones, diverged)

        self.command_manager.compute(self.step_dt)
        if self.event_manager.has_mode("interval"):
            self.event_manager.apply("interval", dt=self.step_dt)
        self.obs_buf = self.observation_manager.compute()
        return self.obs_buf, reward, self.reset_terminated, self.reset_time_outs, self.extras

    def _reset_finished(
        self, finished: torch.Tensor, diverged: torch.Tensor, judged: dict | None = None
    ) -> None:
        """Reset the envs whose episodes ended in this step (``finished``, (N,) bool),
        leaving the diverged ones out of the logged means.

        All on masks over every env, so that the step never waits for the device: no env
        indices are made, no count is read. On the cpu engine, whose masks live in host
        memory, the managers write the reset envs' rows by index instead (:class:`EnvRows`),
        which costs a fraction of ops over every env. Each ``extras["log"]`` value is a
        statistic of the episodes that ended in this step, NaN in a step where none did
        (the runner averages the steps that have one, with ``nanmean``).
        """
        if self.host_masks:
            # The masks live in host memory here: finding out that no episode ended costs
            # nothing, and spares the masked reset work of every env (2 ms a step at 1024
            # humanoids). Terms are written to be called with an empty mask or not at all.
            with host_syncs_allowed():
                if not bool(finished.any()):
                    self.extras["log"] = dict.fromkeys(self._log_keys, self._nan)
                    return
        num_diverged = diverged.sum()
        self.nonfinite_resets = self.nonfinite_resets + num_diverged
        at_once = self.reset_terminated & (self.episode_length_buf == 1)
        self.first_step_endings = self.first_step_endings + at_once.sum()
        log = self._reset_idx(finished, keep=finished & ~diverged, judged=judged)
        log["Episode_Termination/nonfinite"] = num_diverged
        self._log_keys = list(log)
        if self.host_masks:
            # an episode ended (found above): every value is already a statistic of this
            # step's episodes, and a where per value (some 40) would copy it unchanged
            self.extras["log"] = log
            return
        any_finished = finished.any()
        self.extras["log"] = {
            key: torch.where(any_finished, value, math.nan)
            if isinstance(value, torch.Tensor)
            else value
            for key, value in log.items()
        }

    # ---- resets -----------------------------------------------------------------------

    def reset(self, seed: int | None = None) -> tuple[dict[str, torch.Tensor], dict]:
        """Reset every env (reseeding torch first if ``seed`` is given); returns (obs, extras)."""
        if seed is not None:
            torch.manual_seed(seed)
        return self.reset_envs(None)

    def reset_envs(
        self, env_ids: torch.Tensor | Sequence[int] | None
    ) -> tuple[dict[str, torch.Tensor], dict]:
        """Start new episodes in ``env_ids`` (indices, a boolean mask, or None for all) now,
        between steps (e.g. a viewer's reset button), and recompute the observations;
        returns (obs, extras) as :meth:`reset`, ``extras["log"]`` holding the ended
        episodes' statistics.

        The curriculum does not judge the episodes cut short here: it learns from episodes
        that ended by the task's own terms, and a reset the user asks for says nothing of
        how the robot did (one step into an episode, a terrain curriculum would demote every
        env that had a command). A seeded reset therefore starts the same episodes however
        far the envs had gone, as gymnasium's determinism check expects.
        """
        mask = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
        mask[self.scene.engine.env_ids(env_ids)] = True
        with single_threaded(self.device):
            self.extras = {"log": self._reset_idx(mask, judge=False)}
            self.obs_buf = self.observation_manager.compute()
        return self.obs_buf, self.extras

    def _reset_idx(
        self,
        mask: torch.Tensor,
        keep: torch.Tensor | None = None,
        judge: bool = True,
        judged: dict | None = None,
    ) -> dict:
        """Start new episodes where ``mask`` ((N,) bool) is true; the observations are
        computed by the caller. Returns what the managers log of the ended episodes.

        ``keep`` ((N,) bool, within ``mask``) names the episodes the logged means average
        (the others ended by divergence); None: all of them. ``judge``: whether the
        curriculum assesses the ending episodes (not for resets the user asks for).
        """
        self.reset_rows = (EnvRows(self, mask),)
        if keep is not None:
            self.reset_rows += (EnvRows(self, keep),)
        # No try/finally to clear them on an error: torch.compile cannot resume after the
        # engine's calls inside one (the fused step). The masks are this reset's own
        # tensors, which no later reset is handed, so rows left by a failed reset match
        # nothing.
        log = self._begin_episodes(mask, keep, judge, judged)
        log.update(self.observation_manager.reset(mask))
        self.reset_rows[0].fill_(self.episode_length_buf, 0)
        self.reset_rows = ()
        return log

    def _begin_episodes(
        self,
        mask: torch.Tensor,
        keep: torch.Tensor | None = None,
        judge: bool = True,
        judged: dict | None = None,
    ) -> dict:
        """A reset up to the observation manager's: curriculum (if ``judge``; ``judged``:
        its log, computed already), physics, events, the other managers; returns their
        logs."""
        keep = mask if keep is None else keep
        log: dict = {}
        if judged is not None:
            log.update(judged)
        elif judge:
            log.update(self.curriculum_manager.compute(mask))
        self._reset_physics(mask)
        log.update(self.action_manager.reset(mask))
        log.update(self.reward_manager.reset(mask, keep=keep))
        log.update(self.termination_manager.reset(mask))
        log.update(self.command_manager.reset(mask, keep=keep))
        log.update(self.event_manager.reset(mask))
        log.update(self.curriculum_manager.reset(mask))
        return log

    def _reset_physics(self, mask: torch.Tensor) -> None:
        """The default state, then the reset events, then the forward pass, where ``mask``."""
        scene = self.scene
        scene.reset_to_default(mask)
        EnvRows.of(self, mask).copy_(scene.command, scene.default_ctrl)
        self.event_manager.apply("reset", mask)
        scene.forward(mask)

    def close(self) -> None:
        """Release the engine (its memory goes when the env is garbage collected)."""


class FusedStep:
    """:meth:`ManagerBasedRLEnv.step` with the managers' part compiled into fused kernels
    (:mod:`robolearn.managers.fused`): every result has the plain step's meaning."""

    def __init__(self, env: ManagerBasedRLEnv) -> None:
        self.env = env
        self.act = Region("actions", self._act)
        self.judge = Region("terminations and rewards", self._judge)
        # graph breaks allowed: the reset's physics (the engine's own calls) runs between
        # compiled pieces
        self.rest = Region("resets, commands and observations", self._rest, fullgraph=False)
        # Curriculum terms decide on Python numbers that change every step (the step
        # counter): compiled with those as symbols, not constants, so that a new value
        # does not compile them anew. A task without any costs nothing in the step.
        self.curriculum = None
        if env.curriculum_manager.active_terms:
            self.curriculum = Region(
                "curriculum", env.curriculum_manager.compute, fullgraph=False, dynamic=True
            )
        opaque_engine_calls(env.scene.engine)

    def step(self, action: torch.Tensor):
        env = self.env
        self.act(action)
        env.scene.step(env.cfg.decimation)
        env.common_step_counter += 1
        diverged = env.scene.engine.diverged()
        # outside: a weight read inside would be compiled in as a constant
        env.reward_manager.sync_weights()
        dones, reward = self.judge(diverged, env.step_dt)
        judged = {} if self.curriculum is None else self.curriculum(dones)
        obs = self.rest(dones, diverged, judged)
        return obs, reward, env.reset_terminated, env.reset_time_outs, env.extras

    def _act(self, action: torch.Tensor) -> None:
        self.env.action_manager.process_action(action)
        self.env.action_manager.apply_action()

    def _judge(self, diverged: torch.Tensor, dt: float):
        """The plain step's terminations and rewards, with the divergence mask applied
        whether or not any env diverged (an all-false mask changes no value)."""
        env = self.env
        env.diverged = diverged
        env.episode_length_buf += 1
        env.divergences += diverged
        terms = env.termination_manager
        dones = terms.compute(exclude=diverged) | diverged
        env.reset_terminated = terms.terminated | diverged
        env.reset_time_outs = terms.time_outs
        reward = env.reward_manager.compute_synced(dt, exclude=diverged)
        env.extras = {"log": {}}
        if env.record_final_obs:
            env.extras["final_obs"] = env.observation_manager.compute(update_history=False)
        return dones, reward

    def _rest(self, dones: torch.Tensor, diverged: torch.Tensor, judged: dict):
        """The plain step from the reset of the finished envs on; returns the observation."""
        env = self.env
        env._reset_finished(dones, diverged, judged)
        env.command_manager.compute(env.step_dt)
        if env.event_manager.has_mode("interval"):
            env.event_manager.apply("interval", dt=env.step_dt)
        env.obs_buf = env.observation_manager.compute()
        return env.obs_buf


def check_cfg(cfg: ManagerBasedRLEnvCfg) -> None:
    """The checks of a task config that need no model (its timing, its terrain), made
    before anything is built; building the env makes them again, with the rest.

    Raises:
        RobolearnError: naming the field and what is valid.
    """
    _check_timing(cfg)
    _check_success(cfg.success)
    fused_wanted(cfg.fused_step, "cpu")
    if cfg.scene.terrain is not None:
        cfg.scene.terrain.validate()


def _check_success(success: SuccessTermCfg | None) -> None:
    """A success's hold time and threshold (a ``threshold`` param), checked at once rather
    than at the first evaluation."""
    if success is None:
        return
    hold = success.hold_s
    if not (isinstance(hold, int | float) and math.isfinite(hold) and hold >= 0):
        raise RobolearnError(f"success.hold_s must be a finite number >= 0, got {hold!r}")
    threshold = success.params.get("threshold")
    if threshold is not None and not (isinstance(threshold, int | float) and threshold > 0):
        raise RobolearnError(
            f"success.params.threshold must be a positive number, got {threshold!r}"
        )


def _check_timing(cfg: ManagerBasedRLEnvCfg) -> None:
    if not isinstance(cfg.decimation, int) or cfg.decimation < 1:
        raise RobolearnError(f"decimation must be an integer >= 1, got {cfg.decimation!r}")
    if not 0 < cfg.episode_length_s < math.inf:
        raise RobolearnError(
            f"episode_length_s must be a finite number > 0, got {cfg.episode_length_s}"
        )
