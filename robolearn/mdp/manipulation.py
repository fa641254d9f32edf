"""Manipulation terms: an object's pose seen from the robot's base, reaching and lifting
rewards, a pose command's tracking errors, an object falling off the workspace, and the
success measures evaluation reports.

Objects are scene entities that float (``SceneCfg.entities``, :mod:`robolearn.scene.entities`);
the robot's base and end effector are frames (:class:`~robolearn.mdp.frames.FrameCfg`).
Distance kernels are Isaac Lab's Lift: ``1 - tanh(d / std)``, a coarse std to find the
object from afar and a fine one to settle on it.
"""

from __future__ import annotations

import torch

from robolearn.errors import RobolearnError
from robolearn.math import quat_rotate, quat_rotate_inverse, take_columns
from robolearn.mdp.frames import FrameCfg, frame, pose_in
from robolearn.mdp.protocol import TaskEnv
from robolearn.scene.contact_sensors import VALUES_PER_SENSOR
from robolearn.scene.entities import SceneEntityCfg


def _object_pose_w(env: TaskEnv, entity: str) -> tuple[torch.Tensor, torch.Tensor]:
    return env.scene.entity_root_pose(entity)


def object_pos_b(env: TaskEnv, entity: str = "object", base: FrameCfg | str = "link0"):
    """Observation: the object's position in the robot's base frame, m (3)."""
    b = frame(env, base, "object_pos_b.base").pose_w()
    return pose_in(_object_pose_w(env, entity), b)[0]


def object_pose_b(env: TaskEnv, entity: str = "object", base: FrameCfg | str = "link0"):
    """Observation: the object's pose in the robot's base frame (7): m, then w x y z with
    w >= 0."""
    b = frame(env, base, "object_pose_b.base").pose_w()
    pos, quat = pose_in(_object_pose_w(env, entity), b)
    return torch.cat((pos, torch.where(quat[:, :1] < 0, -quat, quat)), dim=-1)


def object_vel_b(env: TaskEnv, entity: str = "object", base: FrameCfg | str = "link0"):
    """Observation: the object's linear (m/s) and angular (rad/s) velocity in the robot's
    base frame (6)."""
    scene = env.scene
    obj = scene.entity(entity)
    qvel = scene.engine.qvel[:, obj.root_dof_adr : obj.root_dof_adr + 6].float()
    _, obj_quat = _object_pose_w(env, entity)
    base_quat = frame(env, base, "object_vel_b.base").pose_w()[1]
    # MuJoCo's free joint: linear velocity in the world, angular in the object's frame
    ang_w = quat_rotate(obj_quat, qvel[:, 3:6])
    return torch.cat(
        (quat_rotate_inverse(base_quat, qvel[:, 0:3]), quat_rotate_inverse(base_quat, ang_w)), -1
    )


def object_to_frame(
    env: TaskEnv, entity: str = "object", frame_cfg: FrameCfg | str = "hand"
) -> torch.Tensor:
    """Observation: the object's position relative to a frame (the end effector), in that
    frame, m (3)."""
    f = frame(env, frame_cfg, "object_to_frame.frame_cfg").pose_w()
    return pose_in(_object_pose_w(env, entity), f)[0]


def object_from_frame_b(
    env: TaskEnv,
    entity: str = "object",
    frame_cfg: FrameCfg | str = "hand",
    base: FrameCfg | str = "link0",
) -> torch.Tensor:
    """Observation: the object's position minus a frame's (the end effector's), in the
    robot's base frame, m (3): where to move the hand to reach it, in the axes the goal
    and the object's position are given in."""
    b = frame(env, base, "object_from_frame_b.base").pose_w()
    f = frame(env, frame_cfg, "object_from_frame_b.frame_cfg").pose_w()
    return quat_rotate_inverse(b[1], _object_pose_w(env, entity)[0] - f[0])


def object_frame_distance(
    env: TaskEnv, entity: str = "object", frame_cfg: FrameCfg | str = "hand"
) -> torch.Tensor:
    """(N,) distance from a frame (the end effector) to the object's centre, m."""
    pos = frame(env, frame_cfg, "object_frame_distance.frame_cfg").pose_w()[0]
    return (_object_pose_w(env, entity)[0] - pos).norm(dim=-1)


def object_height(env: TaskEnv, entity: str = "object") -> torch.Tensor:
    """(N,) the object's height above the world's z = 0, m."""
    return _object_pose_w(env, entity)[0][:, 2]


# ---- rewards ----------------------------------------------------------------------------


def reach_object_tanh(
    env: TaskEnv, std: float, entity: str = "object", frame_cfg: FrameCfg | str = "hand"
) -> torch.Tensor:
    """Reward in [0, 1]: ``1 - tanh(d / std)`` of the frame's distance to the object."""
    return 1.0 - torch.tanh(object_frame_distance(env, entity, frame_cfg) / std)


def object_is_lifted(env: TaskEnv, minimal_height: float, entity: str = "object") -> torch.Tensor:
    """Reward 1 where the object is higher than ``minimal_height`` (m), else 0."""
    return (object_height(env, entity) > minimal_height).float()


def object_goal_distance_tanh(
    env: TaskEnv,
    std: float,
    minimal_height: float,
    command_name: str = "object_pose",
    entity: str = "object",
) -> torch.Tensor:
    """Reward in [0, 1]: ``1 - tanh(d / std)`` of the object's distance to the commanded
    position, only where it is lifted above ``minimal_height`` (m)."""
    distance = command_position_error(env, command_name)
    lifted = object_height(env, entity) > minimal_height
    return lifted.float() * (1.0 - torch.tanh(distance / std))


def command_position_error(env: TaskEnv, command_name: str) -> torch.Tensor:
    """(N,) distance from a pose command's tracked frame to its goal position, m; usable
    as a reward (negative weight) and a metric."""
    return env.command_manager.terms[command_name].errors()[0]


def command_position_delta(env: TaskEnv, command_name: str) -> torch.Tensor:
    """Observation: a pose command's goal position minus its tracked frame's, in the
    command's base frame, m (3): the way still to go (0 at the goal)."""
    return env.command_manager.terms[command_name].position_delta()


def command_position_error_tanh(env: TaskEnv, std: float, command_name: str) -> torch.Tensor:
    """Reward in [0, 1]: ``1 - tanh(d / std)`` of a pose command's position error."""
    return 1.0 - torch.tanh(command_position_error(env, command_name) / std)


def command_orientation_error(env: TaskEnv, command_name: str) -> torch.Tensor:
    """(N,) angle between a pose command's tracked frame and its goal orientation, rad."""
    return env.command_manager.terms[command_name].errors()[1]


def frames_distance(env: TaskEnv, frame_a: FrameCfg | str, frame_b: FrameCfg | str):
    """(N,) distance between two frames' origins (a tool and a handle), m."""
    a = frame(env, frame_a, "frames_distance.frame_a").pose_w()[0]
    b = frame(env, frame_b, "frames_distance.frame_b").pose_w()[0]
    return (a - b).norm(dim=-1)


def frames_distance_tanh(
    env: TaskEnv, std: float, frame_a: FrameCfg | str, frame_b: FrameCfg | str
) -> torch.Tensor:
    """Reward in [0, 1]: ``1 - tanh(d / std)`` of two frames' distance."""
    return 1.0 - torch.tanh(frames_distance(env, frame_a, frame_b) / std)


def frame_axis_alignment(
    env: TaskEnv,
    frame_cfg: FrameCfg | str,
    axis: tuple[float, float, float],
    direction: tuple[float, float, float],
) -> torch.Tensor:
    """Reward in [0, 1]: how well a frame's own ``axis`` points along the world's
    ``direction`` (both unit vectors): the cosine between them, 0 where it points away,
    squared (a tool pointing at a handle's face)."""
    quat = frame(env, frame_cfg, "frame_axis_alignment.frame_cfg").pose_w()[1]
    a = _constant(env, axis, quat.dtype).expand(quat.shape[0], 3)
    d = _constant(env, direction, quat.dtype)
    return (quat_rotate(quat, a) @ d).clamp(min=0.0).square()


def _constant(env: TaskEnv, values: tuple[float, ...], dtype: torch.dtype) -> torch.Tensor:
    """A term's constant vector on the env's device, made once: a tensor built from Python
    data each step is a host-to-device copy that waits on a GPU."""
    cache = env.__dict__.setdefault("_term_constants", {})
    key = (tuple(float(v) for v in values), dtype)
    found = cache.get(key)
    if found is None:
        found = cache[key] = torch.tensor(key[0], device=env.device, dtype=dtype)
    return found


def contact_found(env: TaskEnv, sensors: tuple[str, ...]) -> torch.Tensor:
    """Observation: 1 where each contact sensor (``SceneCfg.contact_sensors``) finds a
    contact, else 0 (k): the fingers touching the object."""
    found = env.scene.engine.sensordata.index_select(1, _sensor_columns(env, sensors, 0, 1))
    return (found > 0).float()


def contact_force(env: TaskEnv, sensors: tuple[str, ...]) -> torch.Tensor:
    """Observation: each contact sensor's net force, N in the world frame (3k)."""
    cols = _sensor_columns(env, sensors, 1, 4)
    return env.scene.engine.sensordata.index_select(1, cols).float()


def _sensor_columns(env: TaskEnv, sensors: tuple[str, ...], start: int, stop: int):
    """The ``sensordata`` columns ``start:stop`` of each contact sensor, made once."""
    cache = env.__dict__.setdefault("_contact_columns", {})
    key = (tuple(sensors), start, stop)
    found = cache.get(key)
    if found is None:
        if isinstance(sensors, str) or not sensors:
            raise RobolearnError(f"contact terms take a list of sensor names, got {sensors!r}")
        cols: list[int] = []
        for name in sensors:
            span = env.scene.sensor_slice(name)
            if span.stop - span.start != VALUES_PER_SENSOR:
                raise RobolearnError(
                    f"sensor {name!r} is not a contact sensor of SceneCfg.contact_sensors "
                    f"({VALUES_PER_SENSOR} values: found, force)"
                )
            cols.extend(range(span.start + start, span.start + stop))
        found = cache[key] = torch.tensor(cols, dtype=torch.long, device=env.device)
    return found


def grasp_near(
    env: TaskEnv,
    distance: float,
    frame_a: FrameCfg | str,
    frame_b: FrameCfg | str,
    action_name: str = "gripper",
) -> torch.Tensor:
    """Reward 1 where the gripper (the :class:`~robolearn.mdp.GripperAction` term
    ``action_name``) is commanded closed with the two frames within ``distance`` (m)."""
    closed = env.action_manager.terms[action_name].is_closed()
    return (closed & (frames_distance(env, frame_a, frame_b) < distance)).float()


def joint_opening(env: TaskEnv, joint: SceneEntityCfg) -> torch.Tensor:
    """(N,) a joint's position (m or rad): how far a drawer or a door is open."""
    cols = env.scene.joint_columns(joint).joints
    return take_columns(env.scene.joint_pos, cols).sum(dim=-1)


def joint_opened(env: TaskEnv, joint: SceneEntityCfg, threshold: float) -> torch.Tensor:
    """Success condition: the joint (a drawer's slide) open at least ``threshold``."""
    _positive(threshold, "joint_opened.threshold")
    return joint_opening(env, joint) >= threshold


def _positive(value: float, where: str) -> None:
    if not (isinstance(value, int | float) and value > 0):
        raise RobolearnError(f"{where} must be a positive number, got {value!r}")


# ---- terminations -----------------------------------------------------------------------


def object_below(env: TaskEnv, minimum_height: float, entity: str = "object") -> torch.Tensor:
    """Termination: the object fell below ``minimum_height`` (m): off the table."""
    return object_height(env, entity) < minimum_height


def object_out_of_reach(
    env: TaskEnv, max_distance: float, entity: str = "object", base: FrameCfg | str = "link0"
) -> torch.Tensor:
    """Termination: the object is farther than ``max_distance`` (m) from the robot's base
    (knocked out of the workspace)."""
    return object_pos_b(env, entity, base).norm(dim=-1) > max_distance


# ---- success (evaluation) ---------------------------------------------------------------


def object_at_goal(
    env: TaskEnv, threshold: float, command_name: str = "object_pose"
) -> torch.Tensor:
    """Success condition: the object within ``threshold`` (m) of its commanded position."""
    _positive(threshold, "object_at_goal.threshold")
    return command_position_error(env, command_name) < threshold


def frame_at_goal(
    env: TaskEnv, threshold: float, command_name: str, angle_threshold: float | None = None
) -> torch.Tensor:
    """Success condition: a pose command's tracked frame within ``threshold`` (m) of its
    goal (and within ``angle_threshold`` rad of its orientation, where given)."""
    _positive(threshold, "frame_at_goal.threshold")
    term = env.command_manager.terms[command_name]
    position, orientation = term.errors()
    ok = position < threshold
    if angle_threshold is not None:
        ok &= orientation < angle_threshold
    return ok
