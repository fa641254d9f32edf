"""Typed PPO settings for rsl-rl, turned into the dict its runner takes.

Field names follow rsl-rl (``num_steps_per_env``, ``clip_param``, ``desired_kl``...) so a
user of Isaac Lab's or mjlab's rsl-rl configs recognises them.
"""

from __future__ import annotations

import math
import os
import shutil
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from robolearn.errors import RobolearnError
from robolearn.rl.config.offpolicy import OffPolicyCfg

SYMMETRY_FUNCTION = "robolearn.rl.symmetry:mirror_batch"
"""rsl-rl's data augmentation function for robolearn envs, by name (the config stays a file)."""

ACTIVATIONS = (
    "elu", "selu", "relu", "crelu", "lrelu", "tanh", "sigmoid", "softplus", "gelu", "swish",
    "mish", "identity",
)  # fmt: skip
"""The activations rsl-rl's MLPs take."""


def fast_bf16(device: str | None) -> bool:
    """Whether ``device`` computes bfloat16 natively: a CUDA GPU that supports it, or a CPU
    with AVX512-BF16 or AMX (read from /proc/cpuinfo; False where it is not readable)."""
    if device is None:
        return False
    if device.startswith("cuda"):
        import torch

        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return any(flag in flags.split() for flag in ("avx512_bf16", "amx_bf16"))


def compile_problem(device: str) -> str | None:
    """Why ``torch.compile`` cannot run on ``device`` here, or None: on a CPU, Inductor
    builds its kernels with a C++ compiler (``$CXX``, g++, c++ or clang++)."""
    if device.startswith("cuda"):
        return None
    names = [os.environ.get("CXX", ""), "g++", "c++", "clang++"]
    if any(name and shutil.which(name) for name in names):
        return None
    return (
        "agent.policy.compile=true on the CPU needs a C++ compiler (g++ or clang++) on PATH, "
        "or CXX naming one"
    )


@dataclass
class SymmetryCfg:
    """Left-right symmetry in PPO's update (rsl-rl's symmetry extension; Mittal et al.,
    ICRA 2024), for a mirror-symmetric robot: every observation term must say how it
    mirrors (:mod:`robolearn.mdp.mirror`; the built-in terms do)."""

    use_data_augmentation: bool = False
    """Train on every sample and its mirror image (the update's batch doubles)."""
    use_mirror_loss: bool = False
    """Add ``mirror_loss_coeff`` x the actor's disagreement with its own mirror image."""
    mirror_loss_coeff: float = 0.0
    """Weight of the mirror loss."""

    @property
    def enabled(self) -> bool:
        """Whether the update uses symmetry at all."""
        return self.use_data_augmentation or self.use_mirror_loss


@dataclass
class PpoAlgorithmCfg:
    """rsl-rl's PPO hyperparameters."""

    learning_rate: float = 1.0e-3
    """Adam learning rate (the start value under the adaptive schedule)."""
    schedule: str = "adaptive"
    """``adaptive`` (scale the rate to keep the KL near ``desired_kl``) or ``fixed``."""
    desired_kl: float = 0.01
    """Target KL divergence per update for the adaptive schedule."""
    num_learning_epochs: int = 5
    """Passes over the rollout per iteration."""
    num_mini_batches: int = 4
    """Mini-batches per pass."""
    clip_param: float = 0.2
    """PPO ratio clip."""
    gamma: float = 0.99
    """Discount per env step."""
    lam: float = 0.95
    """GAE lambda."""
    entropy_coef: float = 0.01
    """Entropy bonus weight."""
    value_loss_coef: float = 1.0
    """Value loss weight."""
    max_grad_norm: float = 1.0
    """Gradient norm clip."""
    use_clipped_value_loss: bool = True
    """Clip the value update like the policy ratio."""
    use_mixed_precision: bool | str = False
    """Run the update's forward passes and losses under bfloat16 autocast: 1.5x faster per
    update on a CPU with bf16 instructions (AVX512-BF16 or AMX), at bf16's precision.
    ``"auto"``: on where the training device has them (such a CPU, or a CUDA GPU with
    bf16), off elsewhere, where autocast would emulate bf16 slowly."""
    symmetry: SymmetryCfg = field(default_factory=SymmetryCfg)
    """Mirror-symmetry augmentation or loss (off by default)."""


RNN_TYPES = ("none", "lstm", "gru")
"""The recurrent layers rsl-rl's ``RNNModel`` takes; ``none`` for a feed-forward model."""


@dataclass
class RecurrentCfg:
    """A recurrent layer before the MLP (rsl-rl ``RNNModel``): the policy remembers what one
    observation does not show (a blind walker's terrain, a velocity from positions). Its
    hidden state is zeroed for each env whose episode ends."""

    type: str = "none"
    """``lstm``, ``gru`` or ``none`` (an MLP only)."""
    hidden_dim: int = 256
    """Width of the hidden state."""
    num_layers: int = 1
    """Stacked recurrent layers."""
    critic: bool = True
    """Whether the critic is recurrent too (else an MLP over its groups)."""


@dataclass
class CnnCfg:
    """The convolutional encoder of each image observation group (rsl-rl ``CNNModel``,
    chosen whenever the actor or critic reads a group with an ``image_shape``); its
    flattened output joins the flat groups' values before the MLP. Per-layer fields take
    one value for all layers or one per layer."""

    output_channels: tuple[int, ...] = (16, 32, 32)
    """Channels of each convolution."""
    kernel_size: tuple[int, ...] = (8, 4, 3)
    """Kernel size of each convolution, pixels."""
    stride: tuple[int, ...] = (4, 2, 1)
    """Stride of each convolution, pixels."""
    padding: str = "none"
    """``none``, or ``zeros``/``reflect``/``replicate``/``circular`` padding that keeps the
    size (up to the stride)."""
    max_pool: bool = False
    """A 3x3 max pool of stride 2 after each convolution."""
    global_pool: str = "none"
    """``none``, ``max`` or ``avg``: pool each channel's map to one value at the end."""
    norm: str = "none"
    """``none``, ``batch`` or ``layer`` normalization after each convolution."""

    def to_rsl_rl(self) -> dict[str, Any]:
        """rsl-rl's ``cnn_cfg`` (the activation is the policy's)."""
        return {
            "output_channels": list(self.output_channels),
            "kernel_size": list(self.kernel_size),
            "stride": list(self.stride),
            "padding": self.padding,
            "max_pool": self.max_pool,
            "global_pool": self.global_pool,
            "norm": self.norm,
        }

    def output_size(self, height: int, width: int) -> tuple[int, int]:
        """The last feature map's (height, width) for an image of that size; a size under
        1 means the image is too small for these layers."""

        def per_layer(value, i):
            return value[i] if isinstance(value, tuple | list) else value

        size = [height, width]
        for i in range(len(self.output_channels)):
            k, s = per_layer(self.kernel_size, i), per_layer(self.stride, i)
            if self.padding != "none":  # rsl-rl pads to keep ceil(size / stride)
                size = [math.ceil(v / s) for v in size]
            else:
                size = [(v - k) // s + 1 for v in size]
            if self.max_pool:
                size = [math.ceil(v / 2) for v in size]
        if self.global_pool != "none":
            return (1, 1) if min(size) >= 1 else (size[0], size[1])
        return size[0], size[1]

    def check_fits(self, group: str, height: int, width: int) -> None:
        """Raise RobolearnError if ``group``'s (height, width) images are too small."""
        out = self.output_size(height, width)
        if min(out) < 1:
            raise RobolearnError(
                f"agent.policy.cnn does not fit observation group {group!r}: its "
                f"{height}x{width} images shrink to {out[0]}x{out[1]} after kernels "
                f"{tuple(self.kernel_size)} with strides {tuple(self.stride)}; use smaller "
                "kernels or strides, fewer layers, padding, or larger images"
            )


@dataclass
class PolicyCfg:
    """Actor and critic networks (rsl-rl ``MLPModel``; ``CNNModel`` where they read image
    groups; ``RNNModel`` with ``recurrent``) and the action distribution."""

    actor_hidden_dims: tuple[int, ...] = (128, 128, 128)
    """Hidden layer widths of the actor."""
    critic_hidden_dims: tuple[int, ...] = (128, 128, 128)
    """Hidden layer widths of the critic."""
    activation: str = "elu"
    """Activation between layers."""
    init_noise_std: float = 1.0
    """Initial standard deviation of the Gaussian action distribution."""
    actor_output_init_gain: float = 1.0
    """The actor's output layer starts with its weights times this and its bias 0. At 0.01
    a new policy's mean action is near 0 in every state (the output-layer initialisation
    Andrychowicz et al. 2021 recommend for PPO), so early exploration is the noise alone;
    where actions integrate (relative joint targets) a random network's mean action would
    otherwise carry the robot the same way for a whole episode."""
    obs_normalization: bool = True
    """Normalize observations with running statistics (folded into exported policies)."""
    recurrent: RecurrentCfg = field(default_factory=RecurrentCfg)
    """An LSTM or GRU before the MLPs (off by default)."""
    cnn: CnnCfg = field(default_factory=CnnCfg)
    """The encoder of image observation groups (used only where a network reads one)."""
    compile: bool = False
    """Train with the actor's and critic's MLPs compiled by ``torch.compile`` (fused
    activations: 0.8x the mirrored bf16 update of humanoid_walk on this CPU) at the cost of
    seconds of compilation when training starts; on a CPU it needs a C++ compiler. The
    checkpoints are the same files; play and export run the plain modules."""


@dataclass
class DistillationCfg:
    """Teacher-student distillation (rsl-rl's ``Distillation``) instead of PPO: the actor
    (the student, reading ``obs_groups.student``) learns on its own rollouts to act as a
    trained teacher acts (reading ``obs_groups.teacher``): DAgger-style behaviour cloning,
    for a policy without the privileged observations its teacher had (a height scan, true
    velocities). Rewards are logged, not learned from."""

    enabled: bool = False
    """Distill instead of PPO."""
    teacher: str = ""
    """The teacher's checkpoint: a ``model_<iteration>.pt`` path, or ``pretrained:<task>``
    for the one shipped with robolearn. Its network and observation normalizer are loaded
    and kept frozen."""
    learning_rate: float = 1.0e-3
    """Adam learning rate of the student."""
    num_learning_epochs: int = 1
    """Passes over the rollout per iteration."""
    gradient_length: int = 24
    """Env steps of a rollout per gradient step (truncated backpropagation through time for
    a recurrent student); best a divisor of num_learning_epochs x num_steps_per_env."""
    max_grad_norm: float = 1.0
    """Gradient norm clip."""
    loss_type: str = "mse"
    """``mse`` or ``huber`` between the student's and the teacher's actions."""


@dataclass
class ShacCfg:
    """The differentiable learner (``robolearn train --algo shac``): short-horizon
    actor-critic (SHAC), which backpropagates a task's rewards through the physics over
    ``horizon`` env steps and bootstraps the rest of the return with a learned critic."""

    horizon: int = 32
    """Env steps per differentiable rollout: the gradient's reach, and its truncation."""
    actor_learning_rate: float = 2.0e-3
    """Adam's step for the actor (decays linearly to 0 over the run when
    ``lr_schedule`` is ``linear``)."""
    critic_learning_rate: float = 1.0e-3
    """Adam's step for the critic."""
    lr_schedule: str = "linear"
    """``linear`` (decay to 0 over ``max_iterations``) or ``constant``."""
    gamma: float = 0.99
    """Discount per env step."""
    lam: float = 0.95
    """TD(lambda) of the critic's targets."""
    critic_iterations: int = 16
    """Critic fits per rollout, each a pass over ``critic_mini_batches`` batches."""
    critic_mini_batches: int = 4
    """Batches per critic fit."""
    target_critic_alpha: float = 0.4
    """The target critic keeps this share of itself at each update (the rest is the
    critic's); the actor's bootstrap and the critic's targets read the target critic."""
    max_grad_norm: float = 1.0
    """Clip of the actor's gradient norm (and the critic's)."""
    max_step_gain: float | None = 4.0
    """Truncation through contacts: the most one env step may amplify an env's gradient
    with respect to its state (the step's input gradient is scaled down to this multiple of
    its output gradient; a non-finite one is zeroed). Smooth dynamics stay near 1 (the
    cartpole's steps: 1.00-1.02, untouched); a quadruped's feet in Featherstone's contacts
    measured 2-50,000 per step, which explodes any gradient over a few steps. None: exact
    gradients."""
    init_noise_std: float = 0.4
    """Initial std of the actor's exploration noise (learned, reparameterized)."""
    actor_hidden_dims: tuple[int, ...] = (64, 64)
    """Hidden layer widths of the actor."""
    critic_hidden_dims: tuple[int, ...] = (64, 64)
    """Hidden layer widths of the critic."""
    activation: str = "elu"
    """Activation of both networks (``elu``, ``relu``, ``tanh``)."""
    obs_normalization: bool = True
    """Normalize observations by running mean and std."""

    def validate(self) -> None:
        """Raise RobolearnError (naming the field) for a value SHAC cannot run with."""
        for name in ("horizon", "critic_iterations", "critic_mini_batches"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise RobolearnError(
                    f"agent.shac.{name} must be a whole number >= 1, got {value!r}"
                )
        for name in ("actor_learning_rate", "critic_learning_rate", "max_grad_norm"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
                raise RobolearnError(f"agent.shac.{name} must be a number > 0, got {value!r}")
        for name in ("gamma", "lam", "target_critic_alpha"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
                raise RobolearnError(f"agent.shac.{name} must be in [0, 1], got {value!r}")
        gain = self.max_step_gain
        if gain is not None and (not isinstance(gain, int | float) or not gain >= 1.0):
            raise RobolearnError(
                f"agent.shac.max_step_gain must be a number >= 1 or null, got {gain!r}"
            )
        if not isinstance(self.init_noise_std, int | float) or not self.init_noise_std > 0:
            raise RobolearnError(
                f"agent.shac.init_noise_std must be a number > 0, got {self.init_noise_std!r}"
            )
        if self.lr_schedule not in ("linear", "constant"):
            raise RobolearnError(
                f"agent.shac.lr_schedule must be linear or constant, got {self.lr_schedule!r}"
            )
        if self.activation not in ("elu", "relu", "tanh"):
            raise RobolearnError(
                f"agent.shac.activation must be elu, relu or tanh, got {self.activation!r}"
            )


@dataclass
class AgentCfg:
    """Everything rsl-rl's PPO construction needs, plus run bookkeeping."""

    experiment_name: str = ""
    """Folder under logs/ (default: the task name)."""
    num_steps_per_env: int = 24
    """Env steps per env per iteration (the rollout length)."""
    max_iterations: int = 1000
    """Learning iterations of a training run."""
    save_interval: int = 50
    """Iterations between checkpoints."""
    obs_groups: dict[str, list[str]] = field(
        default_factory=lambda: {"actor": ["policy"], "critic": ["policy"]}
    )
    """Which observation groups feed the actor and the critic (with distillation: the
    student and the teacher)."""
    algorithm: PpoAlgorithmCfg = field(default_factory=PpoAlgorithmCfg)
    """PPO hyperparameters."""
    policy: PolicyCfg = field(default_factory=PolicyCfg)
    """Network shapes and action noise."""
    shac: ShacCfg = field(default_factory=ShacCfg)
    """The differentiable learner's settings, read by ``--algo shac`` instead of PPO's."""
    offpolicy: OffPolicyCfg = field(default_factory=OffPolicyCfg)
    """The off-policy learners' settings, read by ``--algo td3`` and ``--algo sac``."""
    distillation: DistillationCfg = field(default_factory=DistillationCfg)
    """Distill a student from a teacher instead of PPO (off by default); ``obs_groups`` then
    names ``student`` and ``teacher`` groups."""
    init_from: str = ""
    """Start from another run's networks: a ``model_<iteration>.pt`` path, or
    ``pretrained:<task>`` for a checkpoint shipped with robolearn (its actor, critic and
    observation normalizers; the optimizer and the iteration count start afresh). For
    fine-tuning a policy on a harder variant of its task, whose observations and actions
    must have the same sizes. Empty: networks start at random."""
    logger: str = "tensorboard"
    """``tensorboard`` or ``wandb``."""
    pipelined: bool = False
    """PPO only: collect each iteration's rollout in a thread, with the policy as it was
    before the previous update, while that update runs; the one update of lag corrected
    with V-trace (:mod:`robolearn.rl.pipelined`, docs/offpolicy.md)."""
    pipelined_ratio_clip: float = 2.0
    """Pipelined PPO: the truncation of the ratio of the current policy's probability of a
    stored action to the collecting policy's, where it weighs the critic's V-trace targets
    and the actor's advantages. At 1 (V-trace's usual truncation) the weights still leave a
    drift towards the previous update's direction (docs/offpolicy.md)."""
    check_for_nan: bool = True
    """Check each rollout's observations and rewards for NaN and inf before the update, and
    stop naming the term that produced them (about 3 ms per iteration at 4096 envs)."""

    def validate(self) -> None:
        """Raise RobolearnError (naming the field) for a value PPO cannot run with."""
        a, p = self.algorithm, self.policy
        for name, value in (
            ("num_steps_per_env", self.num_steps_per_env),
            ("max_iterations", self.max_iterations),
            ("save_interval", self.save_interval),
            ("algorithm.num_learning_epochs", a.num_learning_epochs),
            ("algorithm.num_mini_batches", a.num_mini_batches),
        ):
            if value < 1:
                raise RobolearnError(f"agent.{name} must be >= 1, got {value}")
        for name, value, low, high in (
            ("algorithm.learning_rate", a.learning_rate, 0.0, math.inf),
            ("algorithm.desired_kl", a.desired_kl, 0.0, math.inf),
            ("algorithm.clip_param", a.clip_param, 0.0, math.inf),
            ("algorithm.max_grad_norm", a.max_grad_norm, 0.0, math.inf),
            ("policy.init_noise_std", p.init_noise_std, 0.0, math.inf),
            ("policy.actor_output_init_gain", p.actor_output_init_gain, 0.0, math.inf),
        ):
            if not (math.isfinite(value) and low < value < high):
                raise RobolearnError(f"agent.{name} must be a finite number > 0, got {value}")
        for name, value in (("algorithm.gamma", a.gamma), ("algorithm.lam", a.lam)):
            if not 0.0 <= value <= 1.0:
                raise RobolearnError(f"agent.{name} must be between 0 and 1, got {value}")
        for name, value in (
            ("algorithm.entropy_coef", a.entropy_coef),
            ("algorithm.value_loss_coef", a.value_loss_coef),
            ("algorithm.symmetry.mirror_loss_coeff", a.symmetry.mirror_loss_coeff),
        ):
            if not math.isfinite(value):
                raise RobolearnError(f"agent.{name} must be finite, got {value}")
        if a.use_mixed_precision not in (True, False, "auto"):
            raise RobolearnError(
                "agent.algorithm.use_mixed_precision must be true, false or auto, got "
                f"{a.use_mixed_precision!r}"
            )
        if a.schedule not in ("adaptive", "fixed"):
            raise RobolearnError(
                f"agent.algorithm.schedule must be adaptive or fixed, got {a.schedule!r}"
            )
        if p.activation.lower() not in ACTIVATIONS:
            raise RobolearnError(
                f"agent.policy.activation {p.activation!r} is not one of {', '.join(ACTIVATIONS)}"
            )
        for name in ("actor_hidden_dims", "critic_hidden_dims"):
            dims = getattr(p, name)
            if not dims or any(not isinstance(d, int) or d < 1 for d in dims):
                raise RobolearnError(f"agent.policy.{name} must be widths >= 1, got {dims}")
        if self.logger not in ("tensorboard", "wandb"):
            raise RobolearnError(f"agent.logger must be tensorboard or wandb, got {self.logger!r}")
        self._validate_distillation()
        if not (math.isfinite(self.pipelined_ratio_clip) and self.pipelined_ratio_clip > 0):
            raise RobolearnError(
                f"agent.pipelined_ratio_clip must be a finite number > 0, got "
                f"{self.pipelined_ratio_clip}"
            )
        if self.pipelined and self.distillation.enabled:
            raise RobolearnError("agent.pipelined trains PPO; a distillation is not pipelined")
        if self.pipelined and self.policy.recurrent.type != "none":
            raise RobolearnError(
                "agent.pipelined does not take recurrent policies (agent.policy.recurrent)"
            )
        if self.init_from and self.distillation.enabled:
            raise RobolearnError(
                "agent.init_from starts a PPO run from a checkpoint; a distillation starts its "
                "student at random and reads agent.distillation.teacher"
            )
        for role in self.roles:
            if not self.obs_groups.get(role):
                why = " (a distillation's roles are student and teacher)" * (role == "student")
                raise RobolearnError(f"agent.obs_groups.{role} must name observation groups{why}")
        self._validate_recurrent(p.recurrent)
        self._validate_cnn(p.cnn)

    @staticmethod
    def _validate_recurrent(r: RecurrentCfg) -> None:
        if r.type not in RNN_TYPES:
            raise RobolearnError(
                f"agent.policy.recurrent.type must be one of {', '.join(RNN_TYPES)}, got {r.type!r}"
            )
        for name, value in (("hidden_dim", r.hidden_dim), ("num_layers", r.num_layers)):
            if not isinstance(value, int) or value < 1:
                raise RobolearnError(f"agent.policy.recurrent.{name} must be >= 1, got {value}")

    @property
    def roles(self) -> tuple[str, str]:
        """The networks ``obs_groups`` feeds: actor and critic, or student and teacher."""
        return ("student", "teacher") if self.distillation.enabled else ("actor", "critic")

    @staticmethod
    def _validate_cnn(c: CnnCfg) -> None:
        layers = len(c.output_channels)
        if layers < 1 or any(not isinstance(v, int) or v < 1 for v in c.output_channels):
            raise RobolearnError(
                f"agent.policy.cnn.output_channels must be channel counts >= 1, got "
                f"{c.output_channels}"
            )
        for name in ("kernel_size", "stride"):
            value = getattr(c, name)
            values = value if isinstance(value, tuple | list) else (value,)
            if any(not isinstance(v, int) or v < 1 for v in values) or (
                isinstance(value, tuple | list) and len(values) not in (1, layers)
            ):
                raise RobolearnError(
                    f"agent.policy.cnn.{name} must be one integer >= 1 or one per layer "
                    f"({layers}), got {value}"
                )
        for name, valid in (
            ("padding", ("none", "zeros", "reflect", "replicate", "circular")),
            ("global_pool", ("none", "max", "avg")),
            ("norm", ("none", "batch", "layer")),
        ):
            if getattr(c, name) not in valid:
                raise RobolearnError(
                    f"agent.policy.cnn.{name} must be one of {', '.join(valid)}, got "
                    f"{getattr(c, name)!r}"
                )

    def _validate_distillation(self) -> None:
        d = self.distillation
        if not d.enabled:
            return
        if not d.teacher:
            raise RobolearnError(
                "agent.distillation.enabled needs a teacher checkpoint: set "
                "agent.distillation.teacher to a model_<iteration>.pt path or pretrained:<task>"
            )
        for name, value in (
            ("num_learning_epochs", d.num_learning_epochs),
            ("gradient_length", d.gradient_length),
        ):
            if not isinstance(value, int) or value < 1:
                raise RobolearnError(f"agent.distillation.{name} must be >= 1, got {value}")
        for name, value in (("learning_rate", d.learning_rate), ("max_grad_norm", d.max_grad_norm)):
            if not (math.isfinite(value) and value > 0):
                raise RobolearnError(
                    f"agent.distillation.{name} must be a finite number > 0, got {value}"
                )
        if d.loss_type not in ("mse", "huber"):
            raise RobolearnError(
                f"agent.distillation.loss_type must be mse or huber, got {d.loss_type!r}"
            )
        if self.algorithm.symmetry.enabled:
            raise RobolearnError(
                "agent.algorithm.symmetry does not apply to distillation (rsl-rl's "
                "Distillation has no symmetry extension); turn it off"
            )

    def to_rsl_rl(
        self,
        device: str | None = None,
        image_groups: AbstractSet[str] = frozenset(),
        teacher: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """rsl-rl 5's train config, as the runner takes it; ``device`` (the training device)
        resolves ``use_mixed_precision="auto"`` (None: off). ``image_groups``: the env's
        observation groups that are images, which the networks reading them encode with a
        CNN. ``teacher``: for distillation, the teacher's actor config (rsl-rl's, as its
        checkpoint records it)."""
        a, p = self.algorithm, self.policy
        mixed = fast_bf16(device) if a.use_mixed_precision == "auto" else a.use_mixed_precision

        def model(hidden: tuple[int, ...], stochastic: bool, role: str) -> dict[str, Any]:
            return self._model_cfg(role, hidden, stochastic, image_groups)

        symmetry = None
        if a.symmetry.enabled:
            symmetry = {
                "data_augmentation_func": SYMMETRY_FUNCTION,
                "use_data_augmentation": a.symmetry.use_data_augmentation,
                "use_mirror_loss": a.symmetry.use_mirror_loss,
                "mirror_loss_coeff": a.symmetry.mirror_loss_coeff,
            }
        common = {
            "num_steps_per_env": self.num_steps_per_env,
            "save_interval": self.save_interval,
            "obs_groups": {k: list(v) for k, v in self.obs_groups.items()},
            "logger": self.logger,
            "check_for_nan": self.check_for_nan,
            "compile": p.compile,
            "pipelined": self.pipelined,
            "pipelined_ratio_clip": self.pipelined_ratio_clip,
            "actor_output_init_gain": p.actor_output_init_gain,
        }
        if self.distillation.enabled:
            d = self.distillation
            if teacher is None:
                raise RobolearnError(
                    f"distillation needs the teacher's model config (from {d.teacher})"
                )
            return {
                **common,
                "algorithm": {
                    "class_name": "Distillation",
                    "learning_rate": d.learning_rate,
                    "num_learning_epochs": d.num_learning_epochs,
                    "gradient_length": d.gradient_length,
                    "max_grad_norm": d.max_grad_norm,
                    "loss_type": d.loss_type,
                    "use_mixed_precision": mixed,
                },
                "student": model(p.actor_hidden_dims, stochastic=True, role="student"),
                "teacher": dict(teacher),
                "teacher_checkpoint": d.teacher,
            }
        return {
            **common,
            "algorithm": {
                "class_name": "PPO",
                "learning_rate": a.learning_rate,
                "schedule": a.schedule,
                "desired_kl": a.desired_kl,
                "num_learning_epochs": a.num_learning_epochs,
                "num_mini_batches": a.num_mini_batches,
                "clip_param": a.clip_param,
                "gamma": a.gamma,
                "lam": a.lam,
                "entropy_coef": a.entropy_coef,
                "value_loss_coef": a.value_loss_coef,
                "max_grad_norm": a.max_grad_norm,
                "use_clipped_value_loss": a.use_clipped_value_loss,
                "use_mixed_precision": mixed,
                "symmetry_cfg": symmetry,
            },
            "actor": model(p.actor_hidden_dims, stochastic=True, role="actor"),
            "critic": model(p.critic_hidden_dims, stochastic=False, role="critic"),
        }

    def _model_cfg(
        self, role: str, hidden: tuple[int, ...], stochastic: bool, image_groups: AbstractSet[str]
    ) -> dict[str, Any]:
        """rsl-rl's config of the network of ``role``: a CNN where it reads image groups, a
        recurrent network where ``policy.recurrent`` asks for one, else an MLP."""
        p = self.policy
        images = [g for g in self.obs_groups.get(role, []) if g in image_groups]
        recurrent = p.recurrent.type != "none" and (
            role in ("actor", "student") or p.recurrent.critic
        )
        if images and recurrent:
            raise RobolearnError(
                f"agent.obs_groups.{role} reads image group(s) {', '.join(images)} and "
                "agent.policy.recurrent is on: rsl-rl has no model that is both "
                "convolutional and recurrent; give the recurrent network flat groups only "
                "(a frame history stands in for memory)"
            )
        cfg: dict[str, Any] = {
            "class_name": "CNNModel" if images else "RNNModel" if recurrent else "MLPModel",
            "hidden_dims": list(hidden),
            "activation": p.activation,
            "obs_normalization": p.obs_normalization,
        }
        if images:
            cfg["cnn_cfg"] = p.cnn.to_rsl_rl()
        if recurrent:
            cfg["rnn_type"] = p.recurrent.type
            cfg["rnn_hidden_dim"] = p.recurrent.hidden_dim
            cfg["rnn_num_layers"] = p.recurrent.num_layers
        if stochastic:
            cfg["distribution_cfg"] = {
                "class_name": "GaussianDistribution",
                "init_std": p.init_noise_std,
            }
        return cfg
