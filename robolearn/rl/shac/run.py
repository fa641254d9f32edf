"""SHAC as a learner of the run driver (``robolearn train --algo shac``).

The same run folder as a PPO run (``model_<iteration>.pt`` checkpoints written atomically,
progress.jsonl with the same keys where they mean the same), the same resume and signal
handling; one process (SHAC's rollout is one differentiable program: no torchrun ranks).
The engine is Newton's, built for gradients: ``newton`` on a GPU machine, else
``newton-cpu``, with the Featherstone solver unless an override names a solver.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from typing import Any

import torch

from robolearn.errors import RobolearnError
from robolearn.rl.config import AgentCfg, ShacCfg
from robolearn.rl.iteration_run import IterationRun
from robolearn.rl.learner import (
    Algorithm,
    CheckpointPolicy,
    LearnerContext,
    load_actor,
    policy_on_env,
)
from robolearn.rl.shac.learner import ShacActor, ShacLearner


class SHAC(Algorithm):
    """Short-horizon actor-critic through Newton's differentiable physics."""

    name = "shac"
    takes_ranks = False
    takes_video = False
    takes_wandb = False
    takes_pipelined = False

    def engine(self, chosen: str | None) -> str:
        """A Newton engine: ``newton`` where CUDA is, else ``newton-cpu``, when the flags
        chose none; any other engine is refused."""
        if chosen is None:
            return "newton" if torch.cuda.is_available() else "newton-cpu"
        if not str(chosen).startswith("newton"):
            raise RobolearnError(
                f"--algo shac trains through Newton's differentiable solvers; engine "
                f"{chosen!r} has none: use --engine newton-cpu (or newton on a GPU)"
            )
        return chosen

    def overrides(self, overrides: list[str]) -> list[str]:
        """Newton's model built for gradients, on Featherstone unless the user's overrides
        name a solver (theirs come last, so theirs hold)."""
        ours = ["env.sim.newton.differentiable=true"]
        if not any(o.startswith("env.sim.newton.solver=") for o in overrides):
            ours.append("env.sim.newton.solver=featherstone")
        return [*ours, *(o for o in overrides if o not in ours)]

    def check(self, agent_cfg: AgentCfg, distributed: bool = False) -> None:
        agent_cfg.shac.validate()

    def refusal(self, flag: str) -> str:
        if flag == "--logger wandb":
            return "--algo shac logs to progress.jsonl only; leave out --logger wandb"
        if flag in ("--nproc", "--distributed"):
            return f"--algo shac runs in one process; leave out {flag}"
        if flag == "agent.pipelined":
            return (
                "agent.pipelined overlaps PPO's collection and update; --algo shac "
                "differentiates through its own rollout and does not pipeline"
            )
        return f"--algo shac does not take {flag} (PPO's runs do)"

    def build(self, env: Any, agent_cfg: AgentCfg, ctx: LearnerContext) -> ShacRun:
        horizon, episode = agent_cfg.shac.horizon, env.max_episode_length
        if horizon > episode:
            # resets cut the gradient at an episode's end, so a longer window learns nothing
            # more, and its tape of every step's state for the backward pass grows with it
            raise RobolearnError(
                f"agent.shac.horizon ({horizon:,} steps) is longer than an episode of this "
                f"task ({episode:,} steps of {env.step_dt:g} s): use at most {episode}"
            )
        env.reset()
        learner = ShacLearner(env, agent_cfg.shac, agent_cfg.max_iterations)
        meta = {**ctx.meta, "agent": dataclasses.asdict(agent_cfg)}
        return ShacRun(learner, agent_cfg.save_interval, ctx.run_dir, meta)

    def policy(self, env: Any, data: dict[str, Any]) -> CheckpointPolicy:
        actor, groups, action_dim = self.actor(data, "the checkpoint")
        return policy_on_env(
            env, data, actor, groups, action_dim,
            lambda net, obs: net(obs["policy"], deterministic=True),
        )  # fmt: skip

    def actor(self, data: dict[str, Any], where: str) -> tuple[ShacActor, list[str], int]:
        """The actor, sized by its weights: the normalizer's width is the observation's,
        the noise's the action's."""
        state = data["model"].get("actor") or {}
        settings = (data.get("agent") or {}).get("shac")
        if "log_std" not in state or "obs_norm.mean" not in state or settings is None:
            raise RobolearnError(f"{where}: the SHAC checkpoint holds no actor")
        cfg = ShacCfg(**{**settings, "horizon": 1})
        obs_dim, action_dim = state["obs_norm.mean"].numel(), state["log_std"].numel()
        actor = ShacActor(obs_dim, action_dim, cfg)
        load_actor(actor, state, where)
        return actor.eval(), ["policy"], action_dim


class ShacRun(IterationRun):
    """A :class:`ShacLearner` in a run: its checkpoints, progress lines and stops."""

    def __init__(self, learner: ShacLearner, save_interval: int, run_dir, meta: dict) -> None:
        super().__init__(learner, run_dir, {**meta, "algo": SHAC.name}, save_interval)
        self._hinted = False

    def describe(self) -> str:
        engine = self.learner.env.scene.engine
        return f"with SHAC ({engine.solver_name}, {engine.substeps} solver steps per physics step)"

    def iterate(self, on_step=None, health=None) -> tuple[dict[str, Any], str]:
        """One iteration; SHAC checks its own updates (a non-finite gradient skips the
        step), so ``health``, made for rollouts stored for an update, is unused."""
        learner = self.learner
        tick = time.perf_counter()
        figures = learner.learn_iteration()
        seconds = time.perf_counter() - tick
        rate = learner.cfg.horizon * learner.env.num_envs / max(seconds, 1e-9)
        record = {
            "Train/mean_reward": figures["mean_return"],
            "Train/mean_episode_length": figures["mean_episode_length"],
            "Train/mean_step_reward": figures["mean_step_reward"],
            "Perf/env_steps_per_s": rate,
            "Loss/actor": figures["actor_loss"],
            "Loss/value_function": figures["value_loss"],
            "Loss/actor_grad_norm": figures["grad_norm"],
            "Loss/capped_step_share": figures["capped_share"],
            "Policy/mean_std": figures["noise_std"],
        }
        self._hinted = self._hinted or _hint_if_capped(figures["capped_share"], learner.env.cfg)
        shown = self.shown_return(figures["mean_return"])
        return (
            record,
            f"{rate / 1000:.2f}k steps/s  reward {shown}  grad {figures['grad_norm']:.2g}",
        )


def _hint_if_capped(share: float, env_cfg) -> bool:
    """Say once, on stderr, when most steps' gradients hit ``max_step_gain``: stiff
    friction, which a softer coefficient cures (docs/differentiable.md)."""
    if share <= 0.5:
        return False
    tip = ""
    if env_cfg.sim.newton.friction_stiffness is None:
        tip = (
            "; Newton's stiff default friction does this: try env.sim.newton.friction_stiffness=100"
        )
    print(
        f"note: the gradients of {share:.0%} of this iteration's env steps were capped by "
        f"agent.shac.max_step_gain{tip} (docs/differentiable.md)",
        file=sys.stderr,
        flush=True,
    )
    return True
