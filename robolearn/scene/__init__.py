"""A robot world on an engine: model assembly, name lookups, root and joint state.

:class:`Scene` builds the engine from a :class:`SceneCfg` and :class:`SimCfg` and gives the
managers what every task needs by name: the robot's joints (its hinge and slide joints, in
qpos order), actuators, bodies, sites and sensors; the state of a floating root (a free
joint); and the default joint positions each env resets around.
"""

from robolearn.scene.scene import Scene, SceneCfg, SimCfg

__all__ = ["Scene", "SceneCfg", "SimCfg"]
