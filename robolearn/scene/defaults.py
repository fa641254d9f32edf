"""The state every env resets to: a keyframe's, or the model's qpos0."""

from __future__ import annotations

import mujoco
import torch

from robolearn.errors import RobolearnError


def default_state(
    model: mujoco.MjModel,
    keyframe: str | None,
    model_name: str,
    dtype: torch.dtype,
    device: torch.device,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(qpos (nq,), ctrl (nu,)) of ``keyframe``, or qpos0 and zero controls when None.

    Raises RobolearnError naming ``model_name`` and listing the model's keyframes when
    ``keyframe`` is not one of them.
    """
    if keyframe is None:
        qpos0, ctrl0 = model.qpos0, torch.zeros(model.nu)
    else:
        keys = [model.key(k).name for k in range(model.nkey)]
        if keyframe not in keys:
            raise RobolearnError(
                f"scene.keyframe {keyframe!r} is not in {model_name}; keyframes: "
                f"{', '.join(keys) or 'none'}"
            )
        key = model.key(keyframe)
        qpos0, ctrl0 = key.qpos, key.ctrl
    return (
        torch.as_tensor(qpos0, device=device, dtype=dtype),
        torch.as_tensor(ctrl0, device=device, dtype=dtype),
    )
