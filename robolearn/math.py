"""Batched rotation helpers on torch tensors.

Quaternions are MuJoCo's order everywhere in robolearn: ``(w, x, y, z)``, unit norm, the
rotation from a body's frame to the world frame. Every function takes leading batch
dimensions and works on any device and float dtype.
"""

from __future__ import annotations

import torch


def quat_rotate(q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Rotate vectors ``v`` (..., 3) from body frame to world frame by quaternions ``q``."""
    w, u = q[..., :1], q[..., 1:]
    t = torch.linalg.cross(u, v)
    # t + t, not 2.0 * t: the same bits, and no Python number to wrap in a tensor (on the
    # cpu a scalar operand costs a conversion op of its own, and these run every step)
    t = t + t
    return v + w * t + torch.linalg.cross(u, t)


def matrix_from_quat(q: torch.Tensor) -> torch.Tensor:
    """Rotation matrices (..., 3, 3) of quaternions ``q`` (..., 4): ``R @ v`` rotates as
    :func:`quat_rotate`. Many vectors in one frame rotate faster as one matrix product
    (``v @ R.mT``) than by the quaternion formula on the expanded quaternions."""
    w, x, y, z = q.unbind(-1)
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz, wx, wy, wz = x * y, x * z, y * z, w * x, w * y, w * z
    rows = (
        1 - 2 * (yy + zz), 2 * (xy - wz), 2 * (xz + wy),
        2 * (xy + wz), 1 - 2 * (xx + zz), 2 * (yz - wx),
        2 * (xz - wy), 2 * (yz + wx), 1 - 2 * (xx + yy),
    )  # fmt: skip
    return torch.stack(rows, dim=-1).unflatten(-1, (3, 3))


def quat_rotate_inverse(q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Rotate world-frame vectors ``v`` (..., 3) into the frame of quaternions ``q``."""
    w, u = q[..., :1], q[..., 1:]
    # The conjugate's vector part is -u: -u x v = v x u and -u x t = t x u, with no
    # negation op.
    t = torch.linalg.cross(v, u)
    t = t + t
    return v + w * t + torch.linalg.cross(t, u)


def quat_mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Hamilton product ``a * b`` (apply ``b``, then ``a``)."""
    aw, ax, ay, az = a.unbind(-1)
    bw, bx, by, bz = b.unbind(-1)
    return torch.stack(
        (
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ),
        dim=-1,
    )


def quat_conjugate(q: torch.Tensor) -> torch.Tensor:
    """The inverse rotation of unit quaternions ``q``."""
    return torch.cat((q[..., :1], -q[..., 1:]), dim=-1)


def axis_angle_from_quat(q: torch.Tensor) -> torch.Tensor:
    """Rotation vectors (..., 3): axis times angle in [0, pi] (the shorter way round, so
    ``q`` and ``-q`` give the same vector)."""
    q = torch.where(q[..., :1] < 0, -q, q)
    sin_half = q[..., 1:].norm(dim=-1, keepdim=True)
    angle = 2.0 * torch.atan2(sin_half, q[..., :1])
    # angle / sin(angle / 2) -> 2 as the angle -> 0: the small-angle limit, not 0 / 0
    small = sin_half < 1e-6
    scale = torch.where(small, 2.0 + angle.square() / 12.0, angle / sin_half.clamp(min=1e-12))
    return q[..., 1:] * scale


def quat_from_axis_angle(v: torch.Tensor) -> torch.Tensor:
    """Unit quaternions of rotation vectors ``v`` (..., 3): axis times angle (rad)."""
    angle = v.norm(dim=-1, keepdim=True)
    half = 0.5 * angle
    # sin(angle / 2) / angle -> 1/2 as the angle -> 0
    small = angle < 1e-6
    scale = torch.where(small, 0.5 - angle.square() / 48.0, half.sin() / angle.clamp(min=1e-12))
    return torch.cat((half.cos(), v * scale), dim=-1)


def quat_angle_between(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """(...) the angle (rad, in [0, pi]) of the rotation from ``b`` to ``a``."""
    # atan2 of the difference's parts, not acos of a dot product: acos loses the small
    # angles (a float32 dot of 1 - 1e-7 is 1e-3 rad away from 1)
    d = quat_mul(quat_conjugate(b), a)
    return 2.0 * torch.atan2(d[..., 1:].norm(dim=-1), d[..., 0].abs())


def yaw_from_quat(q: torch.Tensor) -> torch.Tensor:
    """Heading angle (rotation about world z) of quaternions, in (-pi, pi]."""
    w, x, y, z = q.unbind(-1)
    # atan2(2 (wz + xy), 1 - 2 (y^2 + z^2)) with both arguments halved: the same angle and
    # the same bits (halving is exact), two ops fewer.
    return torch.atan2(w * z + x * y, 0.5 - (y * y + z * z))


def quat_from_yaw(yaw: torch.Tensor) -> torch.Tensor:
    """Quaternions of rotations by ``yaw`` about world z."""
    half = (yaw * 0.5).unsqueeze(-1)
    zeros = half.new_zeros(*yaw.shape, 2)
    return torch.cat((torch.cos(half), zeros, torch.sin(half)), dim=-1)


def yaw_quat(q: torch.Tensor) -> torch.Tensor:
    """The heading-only part of quaternions (roll and pitch removed)."""
    return quat_from_yaw(yaw_from_quat(q))


def quat_from_euler_xyz(roll: torch.Tensor, pitch: torch.Tensor, yaw: torch.Tensor) -> torch.Tensor:
    """Quaternions from roll (x), pitch (y), yaw (z) angles: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    cr, sr = torch.cos(roll * 0.5), torch.sin(roll * 0.5)
    cp, sp = torch.cos(pitch * 0.5), torch.sin(pitch * 0.5)
    cy, sy = torch.cos(yaw * 0.5), torch.sin(yaw * 0.5)
    return torch.stack(
        (
            cr * cp * cy + sr * sp * sy,
            sr * cp * cy - cr * sp * sy,
            cr * sp * cy + sr * cp * sy,
            cr * cp * sy - sr * sp * cy,
        ),
        dim=-1,
    )


def columns(ids: torch.Tensor) -> slice | torch.Tensor:
    """``ids`` as a slice when they are consecutive, else unchanged.

    ``x[:, columns(ids)]`` is then a view, or a write into one, instead of a gather or a
    scatter, which costs several times more on cpu for the small tensors of an env step.
    """
    if ids.dim() != 1 or ids.numel() == 0:
        return ids
    first = int(ids[0])
    if torch.equal(ids.cpu(), torch.arange(first, first + ids.numel())):
        return slice(first, first + ids.numel())
    return ids


def columns_of(ids: list[int], device: torch.device | str) -> slice | torch.Tensor:
    """:func:`columns` of indices known on the host: a slice when they are consecutive,
    else an index tensor on ``device``, found without reading the device."""
    if ids and ids == list(range(ids[0], ids[0] + len(ids))):
        return slice(ids[0], ids[0] + len(ids))
    return torch.tensor(ids, dtype=torch.long, device=device)


def take_columns(x: torch.Tensor, cols: slice | torch.Tensor) -> torch.Tensor:
    """``x[:, cols]`` for a :func:`columns` result: a view for a slice, else index_select
    (several times faster than advanced indexing on cpu)."""
    return x[:, cols] if isinstance(cols, slice) else x.index_select(1, cols)


def wrap_to_pi(angle: torch.Tensor) -> torch.Tensor:
    """Angles wrapped into [-pi, pi)."""
    return torch.remainder(angle + torch.pi, 2 * torch.pi) - torch.pi


def sample_uniform(
    lo: float | torch.Tensor, hi: float | torch.Tensor, shape: tuple[int, ...], device
) -> torch.Tensor:
    """Uniform samples in [lo, hi) of ``shape`` (float32) on ``device``; ``lo`` itself
    when the bounds are equal numbers."""
    if not isinstance(lo, torch.Tensor) and not isinstance(hi, torch.Tensor) and lo == hi:
        # lo + 0 x rand is lo: no numbers drawn (a reset's zero joint velocities, a fixed
        # resampling time; the cpu generator costs about 3 ns a number)
        return torch.full(shape, float(lo), device=device)
    return lo + (hi - lo) * torch.rand(shape, device=device)
