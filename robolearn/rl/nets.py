"""Network pieces of robolearn's own learners (SHAC, TD3, SAC): MLPs and the running
observation normalizer whose statistics an export bakes into the policy."""

from __future__ import annotations

from itertools import pairwise

import torch
from torch import nn

ACTIVATIONS = {"elu": nn.ELU, "relu": nn.ReLU, "tanh": nn.Tanh}
"""The activations the learners' settings name."""


def mlp(
    inputs: int,
    hidden: tuple[int, ...],
    outputs: int,
    activation: str,
    layer_norm: bool = False,
) -> nn.Sequential:
    """Linear layers of the ``hidden`` widths, each followed by (a layer norm and) the
    activation, then a linear output layer."""
    layers: list[nn.Module] = []
    for width in hidden:
        layers.append(nn.Linear(inputs, width))
        if layer_norm:
            layers.append(nn.LayerNorm(width))
        layers.append(ACTIVATIONS[activation]())
        inputs = width
    layers.append(nn.Linear(inputs, outputs))
    return nn.Sequential(*layers)


def mlp_parameters(inputs: int, hidden: tuple[int, ...], outputs: int) -> int:
    """The weights and biases of :func:`mlp` with these widths (layer norms left out)."""
    widths = [inputs, *hidden, outputs]
    return sum((a + 1) * b for a, b in pairwise(widths))


class RunningNorm(nn.Module):
    """Observations less their running mean, over their running std; the statistics are
    constants to the gradient."""

    def __init__(self, dim: int, enabled: bool = True) -> None:
        super().__init__()
        self.enabled = enabled
        self.register_buffer("mean", torch.zeros(dim))
        self.register_buffer("var", torch.ones(dim))
        self.register_buffer("count", torch.tensor(1e-4))

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        """Merge a batch (..., dim) into the statistics (Chan's parallel update)."""
        if not self.enabled:
            return
        x = x.reshape(-1, x.shape[-1]).float()
        n = x.shape[0]
        mean, var = x.mean(0), x.var(0, unbiased=False)
        total = self.count + n
        delta = mean - self.mean
        self.mean += delta * n / total
        self.var.copy_(
            (self.var * self.count + var * n + delta**2 * self.count * n / total) / total
        )
        self.count.copy_(total)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.enabled:
            return x
        return (x - self.mean) / torch.sqrt(self.var + 1e-5)
