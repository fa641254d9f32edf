"""Pipelined PPO (``agent.pipelined=true``): iteration k+1's rollout is collected in a
thread, with the policy as it was before update k, while update k runs.

The rollout an update trains on was therefore collected by the policy one update behind
the one being trained. Before the update the rollout is re-evaluated with the current
networks and corrected for that lag with V-trace (Espeholt et al., 2018):

    td_t    = r_t + gamma V(s_t+1) - V(s_t)
    v_t     = V(s_t) + rho_t td_t + gamma c_t (v_t+1 - V(s_t+1))     (the critic's targets)
    A_t     = td_t + gamma c_t (v_t+1 - V(s_t+1))
    A'_t    = rho_t (A_t - mean A) / std A                           (the actor's)

with rho_t the ratio of the current policy's probability of the stored action to the
collecting policy's, truncated at ``agent.pipelined_ratio_clip``, and c_t = lambda
min(1, ratio): GAE's returns and advantages when the two policies are the same. PPO's ratio
is then taken against the current policy (its log probabilities replace the stored ones),
so its clipping bounds the step from the policy being trained, as in a synchronous
iteration: the decoupled objective of Hilton et al. (2021), the importance weight outside
the clipped surrogate.

The weight comes after the advantages are normalized, not before. Subtracting the mean is a
baseline, and a baseline costs no bias only under the policy whose samples it weighs: on
samples drawn by the policy one update behind, an unweighted one rewards whatever the
current policy already prefers to the collecting one, so every mini-batch pushed the mean
action further along the previous update's direction, PPO's clip did not stop it, and
rsl-rl's adaptive schedule held the learning rate near its floor (BENCHMARKS.md
section 40). Weighted after the normalization, the baseline is corrected with the rest, in
so far as the weights are not truncated: at V-trace's usual truncation of 1 the actions the
current policy prefers are still under-weighted, and some of the drift stays. The default
truncation is therefore 2, which one update's lag rarely reaches.

Refused with recurrent policies, distillation, RND, per-mini-batch advantage normalization
and torchrun ranks. A pipelined run is not reproducible bit for bit: the collector's random
draws (actions, resets) and the update's (its mini-batch order and the policy's samples)
come from torch's one random stream in an order that depends on how the two threads run.

On CUDA the collector queues on a side stream of its own (:mod:`robolearn.rl.streams`),
so that its inference and physics run on the GPU beside the update's kernels: the side
stream waits for the main stream's work before each collection (the networks' snapshot,
the update that last read the storage being refilled), and the main stream for the
side's once the collection is joined, before the update reads the rollout.
"""

from __future__ import annotations

import copy
import threading
from typing import Any

import torch

from robolearn.errors import RobolearnError
from robolearn.rl.config import AgentCfg
from robolearn.rl.streams import SideStream

ONE_PROCESS = "agent.pipelined runs in one process; leave out --nproc and --distributed"
"""The refusal of a pipelined run as a torchrun rank (``PPO.check`` says it before the run
starts)."""


PER_MINI_BATCH = (  # an rsl-rl train config's option that AgentCfg does not expose
    "agent.pipelined normalizes the advantages over the whole rollout before weighting them "
    "for the policy's lag; leave agent.algorithm.normalize_advantage_per_mini_batch off"
)
"""Refused: a mini-batch's normalization would come after the lag's weights (module
docstring)."""


def pipeline_problem(runner: Any) -> str | None:
    """Why ``runner`` cannot train pipelined, or None."""
    alg = runner.alg
    if runner.distilling:
        return "agent.pipelined trains PPO; a distillation is not pipelined"
    if runner.is_distributed:
        return ONE_PROCESS
    if alg.actor.is_recurrent or alg.critic.is_recurrent:
        return "agent.pipelined does not take recurrent policies (agent.policy.recurrent)"
    if getattr(alg, "rnd", None):
        return "agent.pipelined does not take RND"
    if alg.normalize_advantage_per_mini_batch:
        return PER_MINI_BATCH
    return None


class PipelinedCollection:
    """Two rollout storages and a copy of the networks that collects into one of them in
    a thread while the runner's algorithm updates from the other.

    Every collection, the first one included, is queued on :attr:`side` (a CUDA stream of
    its own; nothing off CUDA): the env's per-step tensors are then made and freed on that
    stream alone, and only the observations after a rollout cross to the main stream."""

    def __init__(self, runner: Any) -> None:
        problem = pipeline_problem(runner)
        if problem:
            raise RobolearnError(problem)
        self.runner = runner
        # a train config written by hand may leave the key out: AgentCfg's default
        self.ratio_clip = runner.cfg.get("pipelined_ratio_clip", AgentCfg.pipelined_ratio_clip)
        alg = runner.alg
        self.storages = [alg.storage, copy.deepcopy(alg.storage)]
        # the collector: PPO's act/process_env_step on its own transition, storage and
        # copies of the networks
        self.collector = copy.copy(alg)
        self.collector.transition = type(alg.transition)()
        self.collector.actor = copy.deepcopy(alg.actor)
        self.collector.critic = copy.deepcopy(alg.critic)
        self.side = SideStream(runner.device, runner.env.device)
        self.turn = 0
        self._thread: threading.Thread | None = None
        self._result: Any = None
        self._error: BaseException | None = None

    def snapshot(self) -> None:
        """The collector's networks become the algorithm's as they are now."""
        alg, collector = self.runner.alg, self.collector
        with torch.no_grad():
            collector.actor.load_state_dict(alg.actor.state_dict())
            collector.critic.load_state_dict(alg.critic.state_dict())

    def start(self, obs, stop, on_step) -> None:
        """Collect the next rollout from ``obs`` in a thread, into the other storage."""
        storage = self.storages[1 - self.turn]
        storage.clear()
        self.collector.storage = storage
        # the snapshot's copies and the last update's reads of this storage come first
        self.side.wait_for_main()

        def collect() -> None:
            try:
                with self.side, torch.inference_mode():
                    self._result = self.runner.collect(self.collector, obs, stop, on_step)
            except BaseException as exc:  # raised again in the runner's thread
                self._error = exc

        self._result, self._error = None, None
        self._thread = threading.Thread(target=collect, name="robolearn-ppo-collector", daemon=True)
        self._thread.start()

    def collect_now(self, obs, stop, on_step):
        """Collect a rollout in this thread (the first one), into the current storage."""
        storage = self.storages[self.turn]
        storage.clear()
        self.collector.storage = storage
        self.snapshot()
        self.side.wait_for_main()
        with self.side, torch.inference_mode():
            obs = self.runner.collect(self.collector, obs, stop, on_step)
        self.side.main_waits()
        return self.side.hand_over(obs)

    def wait(self):
        """The observations after the rollout the thread collected (None if a stop came
        mid-rollout); its storage becomes the current one."""
        if self._thread is None:
            return None
        self._thread.join()
        self._thread = None
        self.side.main_waits()  # the update reads the rollout after the collector's writes
        if self._error is not None:
            raise self._error
        self.turn = 1 - self.turn
        result, self._result = self._result, None
        return self.side.hand_over(result)

    def prepare_update(self, last_obs) -> None:
        """Re-evaluate the current storage with the current networks and correct its
        targets for the policy's lag (module docstring); the algorithm updates from it."""
        alg = self.runner.alg
        storage = self.storages[self.turn]
        alg.storage = storage
        with torch.no_grad():  # on the update's threads
            vtrace(alg, storage, last_obs, self.ratio_clip)


def vtrace(alg: Any, st: Any, last_obs, ratio_clip: float) -> None:
    """Replace ``st``'s values, returns, advantages and log probabilities with the current
    networks' and V-trace's (module docstring)."""
    steps, envs = st.num_transitions_per_env, st.num_envs
    flat = st.observations.flatten(0, 1)
    values = alg.critic(flat).view(steps, envs, 1)
    alg.actor(flat, stochastic_output=True)
    log_prob = alg.actor.get_output_log_prob(st.actions.flatten(0, 1)).view(steps, envs, 1)
    params = tuple(p.view(steps, envs, *p.shape[1:]) for p in alg.actor.output_distribution_params)
    last_values = alg.critic(last_obs)
    ratio = (log_prob - st.actions_log_prob).exp()
    rho = ratio.clamp(max=ratio_clip)
    c = alg.lam * ratio.clamp(max=1.0)
    gamma = alg.gamma
    correction = torch.zeros_like(last_values)  # v_t+1 - V(s_t+1)
    returns = torch.empty_like(values)
    advantages = torch.empty_like(values)
    for t in reversed(range(steps)):
        next_values = last_values if t == steps - 1 else values[t + 1]
        alive = 1.0 - st.dones[t].float()
        td = st.rewards[t] + gamma * alive * next_values - values[t]
        correction = rho[t] * td + gamma * alive * c[t] * correction
        returns[t] = values[t] + correction
        # td + gamma c_t (v_t+1 - V(s_t+1)), written so that it is GAE's to the bit at rho 1
        advantages[t] = returns[t] - values[t] - (rho[t] - 1.0) * td
    st.values.copy_(values)
    st.returns.copy_(returns)
    advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    st.advantages = rho * advantages
    st.actions_log_prob.copy_(log_prob)
    st.distribution_params = tuple(p.clone() for p in params)
