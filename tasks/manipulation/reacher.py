"""The reach task for any arm, from what ``robolearn new robot --kind arm`` derived.

panda_reach's recipe without the Panda's names or sizes: a goal position for the arm's
tool (the body its joints end at, or where its fingers branch) drawn in a box around the
tool's position in the default pose, sized by the arm's reach; joint position actions on
the arm's joints around the default pose; rewards for the distance (L2 and two tanh
kernels); success within 1 cm. The goal has no orientation: a generic tool has no axis the
task could know to point.
"""

from __future__ import annotations

from dataclasses import dataclass

from robolearn.tasks.manipulation.recipe import PLAY_ENVS, panda_agent_cfg

from robolearn import mdp
from robolearn.env import ManagerBasedRLEnvCfg, SuccessTermCfg
from robolearn.managers import (
    EventTermCfg,
    ObservationGroupCfg,
    ObservationTermCfg,
    RewardTermCfg,
    TerminationTermCfg,
    uniform_noise,
)
from robolearn.mdp import manipulation as manip
from robolearn.mdp.frames import frame_pose
from robolearn.mdp.pose_command import UniformPoseCommandCfg
from robolearn.rl.config import AgentCfg
from robolearn.scene import EntityCfg, SceneCfg, SimCfg

REACHED = 0.01
"""m: a goal counts as reached within 1 cm (panda_reach's)."""
COMMAND = "tool_position"


@dataclass
class ReacherCfg:
    """What the reach task needs of an arm beyond its :class:`EntityCfg`."""

    robot: EntityCfg
    base_body: str
    """The body fixed to the world the goals are given in."""
    tool_body: str
    """The body whose origin reaches the goal."""
    arm_joints: tuple[str, ...]
    """Regexes of the joints from the base to the tool (observed, reset, penalized)."""
    driven: tuple[str, ...]
    """Regexes of the actuators the policy drives."""
    physics_dt: float
    centre: tuple[float, float, float]
    """m, the goals' box's centre in the base's frame (the tool in the default pose)."""
    half: tuple[float, float, float]
    """m, the box's half sizes."""
    action_scale: float = 0.5
    num_envs: int = 512


def reach_env_cfg(arm: ReacherCfg) -> ManagerBasedRLEnvCfg:
    """The reach task for ``arm``: 4 s episodes, one goal each."""
    joints = list(arm.arm_joints)
    ranges = {
        f"pos_{axis}": (c - h, c + h)
        for axis, c, h in zip("xyz", arm.centre, arm.half, strict=True)
    }
    return ManagerBasedRLEnvCfg(
        scene=SceneCfg(num_envs=arm.num_envs, entities={"robot": arm.robot}, ground=True),
        sim=SimCfg(physics_dt=arm.physics_dt, integrator="implicitfast"),
        decimation=max(1, round(0.02 / arm.physics_dt)),
        episode_length_s=4.0,
        actions={
            "arm": mdp.JointPositionActionCfg(
                actuators=list(arm.driven), scale=arm.action_scale, clip=(-4, 4)
            )
        },
        commands={
            COMMAND: UniformPoseCommandCfg(
                base=arm.base_body,
                tracked=arm.tool_body,
                resampling_time_range=(10.0, 10.0),  # one goal per episode
                ranges=ranges,
            )
        },
        observations={"policy": _observations(arm, joints)},
        rewards=_rewards(joints),
        terminations={"time_out": TerminationTermCfg(func=mdp.time_out, time_out=True)},
        events={
            "reset_arm": EventTermCfg(
                func=mdp.reset_joints_by_offset,
                mode="reset",
                params={"joints": joints, "position_range": (-0.3, 0.3)},
            )
        },
        success=SuccessTermCfg(
            func=manip.frame_at_goal, params={"threshold": REACHED, "command_name": COMMAND}
        ),
    )


def _observations(arm: ReacherCfg, joints: list[str]) -> ObservationGroupCfg:
    noise = uniform_noise(-0.01, 0.01)
    return ObservationGroupCfg(
        enable_corruption=True,
        terms={
            "joint_pos": ObservationTermCfg(
                func=mdp.joint_pos_rel, params={"joints": joints}, noise=noise
            ),
            "joint_vel": ObservationTermCfg(
                func=mdp.joint_vel_rel, params={"joints": joints}, noise=noise
            ),
            "tool_pose": ObservationTermCfg(
                func=frame_pose, params={"frame_cfg": arm.tool_body, "relative_to": arm.base_body}
            ),
            "goal": ObservationTermCfg(
                func=mdp.generated_commands, params={"command_name": COMMAND}
            ),
            "actions": ObservationTermCfg(func=mdp.last_action),
        },
    )


def _rewards(joints: list[str]) -> dict[str, RewardTermCfg]:
    command = {"command_name": COMMAND}
    return {
        "position_error": RewardTermCfg(
            func=manip.command_position_error, weight=-0.2, params=dict(command)
        ),
        "position_coarse": RewardTermCfg(
            func=manip.command_position_error_tanh, weight=0.5, params={**command, "std": 0.1}
        ),
        "position_fine": RewardTermCfg(
            func=manip.command_position_error_tanh, weight=2.0, params={**command, "std": 0.01}
        ),
        "action_rate": RewardTermCfg(func=mdp.action_rate_l2, weight=-0.0001),
        "joint_vel": RewardTermCfg(
            func=mdp.joint_vel_l2, weight=-0.0001, params={"joints": joints}
        ),
    }


def reach_play_cfg(arm: ReacherCfg) -> ManagerBasedRLEnvCfg:
    """The play variant: 64 envs, no observation noise."""
    cfg = reach_env_cfg(arm)
    cfg.scene.num_envs = PLAY_ENVS
    cfg.observations["policy"].enable_corruption = False
    return cfg


def reach_agent_cfg(arm: ReacherCfg) -> AgentCfg:
    """panda_reach's PPO: 400 iterations, 64x64 networks."""
    return panda_agent_cfg(400, learning_rate=1e-3, entropy_coef=0.005, hidden=(64, 64))
