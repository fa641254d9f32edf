"""SHAC: short-horizon actor-critic, the differentiable learner (Xu et al., ICLR 2022).

Each iteration rolls the policy out for ``horizon`` env steps through the differentiable
physics (:class:`~robolearn.rl.shac.rollout.DifferentiableRollout`) and maximizes, by
gradient ascent through the physics, each env's discounted reward over that window plus
the critic's value of where it ended::

    J = 1/(H N) sum_envs sum_segments [ sum_t gamma^t r_t + gamma^h V(s_end) ]

A segment ends at the horizon or where an episode ended inside it: a failure bootstraps
nothing, a time-out the value of the state it timed out in. What keeps the gradient usable
through contacts and long rollouts is the truncation: the horizon itself (the gradient of
a whole episode through stiff contacts explodes), a cut wherever the env replaced the state
(resets, pushes), the clip of the actor's gradient norm, and a skipped update where the
gradient is not finite. The critic then fits TD(lambda) targets of the rollout's rewards
by regression, and a slowly following target critic provides the bootstraps.
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import asdict, dataclass

import torch
from torch import nn

from robolearn.env import ManagerBasedRLEnv
from robolearn.rl.config import ShacCfg
from robolearn.rl.nets import RunningNorm, mlp
from robolearn.rl.shac.rollout import DifferentiableRollout


class ShacActor(nn.Module):
    """A Gaussian policy: the mean from an MLP of the normalized observation, squashed
    into [-1, 1] by tanh, and a learned std per action (reparameterized noise)."""

    def __init__(self, obs_dim: int, num_actions: int, cfg: ShacCfg) -> None:
        super().__init__()
        self.obs_norm = RunningNorm(obs_dim, cfg.obs_normalization)
        self.mean = mlp(obs_dim, tuple(cfg.actor_hidden_dims), num_actions, cfg.activation)
        self.log_std = nn.Parameter(torch.full((num_actions,), math.log(cfg.init_noise_std)))

    def forward(self, obs: torch.Tensor, deterministic: bool = False) -> torch.Tensor:
        mean = torch.tanh(self.mean(self.obs_norm(obs)))
        if deterministic:
            return mean
        return mean + self.log_std.exp() * torch.randn_like(mean)


@dataclass
class IterationLog:
    """One iteration's figures."""

    iteration: int
    env_steps: int
    """Env steps of all envs so far (num_envs x horizon per iteration)."""
    wall_s: float
    """Seconds since :meth:`ShacLearner.learn` began."""
    mean_return: float
    """Mean return of the episodes that ended in this iteration (NaN where none did)."""
    mean_episode_length: float
    """Their mean length in env steps (NaN where none ended)."""
    mean_step_reward: float
    """Mean reward per env step over the rollout: progress before any episode ends."""
    actor_loss: float
    value_loss: float
    grad_norm: float
    """The actor's gradient norm before clipping (inf or NaN where the update was skipped)."""
    capped_share: float
    """Share of the rollout's env steps whose gradient ``max_step_gain`` capped."""
    noise_std: float


class ShacLearner:
    """Trains an actor and a critic on ``env`` by SHAC.

    Args:
        env: a task's env on a Newton engine built for gradients (see
            :class:`~robolearn.rl.shac.rollout.DifferentiableRollout`).
        cfg: the learner's settings (validated here).
        max_iterations: the run's length, for the learning rate's linear decay.
    """

    def __init__(self, env: ManagerBasedRLEnv, cfg: ShacCfg, max_iterations: int) -> None:
        cfg.validate()
        self.env, self.cfg = env, cfg
        self.max_iterations = max(1, int(max_iterations))
        self.rollout = DifferentiableRollout(env, max_step_gain=cfg.max_step_gain)
        device = env.device
        obs_dim = self.rollout.observe().shape[-1]
        self.actor = ShacActor(obs_dim, self.rollout.num_actions, cfg).to(device)
        self.critic = mlp(obs_dim, tuple(cfg.critic_hidden_dims), 1, cfg.activation).to(device)
        self.target_critic = copy.deepcopy(self.critic)
        self.target_critic.requires_grad_(False)
        # SHAC's betas: a short memory, as the gradient's scale changes with the policy
        self.actor_optimizer = torch.optim.Adam(
            self.actor.parameters(), lr=cfg.actor_learning_rate, betas=(0.7, 0.95)
        )
        self.critic_optimizer = torch.optim.Adam(
            self.critic.parameters(), lr=cfg.critic_learning_rate, betas=(0.7, 0.95)
        )
        self.iteration = 0
        self.env_steps = 0
        n = env.num_envs
        self._episode_return = torch.zeros(n, device=device)
        self._episode_length = torch.zeros(n, device=device)
        # (episodes ended, their return sum, their length sum) this iteration, on the
        # device: counted without a host sync per step
        self._ended = torch.zeros(3, device=device)

    # ---- acting -------------------------------------------------------------------------

    @torch.no_grad()
    def act(self, obs: torch.Tensor) -> torch.Tensor:
        """The policy's deterministic action for ``obs`` (N, obs_dim)."""
        return self.actor(obs, deterministic=True)

    def _value(self, critic: nn.Module, obs: torch.Tensor) -> torch.Tensor:
        return critic(self.actor.obs_norm(obs)).squeeze(-1)

    # ---- one iteration ------------------------------------------------------------------

    def _actor_pass(self) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Roll out ``horizon`` steps with gradients; the actor's loss and the rollout's
        detached buffers for the critic."""
        cfg, env = self.cfg, self.env
        horizon, n = cfg.horizon, env.num_envs
        self.rollout.detach()
        obs = self.rollout.observe()
        gamma_t = torch.ones(n, device=env.device)
        reward_sum = torch.zeros(n, device=env.device)
        loss = torch.zeros((), device=env.device)
        buffers: dict[str, list[torch.Tensor]] = {"obs": [], "reward": [], "done": [], "next": []}
        for t in range(horizon):
            buffers["obs"].append(obs.detach())
            step = self.rollout.step(self.actor(obs))
            value = self._value(self.target_critic, step.final_obs)
            value = torch.where(step.terminated, torch.zeros_like(value), value)
            done = step.terminated | step.time_outs
            reward_sum = reward_sum + gamma_t * step.reward
            segment = reward_sum + cfg.gamma * gamma_t * value
            ended = done if t < horizon - 1 else torch.ones_like(done)
            loss = loss - torch.where(ended, segment, torch.zeros_like(segment)).sum()
            gamma_t = torch.where(done, torch.ones_like(gamma_t), gamma_t * cfg.gamma)
            reward_sum = torch.where(done, torch.zeros_like(reward_sum), reward_sum)
            buffers["reward"].append(step.reward.detach())
            buffers["done"].append(done)
            buffers["next"].append(value.detach())
            self._count_episodes(step.reward.detach(), done)
            obs = step.obs
        stacked = {key: torch.stack(values) for key, values in buffers.items()}
        return loss / (horizon * n), stacked

    def _count_episodes(self, reward: torch.Tensor, done: torch.Tensor) -> None:
        self._episode_return += reward
        self._episode_length += 1
        ended = done.float()
        self._ended += torch.stack(
            [
                ended.sum(),
                (self._episode_return * ended).sum(),
                (self._episode_length * ended).sum(),
            ]
        )
        self._episode_return.masked_fill_(done, 0.0)
        self._episode_length.masked_fill_(done, 0.0)

    def _targets(self, buffers: dict[str, torch.Tensor]) -> torch.Tensor:
        """TD(lambda) returns of each step: r + gamma ((1 - lam) V' + lam G'), where a step
        that ended its episode (or the horizon) bootstraps V' alone."""
        cfg = self.cfg
        reward, done, nxt = buffers["reward"], buffers["done"], buffers["next"]
        targets = torch.empty_like(reward)
        following = nxt[-1]
        for t in reversed(range(reward.shape[0])):
            mixed = (1.0 - cfg.lam) * nxt[t] + cfg.lam * following
            last = done[t] if t < reward.shape[0] - 1 else torch.ones_like(done[t])
            targets[t] = reward[t] + cfg.gamma * torch.where(last, nxt[t], mixed)
            following = targets[t]
        return targets

    def _fit_critic(self, obs: torch.Tensor, targets: torch.Tensor) -> float:
        cfg = self.cfg
        obs, targets = obs.reshape(-1, obs.shape[-1]), targets.reshape(-1)
        batches = cfg.critic_mini_batches
        size = max(1, obs.shape[0] // batches)
        total, count = 0.0, 0
        for _ in range(cfg.critic_iterations):
            order = torch.randperm(obs.shape[0], device=obs.device)
            for b in range(batches):
                idx = order[b * size : (b + 1) * size]
                loss = (self._value(self.critic, obs[idx]) - targets[idx]).square().mean()
                self.critic_optimizer.zero_grad(set_to_none=True)
                loss.backward()
                nn.utils.clip_grad_norm_(self.critic.parameters(), cfg.max_grad_norm)
                self.critic_optimizer.step()
                total, count = total + float(loss.detach()), count + 1
        with torch.no_grad():
            alpha = cfg.target_critic_alpha
            for target, source in zip(
                self.target_critic.parameters(), self.critic.parameters(), strict=True
            ):
                target.mul_(alpha).add_(source, alpha=1.0 - alpha)
        return total / max(count, 1)

    def _set_learning_rates(self) -> None:
        cfg = self.cfg
        share = 1.0
        if cfg.lr_schedule == "linear":
            share = max(0.0, 1.0 - self.iteration / self.max_iterations)
        for group in self.actor_optimizer.param_groups:
            group["lr"] = cfg.actor_learning_rate * share
        for group in self.critic_optimizer.param_groups:
            group["lr"] = cfg.critic_learning_rate * share

    def learn_iteration(self) -> dict[str, float]:
        """One rollout, one actor step, one critic fit; the iteration's figures."""
        self._set_learning_rates()
        loss, buffers = self._actor_pass()
        self.actor_optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = nn.utils.clip_grad_norm_(self.actor.parameters(), self.cfg.max_grad_norm)
        if torch.isfinite(grad_norm):
            self.actor_optimizer.step()
        counts = self.env.scene.engine.grad_cap_counts
        capped, seen = (int(c) for c in counts)
        counts.zero_()
        self.actor.obs_norm.update(buffers["obs"])
        value_loss = self._fit_critic(buffers["obs"], self._targets(buffers))
        self.iteration += 1
        self.env_steps += self.cfg.horizon * self.env.num_envs
        count, return_sum, length_sum = (float(v) for v in self._ended)
        self._ended.zero_()
        nan = float("nan")
        return {
            "actor_loss": float(loss.detach()),
            "value_loss": value_loss,
            "grad_norm": float(grad_norm),
            "capped_share": capped / seen if seen else 0.0,
            "mean_return": return_sum / count if count else nan,
            "mean_episode_length": length_sum / count if count else nan,
            "mean_step_reward": float(buffers["reward"].mean()),
            "noise_std": float(self.actor.log_std.detach().exp().mean()),
        }

    def learn(self, iterations: int, on_iteration=None) -> list[IterationLog]:
        """Run ``iterations`` iterations; ``on_iteration(log)`` is called after each (to
        print, save, stop). Returns every iteration's figures."""
        start = time.perf_counter()
        logs = []
        for _ in range(iterations):
            figures = self.learn_iteration()
            log = IterationLog(
                iteration=self.iteration,
                env_steps=self.env_steps,
                wall_s=time.perf_counter() - start,
                **figures,
            )
            logs.append(log)
            if on_iteration is not None:
                on_iteration(log)
        return logs

    # ---- saving -------------------------------------------------------------------------

    def state_dict(self) -> dict:
        """The networks, optimizers and counters, for a checkpoint."""
        return {
            "actor": self.actor.state_dict(),
            "critic": self.critic.state_dict(),
            "target_critic": self.target_critic.state_dict(),
            "actor_optimizer": self.actor_optimizer.state_dict(),
            "critic_optimizer": self.critic_optimizer.state_dict(),
            "iteration": self.iteration,
            "env_steps": self.env_steps,
            "shac": asdict(self.cfg),
        }

    def load_state_dict(self, state: dict, training_state: bool = True) -> None:
        """Resume from :meth:`state_dict`'s output (the networks alone without
        ``training_state``)."""
        self.actor.load_state_dict(state["actor"])
        self.critic.load_state_dict(state["critic"])
        self.target_critic.load_state_dict(state["target_critic"])
        if not training_state:
            return
        self.actor_optimizer.load_state_dict(state["actor_optimizer"])
        self.critic_optimizer.load_state_dict(state["critic_optimizer"])
        self.iteration = int(state["iteration"])
        self.env_steps = int(state["env_steps"])
