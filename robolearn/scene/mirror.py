"""The robot's left-right mirror image, found in its MJCF.

A mirror-symmetric robot (a humanoid, a quadruped) has, for each joint, a partner joint on
the other side (or itself, on the centre line) that moves the mirror image of it. Symmetry
augmentation needs that map: the mirrored state of joint ``j`` is ``sign[j] x`` the state of
joint ``perm[j]``. Nothing here is named by hand: the map comes from where the joints are
and how they turn at the model's reference pose (``qpos0``), seen from the root body, with
the mirror plane the root's x-z plane (forward and up; the robot faces +x, as the velocity
tasks assume).

Reflecting a rotation by angle ``t`` about axis ``a`` gives a rotation by ``-t`` about ``M a``
(``M`` = diag(1, -1, 1)): a partner whose axis is ``M a`` moves by ``-t`` (a roll or yaw
joint), one whose axis is ``-M a`` by ``+t`` (a pitch joint). A slide joint's translation is
reflected like any vector: ``+t`` along ``M a``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import mujoco
import numpy as np

from robolearn.errors import RobolearnError
from robolearn.scene.patterns import match_names

MIRROR = np.array([1.0, -1.0, 1.0])
"""The reflection through the x-z plane, as a diagonal."""


@dataclass
class JointMirrorCfg:
    """A robot config's own left-right mirror map, where the geometry cannot be trusted
    (a model that is not exactly symmetric) or should be checked against it.

    The mirrored state of joint ``a`` is the state of its partner, with the sign flipped
    for the joints matching ``flip``: ``pairs`` names each left joint's right partner (the
    map goes both ways); a joint in no pair is its own partner (on the centre line)."""

    pairs: dict[str, str]
    """Joint name to partner joint name (exact names, each joint in one pair at most)."""
    flip: tuple[str, ...] = ()
    """Regexes (full match) of the joints whose angle changes sign in the mirror: roll and
    yaw joints, whose axes the mirror reverses."""


@dataclass(frozen=True)
class IndexMirror:
    """``mirrored[..., i] = sign[i] * value[..., perm[i]]`` over a list of elements."""

    perm: tuple[int, ...]
    sign: tuple[float, ...]


def _frames(model: mujoco.MjModel, root_body: int) -> tuple[mujoco.MjData, np.ndarray, np.ndarray]:
    """Kinematics at ``qpos0``; the root body's world position and rotation matrix."""
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    return data, data.xpos[root_body].copy(), data.xmat[root_body].reshape(3, 3).copy()


def _partner(points: np.ndarray, axes: np.ndarray | None, i: int, tol: float) -> list[int]:
    """Indices whose point is the mirror image of point ``i`` (and, with ``axes``, whose axis
    is parallel to the mirrored axis of ``i``)."""
    target = points[i] * MIRROR
    near = np.linalg.norm(points - target, axis=1) <= tol
    if axes is not None:
        near &= np.abs(axes @ (axes[i] * MIRROR)) >= 0.99
    return np.flatnonzero(near).tolist()


def joint_mirror(
    model: mujoco.MjModel,
    root_body: int,
    joints: Sequence[int],
    names: Sequence[str],
    tol: float = 2e-3,
) -> IndexMirror:
    """The mirror map over ``joints`` (MuJoCo joint ids of hinge or slide joints).

    Args:
        model: the compiled model.
        root_body: the body whose x-z plane is the mirror plane.
        joints: the joints, in the order of the map's indices.
        names: their names, for the error message.
        tol: how far (m) a partner's anchor may be from the mirrored anchor.

    Raises RobolearnError naming the joints that have no mirror partner among ``joints``.
    """
    data, origin, rot = _frames(model, root_body)
    anchors = (data.xanchor[list(joints)] - origin) @ rot
    axes = data.xaxis[list(joints)] @ rot
    perm, sign, lonely = [], [], []
    for i, j in enumerate(joints):
        found = _partner(anchors, axes, i, tol)
        if len(found) != 1:
            lonely.append(names[i])
            continue
        k = found[0]
        along = float(axes[k] @ (axes[i] * MIRROR))
        hinge = int(model.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_HINGE)
        perm.append(k)
        sign.append(-np.sign(along) if hinge else np.sign(along))
    if lonely:
        raise RobolearnError(
            "the robot is not left-right symmetric about its root's x-z plane: no mirror "
            f"partner for joint(s) {', '.join(lonely)}"
        )
    return IndexMirror(tuple(perm), tuple(float(s) for s in sign))


def body_mirror(
    model: mujoco.MjModel,
    root_body: int,
    bodies: Sequence[int],
    names: Sequence[str],
    tol: float = 2e-3,
) -> IndexMirror:
    """The mirror map over ``bodies`` (MuJoCo body ids): each body's partner is the one at
    its mirrored position (e.g. the left foot's is the right foot). Raises RobolearnError
    naming the bodies with no partner among ``bodies``."""
    data, origin, rot = _frames(model, root_body)
    points = (data.xpos[list(bodies)] - origin) @ rot
    perm, lonely = [], []
    for i in range(len(bodies)):
        found = _partner(points, None, i, tol)
        if len(found) != 1:
            lonely.append(names[i])
        else:
            perm.append(found[0])
    if lonely:
        raise RobolearnError(
            "the robot is not left-right symmetric about its root's x-z plane: no mirror "
            f"partner for body(ies) {', '.join(lonely)}"
        )
    return IndexMirror(tuple(perm), (1.0,) * len(perm))


def configured_joint_mirror(cfg: JointMirrorCfg, names: Sequence[str]) -> IndexMirror:
    """``cfg``'s mirror map over the joints ``names``; RobolearnError for a joint it names
    that the model does not have, or a joint in two pairs."""
    index = {n: i for i, n in enumerate(names)}
    perm = list(range(len(names)))
    for a, b in cfg.pairs.items():
        for name in (a, b):
            if name not in index:
                raise RobolearnError(
                    f"scene.mirror maps {a!r} to {b!r}, but the model has no joint {name!r}"
                )
        i, k = index[a], index[b]
        if perm[i] != i or perm[k] != k or i == k:
            raise RobolearnError(f"scene.mirror pairs joint {a!r} or {b!r} more than once")
        perm[i], perm[k] = k, i
    flipped = (
        set(match_names(list(names), list(cfg.flip), "scene.mirror.flip joint"))
        if cfg.flip
        else set()
    )
    sign = tuple(-1.0 if i in flipped else 1.0 for i in range(len(names)))
    return IndexMirror(tuple(perm), sign)
