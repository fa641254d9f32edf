"""Default contact and constraint capacities for the Warp engines, measured on the model.

MuJoCo Warp allocates fixed buffers: ``nconmax`` contacts per env (one pool shared by all
envs) and ``njmax`` constraint rows per env. Its own default is sized from the model's
initial state, where a robot usually hangs in the air or stands on its feet: a scene
with a second robot and a box resting on the floor, or a humanoid lying where it fell,
needs more, and what does not fit is dropped (the env then counts as diverged). The cpu
engine grows its buffers as needed, so here a single MuJoCo world on the CPU plays the
cases a training run meets (each keyframe held by its controls, and the model falling
from ``qpos0`` with no control at all, which is where the most bodies touch the ground)
and the capacity is what it needed, with a margin.
"""

from __future__ import annotations

import math

import mujoco

#: Simulated seconds per case.
SECONDS = 1.0
#: Capacity over the most contacts or rows seen.
MARGIN = 1.5
#: Keyframes played at most (a model may carry many).
MAX_KEYFRAMES = 4


def measured_capacity(model: mujoco.MjModel, seconds: float = SECONDS) -> tuple[int, int]:
    """The most contacts and constraint rows one world of ``model`` used in the cases above
    (each at most ``seconds`` of simulated time)."""
    data = mujoco.MjData(model)
    steps = max(1, math.ceil(seconds / model.opt.timestep))
    ncon = nefc = 0
    for key in [None, *range(min(model.nkey, MAX_KEYFRAMES))]:
        if key is None:
            mujoco.mj_resetData(model, data)  # qpos0, no control: the model falls
        else:
            mujoco.mj_resetDataKeyframe(model, data, key)
        for _ in range(steps):
            mujoco.mj_step(model, data)
            ncon, nefc = max(ncon, data.ncon), max(nefc, data.nefc)
    return ncon, nefc


def default_capacity(
    model: mujoco.MjModel, data: mujoco.MjData, nconmax: int | None, njmax: int | None
) -> tuple[int | None, int | None]:
    """``nconmax`` and ``njmax`` with the unset ones filled from :func:`measured_capacity`,
    or None where the measure fits in MuJoCo Warp's own default (which then applies);
    ``data`` is the initial state (forward computed) MuJoCo Warp sizes that default from."""
    if nconmax is not None and njmax is not None:
        return nconmax, njmax
    ncon, nefc = measured_capacity(model)
    own_ncon, own_nefc = _warp_defaults(model, data)
    if nconmax is None and MARGIN * ncon > own_ncon:
        nconmax = _rounded(MARGIN * ncon)
    if njmax is None and MARGIN * nefc > own_nefc:
        njmax = _rounded(MARGIN * nefc)
    return nconmax, njmax


def _warp_defaults(model: mujoco.MjModel, data: mujoco.MjData) -> tuple[int, int]:
    """MuJoCo Warp's own defaults for the model's initial state (0 where this version of
    MuJoCo Warp does not expose its estimate: the measure alone decides then)."""
    try:
        from mujoco_warp._src import io
    except ImportError:
        return 0, 0
    estimates = (getattr(io, "_default_nconmax", None), getattr(io, "_default_njmax", None))
    return tuple(0 if f is None else int(f(model, data)) for f in estimates)  # type: ignore[return-value]


def _rounded(value: float) -> int:
    """Up to a multiple of 16, at least 16."""
    return max(16, 16 * math.ceil(value / 16))
