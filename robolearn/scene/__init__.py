"""A robot world on an engine: model assembly, name lookups, root and joint state.

:class:`Scene` builds the engine from a :class:`SceneCfg` and :class:`SimCfg` and gives the
managers what every task needs by name: the robot's joints (its hinge and slide joints, in
qpos order), actuators, bodies, sites and sensors; the state of a floating root (a free
joint); and the default joint positions each env resets around.

Modules: ``config`` (SceneCfg, SimCfg), ``assembly`` (MJCF path and engine), ``names``
(names and regex lookups), ``defaults`` (the reset state), ``cache`` (state computed once
per env step), ``feet`` (feet given as geoms), ``robot`` (a SceneCfg found in any MJCF) and
``scene`` (the Scene, and its state each step).
"""

from robolearn.scene.config import SceneCfg, SimCfg
from robolearn.scene.robot import robot_scene
from robolearn.scene.scene import Scene

__all__ = ["Scene", "SceneCfg", "SimCfg", "robot_scene"]
