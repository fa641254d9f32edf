"""Settings of the off-policy learners (``robolearn train --algo td3`` and ``--algo sac``),
``agent.offpolicy.*`` in a task's agent config and on the command line.

The defaults are the recipe published for off-policy learning over thousands of parallel
envs (FastTD3, Seo et al. 2025, and FastSAC after it): every env takes one step per
update round, large batches from a replay buffer of recent steps, n-step returns, clipped
double Q, observation normalization, and exploration noise whose scale differs between
envs. Sizes are smaller than the GPU recipe's (critic 1024-512-256, batch 32,768), so that
an update round costs about what one env step of 1024 envs costs on 2 CPU cores
(docs/offpolicy.md has the measurements).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from robolearn.errors import RobolearnError

CRITICS = ("twin", "c51")
"""``twin``: two scalar Q networks, the smaller of their targets (TD3's clipped double Q).
``c51``: two distributional Q networks over fixed atoms (a categorical return
distribution), the one whose mean is smaller as the target."""

LEARNER_DEVICES = ("env", "cpu", "cuda")
"""Where the networks and the replay buffer live: the env's device, or another."""


@dataclass
class OffPolicyCfg:
    """TD3 and SAC over parallel envs: what each update round does, the replay buffer, the
    networks, exploration, and how collection and learning share the machine."""

    updates_per_step: int = 1
    """Gradient updates of the critic per env step of all envs (the update-to-data
    ratio is this over the env count)."""
    batch_size: int = 4096
    """Transitions per update, drawn uniformly from the replay buffer (doubled by the
    mirror images when symmetry augmentation is on)."""
    buffer_size: int = 1_048_576
    """Transitions the replay buffer holds over all envs (each env keeps its latest
    ``buffer_size // num_envs`` steps)."""
    learning_starts: int = 8
    """Env steps of every env collected (with random actions) before the first update."""
    n_step: int = 3
    """Steps summed into each return before bootstrapping (cut at an episode's end)."""
    gamma: float = 0.99
    """Discount per env step."""
    tau: float = 0.1
    """The target critic's share of the critic taken at each update (Polyak averaging)."""
    actor_learning_rate: float = 3.0e-4
    """Adam's step for the actor."""
    critic_learning_rate: float = 3.0e-4
    """Adam's step for the critics."""
    weight_decay: float = 0.0
    """AdamW's decoupled weight decay of both networks."""
    max_grad_norm: float = 0.0
    """Clip of each network's gradient norm; 0: no clip."""
    policy_delay: int = 2
    """Critic updates per actor update (TD3's delay; SAC's too)."""
    critic: str = "twin"
    """The critic's form: ``twin`` or ``c51`` (see :data:`CRITICS`)."""
    v_min: float = -10.0
    """``c51``: the lowest return the atoms cover."""
    v_max: float = 10.0
    """``c51``: the highest return the atoms cover."""
    num_atoms: int = 101
    """``c51``: atoms of the return distribution."""
    actor_hidden_dims: tuple[int, ...] = (256, 256, 128)
    """Hidden layer widths of the actor."""
    critic_hidden_dims: tuple[int, ...] = (512, 256, 128)
    """Hidden layer widths of each critic."""
    activation: str = "relu"
    """Activation of both networks (``elu``, ``relu``, ``tanh``)."""
    critic_layer_norm: bool = True
    """Layer normalization after each hidden layer of the critics (keeps high update
    ratios stable)."""
    mixed_precision: bool | str = "auto"
    """Run the networks' forward passes of an update in bfloat16 (autocast): ``auto`` where
    the device computes bfloat16 natively (a CPU with AVX512-BF16 or AMX, a recent GPU)."""
    action_bound: float = 1.0
    """The actions' range, ``[-action_bound, action_bound]``: the actors squash into
    [-1, 1] (where the critics and the exploration noise work) and the env receives that
    times this. A policy whose joint targets must reach beyond one action scale from the
    default pose needs it above 1 (PPO's walking humanoid sends 22% of its actions beyond
    1, its ankles up to 4)."""
    obs_normalization: bool = True
    """Normalize observations by running mean and std (the actor's statistics are part of
    the exported policy)."""
    noise_std_min: float = 0.001
    """``td3``: each env's exploration noise std is drawn between this and
    ``noise_std_max`` at the start of each of its episodes."""
    noise_std_max: float = 0.4
    """``td3``: the largest exploration noise std."""
    target_noise: float = 0.001
    """``td3``: std of the noise added to the target's next actions (policy smoothing)."""
    target_noise_clip: float = 0.5
    """``td3``: the bound of that noise."""
    init_alpha: float = 0.001
    """``sac``: the entropy temperature at the start (learned towards the target
    entropy)."""
    target_entropy: float | None = None
    """``sac``: the policy's target entropy; None: minus half the action width."""
    symmetry: bool | None = None
    """Train on every sampled transition and its left-right mirror image. None: as the
    task's PPO does (``agent.algorithm.symmetry.use_data_augmentation``)."""
    overlap: bool = False
    """Collect in a thread of its own while the learner updates (the updates read the
    buffer as it fills; ``updates_per_step`` still bounds how far either runs ahead)."""
    learner_device: str = "env"
    """Where the networks, the replay buffer and the updates run: ``env`` (the env's
    device), ``cpu`` or ``cuda`` (the cpu engine's steps then cross to the GPU through
    pinned, double-buffered host memory)."""
    learner_threads: int = 0
    """With ``overlap`` on the CPU: the torch threads of the updates (the physics gets the
    rest of the cores); 0: half the cores, at least one."""

    def validate(self) -> None:
        """Raise RobolearnError (naming the field) for a value the learners cannot run."""
        for name in ("updates_per_step", "batch_size", "buffer_size", "n_step", "policy_delay"):
            _require_whole(name, getattr(self, name), 1)
        for name in ("learning_starts", "learner_threads"):
            _require_whole(name, getattr(self, name), 0)
        _require_whole("num_atoms", self.num_atoms, 2)
        for name in ("actor_learning_rate", "critic_learning_rate", "init_alpha", "action_bound"):
            value = getattr(self, name)
            if not _number(value) or value <= 0:
                raise RobolearnError(f"agent.offpolicy.{name} must be a number > 0, got {value!r}")
        for name in ("gamma", "tau"):
            value = getattr(self, name)
            if not _number(value) or not 0.0 <= value <= 1.0:
                raise RobolearnError(f"agent.offpolicy.{name} must be in [0, 1], got {value!r}")
        for name in (
            "weight_decay", "max_grad_norm", "noise_std_min", "noise_std_max", "target_noise",
            "target_noise_clip",
        ):  # fmt: skip
            value = getattr(self, name)
            if not _number(value) or value < 0:
                raise RobolearnError(f"agent.offpolicy.{name} must be a number >= 0, got {value!r}")
        if self.batch_size > self.buffer_size:
            raise RobolearnError(
                f"agent.offpolicy.batch_size ({self.batch_size:,}) is larger than the replay "
                f"buffer (buffer_size {self.buffer_size:,}): lower batch_size or raise buffer_size"
            )
        if self.noise_std_min > self.noise_std_max:
            raise RobolearnError(
                f"agent.offpolicy.noise_std_min ({self.noise_std_min}) is above noise_std_max "
                f"({self.noise_std_max})"
            )
        if not (_number(self.v_min) and _number(self.v_max) and self.v_min < self.v_max):
            raise RobolearnError(
                f"agent.offpolicy.v_min must be below v_max, got {self.v_min!r} and {self.v_max!r}"
            )
        if self.target_entropy is not None and not _number(self.target_entropy):
            raise RobolearnError(
                f"agent.offpolicy.target_entropy must be a number or null, got "
                f"{self.target_entropy!r}"
            )
        if self.mixed_precision not in (True, False, "auto"):
            raise RobolearnError(
                "agent.offpolicy.mixed_precision must be true, false or auto, got "
                f"{self.mixed_precision!r}"
            )
        for name, value, valid in (
            ("critic", self.critic, CRITICS),
            ("activation", self.activation, ("elu", "relu", "tanh")),
            ("learner_device", self.learner_device, LEARNER_DEVICES),
        ):
            if value not in valid:
                raise RobolearnError(
                    f"agent.offpolicy.{name} must be one of {', '.join(valid)}, got {value!r}"
                )
        for name in ("actor_hidden_dims", "critic_hidden_dims"):
            dims = getattr(self, name)
            if not dims or any(not _whole(d) or d < 1 for d in dims):
                raise RobolearnError(f"agent.offpolicy.{name} must be widths >= 1, got {dims!r}")


def _number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _require_whole(name: str, value, low: int) -> None:
    if not _whole(value) or value < low:
        raise RobolearnError(
            f"agent.offpolicy.{name} must be a whole number >= {low}, got {value!r}"
        )


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
