"""The scene's config: which world the engine runs (the engine's own settings,
:class:`~robolearn.sim.config.SimCfg`, live in :mod:`robolearn.sim.config`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import mujoco

from robolearn.actuators import ImplicitPDCfg
from robolearn.scene.contact_sensors import ContactSensorCfg
from robolearn.scene.entities import EntityCfg
from robolearn.scene.init_state import INIT_KEY, InitStateCfg
from robolearn.scene.mirror import JointMirrorCfg
from robolearn.scene.sensors.base import SensorCfg
from robolearn.terrain import TerrainCfg


@dataclass
class SceneCfg:
    """The world: which MJCF, how many copies, and the default state."""

    model: str = ""
    """MJCF file: a path inside robolearn's assets (``humanoid/scene.xml``) or any path."""
    num_envs: int = 1024
    """Number of parallel envs."""
    keyframe: str | None = None
    """Keyframe giving the default state (root pose, joint positions, ctrl); None: qpos0.
    Unused where ``init_state`` is set."""
    init_state: InitStateCfg | None = None
    """The default state stated by the robot config, written into the model as the keyframe
    ``init_state`` (see :mod:`robolearn.scene.init_state`); None: ``keyframe``."""
    joints: tuple[str, ...] = ()
    """The joint names a robot config was written for: a model lacking any of them is
    refused, naming them; empty checks nothing."""
    ground: bool = False
    """Add a ground plane (and a light) at z = 0 when the MJCF's world has no plane, as a
    robot's own file usually has not; a terrain replaces it."""
    root_body: str | None = None
    """Body of the floating base (a free joint) for base-frame quantities; None if fixed."""
    feet: tuple[str, ...] = field(default_factory=tuple)
    """Bodies that are feet, for gait terms (air time, slip, contact)."""
    mirror: JointMirrorCfg | None = None
    """The robot config's left-right joint map for symmetry augmentation; None finds it in
    the model's geometry (:mod:`robolearn.scene.mirror`)."""
    gravity_compensation: tuple[str, ...] = ()
    """Regexes of the robot's bodies whose weight the robot's own controller cancels
    (MuJoCo's ``gravcomp="1"``): a Franka arm's controller adds each link's gravity torque
    to what it is commanded, so its position loops do not sag. Empty: none."""
    edit: Callable[[mujoco.MjSpec], None] | None = None
    """A robot config's own change to the robot's MJCF, run on its spec before the actuator
    configs apply (e.g. a gripper actuator's gains from the vendor's grasp force, which no
    field states); None: none."""
    actuators: dict[str, ImplicitPDCfg] = field(default_factory=dict)
    """How the robot's joints are driven, by name: each config selects joints by regex and
    replaces or adds their actuators (see :mod:`robolearn.actuators`); empty keeps
    the MJCF's actuators."""
    entities: dict[str, EntityCfg] = field(default_factory=dict)
    """More robots and objects beside the robot (the entity ``robot`` is ``model``), each
    attached under the prefix ``<name>/`` (see :mod:`robolearn.scene.entities`)."""
    contact_sensors: dict[str, ContactSensorCfg] = field(default_factory=dict)
    """MuJoCo contact sensors between bodies of the entities, by name (a finger and the
    cube): how many contacts and their net force, in ``sensordata`` on every engine (see
    :mod:`robolearn.scene.contact_sensors`)."""
    sensors: dict[str, SensorCfg] = field(default_factory=dict)
    """Sensors by name, updated with the physics and read by terms by name: ray casters
    (height scans that see boxes, depth images, lidars), contact sensors with air time (see
    :mod:`robolearn.scene.sensors`)."""
    terrain: TerrainCfg | None = None
    """A generated terrain in place of the MJCF's ground planes; None keeps the MJCF's
    ground. With a terrain, each env spawns on a tile (see :mod:`robolearn.terrain`)."""

    @property
    def default_keyframe(self) -> str | None:
        """The keyframe every env resets to: ``init_state``'s, else ``keyframe``."""
        return INIT_KEY if self.init_state is not None else self.keyframe
