"""humanoid_walk: the robolearn humanoid follows base velocity commands on flat ground.

The shape of Isaac Lab's H1 flat velocity task (yaw-frame velocity tracking with exponential
kernels, posture and smoothness penalties, falls terminate),
changed where that made learning fast enough for a 2-core CPU (docs/humanoid_walk.md):

* a gait clock: each env carries a phase (period 0.8 s), the policy observes its sine and
  cosine, and a reward asks the left foot to be down in the first half of the cycle and the
  right foot in the second (both down when standing), with a swing-height penalty;
* the policy drives the legs and the waist (13 joints); the arms hold their pose under their
  own position control;
* physics at 100 Hz (dt 0.01 s, implicitfast) with the policy at 50 Hz, where 200 Hz
  physics gave the same walking at half the throughput.

Randomized: foot friction, torso mass, actuator gains, initial pose, pushes.
"""

from __future__ import annotations

from robolearn.envs.humanoid import LEG_JOINTS, humanoid_scene
from robolearn.tasks.locomotion import body_mass, foot_friction, push_base, reset_base

from robolearn import mdp
from robolearn.env import ManagerBasedRLEnvCfg
from robolearn.managers import (
    EventTermCfg,
    GaitPhaseCommandCfg,
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
from robolearn.scene import SimCfg


def _observations(noisy: bool) -> dict[str, ObservationGroupCfg]:
    def noise(a: float):
        return uniform_noise(-a, a)

    cmd = {"command_name": "base_velocity"}
    gait = {"command_name": "gait"}
    policy = ObservationGroupCfg(
        enable_corruption=noisy,
        terms={
            "base_lin_vel": ObservationTermCfg(func=mdp.base_lin_vel, noise=noise(0.1)),
            "base_ang_vel": ObservationTermCfg(func=mdp.base_ang_vel, noise=noise(0.2)),
            "projected_gravity": ObservationTermCfg(func=mdp.projected_gravity, noise=noise(0.05)),
            "velocity_commands": ObservationTermCfg(func=mdp.generated_commands, params=cmd),
            "gait_phase": ObservationTermCfg(func=mdp.generated_commands, params=gait),
            "joint_pos": ObservationTermCfg(func=mdp.joint_pos_rel, noise=noise(0.01)),
            "joint_vel": ObservationTermCfg(func=mdp.joint_vel_rel, noise=noise(1.5), scale=0.05),
            "actions": ObservationTermCfg(func=mdp.last_action),
        },
    )
    critic = ObservationGroupCfg(
        terms={
            "base_lin_vel": ObservationTermCfg(func=mdp.base_lin_vel),
            "base_ang_vel": ObservationTermCfg(func=mdp.base_ang_vel),
            "projected_gravity": ObservationTermCfg(func=mdp.projected_gravity),
            "velocity_commands": ObservationTermCfg(func=mdp.generated_commands, params=cmd),
            "gait_phase": ObservationTermCfg(func=mdp.generated_commands, params=gait),
            "joint_pos": ObservationTermCfg(func=mdp.joint_pos_rel),
            "joint_vel": ObservationTermCfg(func=mdp.joint_vel_rel, scale=0.05),
            "actions": ObservationTermCfg(func=mdp.last_action),
            "base_height": ObservationTermCfg(func=mdp.base_height),
            "feet_contact": ObservationTermCfg(func=mdp.feet_contact),
        },
    )
    return {"policy": policy, "critic": critic}


def env_cfg() -> ManagerBasedRLEnvCfg:
    cmd = {"command_name": "base_velocity"}
    gait = {"gait_command": "gait", "velocity_command": "base_velocity"}
    return ManagerBasedRLEnvCfg(
        scene=humanoid_scene(num_envs=1024),
        # MuJoCo Warp sizes its constraint buffer from the initial state (64 rows here);
        # a standing humanoid uses 53 and one hitting the floor more, so leave room.
        sim=SimCfg(physics_dt=0.01, njmax=128),
        decimation=2,
        episode_length_s=20.0,
        # Legs and waist; the arms hold their default pose under their own position control.
        actions={
            "joint_pos": JointPositionActionCfg(actuators=[*LEG_JOINTS, "waist_yaw"], scale=0.5)
        },
        commands={
            "base_velocity": UniformVelocityCommandCfg(
                resampling_time_range=(10.0, 10.0),
                rel_standing_envs=0.05,
                ranges=VelocityRanges(
                    lin_vel_x=(0.0, 1.0), lin_vel_y=(-0.5, 0.5), ang_vel_z=(-1.0, 1.0)
                ),
            ),
            "gait": GaitPhaseCommandCfg(period_s=0.8),
        },
        observations=_observations(noisy=True),
        rewards={
            "termination": RewardTermCfg(func=mdp.is_terminated, weight=-200.0),
            "track_lin_vel_xy": RewardTermCfg(
                func=mdp.track_lin_vel_xy_exp, weight=2.0, params={**cmd, "std": 0.5}
            ),
            "track_ang_vel_z": RewardTermCfg(
                func=mdp.track_ang_vel_z_exp, weight=1.0, params={**cmd, "std": 0.5}
            ),
            "gait_contact": RewardTermCfg(func=mdp.feet_gait_contact, weight=0.5, params=gait),
            "swing_height": RewardTermCfg(
                func=mdp.feet_swing_height, weight=-20.0, params={"target_height": 0.1}
            ),
            "feet_distance": RewardTermCfg(
                func=mdp.feet_distance_below, weight=-10.0, params={"minimum": 0.15}
            ),
            "feet_slide": RewardTermCfg(func=mdp.feet_slide, weight=-0.25),
            "ankle_limits": RewardTermCfg(
                func=mdp.joint_pos_limits, weight=-1.0, params={"joints": ".*_ankle_.*"}
            ),
            "hip_deviation": RewardTermCfg(
                func=mdp.joint_deviation_l1,
                weight=-0.3,
                params={"joints": [".*_hip_yaw", ".*_hip_roll"]},
            ),
            "torso_deviation": RewardTermCfg(
                func=mdp.joint_deviation_l1, weight=-0.1, params={"joints": "waist_yaw"}
            ),
            "flat_orientation": RewardTermCfg(func=mdp.flat_orientation_l2, weight=-2.0),
            "base_height": RewardTermCfg(
                func=mdp.base_height_l2, weight=-10.0, params={"target_height": 0.73}
            ),
            "lin_vel_z": RewardTermCfg(func=mdp.lin_vel_z_l2, weight=-0.2),
            "ang_vel_xy": RewardTermCfg(func=mdp.ang_vel_xy_l2, weight=-0.05),
            "action_rate": RewardTermCfg(func=mdp.action_rate_l2, weight=-0.01),
            "joint_acc": RewardTermCfg(func=mdp.joint_acc_l2, weight=-2.5e-7),
            "energy": RewardTermCfg(func=mdp.energy, weight=-1e-3),
        },
        terminations={
            "time_out": TerminationTermCfg(func=mdp.time_out, time_out=True),
            "torso_contact": TerminationTermCfg(
                func=mdp.illegal_contact, params={"bodies": ["pelvis", "torso"]}
            ),
            "base_too_low": TerminationTermCfg(
                func=mdp.base_height_below, params={"minimum": 0.45}
            ),
        },
        events={
            "friction": foot_friction((0.5, 1.25)),
            "torso_mass": body_mass("torso", (-1.0, 3.0)),
            "actuator_gains": EventTermCfg(
                func=mdp.randomize_actuator_gains,
                mode="startup",
                params={"stiffness_scale": (0.9, 1.1), "damping_scale": (0.9, 1.1)},
            ),
            "reset_base": reset_base(speed=0.2),
            "reset_joints": EventTermCfg(
                func=mdp.reset_joints_by_offset,
                mode="reset",
                params={"position_range": (-0.05, 0.05)},
            ),
            "push": push_base(),
        },
    )


def play_env_cfg() -> ManagerBasedRLEnvCfg:
    cfg = env_cfg()
    cfg.scene.num_envs = 64
    cfg.observations = _observations(noisy=False)
    del cfg.events["push"]
    return cfg


def agent_cfg() -> AgentCfg:
    return AgentCfg(
        num_steps_per_env=24,
        max_iterations=1000,
        save_interval=50,
        obs_groups={"actor": ["policy"], "critic": ["critic"]},
        algorithm=PpoAlgorithmCfg(learning_rate=1e-3, entropy_coef=0.01),
        policy=PolicyCfg(actor_hidden_dims=(128, 128, 128), critic_hidden_dims=(128, 128, 128)),
    )


register_task(
    TaskSpec(
        name="humanoid_walk",
        description=(
            "Humanoid (21 joints, 13 driven) walks on velocity commands on flat ground; "
            "learns to walk in about 15 minutes on 2 CPU cores"
        ),
        env_cfg=env_cfg,
        agent_cfg=agent_cfg,
        play_env_cfg=play_env_cfg,
    )
)
