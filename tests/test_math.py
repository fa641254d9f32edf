"""robolearn.math against MuJoCo's own quaternion functions, on seeded random inputs.

Every rotation helper is compared with the ``mju_*`` function that computes the same thing
(in float64, MuJoCo's precision), for both float dtypes and for leading batch dimensions.
"""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest
import torch

from robolearn.math import (
    columns,
    matrix_from_quat,
    quat_from_euler_xyz,
    quat_from_yaw,
    quat_mul,
    quat_rotate,
    quat_rotate_inverse,
    sample_uniform,
    take_columns,
    wrap_to_pi,
    yaw_from_quat,
    yaw_quat,
)

N = 64
BATCH = (4, 16)  # N inputs, reshaped to check leading batch dimensions
DTYPES = [torch.float32, torch.float64]
# float32 keeps about 7 digits; the inputs are of order 1
TOL = {torch.float32: {"atol": 2e-6, "rtol": 2e-6}, torch.float64: {"atol": 1e-12, "rtol": 1e-12}}


def random_quats(rng: np.random.Generator, n: int = N) -> np.ndarray:
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def batched(x: np.ndarray, dtype: torch.dtype) -> torch.Tensor:
    """``x`` (N, k) as a (*BATCH, k) tensor of ``dtype``."""
    return torch.as_tensor(x, dtype=dtype).reshape(*BATCH, x.shape[-1])


def flat(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    assert t.dtype == dtype and t.device.type == "cpu"
    return t.reshape(N, *t.shape[len(BATCH) :]).double()


def mj(fn, size: int, *args) -> np.ndarray:
    """Call a ``mju_*`` function that writes its result into its first argument."""
    res = np.zeros(size)
    fn(res, *(a if isinstance(a, str) else np.asarray(a, dtype=np.float64) for a in args))
    return res


def rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    return mj(mujoco.mju_rotVecQuat, 3, v, q)


def axis_angle(axis, angle: float) -> np.ndarray:
    return mj(mujoco.mju_axisAngle2Quat, 4, axis, angle)


def same_rotation(q: torch.Tensor, expected: np.ndarray, tol: dict) -> None:
    """Quaternions equal up to sign (q and -q are the same rotation)."""
    expected_t = torch.as_tensor(expected, dtype=torch.float64)
    sign = torch.sign((q * expected_t).sum(-1, keepdim=True))
    torch.testing.assert_close(q * sign, expected_t, **tol)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_quat_rotate_is_mju_rotvecquat(rng, dtype):
    q, v = random_quats(rng), rng.normal(size=(N, 3)) * 3.0
    expected = np.stack([rotate(q[i], v[i]) for i in range(N)])
    got = flat(quat_rotate(batched(q, dtype), batched(v, dtype)), dtype)
    torch.testing.assert_close(got, torch.as_tensor(expected), **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
def test_quat_rotate_inverse_rotates_by_the_conjugate(rng, dtype):
    q, v = random_quats(rng), rng.normal(size=(N, 3)) * 3.0
    expected = np.stack([rotate(mj(mujoco.mju_negQuat, 4, q[i]), v[i]) for i in range(N)])
    got = flat(quat_rotate_inverse(batched(q, dtype), batched(v, dtype)), dtype)
    torch.testing.assert_close(got, torch.as_tensor(expected), **TOL[dtype])
    # and it undoes quat_rotate: world -> body -> world
    back = quat_rotate(batched(q, dtype), quat_rotate_inverse(batched(q, dtype), batched(v, dtype)))
    torch.testing.assert_close(flat(back, dtype), torch.as_tensor(v), **TOL[dtype])


def test_quat_rotate_inverse_is_the_transpose_of_the_rotation_matrix(rng):
    q, v = random_quats(rng), rng.normal(size=(N, 3))
    mats = np.stack([mj(mujoco.mju_quat2Mat, 9, q[i]).reshape(3, 3) for i in range(N)])
    expected = np.einsum("nji,nj->ni", mats, v)  # R^T v
    got = quat_rotate_inverse(torch.as_tensor(q), torch.as_tensor(v))
    torch.testing.assert_close(got, torch.as_tensor(expected), **TOL[torch.float64])


@pytest.mark.parametrize("dtype", DTYPES)
def test_matrix_from_quat_is_mju_quat2mat(rng, dtype):
    q = random_quats(rng)
    expected = np.stack([mj(mujoco.mju_quat2Mat, 9, q[i]).reshape(3, 3) for i in range(N)])
    got = matrix_from_quat(batched(q, dtype))
    assert got.shape[-2:] == (3, 3)
    torch.testing.assert_close(
        got.reshape(-1, 3, 3).to(torch.float64), torch.as_tensor(expected), **TOL[dtype]
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_quat_mul_is_mju_mulquat(rng, dtype):
    a, b = random_quats(rng), random_quats(rng)
    expected = np.stack([mj(mujoco.mju_mulQuat, 4, a[i], b[i]) for i in range(N)])
    got = flat(quat_mul(batched(a, dtype), batched(b, dtype)), dtype)
    torch.testing.assert_close(got, torch.as_tensor(expected), **TOL[dtype])
    # "apply b, then a": rotating by a*b is rotating by b and then by a
    v = rng.normal(size=(N, 3))
    ab = quat_mul(torch.as_tensor(a), torch.as_tensor(b))
    then = quat_rotate(torch.as_tensor(a), quat_rotate(torch.as_tensor(b), torch.as_tensor(v)))
    torch.testing.assert_close(quat_rotate(ab, torch.as_tensor(v)), then)


@pytest.mark.parametrize("dtype", DTYPES)
def test_yaw_from_quat_is_the_heading_of_the_rotation_matrix(rng, dtype):
    q = random_quats(rng)
    mats = [mj(mujoco.mju_quat2Mat, 9, q[i]).reshape(3, 3) for i in range(N)]
    expected = np.array([math.atan2(m[1, 0], m[0, 0]) for m in mats])
    got = flat(yaw_from_quat(batched(q, dtype)).unsqueeze(-1), dtype).squeeze(-1)
    torch.testing.assert_close(got, torch.as_tensor(expected), **TOL[dtype])
    # a pure rotation about z gives its own angle back
    angles = rng.uniform(-3.1, 3.1, size=N)
    pure = np.stack([axis_angle([0, 0, 1], a) for a in angles])
    torch.testing.assert_close(yaw_from_quat(torch.as_tensor(pure)), torch.as_tensor(angles))


@pytest.mark.parametrize("dtype", DTYPES)
def test_quat_from_yaw_is_mju_axisangle2quat_about_z(rng, dtype):
    yaw = rng.uniform(-4.0, 4.0, size=N)
    expected = np.stack([axis_angle([0, 0, 1], a) for a in yaw])
    got = quat_from_yaw(torch.as_tensor(yaw, dtype=dtype).reshape(BATCH))
    torch.testing.assert_close(flat(got, dtype), torch.as_tensor(expected), **TOL[dtype])


def test_yaw_quat_keeps_the_heading_and_drops_roll_and_pitch(rng):
    q = random_quats(rng, 256)
    got = yaw_quat(torch.as_tensor(q))
    # where the body's x axis points, projected on the ground
    heading = np.stack([rotate(qi, [1.0, 0.0, 0.0])[:2] for qi in q])
    norm = np.linalg.norm(heading, axis=-1, keepdims=True)
    keep = norm[:, 0] > 0.1  # away from pointing straight up or down
    expected_x = np.concatenate([heading / norm, np.zeros((len(q), 1))], axis=-1)[keep]
    got_x = quat_rotate(got, torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64).expand(256, 3))
    torch.testing.assert_close(got_x[keep], torch.as_tensor(expected_x))
    # a rotation about z alone: no x or y components, unit norm
    torch.testing.assert_close(got[:, 1:3], torch.zeros(256, 2, dtype=torch.float64))
    torch.testing.assert_close(got.norm(dim=-1), torch.ones(256, dtype=torch.float64))


@pytest.mark.parametrize("dtype", DTYPES)
def test_quat_from_euler_xyz_is_rz_ry_rx(rng, dtype):
    euler = rng.uniform(-math.pi, math.pi, size=(N, 3))
    composed = np.stack(
        [
            mj(
                mujoco.mju_mulQuat,
                4,
                mj(mujoco.mju_mulQuat, 4, axis_angle([0, 0, 1], y), axis_angle([0, 1, 0], p)),
                axis_angle([1, 0, 0], r),
            )
            for r, p, y in euler
        ]
    )
    # MuJoCo's own Euler conversion: upper case = axes fixed in the world, x then y then z
    fixed_axes = np.stack([mj(mujoco.mju_euler2Quat, 4, e, "XYZ") for e in euler])
    np.testing.assert_allclose(composed, fixed_axes, atol=1e-12)
    e = torch.as_tensor(euler, dtype=dtype).reshape(*BATCH, 3)
    got = flat(quat_from_euler_xyz(e[..., 0], e[..., 1], e[..., 2]), dtype)
    same_rotation(got, composed, TOL[dtype])


def test_wrap_to_pi_lands_in_range_and_keeps_the_angle(rng):
    angle = torch.as_tensor(rng.uniform(-30.0, 30.0, size=1000))
    wrapped = wrap_to_pi(angle)
    assert wrapped.dtype == torch.float64
    assert bool((wrapped >= -math.pi).all()) and bool((wrapped < math.pi).all())
    torch.testing.assert_close(torch.sin(wrapped), torch.sin(angle))
    torch.testing.assert_close(torch.cos(wrapped), torch.cos(angle))
    inside = torch.tensor([-3.0, -1.0, 0.0, 0.5, 3.0], dtype=torch.float64)
    torch.testing.assert_close(wrap_to_pi(inside), inside)
    assert wrap_to_pi(torch.tensor(math.pi, dtype=torch.float64)).item() == pytest.approx(-math.pi)


def test_columns_and_take_columns_pick_the_same_columns_as_indexing():
    x = torch.arange(40.0).reshape(4, 10)
    for ids in ([2, 3, 4], [0, 5, 7], [9], [4, 3]):
        t = torch.tensor(ids)
        cols = columns(t)
        assert isinstance(cols, slice) == (ids in ([2, 3, 4], [9]))
        torch.testing.assert_close(take_columns(x, cols), x[:, t])
    # a slice is a view: a write through it reaches x
    take_columns(x, columns(torch.tensor([1, 2])))[:] = -1.0
    assert x[:, 1:3].eq(-1.0).all()


def test_sample_uniform_shape_dtype_and_bounds():
    torch.manual_seed(0)
    s = sample_uniform(-2.0, 3.0, (5000, 2), torch.device("cpu"))
    assert s.shape == (5000, 2) and s.dtype == torch.float32 and s.device.type == "cpu"
    assert float(s.min()) >= -2.0 and float(s.max()) < 3.0
    # it spreads over the whole range: mean near the middle, both ends reached
    assert abs(float(s.mean()) - 0.5) < 0.1
    assert float(s.min()) < -1.9 and float(s.max()) > 2.9
    lo, hi = torch.tensor([0.0, 10.0]), torch.tensor([1.0, 20.0])
    t = sample_uniform(lo, hi, (1000, 2), torch.device("cpu"))
    assert bool(((t >= lo) & (t < hi)).all())
    assert float(t[:, 1].min()) > 9.9 and float(t[:, 0].max()) < 1.0
