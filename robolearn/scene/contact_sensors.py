"""Contact sensors between two bodies: MuJoCo's own ``contact`` sensor, added to the scene's
model, so that every engine (the cpu batch and MuJoCo Warp) fills it in ``sensordata``.

A :class:`ContactSensorCfg` names two bodies of the scene's entities (the robot's fingers and
a cube, say); the sensor reports how many contacts they share and their net force (N, in
the world frame, the force ``body1`` exerts on ``body2``: a 2 kg box resting on the floor
reads (0, 0, -19.6)). ``robolearn.mdp.manipulation.contact_found`` and
``contact_force`` read them as observations.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco

from robolearn.errors import RobolearnError
from robolearn.scene.entities import ROBOT

#: MuJoCo's contact-sensor data fields (``mjtConDataField`` bits) and reductions.
_FOUND, _FORCE = (
    1 << int(mujoco.mjtConDataField.mjCONDATA_FOUND),
    1 << int(mujoco.mjtConDataField.mjCONDATA_FORCE),
)
_NETFORCE = 3
VALUES_PER_SENSOR = 4
"""found (the number of contacts) and the net force (3, world frame)."""


@dataclass(frozen=True)
class ContactSensorCfg:
    """Contacts between ``body1`` (of ``entity1``) and ``body2`` (of ``entity2``), each with
    the bodies below it where ``subtree1``/``subtree2`` (a whole hand, say)."""

    body1: str
    body2: str
    entity1: str = ROBOT
    entity2: str = ROBOT
    subtree1: bool = False
    subtree2: bool = False


def add_contact_sensors(spec: mujoco.MjSpec, sensors: dict[str, ContactSensorCfg]) -> None:
    """Add one MuJoCo contact sensor per entry, named by its key; an unknown body is a
    RobolearnError naming the entity's bodies."""
    if not sensors:
        return
    bodies = {b.name for b in spec.bodies if b.name}
    taken = {s.name for s in spec.sensors if s.name}
    for name, cfg in sensors.items():
        what = f"scene.contact_sensors.{name}"
        if not isinstance(cfg, ContactSensorCfg):
            raise RobolearnError(f"{what} must be a ContactSensorCfg, got {cfg!r}")
        if name in taken:
            raise RobolearnError(f"{what}: the model already has a sensor named {name!r}")
        first = _body(bodies, cfg.entity1, cfg.body1, f"{what}.body1")
        second = _body(bodies, cfg.entity2, cfg.body2, f"{what}.body2")
        sensor = spec.add_sensor(name=name, type=mujoco.mjtSensor.mjSENS_CONTACT)
        sensor.objtype = mujoco.mjtObj.mjOBJ_XBODY if cfg.subtree1 else mujoco.mjtObj.mjOBJ_BODY
        sensor.objname = first
        sensor.reftype = mujoco.mjtObj.mjOBJ_XBODY if cfg.subtree2 else mujoco.mjtObj.mjOBJ_BODY
        sensor.refname = second
        sensor.intprm[0] = _FOUND | _FORCE
        sensor.intprm[1] = _NETFORCE
        sensor.intprm[2] = 1  # the net force is one synthetic contact: one slot


def _body(bodies: set[str], entity: str, name: str, what: str) -> str:
    full = name if entity == ROBOT else f"{entity}/{name}"
    if full not in bodies:
        prefix = "" if entity == ROBOT else f"{entity}/"
        owned = sorted(
            b[len(prefix) :] for b in bodies if b.startswith(prefix) and (prefix or "/" not in b)
        )
        owner = "the robot" if entity == ROBOT else f"entity {entity!r}"
        raise RobolearnError(
            f"{what}: {owner} has no body {name!r}; its bodies: {', '.join(owned) or 'none'}"
        )
    return full
