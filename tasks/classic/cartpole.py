"""The cartpole's balancing env, which both cartpole tasks share: its physics, action,
rewards, terminations and resets. cartpole_balance observes the joint state;
cartpole_balance_depth replaces the observations with depth images (it imported
cartpole_balance for this env before the tasks were grouped by family).
"""

from __future__ import annotations

import math

from robolearn.envs.cartpole import cartpole_robot

from robolearn import mdp
from robolearn.env import ManagerBasedRLEnvCfg
from robolearn.managers import (
    EventTermCfg,
    ObservationGroupCfg,
    ObservationTermCfg,
    RewardTermCfg,
    TerminationTermCfg,
)
from robolearn.mdp import JointEffortActionCfg
from robolearn.scene import SceneCfg, SimCfg


def balance_env_cfg() -> ManagerBasedRLEnvCfg:
    """Keep the pole upright by pushing the cart (a force on the slider), from a random tilt
    (+-45 deg) and cart state: 256 envs, 5 s episodes, rewarded for staying alive with the
    pole upright and still; an episode fails when the pole falls past 90 deg or the cart
    leaves +-2 m."""
    return ManagerBasedRLEnvCfg(
        scene=SceneCfg(num_envs=256, entities={"robot": cartpole_robot()}),
        sim=SimCfg(),
        decimation=2,
        episode_length_s=5.0,
        actions={"cart_force": JointEffortActionCfg(actuators="slider", scale=1.0)},
        observations={
            "policy": ObservationGroupCfg(
                terms={
                    "joint_pos": ObservationTermCfg(func=mdp.joint_pos_rel),
                    "joint_vel": ObservationTermCfg(func=mdp.joint_vel_rel),
                }
            )
        },
        rewards={
            "alive": RewardTermCfg(func=mdp.is_alive, weight=1.0),
            "terminating": RewardTermCfg(func=mdp.is_terminated, weight=-2.0),
            "pole_pos": RewardTermCfg(
                func=mdp.joint_pos_target_l2, weight=-1.0, params={"joints": "hinge"}
            ),
            "cart_vel": RewardTermCfg(
                func=mdp.joint_vel_l1, weight=-0.01, params={"joints": "slider"}
            ),
            "pole_vel": RewardTermCfg(
                func=mdp.joint_vel_l1, weight=-0.005, params={"joints": "hinge"}
            ),
        },
        terminations={
            "time_out": TerminationTermCfg(func=mdp.time_out, time_out=True),
            "cart_out_of_bounds": TerminationTermCfg(
                func=mdp.joint_pos_out_of_bounds, params={"joints": "slider", "bounds": (-2.0, 2.0)}
            ),
            "pole_fell": TerminationTermCfg(
                func=mdp.joint_pos_out_of_bounds,
                params={"joints": "hinge", "bounds": (-math.pi / 2, math.pi / 2)},
            ),
        },
        events={
            "reset_cart": EventTermCfg(
                func=mdp.reset_joints_by_offset,
                mode="reset",
                params={
                    "joints": "slider",
                    "position_range": (-0.5, 0.5),
                    "velocity_range": (-0.5, 0.5),
                },
            ),
            "reset_pole": EventTermCfg(
                func=mdp.reset_joints_by_offset,
                mode="reset",
                params={
                    "joints": "hinge",
                    "position_range": (-0.25 * math.pi, 0.25 * math.pi),
                    "velocity_range": (-0.25 * math.pi, 0.25 * math.pi),
                },
            ),
        },
    )
