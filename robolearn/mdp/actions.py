"""Action terms: the shipped ways a policy's output becomes actuator controls.

Each is a :class:`~robolearn.managers.ActionTerm` named by its config's ``class_type``;
the manager that splits the action vector among them is
:class:`~robolearn.managers.ActionManager`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from robolearn.errors import RobolearnError
from robolearn.managers import ActionTerm, ActionTermCfg
from robolearn.mdp.protocol import TaskEnv


class JointPositionAction(ActionTerm):
    """Position targets around each env's default joint positions."""

    def __init__(self, cfg: JointPositionActionCfg, env: TaskEnv, name: str) -> None:
        super().__init__(cfg, env, name)
        joint_of = env.scene.actuator_joint[self.actuator_ids]
        ids = self.actuator_ids.tolist()
        targets = env.scene.takes_position_targets(ids)
        bad = [
            env.scene.actuator_names[a]
            for a, j, target in zip(ids, joint_of.tolist(), targets, strict=True)
            if j < 0 or not target
        ]
        if bad:
            raise RobolearnError(
                f"actions.{name}: joint position actions need <position> actuators (or "
                f"scene.actuators' position loops) on a joint; not such: {', '.join(bad)}"
            )
        self.joint_ids = joint_of

    def _offset(self) -> torch.Tensor | float:
        scene = self.env.scene
        offset = (
            scene.default_joint_pos.index_select(1, self.joint_ids)
            if self.cfg.use_default_offset
            else 0.0
        )
        bias = scene.sensor_errors.encoder_bias
        if bias is not None:
            # the target is in the encoders' readings, which the motor driver closes its
            # loop on: the joint itself settles a bias away from it
            offset = offset - bias.index_select(1, self.joint_ids)
        return offset


class JointEffortAction(ActionTerm):
    """Motor commands (force or torque after the actuator's gear)."""

    def __init__(self, cfg: JointEffortActionCfg, env: TaskEnv, name: str) -> None:
        super().__init__(cfg, env, name)
        names = [env.scene.actuator_names[a] for a in self.actuator_ids.tolist()]
        loops = [a for a in names if a in env.scene.explicit_actuators]
        if loops:
            raise RobolearnError(
                f"actions.{name}: effort actions drive motors, and scene.actuators makes these "
                f"position loops: {', '.join(loops)}; use a joint position action"
            )


@dataclass
class JointPositionActionCfg(ActionTermCfg):
    """Joint position targets for MuJoCo ``<position>`` actuators.

    target = offset + scale * action, where offset is each env's default joint position
    (``use_default_offset``) or 0. The actuator's own PD gains track the target.
    """

    class_type: type[ActionTerm] | None = JointPositionAction
    scale: float = 0.5
    """Radians (or metres) of target per unit of action."""
    use_default_offset: bool = True
    """Add the default joint position, so action 0 holds the default pose."""


@dataclass
class JointEffortActionCfg(ActionTermCfg):
    """Direct controls for ``<motor>`` actuators: ctrl = scale * action."""

    class_type: type[ActionTerm] | None = JointEffortAction
