"""A robot world on an engine: model assembly, name lookups, root and joint state.

:class:`Scene` builds the engine from a :class:`SceneCfg` and :class:`SimCfg` and gives the
managers what every task needs by name: the robot's joints (its hinge and slide joints, in
qpos order), actuators, bodies, sites and sensors; the state of a floating root (a free
joint); and the default joint positions each env resets around.

The engine's settings (:class:`SimCfg`, :class:`NewtonCfg`) live beside the engines, in
:mod:`robolearn.sim.config`; they are re-exported here for the tasks' imports.

The actuator models (how the joints are driven: configs, drives, delays, learned nets) are
a package of their own, :mod:`robolearn.actuators`, below the scene; their configs and
gains are re-exported here.

Modules: ``config`` (SceneCfg), ``entities`` (EntityCfg: the robot and the other robots and
objects beside it, and the selector terms use), ``models`` (where an MJCF comes from),
``assembly`` (the MJCF, its entities and the engine), ``names`` (names and regex lookups),
``patterns`` (the regex lookups alone), ``defaults`` (the reset state), ``cache`` (state
computed once per env step), ``feet`` (feet given as geoms), ``robot`` (a robot's
EntityCfg found in any MJCF), ``sensors`` (ray casters, contact sensors with air time,
cameras), ``terrain`` (a generated terrain's tiles in a running scene) and ``scene`` (the
Scene, its step and its state).
"""

from robolearn.actuators import (  # the actuator models, re-exported
    ActuatorNetCfg,
    DCMotorCfg,
    IdealPDCfg,
    ImplicitPDCfg,
    pd_gains,
    reflected_inertia,
)
from robolearn.scene.config import SceneCfg
from robolearn.scene.contact_sensors import ContactSensorCfg
from robolearn.scene.entities import EntityCfg, FrameCfg, SceneEntityCfg
from robolearn.scene.init_state import InitStateCfg
from robolearn.scene.mirror import JointMirrorCfg
from robolearn.scene.robot import robot_entity, robot_scene
from robolearn.scene.scene import Scene
from robolearn.scene.sensors import (
    BodyContactSensorCfg,
    CameraCfg,
    GridPattern,
    LidarPattern,
    PinholePattern,
    RayCasterCfg,
    SensorCfg,
)
from robolearn.sim.config import NewtonCfg, SimCfg  # the engines' settings, re-exported

__all__ = [
    "ActuatorNetCfg",
    "BodyContactSensorCfg",
    "CameraCfg",
    "ContactSensorCfg",
    "DCMotorCfg",
    "EntityCfg",
    "FrameCfg",
    "GridPattern",
    "IdealPDCfg",
    "ImplicitPDCfg",
    "InitStateCfg",
    "JointMirrorCfg",
    "LidarPattern",
    "NewtonCfg",
    "PinholePattern",
    "RayCasterCfg",
    "Scene",
    "SceneCfg",
    "SceneEntityCfg",
    "SensorCfg",
    "SimCfg",
    "pd_gains",
    "reflected_inertia",
    "robot_entity",
    "robot_scene",
]
