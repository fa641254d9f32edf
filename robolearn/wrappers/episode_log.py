"""The env's episode statistics for learners that log plain numbers (gymnasium, skrl)."""

from __future__ import annotations

from typing import Any

import torch


def ended_episode_log(log: dict[str, Any]) -> dict[str, float]:
    """The env's ``extras["log"]`` as Python numbers, without the statistics of ended
    episodes that are NaN because none ended in the step (one host read for all): what a
    learner that logs numbers (gymnasium's infos, skrl) is given."""
    tensors = {k: v for k, v in log.items() if isinstance(v, torch.Tensor)}
    values = (
        torch.stack([v.detach().float().reshape(()) for v in tensors.values()]).cpu().tolist()
        if tensors
        else []
    )
    numbers = dict(zip(tensors, values, strict=True))
    numbers.update({k: float(v) for k, v in log.items() if k not in tensors})
    return {k: v for k, v in numbers.items() if v == v}  # NaN != NaN
