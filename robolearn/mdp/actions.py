"""Action terms: the shipped ways a policy's output becomes actuator controls.

Each is a :class:`~robolearn.managers.ActionTerm` named by its config's ``class_type``;
the manager that splits the action vector among them is
:class:`~robolearn.managers.ActionManager`.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import torch

from robolearn.errors import RobolearnError
from robolearn.managers import ActionTerm, ActionTermCfg
from robolearn.mdp.protocol import TaskEnv


class JointPositionAction(ActionTerm):
    """Position targets around each env's default joint positions."""

    def __init__(self, cfg: JointPositionActionCfg, env: TaskEnv, name: str) -> None:
        super().__init__(cfg, env, name)
        m = env.scene.model
        joint_of = env.scene.actuator_joint[self.actuator_ids]
        bad = [
            env.scene.actuator_names[a]
            for a, j in zip(self.actuator_ids.tolist(), joint_of.tolist(), strict=True)
            if j < 0 or int(m.actuator_biastype[a]) != int(mujoco.mjtBias.mjBIAS_AFFINE)
        ]
        if bad:
            raise RobolearnError(
                f"actions.{name}: joint position actions need <position> actuators on a joint; "
                f"not such: {', '.join(bad)}"
            )
        self.joint_ids = joint_of

    def _offset(self) -> torch.Tensor | float:
        if not self.cfg.use_default_offset:
            return 0.0
        return self.env.scene.default_joint_pos.index_select(1, self.joint_ids)


class JointEffortAction(ActionTerm):
    """Motor commands (force or torque after the actuator's gear)."""


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
