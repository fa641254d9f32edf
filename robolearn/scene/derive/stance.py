"""Where a legged robot stands: its default pose, its base height and its feet, found by
standing it on a floor in MuJoCo, not by reading names.

The pose is the model's keyframe when it has one; else every joint at zero, or at its
range's centre where zero is outside the range. The robot is lowered until its lowest
colliding geom touches the floor, then stands for :data:`SETTLE_S` seconds on its drives.
The feet are the bodies touching the floor then, at the ends of the leg chains (a body
touching while one below it touches too is not a foot); a foot that is one geom of a body
with other colliding geoms (a sphere at a calf's end) is named by that geom, which the
scene makes a body of its own (:mod:`robolearn.scene.feet`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import mujoco
import numpy as np

from robolearn.scene.derive.tree import is_below
from robolearn.scene.init_state import INIT_KEY

SETTLE_S = 1.5
"""How long the robot stands before its stance is read, s."""
PREFERRED_KEYS = ("home", "stand", "standing", "stand_bent_knees", "init", "default", "init_state")
"""Keyframe names taken as the standing pose, in this order, when a model has several."""
MAX_SETTLED_SPEED = 1.0
"""rad/s: joints moving faster than this at the end of the settle are not held."""
MAX_TILT = 0.5
"""rad: a base tilted further than this at the end of the settle has fallen."""


def initial_pose(model: mujoco.MjModel, joints: list[int]) -> tuple[np.ndarray, str]:
    """The pose to stand in, and where it came from."""
    names = [model.key(k).name for k in range(model.nkey)]
    if names:
        pick = next((n for n in PREFERRED_KEYS if n in names), names[0])
        k = names.index(pick)
        if len(model.key_qpos[k]) == model.nq:
            qpos = model.key_qpos[k].copy()
            clipped = []
            for j in joints:
                adr, (low, high) = int(model.jnt_qposadr[j]), model.jnt_range[j]
                if model.jnt_limited[j] and not low <= qpos[adr] <= high:
                    qpos[adr] = min(max(qpos[adr], low), high)
                    clipped.append(model.joint(j).name)
            how = f"the model's keyframe {pick!r}"
            if clipped:
                # Menagerie's G1 with hands: its keyframe's thumb is 0.003 rad past its range
                how += f", with {', '.join(clipped)} brought inside their ranges"
            return qpos, how
    qpos = model.qpos0.copy()
    centred = []
    for j in joints:
        adr = int(model.jnt_qposadr[j])
        low, high = model.jnt_range[j]
        if model.jnt_limited[j] and not low <= 0.0 <= high:
            qpos[adr] = (low + high) / 2
            centred.append(model.joint(j).name)
        else:
            qpos[adr] = 0.0
    how = "no keyframe: every joint at zero"
    if centred:
        how += f" but {', '.join(centred)} at their range's centre (zero is outside it)"
    return qpos, how


@dataclass
class Stance:
    """What standing the robot on a floor showed."""

    stands: bool
    """Upright and finite after the settle."""
    base_height: float
    """The floating base's height when settled, m."""
    qpos: np.ndarray
    feet: list[str] = field(default_factory=list)
    """Foot names: bodies, or geoms to be made bodies."""
    foot_bodies: list[int] = field(default_factory=list)
    """The bodies that hold each foot (the geom's body for a geom foot)."""
    foot_positions: np.ndarray | None = None
    """World positions of the feet, (n, 3)."""
    max_joint_speed: float = 0.0
    """rad/s at the end of the settle: a stance that still moves is not settled."""
    foot_slip: float = 0.0
    """m: the most any foot slid over the last half second."""
    tilt: float = 0.0
    reason: str = ""
    """Why it does not stand, in words."""


def lowest_point(model: mujoco.MjModel, data: mujoco.MjData, geoms: list[int]) -> float:
    """The lowest world z of the bounding boxes of ``geoms``."""
    low = math.inf
    for g in geoms:
        centre, half = model.geom_aabb[g, :3], model.geom_aabb[g, 3:]
        rot = data.geom_xmat[g].reshape(3, 3)
        z = data.geom_xpos[g, 2] + rot[2] @ centre - np.abs(rot[2]) @ half
        low = min(low, float(z))
    return low


def colliding_geoms(model: mujoco.MjModel, bodies: set[int]) -> list[int]:
    """The geoms of ``bodies`` that can touch something (contype or conaffinity set)."""
    return [
        g
        for g in range(model.ngeom)
        if int(model.geom_bodyid[g]) in bodies
        and (model.geom_contype[g] or model.geom_conaffinity[g])
    ]


def settle(
    model: mujoco.MjModel, root_body: int, seconds: float = SETTLE_S, harness: bool = True
) -> Stance:
    """Stand the robot (reset to the keyframe :data:`INIT_KEY`, lowered onto the floor of
    ``model``) and report its stance (see the module).

    With ``harness`` the base may only move up and down, as a robot hung from a gantry
    and lowered onto its feet: a biped whose default pose balances only with a policy
    (an inverted pendulum) still shows where its feet and base are. Without it the robot
    stands on its own, which says whether the pose balances."""
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key(INIT_KEY).id)
    mujoco.mj_forward(model, data)
    robot = {b for b in range(1, model.nbody) if int(model.body_rootid[b]) == root_body}
    geoms = colliding_geoms(model, robot)
    if not geoms:
        return Stance(False, 0.0, data.qpos.copy(), reason="no geom of the robot can collide")
    free = int(model.body_jntadr[root_body])
    adr = int(model.jnt_qposadr[free])
    data.qpos[adr + 2] -= lowest_point(model, data, geoms) - 1e-3
    data.qvel[:] = 0
    mujoco.mj_forward(model, data)
    steps = max(1, round(seconds / model.opt.timestep))
    half = max(1, steps // 3)
    positions = None
    dof = int(model.jnt_dofadr[free])
    hold = data.qpos[adr : adr + 7].copy()
    for i in range(steps):
        mujoco.mj_step(model, data)
        if harness:
            data.qpos[[adr, adr + 1]] = hold[:2]
            data.qpos[adr + 3 : adr + 7] = hold[3:]
            data.qvel[[dof, dof + 1, dof + 3, dof + 4, dof + 5]] = 0.0
        if not np.isfinite(data.qpos).all():
            return Stance(
                False, 0.0, data.qpos.copy(), reason="the simulation diverged (not finite)"
            )
        if i == steps - half:
            positions = data.xpos.copy()
    up = data.xmat[root_body].reshape(3, 3)[2, 2]
    tilt = float(math.acos(max(-1.0, min(1.0, up))))
    speeds = np.abs(data.qvel[dof + 6 :])
    stance = Stance(
        stands=tilt < MAX_TILT,
        base_height=float(data.qpos[adr + 2]),
        qpos=data.qpos.copy(),
        max_joint_speed=float(speeds.max()) if speeds.size else 0.0,
        tilt=tilt,
    )
    if not stance.stands:
        stance.reason = f"it fell over (the base tilted {tilt:.2f} rad within {seconds:g} s)"
    elif stance.max_joint_speed > MAX_SETTLED_SPEED:
        stance.stands = False
        stance.reason = (
            f"its joints still move at {stance.max_joint_speed:.3g} rad/s after {seconds:g} s "
            "(the gains do not hold it at this step)"
        )
    _find_feet(model, data, root_body, stance)
    if harness and stance.stands and not stance.feet:
        stance.stands = False
        stance.reason = "nothing but its base touches the floor"
    if stance.foot_bodies and positions is not None:
        moved = data.xpos[stance.foot_bodies, :2] - positions[stance.foot_bodies, :2]
        stance.foot_slip = float(np.linalg.norm(moved, axis=1).max())
    return stance


def _find_feet(model: mujoco.MjModel, data: mujoco.MjData, root_body: int, stance: Stance) -> None:
    floor = {g for g in range(model.ngeom) if int(model.geom_bodyid[g]) == 0}
    touching: dict[int, set[int]] = {}  # body -> its geoms on the floor
    for c in data.contact[: data.ncon]:
        pair = (int(c.geom1), int(c.geom2))
        for ours, other in (pair, pair[::-1]):
            body = int(model.geom_bodyid[ours])
            if other in floor and body != 0 and body != root_body:
                touching.setdefault(body, set()).add(ours)
    ends = [b for b in touching if not any(is_below(model, o, b) for o in touching if o != b)]
    points = []
    for body in sorted(ends):
        on_floor = sorted(touching[body])
        others = [g for g in colliding_geoms(model, {body}) if g not in on_floor]
        geom_name = model.geom(on_floor[0]).name
        if len(on_floor) == 1 and others and geom_name:
            stance.feet.append(geom_name)
            points.append(data.geom_xpos[on_floor[0]].copy())
        else:
            stance.feet.append(model.body(body).name)
            points.append(data.xpos[body].copy())
        stance.foot_bodies.append(body)
    if points:
        stance.foot_positions = np.array(points)
