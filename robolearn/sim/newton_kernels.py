"""Warp kernels of the Newton engines' own-solver actuators (robolearn.sim.newton_engine).

A module of its own, imported only by the Newton engines: warp reads a kernel's type
annotations from its module's globals, so they must be real types here (no postponed
annotations), and importing it imports warp.
"""

import warp as wp
from mujoco_warp._src.types import vec10


@wp.kernel
def dof_damping(
    joint_qd: wp.array[wp.float32],
    damping: wp.array2d[wp.float32],
    damped: wp.array[wp.int32],
    nv: int,
    joint_f: wp.array[wp.float32],
):
    """joint_f -= damping * velocity on the dofs marked damped (MuJoCo's joint damping)."""
    world, dof = wp.tid()
    if damped[dof] == 0:
        return
    row = wp.min(world, damping.shape[0] - 1)
    i = world * nv + dof
    joint_f[i] = joint_f[i] - damping[row, dof] * joint_qd[i]


@wp.kernel
def actuator_force(
    ctrl: wp.array2d[wp.float32],
    joint_q: wp.array[wp.float32],
    joint_qd: wp.array[wp.float32],
    gainprm: wp.array2d[vec10],
    biasprm: wp.array2d[vec10],
    forcerange: wp.array2d[wp.vec2],
    forcelimited: wp.array[wp.int32],
    skip: wp.array[wp.int32],
    ctrlrange: wp.array[wp.vec2],
    gear: wp.array[wp.float32],
    qadr: wp.array[wp.int32],
    dofadr: wp.array[wp.int32],
    dof_ref: wp.array[wp.float32],
    has_ref: int,
    nq: int,
    nv: int,
    joint_f: wp.array[wp.float32],
):
    """MuJoCo's force of a fixed-gain, affine-bias actuator on a hinge or slide joint:
    gain * ctrl + b0 + b1 * length + b2 * velocity, clamped to the force range, times the
    gear, added to the joint's dof. Per-env gains and ranges are read where batched;
    actuators marked in ``skip`` are Newton's joint drives instead."""
    world, a = wp.tid()
    if skip[a] != 0:
        return
    dof = dofadr[a]
    # a hinge's or slide's Newton coordinate is MuJoCo's less the joint's reference
    q = joint_q[world * nq + qadr[a]]
    if has_ref != 0:
        q = q + dof_ref[world * nv + dof]
    qd = joint_qd[world * nv + dof]
    r = ctrlrange[a]
    u = wp.clamp(ctrl[world, a], r[0], r[1])
    g = gainprm[wp.min(world, gainprm.shape[0] - 1), a]
    b = biasprm[wp.min(world, biasprm.shape[0] - 1), a]
    length = gear[a] * q
    velocity = gear[a] * qd
    force = g[0] * u + b[0] + b[1] * length + b[2] * velocity
    if forcelimited[a] != 0:
        fr = forcerange[wp.min(world, forcerange.shape[0] - 1), a]
        force = wp.clamp(force, fr[0], fr[1])
    wp.atomic_add(joint_f, world * nv + dof, gear[a] * force)
