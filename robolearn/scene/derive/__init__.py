"""A robot config derived from any MJCF or URDF, each choice explained.

``robolearn new robot`` writes what :func:`derive_robot` finds into a robot config and a
task of the user's own; ``robolearn doctor`` runs the checks behind it. The modules:

* ``drives``: each joint's drive (the model's servos kept, torque motors made PD loops);
* ``stance``: the default pose, the robot stood on a floor, the feet that touch it;
* ``legs``: the leg chains from the kinematic tree, and a biped's hips, ankles and waist;
* ``arm``: a fixed arm's tool, joints and goals' box;
* ``tree``: paths in the kinematic tree;
* ``robot``: all of it together (:class:`DerivedRobot`), with the physics step that
  stands the robot and its mirror map.
"""

from robolearn.scene.derive.robot import DerivedRobot, compile_scene, derive_robot, sim_cfg

__all__ = ["DerivedRobot", "compile_scene", "derive_robot", "sim_cfg"]
