"""Evaluation: every env runs one whole episode under the policy; report what users compare.

The result (``robolearn play --eval --json``) is one JSON object whose keys are documented,
with units, in docs/training.md ("Evaluation output"); :data:`SCHEMA_VERSION` names its
layout. In short, from the first episode of every env after a common reset:

* ``mean_return``, ``fall_rate`` (failure endings, not time-outs), ``mean_episode_length_s``;
* ``reward_terms``: per reward term, its mean episode sum (they add up to ``mean_return``);
* ``terminations``: the share of episodes each term ended, ``time_outs`` and ``failures``
  apart (``nonfinite`` among the failures); all the shares add up to 1;
* ``<command>/<metric>``: the mean over steps of what each command term reports in
  :meth:`~robolearn.managers.CommandTerm.step_metrics` (a velocity command's
  ``base_velocity/lin_vel_error``, m/s, and ``base_velocity/ang_vel_error``, rad/s);
* ``<command>/<value>``, for what a command term reports per episode in its
  ``last_episode`` (a tracking command's ``motion/tracked_fraction``): the mean over the
  ended episodes;
* ``metrics``: the mean over steps of each metric the task declares in
  ``ManagerBasedRLEnvCfg.metrics`` (:class:`~robolearn.env.MetricTermCfg`);
* ``success_rate``, where the task declares its success
  (:class:`~robolearn.env.SuccessTermCfg`): the share of episodes in which the condition
  held over the episode's last ``hold_s`` seconds (null for a task without one);
* only on a generated terrain, ``terrain``: falls and the commands' step metrics per
  sub-terrain type and per level.

"Mean over steps" counts every step of every episode except the one in which it ends: after
that step the env has already reset, so its state belongs to the next episode.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from robolearn.errors import RobolearnError
from robolearn.managers.base import ManagerTerm, reset_term, resolve_term
from robolearn.rl.checkpoint_policy import act, forget, start_episodes

SCHEMA_VERSION = 3
"""The layout of :func:`evaluate`'s result. Version 1 (no ``schema_version`` key) had no
``reward_terms``, ``terminations`` or ``metrics`` and gave ``lin_vel_error`` and
``ang_vel_error`` as null for tasks without a velocity command; version 2 left them out;
version 3 reports them as the velocity command's step metrics,
``base_velocity/lin_vel_error`` and ``base_velocity/ang_vel_error`` (in the terrain groups
too). The number changes only when a key is removed or changes meaning, not when one is
added."""

NONFINITE = "nonfinite"
"""The failure counted for an env whose physics diverged (no termination term fires then)."""

UNFINISHED = "unfinished"
"""The time-out counted for an episode still running after ``episode_length_s`` (possible
only when a task's time-out term is not the episode length)."""


def _metric_terms(env) -> dict[str, Callable[..., Any]]:
    """The task's declared metrics, resolved (their params checked) before anything runs."""
    return {
        name: resolve_term(cfg, env, f"metrics.{name}")
        for name, cfg in getattr(env.cfg, "metrics", {}).items()
    }


def _metric_value(name: str, value: Any, num_envs: int) -> torch.Tensor:
    """A metric's output as (N,) float, or an error naming the metric."""
    if not isinstance(value, torch.Tensor) or value.shape != (num_envs,):
        shape = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
        raise RobolearnError(f"metrics.{name} returned {shape}; a metric returns (num_envs,)")
    return value.float()


def _success_term(env) -> tuple[Callable[..., Any], dict, float] | None:
    """The task's success condition, resolved, with its params and hold time; None."""
    cfg = getattr(env.cfg, "success", None)
    if cfg is None:
        return None
    hold = float(cfg.hold_s)
    if not (math.isfinite(hold) and hold >= 0):
        raise RobolearnError(f"success.hold_s must be a finite number >= 0, got {cfg.hold_s!r}")
    return resolve_term(cfg, env, "success"), dict(cfg.params), hold


def evaluate(env, policy, on_step: Callable[[], None] | None = None) -> dict[str, Any]:
    """Run one episode in every env of ``env`` under ``policy`` (deterministic), from a
    common reset, and return the evaluation (strict-JSON-safe: no NaN).

    Args:
        env: a :class:`~robolearn.env.ManagerBasedRLEnv`.
        policy: a callable from an observation TensorDict to actions (rsl-rl's inference
            policy).
        on_step: called after every env step (e.g. to record a video frame).

    Raises:
        RobolearnError: a declared metric is misconfigured or returns the wrong shape.
    """
    tally = _Tally(env, _metric_terms(env))
    commands = list(env.command_manager.terms.values())
    for term in commands:
        term.measure_steps = True
    forget(policy)
    # Inference mode, as training's rollouts step the env: terms that made their buffers
    # there (inference tensors) cannot be written outside it, so an env trained in this
    # process would fail at its first reset here otherwise.
    try:
        with torch.inference_mode():
            obs, _ = env.reset()
            for _ in range(env.max_episode_length):
                start_episodes(policy, env)
                obs, reward, terminated, time_outs, _ = env.step(act(policy, obs, env.num_envs))
                if on_step is not None:
                    on_step()
                tally.add_step(reward, terminated, time_outs)
                if not tally.active.any():
                    break
    finally:
        for term in commands:
            term.measure_steps = False
        forget(policy)  # a recurrent policy's state is of this env's batch: not for the next
    return _no_nan(tally.result())


def run_policy(env, policy, steps: int, on_step: Callable[[], None]) -> None:
    """Step ``env`` ``steps`` times under ``policy`` (deterministic) from a reset, calling
    ``on_step`` after each: what a video needs, without an evaluation's bookkeeping or its
    whole episodes."""
    forget(policy)
    try:
        with torch.inference_mode():  # as evaluate(), for an env trained in this process
            obs, _ = env.reset()
            for _ in range(steps):
                start_episodes(policy, env)
                obs, *_ = env.step(act(policy, obs, env.num_envs))
                on_step()
    finally:
        forget(policy)


class _Tally:
    """The sums of an evaluation as it runs, on the env's device: per env (returns, lengths,
    falls, the commands' step metrics), per reward and termination term, per task metric.

    A step counts for the means over steps unless its episode ended in it (the env has
    reset by then); only each env's first episode counts (``active``)."""

    def __init__(self, env, metric_terms: dict[str, Callable[..., Any]]) -> None:
        n, dev = env.num_envs, env.device
        self.env, self.metric_terms = env, metric_terms
        self.stateful = [t for t in metric_terms.values() if isinstance(t, ManagerTerm)]
        self.active = torch.ones(n, dtype=torch.bool, device=dev)
        self.returns = torch.zeros(n, device=dev)
        self.lengths = torch.zeros(n, device=dev)
        self.fell = torch.zeros(n, dtype=torch.bool, device=dev)
        # Per env, so that a terrain's envs can be grouped by type and level at the end.
        self.step_sums: dict[str, torch.Tensor] = {}
        self.samples = torch.zeros(n, device=dev)
        self.metric_sums = torch.zeros(len(metric_terms), device=dev)
        self.episode_sums: dict[str, torch.Tensor] = {}
        self.reward_sums = torch.zeros(len(env.reward_manager.term_names), device=dev)
        # Columns: the termination terms, then nonfinite; a failure outranks a time-out.
        terminations = env.termination_manager
        self.end_names = [*terminations.term_names, NONFINITE]
        self.failure_col = torch.tensor(
            [not terminations.cfg[t].time_out for t in terminations.term_names] + [True],
            device=dev,
        )
        self.end_shares = torch.zeros(len(self.end_names), device=dev)
        self.success = _success_term(env)
        # seconds the success condition has held up to each env's latest counted step, and
        # whether its (first) episode ended so
        self.held_s = torch.zeros(n, device=dev)
        self.succeeded = torch.zeros(n, dtype=torch.bool, device=dev)

    def add_step(self, reward, terminated, time_outs) -> None:
        """One env step's outcome."""
        env = self.env
        done = terminated | time_outs
        finished = self.active & done
        self.returns += reward * self.active
        self.lengths += self.active.float()
        self.fell |= finished & terminated
        # The reset inside the step moved the finished episodes' sums and ending terms to
        # last_episode_*; where() rather than a multiply, as 0 x NaN is NaN.
        episode_sums = env.reward_manager.last_episode_sums
        self.reward_sums += torch.where(finished.unsqueeze(-1), episode_sums, 0.0).sum(0)
        dones = env.termination_manager.last_episode_dones
        ends = _end_shares(dones, env.diverged, self.failure_col)
        self.end_shares += torch.where(finished.unsqueeze(-1), ends, 0.0).sum(0)
        counted = self.active & ~done
        if self.success is not None:
            _, _, hold = self.success
            # the streak up to the step before the end: the ending step's state is the next
            # episode's; a tolerance, as 25 steps of 0.02 s make 0.5 s despite rounding
            streak = self.held_s > 0
            self.succeeded |= finished & streak & (self.held_s >= hold - 1e-6)
        self.samples += counted
        self._add_metrics(counted)
        self._add_episode_values(finished)
        if self.success is not None:
            func, params, _ = self.success
            ok = func(env, **params)
            if not isinstance(ok, torch.Tensor) or ok.shape != (env.num_envs,):
                raise RobolearnError("success returned the wrong shape; it returns (num_envs,)")
            grown = torch.where(ok.bool(), self.held_s + env.step_dt, 0.0)
            self.held_s = torch.where(counted, grown, self.held_s)
        if self.stateful:  # metrics that keep state across steps start afresh with an episode
            for term in self.stateful:
                reset_term(term, done)
        self.active &= ~done

    def _add_metrics(self, counted: torch.Tensor) -> None:
        """The command terms' step metrics and the task's metrics of the counted envs."""
        env = self.env
        for name, term in env.command_manager.terms.items():
            for key, value in term.step_metrics().items():
                total = self.step_sums.setdefault(f"{name}/{key}", torch.zeros_like(self.samples))
                total += value.float() * counted
        for i, (name, term) in enumerate(self.metric_terms.items()):
            params = env.cfg.metrics[name].params
            value = _metric_value(name, term(env, **params), env.num_envs)
            self.metric_sums[i] += torch.where(counted, value, 0.0).sum()

    def _add_episode_values(self, finished: torch.Tensor) -> None:
        """The commands' values of the episodes that ended in this step (their resets have
        just set them)."""
        for name, term in self.env.command_manager.terms.items():
            for key, value in term.last_episode.items():
                total = self.episode_sums.setdefault(
                    f"{name}/{key}", torch.zeros((), device=self.samples.device)
                )
                total += torch.where(finished, value.float(), 0.0).sum()

    def result(self) -> dict[str, Any]:
        """The evaluation (see the module docstring), NaN where nothing was measured."""
        env, n = self.env, self.env.num_envs
        rewards = env.reward_manager
        # Episodes still running (a time-out term that is not the episode length): their
        # sums so far, and an ending of their own.
        for i, running in enumerate(rewards.episode_sums.values()):
            self.reward_sums[i] += torch.where(self.active, running, 0.0).sum()
        unfinished = int(self.active.sum())
        result: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "task_envs": n,
            "episodes": n,
            "mean_return": float(self.returns.mean()),
            "fall_rate": float(self.fell.float().mean()),
            "mean_episode_length_s": float(self.lengths.mean()) * env.step_dt,
        }
        everyone = torch.ones(n, dtype=torch.bool, device=env.device)
        result |= _step_means(everyone, self.step_sums, self.samples)
        ended = n - int(self.active.sum())
        result |= {
            key: float(total) / ended if ended else None for key, total in self.episode_sums.items()
        }
        count = float(self.samples.sum())
        result["reward_terms"] = {
            name: float(total) / n
            for name, total in zip(rewards.term_names, self.reward_sums.tolist(), strict=True)
        }
        result["terminations"] = _terminations(
            self.end_names, self.end_shares, self.failure_col, n, unfinished
        )
        result["metrics"] = {
            name: float(total) / count if count > 0 else None
            for name, total in zip(self.metric_terms, self.metric_sums.tolist(), strict=True)
        }
        if self.success is not None:
            # an episode still running at the end (a time-out term that is not the episode
            # length) counts by its streak so far
            _, _, hold = self.success
            running = self.active & (self.held_s > 0) & (self.held_s >= hold - 1e-6)
            result["success_rate"] = float((self.succeeded | running).float().mean())
        else:
            result["success_rate"] = None
        terrain = env.scene.terrain
        if terrain is not None:
            result["terrain"] = _per_terrain(terrain, self.fell, self.step_sums, self.samples)
        return result


def _end_shares(
    term_dones: torch.Tensor, diverged: torch.Tensor, failure_col: torch.Tensor
) -> torch.Tensor:
    """(N, T + 1): how each env's latest episode divides among the ways it can end (the
    termination terms, then nonfinite); each row of an ended episode sums to 1.

    A failure (or a divergence) that coincides with a time-out ends the episode as a failure,
    as ``fall_rate`` counts it; terms of one kind that fire in the same step share it equally.
    """
    hits = torch.cat((term_dones, diverged.unsqueeze(-1)), dim=-1).float()
    failed = (hits * failure_col).sum(-1, keepdim=True) > 0
    hits = torch.where(failed, hits * failure_col, hits)
    return hits / hits.sum(-1, keepdim=True).clamp(min=1.0)


def _terminations(
    names: list[str], shares: torch.Tensor, failure_col: torch.Tensor, n: int, unfinished: int
) -> dict[str, dict[str, float]]:
    """The shares of episodes per ending, time-outs and failures apart."""
    ends = list(zip(names, (shares / n).tolist(), failure_col.tolist(), strict=True))
    time_outs = {name: share for name, share, failure in ends if not failure}
    failures = {name: share for name, share, failure in ends if failure}
    if unfinished:
        time_outs[UNFINISHED] = unfinished / n
    return {"time_outs": time_outs, "failures": failures}


def _step_means(envs, sums: dict[str, torch.Tensor], samples) -> dict[str, float | None]:
    """Each step metric's mean over the counted steps of ``envs`` (a (N,) bool mask); None
    where no step counted."""
    count = float(samples[envs].sum())
    return {
        key: float(total[envs].sum()) / count if count > 0 else None for key, total in sums.items()
    }


def _per_terrain(terrain, fell, sums: dict[str, torch.Tensor], samples) -> dict[str, Any]:
    """Falls and the commands' step metrics of the envs of each sub-terrain type and of each
    level."""

    def group(envs: torch.Tensor) -> dict[str, Any]:
        stats: dict[str, Any] = {
            "envs": int(envs.sum()),
            "fall_rate": float(fell[envs].float().mean()),
            "mean_level": float(terrain.levels[envs].float().mean()),
        }
        return stats | _step_means(envs, sums, samples)

    types = {
        name: group(terrain.env_types == k)
        for k, name in enumerate(terrain.type_names)
        if bool((terrain.env_types == k).any())
    }
    levels = {
        str(level): group(terrain.levels == level)
        for level in range(terrain.num_rows)
        if bool((terrain.levels == level).any())
    }
    return {"mean_level": float(terrain.mean_level()), "types": types, "levels": levels}


def _no_nan(value: Any) -> Any:
    """``value`` with every NaN float, at any depth, as None (strict JSON has no NaN)."""
    if isinstance(value, dict):
        return {k: _no_nan(v) for k, v in value.items()}
    return None if isinstance(value, float) and math.isnan(value) else value
