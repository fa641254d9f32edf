"""The off-policy learners' networks: a squashed actor (TD3's deterministic one, SAC's
Gaussian one) and a pair of critics (scalar, or distributional over fixed atoms).

Both actors learn in [-1, 1] (tanh; the critics and the exploration noise work there), and
the env receives that times ``action_bound``; both keep their deterministic action as
``action_bound * tanh(mean(obs_norm(obs)))``: what export writes and ``load_policy`` runs
for either, the shape of SHAC's actor."""

from __future__ import annotations

import math

import torch
from torch import nn

from robolearn.rl.config.offpolicy import OffPolicyCfg
from robolearn.rl.nets import RunningNorm, mlp

LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0
"""The range of SAC's log std (its head's output is squashed into it)."""


class SquashedActor(nn.Module):
    """``tanh`` of an MLP of the normalized observation; with ``stochastic``, also a
    log std head over the MLP's last hidden features (SAC's Gaussian before the squash).

    ``mean`` is the whole deterministic MLP (hidden layers and output layer): an export
    needs nothing else."""

    def __init__(self, obs_dim: int, num_actions: int, cfg: OffPolicyCfg, stochastic: bool) -> None:
        super().__init__()
        self.obs_norm = RunningNorm(obs_dim, cfg.obs_normalization)
        self.mean = mlp(obs_dim, tuple(cfg.actor_hidden_dims), num_actions, cfg.activation)
        self.stochastic = stochastic
        if stochastic:
            self.log_std = nn.Linear(cfg.actor_hidden_dims[-1], num_actions)
        self.register_buffer("action_bound", torch.tensor(float(cfg.action_bound)))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """The deterministic action, as the env receives it."""
        return self.action_bound * self.unit(obs)

    def unit(self, obs: torch.Tensor) -> torch.Tensor:
        """The deterministic action in [-1, 1], where the learner works."""
        return torch.tanh(self.mean(self.obs_norm(obs)).float())

    def sample(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(a reparameterized action in [-1, 1], its log probability) of SAC's squashed
        Gaussian."""
        features = self.mean[:-1](self.obs_norm(obs))
        # float32 from here: the density is summed over actions (bf16 under autocast)
        mu = self.mean[-1](features).float()
        squashed = torch.tanh(self.log_std(features).float())
        log_std = LOG_STD_MIN + 0.5 * (LOG_STD_MAX - LOG_STD_MIN) * (squashed + 1.0)
        std = log_std.exp()
        pre = mu + std * torch.randn_like(mu)
        action = torch.tanh(pre)
        # the Gaussian's log density, less the squash's log Jacobian (in a stable form)
        log_prob = (-0.5 * ((pre - mu) / std).square() - log_std - 0.5 * math.log(2 * math.pi)).sum(
            -1
        )
        log_prob = log_prob - (
            2.0 * (math.log(2.0) - pre - nn.functional.softplus(-2.0 * pre))
        ).sum(-1)
        return action, log_prob


class TwinCritic(nn.Module):
    """Two Q networks of the normalized critic observation and the action; each gives a
    value (``twin``) or logits over :attr:`atoms` (``c51``)."""

    def __init__(self, obs_dim: int, num_actions: int, cfg: OffPolicyCfg) -> None:
        super().__init__()
        self.obs_norm = RunningNorm(obs_dim, cfg.obs_normalization)
        self.distributional = cfg.critic == "c51"
        outputs = cfg.num_atoms if self.distributional else 1
        self.q1, self.q2 = (
            mlp(
                obs_dim + num_actions,
                tuple(cfg.critic_hidden_dims),
                outputs,
                cfg.activation,
                layer_norm=cfg.critic_layer_norm,
            )
            for _ in range(2)
        )
        self.register_buffer("atoms", torch.linspace(cfg.v_min, cfg.v_max, cfg.num_atoms))

    def forward(
        self, obs: torch.Tensor, actions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Both networks' outputs: values (B,) or logits (B, atoms)."""
        x = torch.cat((self.obs_norm(obs), actions), -1)
        q1, q2 = _full_precision_head(self.q1, x), _full_precision_head(self.q2, x)
        if not self.distributional:
            return q1.squeeze(-1), q2.squeeze(-1)
        return q1, q2

    def value(self, output: torch.Tensor) -> torch.Tensor:
        """The expected return of one network's output."""
        if not self.distributional:
            return output
        return (output.softmax(-1) * self.atoms).sum(-1)

    def project(
        self, logits: torch.Tensor, returns: torch.Tensor, discount: torch.Tensor
    ) -> torch.Tensor:
        """The target distribution: each atom ``z`` of ``logits``'s distribution moved to
        ``returns + discount z``, clipped to the support, and shared between the two atoms
        around where it lands (C51's projection); (B, atoms) probabilities."""
        atoms = self.atoms
        v_min, v_max = float(atoms[0]), float(atoms[-1])
        delta = (v_max - v_min) / (atoms.numel() - 1)
        probs = logits.softmax(-1)
        moved = (returns.unsqueeze(1) + discount.unsqueeze(1) * atoms).clamp(v_min, v_max)
        position = (moved - v_min) / delta
        lower = position.floor()
        upper_share = position - lower  # 0 where it lands on an atom: all mass stays there
        lower = lower.long()
        upper = (lower + 1).clamp(max=atoms.numel() - 1)
        target = torch.zeros_like(probs)
        target.scatter_add_(1, lower, probs * (1.0 - upper_share))
        target.scatter_add_(1, upper, probs * upper_share)
        return target


def _full_precision_head(net: nn.Sequential, x: torch.Tensor) -> torch.Tensor:
    """``net(x)`` with its output layer in float32 under bf16 autocast: a value's steps
    are a reward per env step (a few thousandths, dt-scaled), below bf16's resolution at
    the values' size (1/256 of it)."""
    hidden = net[:-1](x)
    with torch.autocast(x.device.type, enabled=False):
        return net[-1](hidden.float())
