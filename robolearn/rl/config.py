"""Typed PPO settings for rsl-rl, turned into the dict its runner takes.

Field names follow rsl-rl (``num_steps_per_env``, ``clip_param``, ``desired_kl``...) so a
user of Isaac Lab's or mjlab's rsl-rl configs recognises them.
"""

from __future__ import annotations

import math
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from robolearn.errors import RobolearnError

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


@dataclass
class PolicyCfg:
    """Actor and critic MLPs (rsl-rl ``MLPModel``) and the action distribution."""

    actor_hidden_dims: tuple[int, ...] = (128, 128, 128)
    """Hidden layer widths of the actor."""
    critic_hidden_dims: tuple[int, ...] = (128, 128, 128)
    """Hidden layer widths of the critic."""
    activation: str = "elu"
    """Activation between layers."""
    init_noise_std: float = 1.0
    """Initial standard deviation of the Gaussian action distribution."""
    obs_normalization: bool = True
    """Normalize observations with running statistics (folded into exported policies)."""
    compile: bool = False
    """Train with the actor's and critic's MLPs compiled by ``torch.compile`` (fused
    activations: 0.8x the mirrored bf16 update of humanoid_walk on this CPU) at the cost of
    seconds of compilation when training starts; on a CPU it needs a C++ compiler. The
    checkpoints are the same files; play and export run the plain modules."""


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
    """Which observation groups feed the actor and the critic."""
    algorithm: PpoAlgorithmCfg = field(default_factory=PpoAlgorithmCfg)
    """PPO hyperparameters."""
    policy: PolicyCfg = field(default_factory=PolicyCfg)
    """Network shapes and action noise."""
    logger: str = "tensorboard"
    """``tensorboard`` or ``wandb``."""
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
        for role in ("actor", "critic"):
            if not self.obs_groups.get(role):
                raise RobolearnError(f"agent.obs_groups.{role} must name observation groups")

    def to_rsl_rl(self, device: str | None = None) -> dict[str, Any]:
        """rsl-rl 5's train config, as the runner takes it; ``device`` (the training device)
        resolves ``use_mixed_precision="auto"`` (None: off)."""
        a, p = self.algorithm, self.policy

        def model(hidden: tuple[int, ...], stochastic: bool) -> dict[str, Any]:
            cfg: dict[str, Any] = {
                "class_name": "MLPModel",
                "hidden_dims": list(hidden),
                "activation": p.activation,
                "obs_normalization": p.obs_normalization,
            }
            if stochastic:
                cfg["distribution_cfg"] = {
                    "class_name": "GaussianDistribution",
                    "init_std": p.init_noise_std,
                }
            return cfg

        symmetry = None
        if a.symmetry.enabled:
            symmetry = {
                "data_augmentation_func": SYMMETRY_FUNCTION,
                "use_data_augmentation": a.symmetry.use_data_augmentation,
                "use_mirror_loss": a.symmetry.use_mirror_loss,
                "mirror_loss_coeff": a.symmetry.mirror_loss_coeff,
            }
        return {
            "num_steps_per_env": self.num_steps_per_env,
            "save_interval": self.save_interval,
            "obs_groups": {k: list(v) for k, v in self.obs_groups.items()},
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
                "use_mixed_precision": (
                    fast_bf16(device) if a.use_mixed_precision == "auto" else a.use_mixed_precision
                ),
                "symmetry_cfg": symmetry,
            },
            "actor": model(p.actor_hidden_dims, stochastic=True),
            "critic": model(p.critic_hidden_dims, stochastic=False),
            "logger": self.logger,
            "check_for_nan": self.check_for_nan,
            "compile": p.compile,
        }
