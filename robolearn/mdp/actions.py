"""Action terms: the shipped ways a policy's output becomes actuator controls.

Each is a :class:`~robolearn.managers.ActionTerm` named by its config's ``class_type``;
the manager that splits the action vector among them is
:class:`~robolearn.managers.ActionManager`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from robolearn.errors import RobolearnError
from robolearn.managers import ActionTerm, ActionTermCfg
from robolearn.mdp.protocol import TaskEnv
from robolearn.scene.names import compile_patterns, match_names


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

    def measured_positions(self) -> torch.Tensor:
        """The driven joints' positions as the encoders read them (what the motors' loops
        close on), one column per joint of the term."""
        scene = self.env.scene
        ids = self.joint_ids
        return scene.sensor_errors.joint_pos(scene.joint_pos.index_select(1, ids), ids)

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


class RelativeJointPositionAction(JointPositionAction):
    """Joint position targets moved on from the last step's by each action; see
    :class:`RelativeJointPositionActionCfg`."""

    def __init__(self, cfg: RelativeJointPositionActionCfg, env: TaskEnv, name: str) -> None:
        super().__init__(cfg, env, name)
        limits = env.scene.joint_pos_limits.index_select(0, self.joint_ids)
        self._low, self._high = limits[:, 0].clone(), limits[:, 1].clone()
        if cfg.target_limits:
            self._narrow_limits(cfg.target_limits, env, name)
        self.processed_actions[:] = self._offset()

    def _narrow_limits(self, ranges: dict[str, Any], env: TaskEnv, name: str) -> None:
        what = f"actions.{name}.target_limits"
        names = [env.scene.joint_names[j] for j in self.joint_ids.tolist()]
        for pattern, _regex in compile_patterns(list(ranges), what):
            bounds = ranges[pattern]
            if not (isinstance(bounds, list | tuple) and len(bounds) == 2):
                raise RobolearnError(f"{what}.{pattern}: (lower, upper) in rad, got {bounds!r}")
            lower, upper = float(bounds[0]), float(bounds[1])
            for k in match_names(names, pattern, f"{what} joint"):
                self._low[k] = max(float(self._low[k]), lower)
                self._high[k] = min(float(self._high[k]), upper)
                if not self._low[k] < self._high[k]:
                    raise RobolearnError(
                        f"{what}.{pattern}: ({lower}, {upper}) leaves {names[k]} no range "
                        "within its joint limits"
                    )

    def process_actions(self, actions: torch.Tensor) -> None:
        # each step moves the target on from where the last left it, within the joint limits
        self.raw_actions[:] = actions
        step = self.processed_actions + self.cfg.scale * actions
        lead = self.cfg.max_lead
        if lead is not None:
            # anti-windup: a joint held back (by contact or its motor's effort limit) does
            # not run its target away
            measured = self.measured_positions()
            step = torch.clamp(step, measured - lead, measured + lead)
        torch.clamp(step, self._low, self._high, out=self.processed_actions)

    def describe(self) -> dict[str, Any]:
        lead = self.cfg.max_lead
        step, joint, leash = "last target + scale x action", "", {}
        if lead is not None:
            step = f"clamp({step}, joint - max_lead, joint + max_lead)"
            joint, leash = ", joint the measured position", {"max_lead": lead}
        return {
            "mapping": f"relative: target = clamp({step}, lower, upper){joint}; "
            "offset (the default pose) after a reset",
            "lower": self._low.tolist(),
            "upper": self._high.tolist(),
            **leash,
        }

    def reset(self, env_mask: torch.Tensor) -> None:
        super().reset(env_mask)
        # a reset env's target starts again at its default pose
        offset = torch.as_tensor(self._offset(), device=self.env.device)
        mask = env_mask.unsqueeze(-1)
        torch.where(
            mask,
            offset.expand_as(self.processed_actions),
            self.processed_actions,
            out=self.processed_actions,
        )


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
class RelativeJointPositionActionCfg(JointPositionActionCfg):
    """Joint position targets relative to the last step's: target += scale * action,
    clamped to the joints' limits; a reset starts it at the offset (the default pose). Action
    0 holds the arm where it was sent. Its action has no range of its own: give it a
    ``clip`` where an action space is needed."""

    class_type: type[ActionTerm] | None = RelativeJointPositionAction
    scale: float = 0.05
    target_limits: dict[str, tuple[float, float]] | None = None
    """``{joint regex: (lower, upper)}`` in rad (or m): the targets of those joints kept
    within this range as well as within the joints' limits; a workspace narrower than the
    robot's reach, where the task is in front of it."""
    max_lead: float | None = None
    """Keep each target within this distance (rad or m) of its joint's measured position
    (None: no bound). Past the error at which a joint's motor saturates, a target further
    ahead adds no force; a joint held back by contact would otherwise wind its target up,
    and the policy must unwind it before the joint moves back."""


@dataclass
class JointEffortActionCfg(ActionTermCfg):
    """Direct controls for ``<motor>`` actuators: ctrl = scale * action."""

    class_type: type[ActionTerm] | None = JointEffortAction


class GripperAction(ActionTerm):
    """One action for a gripper's actuators: open or closed (``binary``), or anywhere in
    between (continuous, -1 closed to 1 open); see :class:`GripperActionCfg`."""

    cfg: GripperActionCfg

    def __init__(self, cfg: GripperActionCfg, env: TaskEnv, name: str) -> None:
        super().__init__(cfg, env, name)
        names = [env.scene.actuator_names[a] for a in self.actuator_ids.tolist()]
        self.open_command = _per_actuator(cfg.open_command, names, f"actions.{name}.open_command")
        self.close_command = _per_actuator(
            cfg.close_command, names, f"actions.{name}.close_command"
        )
        self.open_command = self.open_command.to(env.device)
        self.close_command = self.close_command.to(env.device)
        self.actuator_count = len(names)
        self.action_dim = 1
        n = env.num_envs
        self.raw_actions = torch.zeros(n, 1, device=env.device)
        self.processed_actions = self.open_command.expand(n, -1).clone()

    def process_actions(self, actions: torch.Tensor) -> None:
        self.raw_actions[:] = actions
        if self.cfg.binary:
            close = actions < 0  # (N, 1), broadcast over the actuators
            torch.where(close, self.close_command, self.open_command, out=self.processed_actions)
        else:
            share = (actions.clamp(-1.0, 1.0) + 1.0) * 0.5
            span = self.open_command - self.close_command
            torch.addcmul(self.close_command, share, span, out=self.processed_actions)

    def action_bounds(self) -> tuple[torch.Tensor, torch.Tensor]:
        if self.cfg.clip is not None:
            return super().action_bounds()
        one = torch.ones(1, dtype=torch.float64)
        return -one, one

    def describe(self) -> dict[str, Any]:
        mapping = (
            "binary: ctrl = close_ctrl where action < 0, else open_ctrl"
            if self.cfg.binary
            else "continuous: ctrl = close_ctrl + (clamp(action, -1, 1) + 1) / 2 x "
            "(open_ctrl - close_ctrl)"
        )
        return {
            "mapping": mapping,
            "open_ctrl": self.open_command.tolist(),
            "close_ctrl": self.close_command.tolist(),
        }

    def is_closed(self) -> torch.Tensor:
        """(N,) bool: the gripper is commanded closed (past halfway for a continuous one)."""
        return self.raw_actions[:, 0] < 0


def _per_actuator(value: float | dict[str, float], names: list[str], what: str) -> torch.Tensor:
    """(k,) one command per actuator from a number or ``{regex: value}`` covering them."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return torch.full((len(names),), float(value))
    if not isinstance(value, dict):
        raise RobolearnError(f"{what} is a number or {{actuator regex: number}}, got {value!r}")
    out = torch.full((len(names),), float("nan"))
    for pattern, _regex in compile_patterns(list(value), what):
        for k in match_names(names, pattern, f"{what} actuator"):
            out[k] = float(value[pattern])
    missing = [n for n, v in zip(names, out.tolist(), strict=True) if v != v]
    if missing:
        raise RobolearnError(f"{what} gives no value for the actuators {', '.join(missing)}")
    return out


@dataclass
class GripperActionCfg(ActionTermCfg):
    """A gripper driven by one action: ``binary`` (Isaac Lab's binary joint action: below 0
    closes, else opens) or continuous (-1 closed, 1 open, linear between).

    ``open_command`` and ``close_command`` are the controls written to the actuators
    (``actuators``): a number for all, or ``{actuator regex: value}``; e.g. Menagerie's
    Panda has one tendon actuator for both fingers, 255 open and 0 closed.
    """

    class_type: type[ActionTerm] | None = GripperAction
    open_command: float | dict[str, float] = 0.04
    close_command: float | dict[str, float] = 0.0
    binary: bool = True
