"""Ranges over the axes ``x, y, z, roll, pitch, yaw`` (missing axes are 0), as the event
terms and the motion command take them, and uniform draws in them."""

from __future__ import annotations

import torch

from robolearn.errors import RobolearnError

__all__ = ["AXES", "axis_ranges", "sample_axes"]

AXES = ("x", "y", "z", "roll", "pitch", "yaw")


_RANGES: dict[tuple, tuple[torch.Tensor, torch.Tensor]] = {}


def axis_ranges(
    ranges: dict[str, tuple[float, float]], where: str, device: torch.device | str
) -> tuple[torch.Tensor, torch.Tensor]:
    """(6,) lows and (6,) widths of the ranges on the device, made once per distinct ranges
    and device (a tensor made from Python numbers at every call is a copy the GPU path
    would wait for; the widths once, not a subtraction per draw). An unknown axis is a
    RobolearnError naming ``where``."""
    key = (tuple((a, tuple(r)) for a, r in sorted(ranges.items())), str(device))
    cached = _RANGES.get(key)
    if cached is None:
        unknown = set(ranges) - set(AXES)
        if unknown:
            raise RobolearnError(
                f"{where}: unknown axes {sorted(unknown)}; valid: {', '.join(AXES)}"
            )
        rows = torch.tensor(
            [ranges.get(a, (0.0, 0.0)) for a in AXES], dtype=torch.float32, device=device
        )
        cached = _RANGES[key] = (rows[:, 0].clone(), rows[:, 1] - rows[:, 0])
    return cached


def sample_axes(
    ranges: dict[str, tuple[float, float]], n: int, where: str, device: torch.device | str
) -> torch.Tensor:
    """(n, 6) uniform draws in the ranges, one row per env, in the order of :data:`AXES`."""
    low, width = axis_ranges(ranges, where, device)
    return torch.addcmul(low, width, torch.rand(n, 6, device=device))
