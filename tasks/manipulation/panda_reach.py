"""panda_reach: a Franka Panda brings its tool centre point to a commanded pose.

Isaac Lab's Franka Reach on Menagerie's Panda: a goal pose drawn in a box in front of the
arm (the tool pointing down, any yaw), joint position actions around the home pose, and
rewards for the position (L2 and a tanh kernel) and orientation errors. An episode lasts
4 s with one goal; evaluation's ``success_rate`` is the share of episodes that end with
the tool within 1 cm of its goal.

    robolearn train --task panda_reach
    robolearn play --task panda_reach --eval --json
"""

from __future__ import annotations

import math

from robolearn.envs.franka_panda import ARM, BASE, TCP, panda_robot
from robolearn.tasks.manipulation.recipe import (
    arm_joint_action,
    panda_agent_cfg,
    panda_sim,
    play_variant,
    reset_arm,
)

from robolearn import mdp
from robolearn.env import ManagerBasedRLEnvCfg, SuccessTermCfg
from robolearn.managers import (
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
from robolearn.scene import SceneCfg

REACHED = 0.01  # m: a goal counts as reached within 1 cm


def env_cfg() -> ManagerBasedRLEnvCfg:
    scene = SceneCfg(num_envs=512, entities={"robot": panda_robot()}, ground=True)
    return ManagerBasedRLEnvCfg(
        scene=scene,
        sim=panda_sim(),
        decimation=4,
        episode_length_s=4.0,
        actions={"arm": arm_joint_action()},
        commands={
            "ee_pose": UniformPoseCommandCfg(
                base=BASE,
                tracked=TCP,
                # one goal per episode: resampled after the episode has ended
                resampling_time_range=(10.0, 10.0),
                ranges={
                    "pos_x": (0.35, 0.65),
                    "pos_y": (-0.2, 0.2),
                    "pos_z": (0.15, 0.5),
                    "pitch": (math.pi, math.pi),
                    "yaw": (-math.pi, math.pi),
                },
            )
        },
        observations=_observations(),
        rewards=_rewards(),
        terminations={"time_out": TerminationTermCfg(func=mdp.time_out, time_out=True)},
        events={"reset_arm": reset_arm((0.5, 1.5))},
        success=SuccessTermCfg(
            func=manip.frame_at_goal, params={"threshold": REACHED, "command_name": "ee_pose"}
        ),
    )


def _observations() -> dict:
    return {
        "policy": ObservationGroupCfg(
            enable_corruption=True,
            terms={
                "joint_pos": ObservationTermCfg(
                    func=mdp.joint_pos_rel,
                    params={"joints": list(ARM)},
                    noise=uniform_noise(-0.01, 0.01),
                ),
                "joint_vel": ObservationTermCfg(
                    func=mdp.joint_vel_rel,
                    params={"joints": list(ARM)},
                    noise=uniform_noise(-0.01, 0.01),
                ),
                "ee_pose": ObservationTermCfg(
                    func=frame_pose, params={"frame_cfg": TCP, "relative_to": BASE}
                ),
                "pose_command": ObservationTermCfg(
                    func=mdp.generated_commands, params={"command_name": "ee_pose"}
                ),
                "actions": ObservationTermCfg(func=mdp.last_action),
            },
        )
    }


def _rewards() -> dict:
    return {
        "position_error": RewardTermCfg(
            func=manip.command_position_error, weight=-0.2, params={"command_name": "ee_pose"}
        ),
        "position_coarse": RewardTermCfg(
            func=manip.command_position_error_tanh,
            weight=0.5,
            params={"command_name": "ee_pose", "std": 0.1},
        ),
        "position_fine": RewardTermCfg(
            func=manip.command_position_error_tanh,
            weight=2.0,
            params={"command_name": "ee_pose", "std": 0.01},
        ),
        "orientation_error": RewardTermCfg(
            func=manip.command_orientation_error,
            weight=-0.1,
            params={"command_name": "ee_pose"},
        ),
        "action_rate": RewardTermCfg(func=mdp.action_rate_l2, weight=-0.0001),
        "joint_vel": RewardTermCfg(
            func=mdp.joint_vel_l2, weight=-0.0001, params={"joints": list(ARM)}
        ),
    }


def agent_cfg() -> AgentCfg:
    return panda_agent_cfg(400, learning_rate=1e-3, entropy_coef=0.005, hidden=(64, 64))


play_env_cfg = play_variant(env_cfg, __name__)
