"""Typed PPO settings for rsl-rl, turned into the dict its runner takes.

Field names follow rsl-rl (``num_steps_per_env``, ``clip_param``, ``desired_kl``...) so a
user of Isaac Lab's or mjlab's rsl-rl configs recognises them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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


@dataclass
class AgentCfg:
    """Everything rsl-rl's OnPolicyRunner needs, plus run bookkeeping."""

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

    def to_rsl_rl(self) -> dict[str, Any]:
        """The dict rsl-rl 5's OnPolicyRunner takes."""
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
            },
            "actor": model(p.actor_hidden_dims, stochastic=True),
            "critic": model(p.critic_hidden_dims, stochastic=False),
            "logger": self.logger,
            "check_for_nan": True,
        }
