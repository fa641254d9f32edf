"""Observation terms: ``fn(env, **params) -> (num_envs, k)``.

Base quantities are in the base (root body) frame; joint quantities are relative to each
env's default joint positions, so 0 means "at the default pose".
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence

import torch

from robolearn.errors import RobolearnError
from robolearn.managers import ManagerTerm, Marker
from robolearn.managers.differentiable import differentiable
from robolearn.math import quat_rotate_inverse, take_columns, yaw_from_quat
from robolearn.mdp.actions import JointPositionAction
from robolearn.mdp.protocol import TaskEnv
from robolearn.scene.sensors import GridPattern, RayCaster


@differentiable
def base_lin_vel(env: TaskEnv) -> torch.Tensor:
    """Base linear velocity in the base frame, m/s (3)."""
    return env.scene.root_lin_vel_b


@differentiable
def base_ang_vel(env: TaskEnv) -> torch.Tensor:
    """Base angular velocity in the base frame, rad/s (3), as the IMU measures it (in its
    own frame, where ``mdp.randomize_imu_mounting`` tilted it)."""
    return env.scene.sensor_errors.imu(env.scene.root_ang_vel_b)


@differentiable
def projected_gravity(env: TaskEnv) -> torch.Tensor:
    """Unit gravity direction in the base frame (3); (0, 0, -1) when upright; as the IMU
    measures it, like :func:`base_ang_vel`."""
    return env.scene.sensor_errors.imu(env.scene.projected_gravity_b)


@differentiable
def base_height(env: TaskEnv) -> torch.Tensor:
    """Height of the base above the ground under it, m (1)."""
    return env.scene.root_height.unsqueeze(-1)


def entity_pos_b(env: TaskEnv, entity: str) -> torch.Tensor:
    """Position of a floating entity's root (e.g. an object to push or pick) in the robot's
    base frame, m (3)."""
    pos, _ = env.scene.entity_root_pose(entity)
    scene = env.scene
    return quat_rotate_inverse(scene.root_quat_w, pos - scene.root_pos_w)


@differentiable
def joint_pos_rel(env: TaskEnv, joints: str | Sequence[str] = ".*") -> torch.Tensor:
    """Joint positions minus the env's default positions, rad or m, as the encoders read
    them (offset by ``mdp.randomize_encoder_bias``'s bias where drawn)."""
    scene = env.scene
    cols = scene.joint_columns(joints).joints
    measured = scene.sensor_errors.joint_pos(take_columns(scene.joint_pos, cols), cols)
    return measured - take_columns(scene.default_joint_pos, cols)


@differentiable
def joint_pos(env: TaskEnv, joints: str | Sequence[str] = ".*") -> torch.Tensor:
    """Absolute joint positions, rad or m, as the encoders read them."""
    scene = env.scene
    cols = scene.joint_columns(joints).joints
    return scene.sensor_errors.joint_pos(take_columns(scene.joint_pos, cols), cols)


@differentiable
def joint_vel_rel(env: TaskEnv, joints: str | Sequence[str] = ".*") -> torch.Tensor:
    """Joint velocities (the default velocity is 0), rad/s or m/s."""
    return take_columns(env.scene.joint_vel, env.scene.joint_columns(joints).joints)


@differentiable
def last_action(env: TaskEnv) -> torch.Tensor:
    """The policy's previous raw action (all action terms)."""
    return env.action_manager.action


def joint_target_error(env: TaskEnv, action_name: str) -> torch.Tensor:
    """The joint position targets of action term ``action_name`` minus the joints'
    positions as the encoders read them, rad or m (one per joint the term drives). A policy
    whose actions move its targets on from step to step
    (:class:`~robolearn.mdp.RelativeJointPositionActionCfg`) reads here where it has sent
    them: that target is state its action integrates, not seen in the joint positions."""
    term = env.action_manager.terms.get(action_name)
    if not isinstance(term, JointPositionAction):
        raise RobolearnError(
            f"joint_target_error: action_name={action_name!r} is not a joint position action "
            f"term; the env's terms: {', '.join(env.action_manager.terms)}"
        )
    return term.processed_actions - term.measured_positions()


@differentiable
def generated_commands(env: TaskEnv, command_name: str) -> torch.Tensor:
    """The current command of a command term (e.g. (vx, vy, yaw rate))."""
    return env.command_manager.get_command(command_name)


def sensor(env: TaskEnv, name: str) -> torch.Tensor:
    """The values of one MuJoCo sensor by name (its columns of sensordata)."""
    return env.scene.engine.sensordata[:, env.scene.sensor_slice(name)].float()


def feet_contact(env: TaskEnv, threshold: float = 1.0) -> torch.Tensor:
    """1 for each foot pressing the ground with more than ``threshold`` newtons, else 0."""
    return (env.scene.feet_force_norm > threshold).float()


def foot_contact_force(env: TaskEnv) -> torch.Tensor:
    """(N, num_feet, 3) external force on each foot body (scene.feet), world frame, N."""
    return env.scene.feet_contact_force


class height_scan(ManagerTerm):  # noqa: N801 - a term is named like a function
    """The ground under a grid of points around the base, as heights below the base.

    A ``size`` (x, y) metre grid of points every ``resolution`` metres, centred on the
    base and turned with its heading (yaw only: the scan stays level when the base
    pitches); each value is ``base height - ground height - offset`` at one point, x-major
    (legged_gym's and Isaac Lab's ``height_scan``: 1.6 m x 1.0 m at 0.1 m, 187 points, is
    the default). Clip it in the term's config (``clip=(-1, 1)``) as the anchors do.

    Without ``sensor``, the ground is the scene's terrain, read from the height field the
    physics collides with (:class:`~robolearn.terrain.HeightMap`): exact, cheap, and blind
    to anything placed on it; on the MJCF's own ground it is the plane z = 0. With
    ``sensor``, the name of a grid :class:`~robolearn.scene.sensors.RayCasterCfg` of the
    scene, the ground is where its rays hit: boxes, steps and other robots included, the
    robot's own bodies skipped (``size`` and ``resolution`` are then the sensor's), and
    ``base height`` is the height of the body that carries the sensor.
    """

    def __init__(self, cfg, env: TaskEnv) -> None:
        super().__init__(cfg, env)
        defaults = inspect.signature(type(self).__call__).parameters
        self.sensor = cfg.params.get("sensor", defaults["sensor"].default)
        self.points_xy: torch.Tensor | None = None
        self.ground: torch.Tensor | None = None
        if self.sensor is not None:
            caster = env.scene.sensors.get(self.sensor)
            if not isinstance(caster, RayCaster) or not isinstance(caster.cfg.pattern, GridPattern):
                raise RobolearnError(
                    f"height_scan: sensor {self.sensor!r} is not a grid ray caster of the "
                    f"scene; its sensors: {', '.join(env.scene.sensors) or 'none'}"
                )
            return
        env.scene.require_floating_base()
        size = cfg.params.get("size", defaults["size"].default)
        resolution = float(cfg.params.get("resolution", defaults["resolution"].default))
        origins, _ = GridPattern(tuple(size), resolution).rays()
        self.pattern = origins[:, :2].to(env.device)
        """(P, 2) the points in the base's heading frame (m)."""

    def __call__(
        self,
        env: TaskEnv,
        size: tuple[float, float] = (1.6, 1.0),
        resolution: float = 0.1,
        offset: float = 0.5,
        sensor: str | None = None,
    ) -> torch.Tensor:
        scene = env.scene
        if sensor is not None:
            caster = scene.sensors[sensor].read()
            hits = caster.hits_w
            self.points_xy, self.ground = hits[..., :2], hits[..., 2]
            return caster.body_pos_w[:, 2:3] - hits[..., 2] - offset
        yaw = yaw_from_quat(scene.root_quat_w)
        cos, sin = torch.cos(yaw).unsqueeze(-1), torch.sin(yaw).unsqueeze(-1)
        px, py = self.pattern[:, 0], self.pattern[:, 1]
        base = scene.root_pos_w
        xy = torch.stack(
            (base[:, 0:1] + cos * px - sin * py, base[:, 1:2] + sin * px + cos * py), dim=-1
        )
        ground = scene.ground_height(xy)
        self.points_xy, self.ground = xy, ground
        return base[:, 2:3] - ground - offset

    def debug_markers(self, env_id: int) -> list[Marker]:
        """The scanned ground points of ``env_id`` as small spheres (after a compute)."""
        if self.points_xy is None or self.ground is None:
            return []
        points = torch.cat((self.points_xy[env_id], self.ground[env_id].unsqueeze(-1)), -1)
        return [
            Marker("sphere", (x, y, z), rgba=SCAN_RGBA, size=0.015)
            for x, y, z in points.detach().cpu().double().tolist()  # one transfer
        ]


SCAN_RGBA = (1.0, 0.85, 0.1, 0.9)
"""Yellow: the ground points a height scan reads."""
