"""Feet that are geoms, made bodies of their own, so that every foot term works on them.

The terms that read feet (air time, contact, slip, swing height) read per-body quantities:
the contact force on a body (MuJoCo's ``cfrc_ext``) and a body's position. Public MJCF
robots often have no foot bodies: the foot is a collision geom (a sphere) at the end of the
calf body. For each foot named as a geom, the scene moves that geom into a new body of the
same name, welded to its old body at the geom's centre (no joint). The physics is the same
(a welded body adds no degree of freedom and its mass is the geom's, as before), and the
new body's contact force and position are exactly the foot's. Both engines run the edited
model, so they agree.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import mujoco
import numpy as np

from robolearn.errors import RobolearnError

# MjsGeom attributes copied to the moved geom (all that define it; not its name, id,
# parent or frame, and not its placement, which moves to the new body)
_GEOM_FIELDS = (
    "type", "size", "friction", "condim", "contype", "conaffinity", "priority", "solmix",
    "solref", "solimp", "margin", "gap", "mass", "density", "typeinertia", "meshname",
    "hfieldname", "material", "rgba", "group", "fluid_ellipsoid", "fluid_coefs", "fitscale",
    "userdata", "classname",
)  # fmt: skip


def separate_foot_geoms(spec: mujoco.MjSpec, feet: Sequence[str]) -> None:
    """Make every name in ``feet`` that is a geom (and not a body) a body of that name."""
    bodies = {b.name for b in spec.bodies}
    for name in feet:
        if name in bodies:
            continue
        geom = spec.geom(name)
        if geom is None:
            raise RobolearnError(
                f"scene.feet names {name!r}, which is neither a body nor a geom of the model"
            )
        _move_into_own_body(spec, geom)


def _move_into_own_body(spec: mujoco.MjSpec, geom) -> None:
    if geom.frame is not None:
        raise RobolearnError(
            f"foot geom {geom.name!r} sits in a <frame>; name its body in scene.feet instead"
        )
    parent = geom.parent
    fromto = np.asarray(geom.fromto, dtype=float)
    if not math.isnan(fromto[0]):
        # placed by its end points: the body goes to their middle, the ends move with it
        centre = (fromto[:3] + fromto[3:]) / 2
        pos, quat, local = centre, np.array([1.0, 0.0, 0.0, 0.0]), fromto - np.tile(centre, 2)
    else:
        pos, quat, local = np.asarray(geom.pos), np.asarray(geom.quat), None
    body = parent.add_body(name=geom.name, pos=pos, quat=quat)
    moved = body.add_geom()
    for field in _GEOM_FIELDS:
        setattr(moved, field, getattr(geom, field))
    if parent.explicitinertial:
        # its mass was never counted (the old body's <inertial> stands for it): keep it so
        moved.mass, moved.density = 0.0, 0.0
    if local is not None:
        moved.fromto = local
    name = geom.name
    spec.delete(geom)
    moved.name = name
