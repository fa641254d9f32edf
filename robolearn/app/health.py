"""Training health: what the runner checks once per iteration, between rollout and update.

* **Non-finite rollouts.** NaN or inf in an observation or a reward would reach the PPO
  update (and the observation normalizer) and silently ruin the policy. After each rollout
  the stored observations and rewards are checked, one sum per tensor and one host sync in
  all; on failure training stops with a :class:`RobolearnError` naming the observation
  group and term, or the reward term, that produced them.
  ``agent.check_for_nan=false`` turns this off.
* **Divergence.** An env whose physics goes non-finite, or faster than any robot moves
  (``sim.max_speed``), is reset by the env (see :mod:`robolearn.env`); the share of env
  steps that diverged in an iteration is logged as ``Health/diverged_share``. Past
  ``warn_share`` a warning is printed. The physics is blown up, and training stops with a
  :class:`RobolearnError` (exit status 2 from the CLI) instead of training on resets, when
  in each of ``stop_iterations`` consecutive iterations more than ``stop_share`` of the env
  steps diverged, or nearly every env (``stop_env_share``) diverged at least once.
* **Episodes that end at once.** When in each of ``stop_iterations`` consecutive
  iterations more than ``stop_share`` of the env steps began an episode that ended in them
  (failed or diverged; time-outs do not count), nothing is learnt either: the reset state
  meets a termination, or the physics blows up on the first step. Training stops, naming
  the terminations that ended the latest episodes.

The runner (given one in ``Runner.learn(health=...)``) calls
:meth:`TrainingHealth.after_rollout` once per iteration and merges the dict it returns into
its scalars.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import torch

from robolearn.errors import RobolearnError
from robolearn.sim import messages

#: Share of env steps diverged in an iteration above which a warning is printed.
WARN_SHARE = 0.01
#: Share above which an iteration counts towards stopping.
STOP_SHARE = 0.5
#: Consecutive iterations above STOP_SHARE after which training stops.
STOP_ITERATIONS = 3
#: Share of envs diverged at least once in an iteration that counts towards stopping: at
#: 24 steps an iteration, 10% of env steps diverged.
STOP_ENV_SHARE = 0.9

_ADVICE = "check sim.physics_dt, sim.gravity, the actuators' gains and limits, and the action scale"


class _Shares(NamedTuple):
    """One iteration's health, as shares."""

    steps: float
    """Of the env steps, those in which an env diverged."""
    envs: float
    """Of the envs, those that diverged at least once."""
    at_once: float
    """Of the env steps, those that began an episode which failed or diverged in them: 1
    when every episode ends on its first step."""


def _unwrap(env: Any) -> Any | None:
    """The ManagerBasedRLEnv behind a learner's env adapter, or None."""
    from robolearn.env import ManagerBasedRLEnv

    for candidate in (env, getattr(env, "env", None), getattr(env, "unwrapped", None)):
        if isinstance(candidate, ManagerBasedRLEnv):
            return candidate
    return None


class TrainingHealth:
    """Per-iteration checks of a training run; see the module docstring.

    Args:
        env: the env being trained on (a ManagerBasedRLEnv or an adapter holding one as
            ``env``); without one, only the rollout's finiteness is checked.
        log: where warnings go (the runner's progress printer).
        check_nonfinite: check the rollout's observations and rewards.
        warn_share, stop_share, stop_env_share, stop_iterations: the thresholds (module
            docstring).
        any_rank: in a distributed run, ``Monitor.any_true``: a problem on one rank stops
            every rank in the same iteration instead of leaving the others waiting.
    """

    def __init__(
        self,
        env: Any,
        log: Callable[[str], None] = print,
        check_nonfinite: bool = True,
        warn_share: float = WARN_SHARE,
        stop_share: float = STOP_SHARE,
        stop_iterations: int = STOP_ITERATIONS,
        any_rank: Callable[[bool], bool] | None = None,
        stop_env_share: float = STOP_ENV_SHARE,
    ) -> None:
        self.env = _unwrap(env)
        self.log = log
        self.check_nonfinite = check_nonfinite
        self.warn_share = warn_share
        self.stop_share = stop_share
        self.stop_env_share = stop_env_share
        self.stop_iterations = stop_iterations
        self.any_rank = any_rank
        self.unstable_streak = 0
        """Consecutive iterations in which the physics was blown up (module docstring)."""
        self.at_once_streak = 0
        """Consecutive iterations in which most episodes ended on their first step."""
        self._warning = False
        self._overflow_warned = False
        self._mark()

    @classmethod
    def for_runner(cls, runner: Any, log: Callable[[str], None] = print) -> TrainingHealth:
        """The checks of ``runner``'s training (a :class:`~robolearn.rl.runner.Runner`):
        on its env, with its agent's ``check_for_nan``, across its ranks."""
        monitor = runner.monitor
        return cls(
            runner.env,
            log=log,
            check_nonfinite=runner.cfg.get("check_for_nan", True),
            any_rank=monitor.any_true if monitor is not None else None,
        )

    def _mark(self) -> None:
        env = self.env
        if env is not None:
            self._resets, self._steps = env.nonfinite_resets, env.common_step_counter
            self._divergences = env.divergences.clone()
            self._first_step_endings = env.first_step_endings

    # ---- the per-iteration check --------------------------------------------------------

    def after_rollout(
        self, storage: Any, iteration: int, last_obs: Any | None = None
    ) -> dict[str, float]:
        """Check the rollout just collected; returns the scalars to log for it.

        Args:
            storage: rsl-rl's RolloutStorage (``observations`` by group, ``rewards``).
            iteration: the number of the iteration being collected (1-based), for messages.
            last_obs: the observations after the rollout's last step, by group (they are
                not in the storage, and the value targets bootstrap from them).

        Raises:
            RobolearnError: non-finite observations or rewards, or divergence in more than
                ``stop_share`` of env steps for ``stop_iterations`` iterations in a row.
        """
        problem = self._nonfinite_problem(storage, iteration, last_obs)
        shares = self._diverged_shares()
        overflow = None if self.env is None else self.env.scene.engine.overflow_report()
        warned = False
        if problem is None and shares is not None:
            problem, warned = self._divergence_problem(shares, iteration, overflow)
        if problem is None and shares is not None:
            problem = self._at_once_problem(shares.at_once, iteration)
        if overflow is not None and not warned and not self._overflow_warned:
            self.log(f"WARNING: iteration {iteration}: {overflow}")
        self._overflow_warned = overflow is not None
        if self.any_rank is not None and self.any_rank(problem is not None) and problem is None:
            problem = f"iteration {iteration}: another rank stopped training (see its error)"
        # MuJoCo warnings held back by the rate limit: those due, or all of them before the
        # error, so that the error is the last line
        messages.flush(force=problem is not None)
        if problem is not None:
            raise RobolearnError(problem)
        return {} if shares is None else {"Health/diverged_share": shares.steps}

    # ---- divergence ---------------------------------------------------------------------

    def _diverged_shares(self) -> _Shares | None:
        """What diverged and ended at once since the last call, or None (no env, no step)."""
        env = self.env
        if env is None:
            return None
        steps = env.common_step_counter - self._steps
        # the env counts on the device; read here, once per iteration, in one transfer
        counts = torch.stack(
            [
                env.nonfinite_resets - self._resets,
                (env.divergences != self._divergences).sum(),
                env.first_step_endings - self._first_step_endings,
            ]
        ).tolist()
        self._mark()
        if steps <= 0:
            return None
        diverged, envs, first = counts
        env_steps = steps * env.num_envs
        return _Shares(diverged / env_steps, envs / env.num_envs, first / env_steps)

    def _divergence_problem(
        self, shares: _Shares, iteration: int, overflow: str | None
    ) -> tuple[str | None, bool]:
        """The error that stops training, if any, and whether a warning was printed.

        ``overflow`` is the engine's report of dropped contacts, the likelier cause then."""
        advice = overflow or _ADVICE
        share = shares.steps
        unstable = share > self.stop_share or shares.envs > self.stop_env_share
        self.unstable_streak = self.unstable_streak + 1 if unstable else 0
        if self.unstable_streak >= self.stop_iterations:
            first = iteration - self.unstable_streak + 1
            return (
                f"training stopped: the physics diverged (NaN, inf, values beyond 1e10 or "
                f"speeds beyond sim.max_speed) in more than {self.stop_share:.0%} of env "
                f"steps or {self.stop_env_share:.0%} of envs in each of iterations "
                f"{first}-{iteration} ({share:.0%} of env steps, {shares.envs:.0%} of envs "
                f"in the last); the policy cannot learn from resets: {advice}"
            ), False
        above = share > self.warn_share
        warn = above and (not self._warning or self.unstable_streak)
        if warn:
            more = (
                f"; training stops after {self.stop_iterations} iterations in a row above "
                f"{self.stop_share:.0%} ({self.unstable_streak} so far)"
                if self.unstable_streak
                else ""
            )
            self.log(
                f"WARNING: the physics diverged in {share:.1%} of env steps in iteration "
                f"{iteration} (those envs were reset; Health/diverged_share): {advice}{more}"
            )
        self._warning = above
        return None, warn

    def _at_once_problem(self, share: float, iteration: int) -> str | None:
        """The error when most episodes end on their first step, iteration after iteration."""
        self.at_once_streak = self.at_once_streak + 1 if share > self.stop_share else 0
        if self.at_once_streak < self.stop_iterations:
            return None
        first = iteration - self.at_once_streak + 1
        return (
            f"training stopped: episodes end on their first step: in each of iterations "
            f"{first}-{iteration} more than {self.stop_share:.0%} of env steps began an "
            f"episode that ended in them ({share:.0%} in the last; {self._ended_by()}); the "
            "reset state meets a termination, or the physics blows up at once: check the "
            f"terminations' thresholds and the reset events, and {_ADVICE}"
        )

    def _ended_by(self) -> str:
        """'ended by: a 97%, b 3%': the terms that ended the envs' latest episodes."""
        manager = self.env.termination_manager
        shares = manager.last_episode_dones.float().mean(0).tolist()
        parts = [
            f"{name} {value:.0%}"
            for value, name in sorted(zip(shares, manager.term_names, strict=True), reverse=True)
            if value > 0
        ]
        return "latest episodes ended by: " + (", ".join(parts) if parts else "nothing recorded")

    # ---- non-finite rollouts ------------------------------------------------------------

    def _nonfinite_problem(self, storage: Any, iteration: int, last_obs: Any | None) -> str | None:
        if not self.check_nonfinite:
            return None
        checked: list[tuple[str, str | None, torch.Tensor]] = []
        for group, value in storage.observations.items():
            checked.append(("observation", group, value))
        if last_obs is not None:
            for group, value in last_obs.items():
                checked.append(("observation", group, value.unsqueeze(0)))
        checked.append(("reward", None, storage.rewards))
        # A sum is NaN or inf when any element is, and it reads each tensor once without
        # a temporary (isfinite().all() measured 5x slower); one host sync for them all.
        ok = torch.stack([torch.isfinite(t.sum()) for _, _, t in checked]).tolist()
        for (kind, group, tensor), fine in zip(checked, ok, strict=True):
            if fine or bool(torch.isfinite(tensor).all()):  # the sum overflowed, no element
                continue
            where = self._first_bad(tensor)
            stop = f"training stopped before the update of iteration {iteration}"
            if kind == "observation":
                return (
                    f"non-finite values (NaN or inf) in observation group {group!r}"
                    f"{self._observation_terms(group, tensor)} {where}; {stop}. A term that "
                    "divides by zero, takes a root or log of a negative number, or reads a "
                    "diverged state makes them: fix it, or clip its output"
                )
            terms = self.env.reward_manager.nonfinite_terms() if self.env is not None else []
            source = (
                f" from reward term(s) {', '.join(terms)}"
                if terms
                else " (no reward term gives them at the current state; the value estimate "
                "bootstrapped at time-outs may be non-finite)"
            )
            return f"non-finite rewards (NaN or inf){source} {where}; {stop}"
        return None

    @staticmethod
    def _first_bad(tensor: torch.Tensor) -> str:
        """Where the first non-finite value of a (steps, envs, ...) tensor is, in words."""
        bad = ~torch.isfinite(tensor.flatten(2) if tensor.dim() > 2 else tensor.unsqueeze(-1))
        step, env = bad.any(-1).nonzero()[0].tolist()
        return f"(first at rollout step {step}, env {env})"

    def _observation_terms(self, group: str, tensor: torch.Tensor) -> str:
        """', term(s) a, b' for the terms that fill the non-finite columns, if known."""
        env = self.env
        if env is None or group not in env.observation_manager.term_dims:
            return ""
        # (steps, envs, ...) -> (steps x envs, the group's flat columns): an image group's too
        bad_cols = (~torch.isfinite(tensor)).flatten(2).flatten(0, 1).any(0).nonzero().flatten()
        terms = env.observation_manager.terms_at(group, bad_cols.tolist())
        if not terms:
            return ""
        names = ", ".join(f"observations.{group}.{t}" for t in terms)
        return f", term(s) {names}"
