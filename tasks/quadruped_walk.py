"""quadruped_walk: the quadruped follows base velocity commands on flat ground.

A legged_gym / Isaac Lab style flat-terrain locomotion task: track (vx, vy, yaw rate)
commands, with friction, mass and push randomization and a command-range curriculum.
"""

from __future__ import annotations

from robolearn.envs.quadruped import quadruped_scene
from robolearn.tasks.locomotion import body_mass, foot_friction, push_base, reset_base

from robolearn import mdp
from robolearn.env import ManagerBasedRLEnvCfg
from robolearn.managers import (
    CurriculumTermCfg,
    EventTermCfg,
    JointPositionActionCfg,
    ObservationGroupCfg,
    ObservationTermCfg,
    RewardTermCfg,
    TerminationTermCfg,
    UniformVelocityCommandCfg,
    VelocityRanges,
    uniform_noise,
)
from robolearn.registry import TaskSpec, register_task
from robolearn.rl.config import AgentCfg, PolicyCfg, PpoAlgorithmCfg


def _policy_obs(noisy: bool) -> ObservationGroupCfg:
    def noise(a: float):
        return uniform_noise(-a, a)

    return ObservationGroupCfg(
        enable_corruption=noisy,
        terms={
            "base_lin_vel": ObservationTermCfg(func=mdp.base_lin_vel, noise=noise(0.1)),
            "base_ang_vel": ObservationTermCfg(func=mdp.base_ang_vel, noise=noise(0.2)),
            "projected_gravity": ObservationTermCfg(func=mdp.projected_gravity, noise=noise(0.05)),
            "velocity_commands": ObservationTermCfg(
                func=mdp.generated_commands, params={"command_name": "base_velocity"}
            ),
            "joint_pos": ObservationTermCfg(func=mdp.joint_pos_rel, noise=noise(0.01)),
            "joint_vel": ObservationTermCfg(func=mdp.joint_vel_rel, noise=noise(1.5), scale=0.05),
            "actions": ObservationTermCfg(func=mdp.last_action),
        },
    )


def env_cfg() -> ManagerBasedRLEnvCfg:
    return ManagerBasedRLEnvCfg(
        scene=quadruped_scene(num_envs=1024),
        decimation=4,
        episode_length_s=20.0,
        actions={"joint_pos": JointPositionActionCfg(scale=0.25)},
        commands={
            "base_velocity": UniformVelocityCommandCfg(
                resampling_time_range=(10.0, 10.0),
                rel_standing_envs=0.02,
                ranges=VelocityRanges(
                    lin_vel_x=(-0.6, 0.6), lin_vel_y=(-0.5, 0.5), ang_vel_z=(-1.0, 1.0)
                ),
            )
        },
        observations={"policy": _policy_obs(noisy=True)},
        rewards={
            "track_lin_vel_xy": RewardTermCfg(
                func=mdp.track_lin_vel_xy_exp,
                weight=1.5,
                params={"command_name": "base_velocity", "std": 0.5},
            ),
            "track_ang_vel_z": RewardTermCfg(
                func=mdp.track_ang_vel_z_exp,
                weight=0.75,
                params={"command_name": "base_velocity", "std": 0.5},
            ),
            "lin_vel_z": RewardTermCfg(func=mdp.lin_vel_z_l2, weight=-2.0),
            "ang_vel_xy": RewardTermCfg(func=mdp.ang_vel_xy_l2, weight=-0.05),
            "torques": RewardTermCfg(func=mdp.joint_torques_l2, weight=-1e-4),
            "joint_acc": RewardTermCfg(func=mdp.joint_acc_l2, weight=-2.5e-7),
            "action_rate": RewardTermCfg(func=mdp.action_rate_l2, weight=-0.01),
            "feet_air_time": RewardTermCfg(
                func=mdp.feet_air_time,
                weight=0.25,
                params={"command_name": "base_velocity", "threshold": 0.3},
            ),
            "undesired_contacts": RewardTermCfg(
                func=mdp.undesired_contacts, weight=-1.0, params={"bodies": ".*_calf"}
            ),
            "flat_orientation": RewardTermCfg(func=mdp.flat_orientation_l2, weight=-1.0),
            "joint_limits": RewardTermCfg(func=mdp.joint_pos_limits, weight=-1.0),
        },
        terminations={
            "time_out": TerminationTermCfg(func=mdp.time_out, time_out=True),
            "trunk_contact": TerminationTermCfg(
                func=mdp.illegal_contact, params={"bodies": "trunk"}
            ),
            "bad_orientation": TerminationTermCfg(
                func=mdp.bad_orientation, params={"limit_angle": 1.0}
            ),
        },
        events={
            "friction": foot_friction((0.6, 1.25)),
            "trunk_mass": body_mass("trunk", (-1.0, 2.0)),
            "reset_base": reset_base(speed=0.3),
            "reset_joints": EventTermCfg(
                func=mdp.reset_joints_by_scale, mode="reset", params={"position_range": (0.8, 1.2)}
            ),
            "push": push_base(),
        },
        curriculum={
            "command_levels": CurriculumTermCfg(
                func=mdp.command_velocity_levels,
                params={
                    "command_name": "base_velocity",
                    "reward_term": "track_lin_vel_xy",
                    "limit_lin_vel_x": (-1.0, 1.0),
                    "limit_ang_vel_z": (-1.0, 1.0),
                },
            )
        },
    )


def play_env_cfg() -> ManagerBasedRLEnvCfg:
    cfg = env_cfg()
    cfg.scene.num_envs = 64
    cfg.observations["policy"] = _policy_obs(noisy=False)
    del cfg.events["push"]
    cfg.curriculum = {}
    cfg.commands["base_velocity"].ranges.lin_vel_x = (-1.0, 1.0)
    return cfg


def agent_cfg() -> AgentCfg:
    return AgentCfg(
        num_steps_per_env=24,
        max_iterations=300,
        save_interval=50,
        algorithm=PpoAlgorithmCfg(learning_rate=1e-3, entropy_coef=0.01),
        policy=PolicyCfg(actor_hidden_dims=(128, 128, 128), critic_hidden_dims=(128, 128, 128)),
    )


register_task(
    TaskSpec(
        name="quadruped_walk",
        description=(
            "Quadruped tracks velocity commands on flat ground (random mass, friction, pushes)"
        ),
        env_cfg=env_cfg,
        agent_cfg=agent_cfg,
        play_env_cfg=play_env_cfg,
    )
)
