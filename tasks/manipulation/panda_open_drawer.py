"""panda_open_drawer: a Franka Panda grasps a drawer's handle and pulls the drawer open.

After Isaac Lab's Franka Cabinet: the cabinet (``assets/cabinet/drawer.xml``, ours: a
drawer on a slide joint with a vertical bar handle) stands 0.85 m in front of the arm, the
handle 0.6 m out and 0.55 m up. Rewards: bring the tool centre point to the handle (a
coarse and a fine kernel), point the tool at the drawer's face (its z axis along +x) with
the fingers across the bar (its y axis along the world's y), close the gripper there, and
open the drawer (metres out). The episode lasts 8 s; evaluation's ``success_rate`` is the
share of episodes that end with the drawer open 20 cm or more.

    robolearn train --task panda_open_drawer
    robolearn play --task panda_open_drawer --eval --json
"""

from __future__ import annotations

from robolearn.envs.franka_panda import (
    ARM,
    BASE,
    GRIPPER,
    GRIPPER_CLOSED,
    GRIPPER_OPEN,
    TCP,
    panda_robot,
)
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
)
from robolearn.mdp import manipulation as manip
from robolearn.mdp.frames import frame_pos, frame_pose
from robolearn.rl.config import AgentCfg
from robolearn.scene import EntityCfg, FrameCfg, SceneCfg, SceneEntityCfg

HANDLE = FrameCfg("handle", entity="cabinet")
DRAWER = SceneEntityCfg("cabinet", joints="drawer")
OPENED = 0.2  # m: success with the drawer 20 cm out


def env_cfg() -> ManagerBasedRLEnvCfg:
    scene = SceneCfg(
        num_envs=1024,
        entities={
            "robot": panda_robot(),
            "cabinet": EntityCfg(model="cabinet/drawer.xml", pos=(0.85, 0.0, 0.0)),
        },
        ground=True,
    )
    near = {"frame_a": TCP, "frame_b": HANDLE}
    return ManagerBasedRLEnvCfg(
        scene=scene,
        sim=panda_sim(),
        decimation=4,
        episode_length_s=8.0,
        actions={
            "arm": arm_joint_action(),
            "gripper": mdp.GripperActionCfg(
                actuators=GRIPPER, open_command=GRIPPER_OPEN, close_command=GRIPPER_CLOSED
            ),
        },
        observations=_observations(),
        rewards=_rewards(near),
        terminations={"time_out": TerminationTermCfg(func=mdp.time_out, time_out=True)},
        events={"reset_arm": reset_arm((0.8, 1.2))},
        success=SuccessTermCfg(
            func=manip.joint_opened, params={"joint": DRAWER, "threshold": OPENED}
        ),
    )


def _observations() -> dict:
    return {
        "policy": ObservationGroupCfg(
            terms={
                "joint_pos": ObservationTermCfg(func=mdp.joint_pos_rel, params={"joints": ".*"}),
                "joint_vel": ObservationTermCfg(func=mdp.joint_vel_rel, params={"joints": ".*"}),
                "drawer_pos": ObservationTermCfg(func=mdp.joint_pos_rel, params={"joints": DRAWER}),
                "drawer_vel": ObservationTermCfg(func=mdp.joint_vel_rel, params={"joints": DRAWER}),
                "handle_from_tool": ObservationTermCfg(
                    func=frame_pos, params={"frame_cfg": HANDLE, "relative_to": TCP}
                ),
                "tool_pose": ObservationTermCfg(
                    func=frame_pose, params={"frame_cfg": TCP, "relative_to": BASE}
                ),
                "actions": ObservationTermCfg(func=mdp.last_action),
            }
        )
    }


def _rewards(near: dict) -> dict:
    return {
        "approach_handle": RewardTermCfg(
            func=manip.frames_distance_tanh, weight=2.0, params={"std": 0.1, **near}
        ),
        "approach_handle_fine": RewardTermCfg(
            func=manip.frames_distance_tanh, weight=2.0, params={"std": 0.02, **near}
        ),
        "point_at_drawer": RewardTermCfg(
            func=manip.frame_axis_alignment,
            weight=0.5,
            params={"frame_cfg": TCP, "axis": (0.0, 0.0, 1.0), "direction": (1.0, 0.0, 0.0)},
        ),
        "fingers_across_handle": RewardTermCfg(
            func=manip.frame_axis_alignment,
            weight=0.5,
            params={"frame_cfg": TCP, "axis": (0.0, 1.0, 0.0), "direction": (0.0, 1.0, 0.0)},
        ),
        "grasp_handle": RewardTermCfg(
            func=manip.grasp_near, weight=2.0, params={"distance": 0.02, **near}
        ),
        "open_drawer": RewardTermCfg(
            func=manip.joint_opening, weight=20.0, params={"joint": DRAWER}
        ),
        "action_rate": RewardTermCfg(func=mdp.action_rate_l2, weight=-1e-3),
        "joint_vel": RewardTermCfg(
            func=mdp.joint_vel_l2, weight=-1e-4, params={"joints": list(ARM)}
        ),
    }


def agent_cfg() -> AgentCfg:
    return panda_agent_cfg(1500, learning_rate=5e-4, entropy_coef=0.005)


play_env_cfg = play_variant(env_cfg, __name__)
