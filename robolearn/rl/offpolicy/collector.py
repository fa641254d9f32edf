"""Collection for the off-policy learners: the env stepped with exploration, each step
written to the replay buffer, and the steps crossing to the learner's device.

:class:`Collector` acts and steps; :class:`StepMover` takes its steps to the buffer, through
pinned, double-buffered host memory when the env is on the CPU and the learner on a GPU
(the cpu engine's steps written into one pinned slot while the other's copy to the GPU is
still in flight, so that neither the physics nor the GPU waits for the other);
:class:`CollectorThread` runs the collector beside the updates.

On CUDA the collector thread queues on a stream of its own
(:class:`~robolearn.rl.streams.SideStream`), so that its physics and inference run on the
GPU beside the updates; what both threads use (the replay buffer, the policy snapshot,
the episode statistics) is used in turns ordered on the GPU
(:class:`~robolearn.rl.streams.Handoff`). Off CUDA all of that is nothing.
"""

from __future__ import annotations

import contextlib
import copy
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, fields

import torch

from robolearn.rl.config.offpolicy import OffPolicyCfg
from robolearn.rl.offpolicy.networks import SquashedActor
from robolearn.rl.offpolicy.replay import ReplayBuffer
from robolearn.rl.runner import EpisodeStats
from robolearn.rl.streams import Handoff, SideStream
from robolearn.threads import single_threaded


@dataclass
class Step:
    """One env step of every env, as the replay buffer stores it (on the env's device)."""

    actor_obs: torch.Tensor
    critic_obs: torch.Tensor
    actions: torch.Tensor
    rewards: torch.Tensor
    ended: torch.Tensor
    failed: torch.Tensor
    next_actor_obs: torch.Tensor
    next_critic_obs: torch.Tensor


def concat_groups(obs: dict[str, torch.Tensor], groups: list[str]) -> torch.Tensor:
    """The named observation groups side by side (the group itself when there is one)."""
    if len(groups) == 1:
        return obs[groups[0]]
    return torch.cat([obs[g] for g in groups], -1)


class Collector:
    """Steps ``env`` with ``policy``'s actions and exploration.

    Args:
        env: the ManagerBasedRLEnv (its ``record_final_obs`` is turned on: an episode's
            last observations are what a time-out bootstraps from).
        actor_groups, critic_groups: the observation groups each network reads.
        cfg: the learner's settings (exploration noise, ``learning_starts``).
        algo: ``td3`` (deterministic action plus per-env Gaussian noise) or ``sac`` (a
            sample of the policy).
    """

    def __init__(
        self,
        env,
        actor_groups: list[str],
        critic_groups: list[str],
        cfg: OffPolicyCfg,
        algo: str,
    ) -> None:
        self.env, self.cfg, self.algo = env, cfg, algo
        self.actor_groups, self.critic_groups = actor_groups, critic_groups
        env.record_final_obs = True
        self.device = env.device
        self.bound = cfg.action_bound
        n = env.num_envs
        self.stats = EpisodeStats(n, self.device)
        # a collector thread adds on its stream while the learner pops (pop_stats)
        self._stats_turns = Handoff(self.device)
        self.noise_std = torch.empty(n, device=self.device)
        self._draw_noise(torch.ones(n, dtype=torch.bool, device=self.device))
        self.steps = 0
        """Env steps of every env collected by this collector (this session)."""
        self._obs = env.obs_buf

    def _draw_noise(self, envs: torch.Tensor) -> None:
        low, high = self.cfg.noise_std_min, self.cfg.noise_std_max
        drawn = low + (high - low) * torch.rand_like(self.noise_std)
        self.noise_std.copy_(torch.where(envs, drawn, self.noise_std))

    def observe(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(the actor's, the critic's) current observations."""
        return (
            concat_groups(self._obs, self.actor_groups),
            concat_groups(self._obs, self.critic_groups),
        )

    @torch.no_grad()
    def act(self, policy: SquashedActor, actor_obs: torch.Tensor, random: bool) -> torch.Tensor:
        """Exploring actions in [-1, 1] (the env receives them times the bound): uniform
        before learning starts."""
        if random:
            return torch.rand(actor_obs.shape[0], self.env.num_actions, device=self.device) * 2 - 1
        if self.algo == "sac":
            return policy.sample(actor_obs)[0]
        action = policy.unit(actor_obs)
        noise = torch.randn_like(action) * self.noise_std.unsqueeze(1)
        return (action + noise).clamp(-1.0, 1.0)

    def step(
        self,
        policy: SquashedActor,
        random: bool = False,
        guard: AbstractContextManager | None = None,
    ) -> Step:
        """Act and step every env once; the step as the buffer stores it. ``guard`` is held
        while the policy acts (:meth:`PolicySnapshot.acting`: a snapshot the learner
        refreshes from another thread)."""
        actor_obs, critic_obs = self.observe()
        with guard or contextlib.nullcontext():
            actions = self.act(policy, actor_obs, random)
        with single_threaded(self.device):  # MuJoCo holds the cores while it steps
            obs, rewards, failed, time_outs, extras = self.env.step(actions * self.bound)
        ended = failed | time_outs
        final = extras["final_obs"]
        with self._stats_turns.writing():
            self.stats.add(rewards, ended, extras)
        if self.algo == "td3":
            self._draw_noise(ended)
        self._obs = obs
        self.steps += 1
        # the observations after the step: the episode's last where it ended
        keep = ended.unsqueeze(1)
        actor_now, critic_now = self.observe()
        next_actor = torch.where(keep, concat_groups(final, self.actor_groups), actor_now)
        next_critic = torch.where(keep, concat_groups(final, self.critic_groups), critic_now)
        # the env makes new tensors each step: the step is stored before any changes
        return Step(actor_obs, critic_obs, actions, rewards, ended, failed, next_actor, next_critic)

    def pop_stats(self) -> tuple[float, float, dict[str, float]]:
        """:meth:`EpisodeStats.pop` of the steps collected so far, in turn with the
        collector's adds (which a collector thread makes on its own stream)."""
        with self._stats_turns.reading():
            return self.stats.pop()


class StepMover:
    """Writes the collector's steps into the replay buffer on the learner's device.

    ``staged`` (the learner on a device of its own, ``agent.offpolicy.learner_device``):
    each step is first copied into one of two host slots, pinned when the buffer is on a
    GPU, and its copy to the buffer is queued without waiting; the next step takes the
    other slot, and a slot is written again only once its copy is done (an event recorded
    after it). Otherwise the buffer copies the step directly."""

    def __init__(self, buffer: ReplayBuffer, staged: bool) -> None:
        self.buffer = buffer
        self.staged = staged
        self._pinned = buffer.device.type == "cuda"
        self._slots: list[Step | None] = [None, None]
        self._events: list[torch.cuda.Event | None] = [None, None]
        self._turn = 0

    def push(self, step: Step) -> None:
        if not self.staged:
            self.buffer.add(**{f.name: getattr(step, f.name) for f in fields(Step)})
            return
        turn = self._turn
        self._turn = 1 - turn
        if self._events[turn] is not None:
            self._events[turn].synchronize()  # that slot's previous copy is done
        slot = self._slots[turn]
        if slot is None:
            host = {
                f.name: getattr(step, f.name).detach().to("cpu", copy=True) for f in fields(Step)
            }
            if self._pinned:
                host = {name: value.pin_memory() for name, value in host.items()}
            slot = self._slots[turn] = Step(**host)
        else:
            for f in fields(Step):
                getattr(slot, f.name).copy_(getattr(step, f.name))
        self.buffer.add(**{f.name: getattr(slot, f.name) for f in fields(Step)})
        if self._pinned:
            event = self._events[turn] = self._events[turn] or torch.cuda.Event()
            event.record(torch.cuda.current_stream(self.buffer.device))  # the add's stream


class PolicySnapshot:
    """The copy of the actor the collector acts with when it is not the learner's own (a
    collector thread, or the env on another device): refreshed from the learner's actor
    under a lock, read under the same lock.

    On CUDA the refresh (the learner's stream) and the acting (the collector's) take
    turns on the GPU too: a refresh's copies wait for the kernels of the latest act, which
    read the weights they overwrite, and an act waits for the latest refresh's copies, so
    that it never reads half-copied weights."""

    def __init__(self, actor: SquashedActor, device: torch.device | str) -> None:
        self.actor = copy.deepcopy(actor).to(device).requires_grad_(False)
        self.lock = threading.Lock()
        self._turns = Handoff(device, self.lock)

    def refresh(self, actor: SquashedActor) -> None:
        """Copy ``actor``'s weights (without waiting for the copies on the host)."""
        with self._turns.writing(), torch.no_grad():
            for mine, theirs in zip(
                self.actor.state_dict().values(), actor.state_dict().values(), strict=True
            ):
                mine.copy_(theirs, non_blocking=True)

    @contextlib.contextmanager
    def acting(self) -> Iterator[SquashedActor]:
        """The snapshot's actor, to act with inside the block (under the lock, after the
        latest refresh)."""
        with self._turns.reading():
            yield self.actor


class CollectorThread:
    """Runs collection in its own thread, ``ahead`` env steps at most before the updates
    that are due for the steps already collected have run.

    ``allowed()`` tells the thread how many env steps it may have collected in total; the
    learner raises it as it updates and waits on :meth:`wait_for` for the steps its
    updates need. An exception in the thread is raised again in the learner's.

    The thread queues its GPU work on ``side`` (none: the current stream), which first
    waits for the work the learner's thread has queued before it starts (the env's reset,
    the snapshot); :meth:`stop` has the learner's stream wait for the side's."""

    def __init__(
        self,
        collect: Callable[[], None],
        threads: int,
        side: SideStream | None = None,
    ) -> None:
        self._collect = collect
        self._threads = threads
        self.side = side or SideStream()
        self._cond = threading.Condition()
        self._allowed = 0
        self.collected = 0
        self._stop = False
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="robolearn-collector", daemon=True)
        self.side.wait_for_main()
        self._thread.start()

    def _run(self) -> None:
        torch.set_num_threads(self._threads)  # this thread's own torch threads
        try:
            with self.side:
                while True:
                    with self._cond:
                        self._cond.wait_for(lambda: self._stop or self.collected < self._allowed)
                        if self._stop:
                            return
                    self._collect()
                    with self._cond:
                        self.collected += 1
                        self._cond.notify_all()
        except BaseException as exc:  # raised again in the learner's thread
            with self._cond:
                self._error = exc
                self._cond.notify_all()

    def allow(self, steps: int) -> None:
        """Let the thread collect up to ``steps`` env steps in total."""
        with self._cond:
            self._allowed = max(self._allowed, steps)
            self._cond.notify_all()

    def wait_for(self, steps: int) -> None:
        """Wait until ``steps`` env steps are collected (or the thread failed)."""
        with self._cond:
            self._cond.wait_for(lambda: self._error is not None or self.collected >= steps)
            if self._error is not None:
                raise self._error

    def stop(self) -> None:
        """Finish the step in progress and end the thread."""
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        self._thread.join()
        self.side.main_waits()
        if self._error is not None:
            raise self._error
