"""The scene's config: the world the engine runs, its entities (the robot among them) by
name (the engine's own settings, :class:`~robolearn.sim.config.SimCfg`, live in
:mod:`robolearn.sim.config`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from robolearn.errors import RobolearnError
from robolearn.scene.contact_sensors import ContactSensorCfg
from robolearn.scene.entities import ROBOT, EntityCfg
from robolearn.scene.sensors.base import SensorCfg
from robolearn.terrain import TerrainCfg

ROBOT_FIELDS = (
    "model",
    "keyframe",
    "init_state",
    "joints",
    "root_body",
    "feet",
    "mirror",
    "gravity_compensation",
    "edit",
    "actuators",
)
"""The fields that were SceneCfg's before the robot became an entity, now the ``robot``
entity's: saved runs and users' overrides still name them on the scene."""


@dataclass
class SceneCfg:
    """The world: its entities (the ``robot`` and any other robots and objects), how many
    copies, the ground, terrain and sensors."""

    MOVED_FIELDS: ClassVar[dict[str, str]] = {
        **{f: f"entities.{ROBOT}.{f}" for f in ROBOT_FIELDS},
        ROBOT: f"entities.{ROBOT}",
    }
    """Old field -> its path now, for overrides (``env.scene.model=``) and old run folders'
    env.yaml (:mod:`robolearn.config` reads it)."""

    num_envs: int = 1024
    """Number of parallel envs."""
    entities: dict[str, EntityCfg] = field(default_factory=dict)
    """Every body of the scene by name: the entity ``robot`` is the scene's base model (its
    names unprefixed); each other is attached under the prefix ``<name>/`` (see
    :mod:`robolearn.scene.entities`)."""
    ground: bool = False
    """Add a ground plane (and a light) at z = 0 when the robot's MJCF's world has no plane,
    as a robot's own file usually has not; a terrain replaces it."""
    terrain: TerrainCfg | None = None
    """A generated terrain in place of the MJCF's ground planes; None keeps the MJCF's
    ground. With a terrain, each env spawns on a tile (see :mod:`robolearn.terrain`)."""
    contact_sensors: dict[str, ContactSensorCfg] = field(default_factory=dict)
    """MuJoCo contact sensors between bodies of the entities, by name (a finger and the
    cube): how many contacts and their net force, in ``sensordata`` on every engine (see
    :mod:`robolearn.scene.contact_sensors`)."""
    sensors: dict[str, SensorCfg] = field(default_factory=dict)
    """Sensors by name, updated with the physics and read by terms by name: ray casters
    (height scans that see boxes, depth images, lidars), contact sensors with air time (see
    :mod:`robolearn.scene.sensors`)."""

    @property
    def robot(self) -> EntityCfg:
        """The entity ``robot``, the scene's base model; RobolearnError if there is none."""
        robot = self.entities.get(ROBOT)
        if robot is None:
            raise RobolearnError(
                f"scene.entities has no {ROBOT!r} (the scene's base model); entities: "
                f"{', '.join(self.entities) or 'none'}"
            )
        return robot

    def __getattr__(self, name: str) -> Any:
        """Only for what is missing: a field that moved to the robot is an error naming its
        place now, not a bare AttributeError."""
        raise AttributeError(_moved(name) or f"'SceneCfg' object has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        """Setting a field that moved to the robot (``cfg.scene.actuators = ...`` in a task
        written before) is refused, naming its place now, rather than set on nothing."""
        moved = _moved(name)
        if moved:
            raise AttributeError(moved)
        super().__setattr__(name, value)

    def attached(self) -> dict[str, EntityCfg]:
        """The entities attached under their name prefix: all but the ``robot``."""
        return {n: e for n, e in self.entities.items() if n != ROBOT}


def _moved(name: str) -> str | None:
    """The message for a SceneCfg field that is the robot entity's now; None for others."""
    if name not in ROBOT_FIELDS:
        return None
    return (
        f"SceneCfg.{name} is the robot's now: scene.robot.{name} (the entity "
        f"scene.entities[{ROBOT!r}]; overrides may still say env.scene.{name}=)"
    )
