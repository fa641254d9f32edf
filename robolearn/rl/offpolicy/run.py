"""TD3 and SAC as learners of the run driver (``robolearn train --algo td3`` / ``sac``).

The same run folder as a PPO run (``model_<iteration>.pt`` written atomically,
progress.jsonl with PPO's keys where they mean the same), resume, signals, health checks,
play, view, export and ``load_policy``. An iteration is ``agent.num_steps_per_env`` env
steps of every env, as PPO's is, so ``max_iterations`` and ``save_interval`` mean the same
env steps under every learner. One process (no torchrun ranks).
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any, ClassVar

import torch

from robolearn.errors import RobolearnError
from robolearn.rl.config import AgentCfg
from robolearn.rl.config.offpolicy import OffPolicyCfg
from robolearn.rl.iteration_run import IterationRun
from robolearn.rl.learner import (
    Algorithm,
    CheckpointPolicy,
    LearnerContext,
    load_actor,
    policy_on_env,
)
from robolearn.rl.offpolicy.learner import OffPolicyLearner
from robolearn.rl.offpolicy.networks import SquashedActor


class _OffPolicy(Algorithm):
    """What TD3 and SAC share as plug-ins; :attr:`name` picks the update."""

    takes_ranks = False
    takes_wandb = False
    takes_pipelined = False
    label: ClassVar[str]

    def check(self, agent_cfg: AgentCfg, distributed: bool = False) -> None:
        agent_cfg.offpolicy.validate()
        if agent_cfg.distillation.enabled:
            raise RobolearnError(
                f"--algo {self.name} trains a policy by reinforcement; a distillation "
                "(agent.distillation.enabled) trains with --algo ppo"
            )
        if agent_cfg.init_from:
            raise RobolearnError(
                f"agent.init_from starts a PPO run from a checkpoint; --algo {self.name} "
                "starts its networks at random"
            )

    def refusal(self, flag: str) -> str:
        if flag == "--logger wandb":
            return f"--algo {self.name} logs to progress.jsonl only; leave out --logger wandb"
        if flag in ("--nproc", "--distributed"):
            return f"--algo {self.name} runs in one process; leave out {flag}"
        if flag == "agent.pipelined":
            return (
                f"agent.pipelined overlaps PPO's collection and update; --algo {self.name} "
                "collects beside its updates with agent.offpolicy.overlap=true"
            )
        return f"--algo {self.name} does not take {flag} (PPO's runs do)"

    def build(self, env: Any, agent_cfg: AgentCfg, ctx: LearnerContext) -> OffPolicyRun:
        env.reset()
        learner = OffPolicyLearner.for_agent(env, agent_cfg, self.name)
        meta = {**ctx.meta, "agent": dataclasses.asdict(agent_cfg), "algo": self.name}
        return OffPolicyRun(learner, agent_cfg, ctx.run_dir, meta, self.label)

    def policy(self, env: Any, data: dict[str, Any]) -> CheckpointPolicy:
        actor, groups, action_dim = self.actor(data, "the checkpoint")
        return policy_on_env(
            env, data, actor, groups, action_dim,
            lambda net, obs: net(torch.cat([obs[g] for g in groups], -1)),
        )  # fmt: skip

    def actor(self, data: dict[str, Any], where: str) -> tuple[SquashedActor, list[str], int]:
        """The actor, sized by its weights: the normalizer's width is the observation's,
        the MLP's output the action's."""
        state = data["model"].get("actor") or {}
        agent = data.get("agent") or {}
        settings = agent.get("offpolicy")
        if "obs_norm.mean" not in state or settings is None:
            raise RobolearnError(f"{where}: the {self.label} checkpoint holds no actor")
        cfg = OffPolicyCfg(**settings)
        layers = sorted(k for k in state if k.startswith("mean.") and k.endswith(".weight"))
        obs_dim = state["obs_norm.mean"].numel()
        action_dim = state[max(layers, key=lambda k: int(k.split(".")[1]))].shape[0]
        actor = SquashedActor(obs_dim, action_dim, cfg, stochastic="log_std.weight" in state)
        load_actor(actor, state, where)
        groups = list((agent.get("obs_groups") or {}).get("actor") or ["policy"])
        return actor.eval(), groups, int(action_dim)


class TD3(_OffPolicy):
    """TD3 over parallel envs (the FastTD3 recipe): a deterministic actor with per-env
    exploration noise, clipped double Q, delayed actor updates."""

    name = "td3"
    label = "TD3"


class SAC(_OffPolicy):
    """SAC over parallel envs: a squashed Gaussian actor whose entropy temperature is
    learned, clipped double Q."""

    name = "sac"
    label = "SAC"


class OffPolicyRun(IterationRun):
    """An :class:`OffPolicyLearner` in a run: its checkpoints, progress lines and stops."""

    def __init__(
        self, learner: OffPolicyLearner, agent_cfg: AgentCfg, run_dir, meta: dict, label: str
    ) -> None:
        super().__init__(learner, run_dir, meta, agent_cfg.save_interval)
        self.steps_per_iteration = agent_cfg.num_steps_per_env
        self.label = label

    def describe(self) -> str:
        cfg, learner = self.learner.cfg, self.learner
        how = [f"{cfg.critic} critic", f"{cfg.updates_per_step} updates per env step"]
        if learner.mirrored:
            how.append("mirrored samples")
        if cfg.overlap:
            how.append("collection overlapping the updates")
        if learner.device != torch.device(learner.env.device):
            how.append(f"learning on {learner.device}")
        return f"with {self.label} ({', '.join(how)})"

    def close(self) -> None:
        self.learner.close()

    def iterate(self, on_step, health) -> tuple[dict[str, Any], str]:
        """One iteration; ``health`` checks its steps before its checkpoint."""
        learner, steps = self.learner, self.steps_per_iteration
        tick = time.perf_counter()
        figures = learner.learn_iteration(steps, on_step)
        seconds = time.perf_counter() - tick
        if health is not None:
            figures["logs"].update(
                health.after_rollout(learner.rollout_view(steps), learner.iteration)
            )
        rate = steps * learner.env.num_envs / max(seconds, 1e-9)
        record = {
            "Train/mean_reward": figures["mean_return"],
            "Train/mean_episode_length": figures["mean_episode_length"],
            "Perf/env_steps_per_s": rate,
            "Perf/iteration_time": seconds,
            # collecting (with overlap: waiting for the collector) and updating
            "Perf/collection_time": figures["collect_s"],
            "Perf/learning_time": figures["update_s"],
            "Loss/critic": figures.get("critic", math.nan),
            "Loss/actor": figures.get("actor", math.nan),
            "Loss/q_value": figures.get("q_value", math.nan),
            "Loss/alpha": figures["alpha"],
            "Loss/updates": learner.updates,
            **figures["logs"],
        }
        shown = self.shown_return(figures["mean_return"], figures["mean_episode_length"])
        line = (
            f"{rate / 1000:.2f}k steps/s  reward {shown}  q {figures.get('q_value', math.nan):.3g}"
        )
        return record, line
