"""Learners as plug-ins: what the run driver (:mod:`robolearn.app.train`) asks of a
learning algorithm, and the registry that names them.

A learner is built on a task's env and agent config, restores a checkpoint, learns until
an iteration budget or a stop signal, writes its own ``model_<iteration>.pt`` checkpoints
and hands out its policy. Everything else of a run (its configs, folder, params/, signals,
health checks, process group, videos) is the driver's and is the same for every learner.
A new learner is an :class:`Algorithm` subclass and one line in :data:`ALGORITHMS`; it
touches ``rl/`` only, and nothing above ``rl/`` branches on an algorithm's name: a
checkpoint records the name of the algorithm that made it (``algo``), and
:func:`algorithm_of` reads it back (checkpoints from before the key are PPO's).
"""

from __future__ import annotations

import abc
import dataclasses
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import torch

from robolearn.errors import RobolearnError
from robolearn.rl.distributed import SINGLE, DistInfo, Monitor

if TYPE_CHECKING:
    from robolearn.rl.config import AgentCfg

DEFAULT = "ppo"
"""The algorithm of a run that names none, and of checkpoints written before they named
theirs."""

ALGORITHMS: dict[str, str] = {
    "ppo": "robolearn.rl.ppo_learner:PPO",
    "shac": "robolearn.rl.shac.run:SHAC",
    "td3": "robolearn.rl.offpolicy.run:TD3",
    "sac": "robolearn.rl.offpolicy.run:SAC",
}
"""Every learner by its ``--algo`` name, as ``module:class`` (imported when chosen, so that
a PPO run never imports the others)."""


def spread_episode_ends(env: Any) -> None:
    """Move each env to a random step of its episode when every env stands at the start of
    one: a new env, whether its run is new or resumed. Episodes in lockstep time out
    together, and a rollout of them sees one phase of the task at a time."""
    lengths = env.episode_length_buf
    if bool((lengths == 0).all()):
        lengths[:] = torch.randint_like(lengths, high=int(env.max_episode_length))


class StopRequest:
    """Set by a signal handler; a learner checks it between env steps."""

    def __init__(self) -> None:
        self.signal_name: str | None = None

    def __bool__(self) -> bool:
        return self.signal_name is not None


class RolloutCheck(Protocol):
    """What a learner calls between each rollout and its update (the application's
    :class:`~robolearn.app.health.TrainingHealth`): it may raise to stop training, and
    returns scalars to log with the iteration's."""

    def after_rollout(self, storage: Any, iteration: int, last_obs: Any) -> dict[str, float]:
        """Check the rollout of ``iteration`` in the learner's ``storage``."""
        ...


@dataclasses.dataclass
class LearnerContext:
    """Where a learner writes and what its checkpoints record, from the run driver."""

    run_dir: Path | None = None
    """The run folder its checkpoints and progress.jsonl go to; None writes nothing."""
    meta: dict[str, Any] = dataclasses.field(default_factory=dict)
    """What every checkpoint records besides the learned state: task, overrides, seed,
    num_envs, world_size, robolearn_version (the learner adds ``algo`` and ``agent``)."""
    dist: DistInfo = SINGLE
    """This process's rank in a distributed run."""
    monitor: Monitor | None = None
    """The collectives that keep the ranks together; None alone."""


class CheckpointPolicy:
    """A trained policy acting on observation TensorDicts (its deterministic action), and
    what an export needs of it.

    Args:
        act: observations (a TensorDict of the env's groups) to actions.
        actor: the module an export turns into ONNX and TorchScript (rsl-rl's actor model,
            or the learner's own actor).
        obs_groups: the observation groups the actor reads, in order.
        meta: what the run recorded (``task``, ``overrides``), for an export's policy.json.
    """

    def __init__(
        self,
        act: Callable[[Any], torch.Tensor],
        actor: torch.nn.Module,
        obs_groups: list[str],
        meta: dict[str, Any],
    ) -> None:
        self._act = act
        self.actor = actor
        self.obs_groups = obs_groups
        self.meta = meta

    def __call__(self, obs) -> torch.Tensor:
        return self._act(obs)

    @property
    def reset(self):
        """A recurrent policy's reset of its memory (of the envs a mask selects, or all);
        None for a feed-forward one."""
        return getattr(self._act, "reset", None)


def load_actor(actor: torch.nn.Module, state: dict[str, Any], where: str) -> torch.nn.Module:
    """``actor`` with a checkpoint's weights, in evaluation mode; weights of other shapes
    are a RobolearnError naming ``where``."""
    try:
        actor.load_state_dict(state)
    except RuntimeError as exc:
        raise RobolearnError(
            f"{where}: the actor cannot be rebuilt ({str(exc).splitlines()[0][:200]})"
        ) from exc
    return actor.eval()


def policy_on_env(
    env: Any,
    data: dict[str, Any],
    actor: torch.nn.Module,
    groups: list[str],
    action_dim: int,
    act: Callable[[torch.nn.Module, Any], torch.Tensor],
) -> CheckpointPolicy:
    """A checkpoint's actor with a normalizer of its input (``actor.obs_norm``: SHAC's,
    TD3's, SAC's) acting on ``env`` through ``act(actor, obs)``, once its input and output
    widths are known to be the env's (a RobolearnError otherwise)."""
    dims = env.observation_manager.group_dims
    obs_dim = sum(dims.get(g, 0) for g in groups)
    reads = actor.obs_norm.mean.numel()
    if any(g not in dims for g in groups) or reads != obs_dim or action_dim != env.num_actions:
        raise RobolearnError(
            f"the checkpoint's policy does not fit this env (it reads {reads} observations of "
            f"{', '.join(groups)} and writes {action_dim} actions; the env has {obs_dim} and "
            f"{env.num_actions}); was it trained with other settings?"
        )
    actor = actor.to(env.device)
    meta = {"task": data.get("task"), "overrides": list(data.get("overrides", []))}

    def policy(obs) -> torch.Tensor:
        with torch.no_grad():
            return act(actor, obs)

    return CheckpointPolicy(policy, actor, groups, meta)


class Learner(Protocol):
    """A learning algorithm training one env, as the run driver uses it."""

    iterations: int
    """Learning iterations done, resumed ones included: ``model_<iterations>.pt`` holds
    the policy after that many."""
    env_steps: int
    """Env steps trained on, all ranks and resumed sessions included."""

    def restore(self, data: dict[str, Any], training_state: bool = True) -> None:
        """Load a checkpoint's learned state (with ``training_state``, also optimizer,
        counters and random state, for resuming)."""
        ...

    def learn(
        self,
        max_iterations: int,
        stop: StopRequest,
        log: Callable[[str], None],
        on_step: Callable[[int], None] | None = None,
        health: RolloutCheck | None = None,
    ) -> str:
        """Train until ``max_iterations`` in total or a stop (saving a checkpoint then);
        returns ``"done"`` or ``"stopped"``. ``on_step`` is called after each env step,
        ``health`` after each rollout, where the learner has rollouts."""
        ...

    def describe(self) -> str:
        """How it trains, for the run's first line (e.g. ``with SHAC``); may be empty."""
        ...


class Algorithm(abc.ABC):
    """A learner's plug-in: how a run of it is prepared, built, and played back.

    Subclasses set :attr:`name` and implement :meth:`build`, :meth:`policy` and
    :meth:`actor` (abstract: a learner missing one cannot be made); the rest has defaults
    that suit a learner with no special needs."""

    name: ClassVar[str]
    """The ``--algo`` name, recorded in checkpoints and params/run.yaml."""
    takes_ranks: ClassVar[bool] = True
    """Whether it trains as one rank of a torchrun job (``--nproc``, ``--distributed``)."""
    takes_video: ClassVar[bool] = True
    """Whether it records clips while training (``--video``)."""
    takes_wandb: ClassVar[bool] = True
    """Whether it logs to Weights & Biases (``--logger wandb``)."""
    takes_pipelined: ClassVar[bool] = True
    """Whether it collects beside its update with ``agent.pipelined`` (PPO's setting; a
    learner that ignored it would leave a user timing the plain loop as the overlap)."""

    def engine(self, chosen: str | None) -> str | None:
        """The engine a run uses, from the one ``--device``/``--engine`` chose (None: the
        task's config decides); raises for one the learner cannot train on."""
        return chosen

    def overrides(self, overrides: list[str]) -> list[str]:
        """The run's overrides with any the learner needs (the user's last, so theirs
        hold)."""
        return overrides

    def check(self, agent_cfg: AgentCfg, distributed: bool = False) -> None:  # noqa: B027
        """Raise RobolearnError, naming the field, for settings this learner cannot run (as
        one rank of a torchrun job, with ``distributed``). The default: nothing to check."""

    @abc.abstractmethod
    def build(self, env: Any, agent_cfg: AgentCfg, ctx: LearnerContext) -> Learner:
        """The learner on ``env``, its networks fresh (or as ``agent.init_from`` says)."""

    @abc.abstractmethod
    def policy(self, env: Any, data: dict[str, Any]) -> CheckpointPolicy:
        """A checkpoint's policy (``data``, as loaded) acting on ``env``."""

    @abc.abstractmethod
    def actor(self, data: dict[str, Any], where: str) -> tuple[torch.nn.Module, list[str], int]:
        """(the checkpoint's actor as a module of its observations, the observation groups
        it reads in order, the action width), built from ``data`` alone, without an env:
        what ``robolearn.load_policy`` runs and an export traces. ``where`` names the file
        in errors."""

    def refusal(self, flag: str) -> str:
        """The error for a flag (or ``agent.pipelined``) this learner does not take."""
        return f"--algo {self.name} does not take {flag}"


def algorithm(name: str) -> Algorithm:
    """The algorithm registered as ``name``; an unknown name is a RobolearnError listing
    the valid ones."""
    if name not in ALGORITHMS:
        raise RobolearnError(f"unknown --algo {name!r}; valid: {', '.join(ALGORITHMS)}")
    module, _, cls = ALGORITHMS[name].partition(":")
    return getattr(importlib.import_module(module), cls)()


def algorithm_of(data: dict[str, Any]) -> Algorithm:
    """The algorithm that wrote a checkpoint's ``data`` (or a run's params/run.yaml)."""
    name = data.get("algo") or DEFAULT
    if name not in ALGORITHMS:
        raise RobolearnError(
            f"the checkpoint was made by {name!r}, which this robolearn does not know; "
            f"known: {', '.join(ALGORITHMS)}"
        )
    return algorithm(name)
