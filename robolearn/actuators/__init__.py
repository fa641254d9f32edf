"""The actuator models: how a robot's joints are driven, from its config to the torques.

An actuator model is its own idea, beside the scene: a robot config names its motors
(``envs/``), the scene applies them to the model it builds and runs them at every physics
step. Here live both ends of that and nothing of the scene:

* ``config``: the actuator configs (:class:`ImplicitPDCfg`, :class:`IdealPDCfg`,
  :class:`DCMotorCfg`, :class:`ActuatorNetCfg`) and gains from a motor's facts
  (:func:`reflected_inertia`, :func:`pd_gains`);
* ``apply``: how the configs become the model's actuators before it compiles;
* ``drive``: the explicit motor models and nets, computed in torch at each physics step;
* ``delay``: actuation delay of MuJoCo's own position loops, per env;
* ``network``: a learned actuator net's file (load, save, checks) and its run-time motor.

The offline fit of an actuator net is a tool, not run-time code: ``scripts/``
(``fit_actuator_net.py``). :mod:`robolearn.scene` re-exports the configs and gains, so
``from robolearn.scene import ImplicitPDCfg`` keeps working.
"""

from robolearn.actuators.config import (
    ActuatorNetCfg,
    DCMotorCfg,
    IdealPDCfg,
    ImplicitPDCfg,
    PerJoint,
    pd_gains,
    reflected_inertia,
)

__all__ = [
    "ActuatorNetCfg",
    "DCMotorCfg",
    "IdealPDCfg",
    "ImplicitPDCfg",
    "PerJoint",
    "pd_gains",
    "reflected_inertia",
]
