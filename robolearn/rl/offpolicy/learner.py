"""TD3 and SAC over thousands of parallel envs (``robolearn train --algo td3`` / ``sac``).

Each env step of all envs is followed by ``updates_per_step`` updates, each on a large
batch of n-step transitions from the replay buffer: the critics regress (or, ``c51``,
match in distribution) the n-step return plus the discounted value of the target critics
at the step after, the smaller of the two; every ``policy_delay`` updates the actor climbs
the critics' value of its action (TD3: their mean; SAC: their minimum, less the entropy
term whose temperature is learned). The target critics follow the critics by Polyak
averaging. With ``overlap``, a collector thread steps the envs while the updates run, one
env step ahead of them at most; on CUDA it queues on a stream of its own
(:mod:`robolearn.rl.streams`).
"""

from __future__ import annotations

import copy
import math
import time
from collections import deque
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from robolearn.errors import RobolearnError
from robolearn.mdp.mirror import Mirror, action_mirror, group_mirror
from robolearn.rl.config import fast_bf16
from robolearn.rl.config.offpolicy import OffPolicyCfg
from robolearn.rl.learner import spread_episode_ends
from robolearn.rl.nets import mlp_parameters
from robolearn.rl.offpolicy.collector import (
    Collector,
    CollectorThread,
    PolicySnapshot,
    StepMover,
)
from robolearn.rl.offpolicy.networks import SquashedActor, TwinCritic
from robolearn.rl.offpolicy.replay import Batch, ReplayBuffer
from robolearn.rl.streams import SideStream
from robolearn.rl.symmetry import mirror_setting
from robolearn.scene.mirror import IndexMirror
from robolearn.sim.memory import require
from robolearn.threads import available_cores, threads_for

ALGOS = ("td3", "sac")


@dataclass
class RolloutView:
    """An iteration's collected steps as the training health check reads a rollout:
    observations by group and rewards, (steps, envs, ...)."""

    observations: dict[str, torch.Tensor]
    rewards: torch.Tensor


class OffPolicyLearner:
    """Trains an actor and twin critics on ``env`` by TD3 or SAC.

    Args:
        env: the task's ManagerBasedRLEnv (reset).
        cfg: the learner's settings (validated here).
        algo: ``td3`` or ``sac``.
        obs_groups: the agent config's ``obs_groups``: what the actor and the critic read.
        symmetry: train on each sampled transition and its mirror image too.
    """

    def __init__(
        self,
        env,
        cfg: OffPolicyCfg,
        algo: str,
        obs_groups: dict[str, list[str]],
        symmetry: bool = False,
    ) -> None:
        cfg.validate()
        if algo not in ALGOS:
            raise ValueError(f"algo must be one of {ALGOS}, got {algo!r}")
        self.env, self.cfg, self.algo = env, cfg, algo
        where = env.device if cfg.learner_device == "env" else cfg.learner_device
        if str(where).startswith("cuda") and not torch.cuda.is_available():
            raise RobolearnError(
                "agent.offpolicy.learner_device=cuda, but torch sees no CUDA device here"
            )
        self.device = torch.device(where)
        self.actor_groups = list(obs_groups.get("actor") or ["policy"])
        self.critic_groups = list(obs_groups.get("critic") or self.actor_groups)
        self._group_dims = _flat_group_dims(env, self.actor_groups + self.critic_groups, algo)
        actor_dim = sum(self._group_dims[g] for g in self.actor_groups)
        critic_dim = sum(self._group_dims[g] for g in self.critic_groups)
        num_actions = env.num_actions
        device = self.device
        _require_network_memory(cfg, actor_dim, critic_dim, num_actions, device)
        self.actor = SquashedActor(actor_dim, num_actions, cfg, stochastic=algo == "sac").to(device)
        self.critic = TwinCritic(critic_dim, num_actions, cfg).to(device)
        self.target_critic = copy.deepcopy(self.critic).requires_grad_(False)
        # one normalizer for both: the target reads the statistics the critic is trained on
        self.target_critic.obs_norm = self.critic.obs_norm
        self.actor_optimizer = torch.optim.AdamW(
            self.actor.parameters(), lr=cfg.actor_learning_rate, weight_decay=cfg.weight_decay
        )
        self.critic_optimizer = torch.optim.AdamW(
            self.critic.parameters(), lr=cfg.critic_learning_rate, weight_decay=cfg.weight_decay
        )
        self.log_alpha = torch.tensor(math.log(cfg.init_alpha), device=device, requires_grad=True)
        self.alpha_optimizer = torch.optim.Adam([self.log_alpha], lr=cfg.critic_learning_rate)
        self.target_entropy = (
            cfg.target_entropy if cfg.target_entropy is not None else -0.5 * num_actions
        )
        shared = self.critic_groups == self.actor_groups
        capacity = max(cfg.n_step + 3, cfg.buffer_size // env.num_envs)
        _require_memory(
            ReplayBuffer.bytes_needed(
                env.num_envs, capacity, actor_dim, critic_dim, num_actions, shared
            ),
            device,
        )
        self.replay = ReplayBuffer(
            env.num_envs, capacity, actor_dim, critic_dim, num_actions, device, shared
        )
        self.collector = Collector(env, self.actor_groups, self.critic_groups, cfg, algo)
        # a learner on a device of its own (even the env's: the same code path, testable
        # without a GPU) takes the steps through host slots and acts with a copy
        separate = cfg.learner_device != "env"
        self.mover = StepMover(self.replay, staged=separate)
        own_policy = not cfg.overlap and not separate
        self.snapshot = None if own_policy else PolicySnapshot(self.actor, env.device)
        self._mirrors = None
        if symmetry:
            with mirror_setting("agent.offpolicy.symmetry"):
                self._mirrors = self._build_mirrors()
        self.iteration = 0
        self._episodes_spread = False
        self.env_steps = 0
        self.updates = 0
        self._cores = available_cores()
        self._thread: CollectorThread | None = None
        self._new_slots: deque[int] = deque()
        self._zero = torch.zeros((), device=device)
        amp = cfg.mixed_precision
        self.bf16 = fast_bf16(str(device)) if amp == "auto" else bool(amp)

    @classmethod
    def for_agent(cls, env, agent_cfg, algo: str) -> OffPolicyLearner:
        """The learner an agent config asks for: its ``offpolicy`` settings and
        ``obs_groups``, and symmetry augmentation as the task's PPO has it unless
        ``offpolicy.symmetry`` says."""
        cfg = agent_cfg.offpolicy
        symmetry = cfg.symmetry
        if symmetry is None:
            symmetry = agent_cfg.algorithm.symmetry.use_data_augmentation
        return cls(env, cfg, algo, agent_cfg.obs_groups, symmetry=bool(symmetry))

    @property
    def mirrored(self) -> bool:
        """Whether each sampled transition is trained on with its mirror image."""
        return self._mirrors is not None

    # ---- acting -------------------------------------------------------------------------

    @property
    def alpha(self) -> torch.Tensor:
        """SAC's entropy temperature."""
        return self.log_alpha.detach().exp()

    # ---- collection ---------------------------------------------------------------------

    def _collect_one(self) -> None:
        """One env step of all envs into the buffer; its slot is queued for the learner's
        normalizer update."""
        random = self.updates == 0 and self.collector.steps < self.cfg.learning_starts
        if self.snapshot is None:
            step = self.collector.step(self.actor, random)
        else:
            step = self.collector.step(self.snapshot.actor, random, guard=self.snapshot.acting())
        slot = self.replay.position
        self.mover.push(step)
        self._new_slots.append(slot)

    def _take_new_steps(self) -> None:
        """Fold the steps collected since the last call into the observation statistics."""
        if not self._new_slots:
            return
        with self.replay.reading():  # after a collector thread's writes of those slots
            while self._new_slots:
                slot = self._new_slots.popleft()
                self.actor.obs_norm.update(self.replay.actor_obs[slot])
                self.critic.obs_norm.update(self.replay.critic_obs[slot])

    def _start_thread(self) -> None:
        if self.cfg.overlap and self._thread is None:
            threads = self.cfg.learner_threads or max(1, self._cores // 2)
            self._learner_threads = threads
            # the env's and the buffer's devices: the physics, the snapshot's inference
            # and the buffer's writes all go to the collector's own streams
            side = SideStream(self.env.device, self.device)
            self._thread = CollectorThread(self._collect_one, threads=1, side=side)

    def close(self) -> None:
        """End the collector thread, if one runs (its step in progress finishes)."""
        if self._thread is not None:
            thread, self._thread = self._thread, None
            thread.stop()

    # ---- updates ------------------------------------------------------------------------

    def _build_mirrors(self) -> dict[str, Mirror]:
        """Mirrors of the concatenated actor and critic observations and of the action."""
        env, device = self.env, self.device

        def joined(groups: list[str]) -> Mirror:
            perm, sign, offset = [], [], 0
            for g in groups:
                m = group_mirror(env, g)
                perm += [offset + p for p in m.perm]
                sign += list(m.sign)
                offset += self._group_dims[g]
            return Mirror(IndexMirror(tuple(perm), tuple(sign)), device)

        return {
            "actor": joined(self.actor_groups),
            "critic": joined(self.critic_groups),
            "action": Mirror(action_mirror(env), device),
        }

    def _mirrored(self, b: Batch) -> Batch:
        m = self._mirrors
        return Batch(
            actor_obs=torch.cat((b.actor_obs, m["actor"](b.actor_obs))),
            critic_obs=torch.cat((b.critic_obs, m["critic"](b.critic_obs))),
            actions=torch.cat((b.actions, m["action"](b.actions))),
            returns=b.returns.repeat(2),
            discount=b.discount.repeat(2),
            next_actor_obs=torch.cat((b.next_actor_obs, m["actor"](b.next_actor_obs))),
            next_critic_obs=torch.cat((b.next_critic_obs, m["critic"](b.next_critic_obs))),
        )

    def _critic_loss(self, b: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """(the critics' loss, their mean value of the batch's actions)."""
        cfg, critic, target = self.cfg, self.critic, self.target_critic
        with torch.no_grad():
            if self.algo == "sac":
                next_actions, log_prob = self.actor.sample(b.next_actor_obs)
                entropy_bonus = -self.alpha * log_prob
            else:
                next_actions = self.actor.unit(b.next_actor_obs)
                noise = (torch.randn_like(next_actions) * cfg.target_noise).clamp(
                    -cfg.target_noise_clip, cfg.target_noise_clip
                )
                next_actions = (next_actions + noise).clamp(-1.0, 1.0)
                entropy_bonus = self._zero
            t1, t2 = target(b.next_critic_obs, next_actions)
            if critic.distributional:
                smaller = (target.value(t1) < target.value(t2)).unsqueeze(1)
                chosen = torch.where(smaller, t1, t2)
                shifted = b.returns + b.discount * entropy_bonus
                target_probs = critic.project(chosen, shifted, b.discount)
            else:
                y = b.returns + b.discount * (torch.minimum(t1, t2) + entropy_bonus)
        q1, q2 = critic(b.critic_obs, b.actions)
        if critic.distributional:
            loss = -(target_probs * (F.log_softmax(q1, -1) + F.log_softmax(q2, -1))).sum(-1).mean()
            value = 0.5 * (critic.value(q1) + critic.value(q2)).mean()
        else:
            loss = F.mse_loss(q1, y) + F.mse_loss(q2, y)
            value = 0.5 * (q1 + q2).mean()
        return loss, value.detach()

    def _actor_loss(self, b: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """(the actor's loss, SAC's temperature loss or 0)."""
        critic = self.critic
        if self.algo == "sac":
            actions, log_prob = self.actor.sample(b.actor_obs)
            q1, q2 = critic(b.critic_obs, actions)
            q = torch.minimum(critic.value(q1), critic.value(q2))
            loss = (self.alpha * log_prob - q).mean()
            alpha_loss = -(self.log_alpha * (log_prob.detach() + self.target_entropy)).mean()
            return loss, alpha_loss
        q1, q2 = critic(b.critic_obs, self.actor.unit(b.actor_obs))
        return -(0.5 * (critic.value(q1) + critic.value(q2))).mean(), self._zero

    def _step(
        self, optimizer: torch.optim.Optimizer, loss: torch.Tensor, module: nn.Module
    ) -> None:
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if self.cfg.max_grad_norm > 0:
            nn.utils.clip_grad_norm_(module.parameters(), self.cfg.max_grad_norm)
        optimizer.step()

    def _autocast(self) -> torch.autocast:
        return torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.bf16)

    def update(self) -> dict[str, torch.Tensor]:
        """One critic update (and, every ``policy_delay``-th, an actor update): the losses,
        as 0-d tensors on the learner's device."""
        cfg = self.cfg
        batch = self.replay.sample(cfg.batch_size, cfg.n_step, cfg.gamma)
        if self._mirrors is not None:
            batch = self._mirrored(batch)
        with self._autocast():
            critic_loss, q_value = self._critic_loss(batch)
        self._step(self.critic_optimizer, critic_loss, self.critic)
        figures = {"critic": critic_loss.detach(), "q_value": q_value}
        if self.updates % cfg.policy_delay == 0:
            self.critic.requires_grad_(False)
            with self._autocast():
                actor_loss, alpha_loss = self._actor_loss(batch)
            self.critic.requires_grad_(True)
            self._step(self.actor_optimizer, actor_loss, self.actor)
            if self.algo == "sac":
                self.alpha_optimizer.zero_grad(set_to_none=True)
                alpha_loss.backward()
                self.alpha_optimizer.step()
            figures["actor"] = actor_loss.detach()
            if self.snapshot is not None:
                self.snapshot.refresh(self.actor)
        with torch.no_grad():
            torch._foreach_lerp_(
                list(self.target_critic.parameters()), list(self.critic.parameters()), cfg.tau
            )
        self.updates += 1
        return figures

    # ---- one iteration ------------------------------------------------------------------

    def learn_iteration(self, steps: int, on_step=None) -> dict[str, float]:
        """``steps`` env steps of all envs, each followed by its updates (once the buffer
        holds ``learning_starts`` steps); the iteration's figures."""
        cfg = self.cfg
        sums: dict[str, list[torch.Tensor]] = {}
        if not self._episodes_spread:
            # as PPO's runner (a resumed run too): episodes in lockstep would fill the
            # buffer one phase of the task at a time
            spread_episode_ends(self.env)
            self._episodes_spread = True
        self._start_thread()
        start = self.collector.steps if self._thread is None else self._thread.collected
        # seconds this thread spent collecting (or, with a collector thread, waiting for
        # it) and updating: host clocks, which a GPU's queued work does not stop
        waited = updating = 0.0
        for k in range(steps):
            tick = time.perf_counter()
            if self._thread is None:
                self._collect_one()
            else:
                # one step ahead: the thread collects step k+1 while step k's updates run
                self._thread.allow(start + k + 2)
                self._thread.wait_for(start + k + 1)
            if on_step is not None:
                on_step(k)
            self._take_new_steps()
            tock = time.perf_counter()
            waited += tock - tick
            if self.replay.size < max(cfg.learning_starts, 2):
                continue
            threads = self._learner_threads if self._thread is not None else self._cores
            with threads_for(self.device, threads):
                for _ in range(cfg.updates_per_step):
                    for key, value in self.update().items():
                        sums.setdefault(key, []).append(value)
            updating += time.perf_counter() - tock
        if self._thread is not None:
            tick = time.perf_counter()
            self._thread.wait_for(start + steps)  # the iteration's steps, none after
            # what is read of the env after the iteration (the health check) follows them
            self._thread.side.main_waits()
            waited += time.perf_counter() - tick
        self.iteration += 1
        self.env_steps += steps * self.env.num_envs
        means = {k: torch.stack(v).mean() for k, v in sums.items()}
        names = list(means)
        values = torch.stack(list(means.values())).tolist() if means else []
        figures = dict(zip(names, values, strict=True))
        ret, length, logs = self.collector.pop_stats()
        figures.update(mean_return=ret, mean_episode_length=length, logs=logs)
        figures["alpha"] = float(self.alpha) if self.algo == "sac" else math.nan
        figures.update(collect_s=waited, update_s=updating)
        return figures

    def rollout_view(self, steps: int) -> RolloutView:
        """The latest ``steps`` collected steps by observation group, for the health
        check."""
        with self.replay.reading():  # gathered after a collector thread's writes
            slots = self.replay.latest(steps)
            columns = {
                "actor": self.replay.actor_obs[slots],
                "critic": self.replay.critic_obs[slots],
            }
            rewards = self.replay.rewards[slots]
        obs: dict[str, torch.Tensor] = {}
        for role, groups in (("actor", self.actor_groups), ("critic", self.critic_groups)):
            offset = 0
            for g in groups:
                width = self._group_dims[g]
                obs.setdefault(g, columns[role][..., offset : offset + width])
                offset += width
        return RolloutView(obs, rewards)

    # ---- saving -------------------------------------------------------------------------

    def state_dict(self) -> dict:
        """The networks, optimizers and counters, for a checkpoint (not the replay
        buffer: a resumed run collects afresh)."""
        saved = {name: getattr(self, name).state_dict() for name in (*_NETWORKS, *_OPTIMIZERS)}
        counters = {name: getattr(self, name) for name in _COUNTERS}
        return {**saved, **counters, "log_alpha": self.log_alpha.detach().clone()}

    def load_state_dict(self, state: dict, training_state: bool = True) -> None:
        """Load :meth:`state_dict`'s output (with ``training_state``, the optimizers and
        counters too)."""
        for name in _NETWORKS:
            getattr(self, name).load_state_dict(state[name])
        if self.snapshot is not None:
            self.snapshot.refresh(self.actor)
        if not training_state:
            return
        for name in _OPTIMIZERS:
            getattr(self, name).load_state_dict(state[name])
        for name in _COUNTERS:
            setattr(self, name, int(state[name]))
        with torch.no_grad():
            self.log_alpha.copy_(state["log_alpha"])


_NETWORKS = ("actor", "critic", "target_critic")
_OPTIMIZERS = ("actor_optimizer", "critic_optimizer", "alpha_optimizer")
_COUNTERS = ("iteration", "env_steps", "updates")
"""What a checkpoint's ``model`` holds of an :class:`OffPolicyLearner`, by attribute."""


def _flat_group_dims(env, groups: list[str], algo: str) -> dict[str, int]:
    """Each named group's width; a group the env lacks, or of images, is a RobolearnError."""
    shapes = env.observation_manager.group_shapes
    dims = {}
    for g in groups:
        if g not in shapes:
            raise RobolearnError(
                f"agent.obs_groups names observation group {g!r}, which the task lacks; "
                f"it has {', '.join(shapes)}"
            )
        if len(shapes[g]) != 1:
            raise RobolearnError(
                f"--algo {algo} reads flat observations; group {g!r} is images "
                f"{tuple(shapes[g])}: train it with PPO (a CNN policy)"
            )
        dims[g] = int(shapes[g][0])
    return dims


def _require_network_memory(
    cfg: OffPolicyCfg, actor_dim: int, critic_dim: int, num_actions: int, device: torch.device
) -> None:
    """Refuse networks, or a batch through them, beyond the memory on ``device``.

    In float32: the actor as trained (weights, gradients, AdamW's two moments), the twin
    critics so and once more as the target; and a batch's activations, kept for the
    backward pass, through the actor and four critic networks (twins and targets), with
    the next observations beside the batch's."""
    critic_out = cfg.num_atoms if cfg.critic == "c51" else 1
    actor = mlp_parameters(actor_dim, tuple(cfg.actor_hidden_dims), num_actions)
    critic = 2 * mlp_parameters(critic_dim + num_actions, tuple(cfg.critic_hidden_dims), critic_out)
    widths = sum(cfg.actor_hidden_dims) + 4 * (sum(cfg.critic_hidden_dims) + critic_out)
    batch = cfg.batch_size * (2 * (actor_dim + critic_dim) + 2 * widths)
    require(
        4 * (4 * actor + 5 * critic + batch),
        device,
        "the learner's networks and a batch through them (agent.offpolicy.actor_hidden_dims, "
        "critic_hidden_dims, batch_size)",
        advice="use narrower networks or a smaller batch_size",
    )


def _require_memory(nbytes: int, device: torch.device) -> None:
    """Refuse a replay buffer larger than the memory available on ``device``."""
    require(
        nbytes,
        device,
        "the replay buffer (agent.offpolicy.buffer_size)",
        advice="lower agent.offpolicy.buffer_size",
    )
