"""The replay buffer of the off-policy learners: every env's latest steps, on the learner's
device, sampled into n-step transitions.

Each env keeps a ring of its last ``capacity`` steps; all envs step together, so one write
position serves them all. A step stores what the env gave: the actor's and the critic's
observations before it, the action, the reward, whether the episode ended there (failed,
or timed out) and whether it failed, and the observations after it (the episode's last
ones where it ended, not the reset's). A sample picks an env and a step at random and
sums the rewards of the next ``n`` steps, stopping at the end of an episode; the bootstrap
then reads the observations after the last step summed, unless that step failed.

A collector thread (``agent.offpolicy.overlap``) writes steps on a CUDA stream of its own
while the learner samples on its stream: each write and each read (a sample, the
normalizer's look at the newest steps, the health check's) takes its turn under the
buffer's lock, after an event recorded after the other's latest turn
(:class:`~robolearn.rl.streams.Handoff`), so a sample reads every step whose slot ``size``
counts, and a write does not overwrite a slot a queued sample has yet to read.
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager
from dataclasses import dataclass

import torch

from robolearn.rl.streams import Handoff


@dataclass
class Batch:
    """Transitions drawn from the buffer, as the updates read them."""

    actor_obs: torch.Tensor
    critic_obs: torch.Tensor
    actions: torch.Tensor
    returns: torch.Tensor
    """The rewards summed over the steps before the bootstrap, discounted."""
    discount: torch.Tensor
    """gamma to the number of steps summed, 0 where the last one failed."""
    next_actor_obs: torch.Tensor
    next_critic_obs: torch.Tensor


class ReplayBuffer:
    """Per-env rings of steps on ``device``.

    Args:
        num_envs: envs stepping together.
        capacity: steps kept per env.
        actor_dim, critic_dim: widths of the actor's and the critic's observations; the
            critic's are not stored apart when ``shared`` (the same groups).
        action_dim: width of the action.
    """

    def __init__(
        self,
        num_envs: int,
        capacity: int,
        actor_dim: int,
        critic_dim: int,
        action_dim: int,
        device: torch.device | str,
        shared: bool = False,
    ) -> None:
        self.num_envs, self.capacity, self.device = num_envs, capacity, torch.device(device)
        self.shared = shared

        def ring(*width: int, dtype=torch.float32) -> torch.Tensor:
            return torch.zeros((capacity, num_envs, *width), dtype=dtype, device=self.device)

        self.actor_obs, self.next_actor_obs = ring(actor_dim), ring(actor_dim)
        if shared:
            self.critic_obs, self.next_critic_obs = self.actor_obs, self.next_actor_obs
        else:
            self.critic_obs, self.next_critic_obs = ring(critic_dim), ring(critic_dim)
        self.actions = ring(action_dim)
        self.rewards = ring()
        self.ended = ring(dtype=torch.bool)
        self.failed = ring(dtype=torch.bool)
        self.position = 0
        """The slot the next step goes to."""
        self.size = 0
        """Steps stored per env (up to ``capacity``)."""
        self.lock = threading.Lock()
        """Held while a step is written or a batch gathered (a collector thread writes
        while the learner samples)."""
        self._turns = Handoff(self.device, self.lock)

    @staticmethod
    def bytes_needed(
        num_envs: int, capacity: int, actor_dim: int, critic_dim: int, action_dim: int, shared: bool
    ) -> int:
        """Memory the buffer's tensors take."""
        floats = 2 * actor_dim + (0 if shared else 2 * critic_dim) + action_dim + 1
        return num_envs * capacity * (4 * floats + 2)

    def add(
        self,
        actor_obs: torch.Tensor,
        critic_obs: torch.Tensor,
        actions: torch.Tensor,
        rewards: torch.Tensor,
        ended: torch.Tensor,
        failed: torch.Tensor,
        next_actor_obs: torch.Tensor,
        next_critic_obs: torch.Tensor,
    ) -> None:
        """Store one step of every env (tensors of (num_envs, ...), on any device)."""
        with self._turns.writing():
            i = self.position
            self.actor_obs[i].copy_(actor_obs, non_blocking=True)
            self.next_actor_obs[i].copy_(next_actor_obs, non_blocking=True)
            if not self.shared:
                self.critic_obs[i].copy_(critic_obs, non_blocking=True)
                self.next_critic_obs[i].copy_(next_critic_obs, non_blocking=True)
            self.actions[i].copy_(actions, non_blocking=True)
            self.rewards[i].copy_(rewards, non_blocking=True)
            self.ended[i].copy_(ended, non_blocking=True)
            self.failed[i].copy_(failed, non_blocking=True)
            self.position = (i + 1) % self.capacity
            self.size = min(self.size + 1, self.capacity)

    def reading(self) -> AbstractContextManager[None]:
        """Hold the lock, and order this thread's stream after the latest write, while the
        stored steps are read outside :meth:`sample` (their slots read inside)."""
        return self._turns.reading()

    def latest(self, steps: int) -> torch.Tensor:
        """The slots of the latest ``steps`` steps, oldest first."""
        steps = min(steps, self.size)
        return (self.position - steps + torch.arange(steps, device=self.device)) % self.capacity

    def sample(self, batch_size: int, n_step: int, gamma: float) -> Batch:
        """``batch_size`` n-step transitions, each from a random env and start step among
        those with ``n_step`` steps stored after them (the latest ``n_step - 1`` steps
        start none yet)."""
        with self._turns.reading():
            return self._sample(batch_size, n_step, gamma)

    def _sample(self, batch_size: int, n_step: int, gamma: float) -> Batch:
        n = max(1, min(n_step, self.size))
        starts = self.size - n + 1
        oldest = (self.position - self.size) % self.capacity
        device = self.device
        env = torch.randint(0, self.num_envs, (batch_size,), device=device)
        start = torch.randint(0, starts, (batch_size,), device=device)
        offsets = torch.arange(n, device=device)
        slots = (oldest + start.unsqueeze(1) + offsets) % self.capacity  # (B, n)
        envs = env.unsqueeze(1).expand(-1, n)
        rewards = self.rewards[slots, envs]
        ended = self.ended[slots, envs]
        # a step counts while no earlier step of the window ended its episode
        counted = (ended.long().cumsum(1) - ended.long()) == 0
        kept = counted.sum(1)  # steps summed: 1..n
        powers = gamma ** offsets.to(rewards.dtype)
        returns = (rewards * counted * powers).sum(1)
        last = slots.gather(1, (kept - 1).unsqueeze(1)).squeeze(1)
        failed = self.failed[last, env]
        discount = torch.where(failed, 0.0, gamma ** kept.to(rewards.dtype))
        first = slots[:, 0]
        return Batch(
            actor_obs=self.actor_obs[first, env],
            critic_obs=self.critic_obs[first, env],
            actions=self.actions[first, env],
            returns=returns,
            discount=discount,
            next_actor_obs=self.next_actor_obs[last, env],
            next_critic_obs=self.next_critic_obs[last, env],
        )
