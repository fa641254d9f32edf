"""humanoid_walk: the robolearn humanoid follows base velocity commands on flat ground.

The velocity family's recipe (``tasks/velocity.py``; the shape of Isaac Lab's H1 flat
velocity task: yaw-frame velocity tracking with exponential kernels, posture and smoothness
penalties, falls terminate), changed where that made learning fast enough for a 2-core CPU
(docs/humanoid_walk.md):

* a gait clock: each env carries a phase (period 0.8 s), the policy observes its sine and
  cosine, and a reward asks the left foot to be down in the first half of the cycle and the
  right foot in the second (both down when standing), with a swing-height penalty;
* the policy drives the legs and the waist (13 joints); the arms hold their pose under their
  own position control;
* physics at 100 Hz (dt 0.01 s, implicitfast) with the policy at 50 Hz, where 200 Hz
  physics gave the same walking at half the throughput;
* PPO trains on every sample and its left-right mirror image, the update in bf16 where the
  hardware has it, and yaw-rate tracking weighs as much as linear tracking: the walking
  thresholds in 3.7-4.3M env steps instead of 9.8M.

Randomized: foot friction, torso mass, actuator gains, initial pose, pushes.
"""

from __future__ import annotations

from robolearn.envs.humanoid import LEG_JOINTS, humanoid_scene
from robolearn.tasks.velocity import (
    COMMAND,
    body_mass,
    foot_friction,
    policy_observations,
    proprioception,
    reset_base,
    velocity_agent_cfg,
    velocity_command,
    velocity_env_cfg,
    velocity_play_cfg,
)

from robolearn import mdp
from robolearn.env import ManagerBasedRLEnvCfg
from robolearn.managers import (
    EventTermCfg,
    ObservationGroupCfg,
    ObservationTermCfg,
    RewardTermCfg,
    TerminationTermCfg,
)
from robolearn.mdp import GaitPhaseCommandCfg, JointPositionActionCfg
from robolearn.registry import TaskSpec, register_task
from robolearn.rl.config import AgentCfg
from robolearn.scene import SimCfg

GAIT = {
    "gait_phase": ObservationTermCfg(func=mdp.generated_commands, params={"command_name": "gait"})
}


def _observations(noisy: bool) -> dict[str, ObservationGroupCfg]:
    """The policy sees the gait phase after its command; the critic also sees, noise-free,
    the base height and which feet touch the ground (privileged)."""
    critic = proprioception(extra=dict(GAIT))
    critic["base_height"] = ObservationTermCfg(func=mdp.base_height)
    critic["feet_contact"] = ObservationTermCfg(func=mdp.feet_contact)
    for term in critic.values():
        term.noise = None
    return {
        "policy": policy_observations(noisy, extra=dict(GAIT)),
        "critic": ObservationGroupCfg(terms=critic),
    }


def env_cfg() -> ManagerBasedRLEnvCfg:
    cfg = velocity_env_cfg(humanoid_scene(), base_body="torso", contact_bodies=["pelvis", "torso"])
    # MuJoCo Warp sizes its constraint buffer from the model's initial state (qpos0); a
    # humanoid lying on the floor uses more rows than that, so leave room.
    cfg.sim = SimCfg(physics_dt=0.01, njmax=128)
    cfg.decimation = 2
    # Legs and waist; the arms hold their default pose under their own position control.
    cfg.actions["joint_pos"] = JointPositionActionCfg(
        actuators=[*LEG_JOINTS, "waist_yaw"], scale=0.5
    )
    cfg.commands[COMMAND] = velocity_command(lin_vel_x=(0.0, 1.0), rel_standing_envs=0.05)
    cfg.commands["gait"] = GaitPhaseCommandCfg(period_s=0.8)
    cfg.observations = _observations(noisy=True)
    _rewards(cfg.rewards)
    cfg.terminations["base_too_low"] = TerminationTermCfg(
        func=mdp.base_height_below, params={"minimum": 0.45}
    )
    cfg.events["friction"] = foot_friction((0.5, 1.25))
    cfg.events["base_mass"] = body_mass("torso", (-1.0, 3.0))
    cfg.events["actuator_gains"] = EventTermCfg(
        func=mdp.randomize_actuator_gains,
        mode="startup",
        params={"stiffness_scale": (0.9, 1.1), "damping_scale": (0.9, 1.1)},
    )
    cfg.events["reset_base"] = reset_base(speed=0.2)
    cfg.events["reset_joints"] = EventTermCfg(
        func=mdp.reset_joints_by_offset, mode="reset", params={"position_range": (-0.05, 0.05)}
    )
    return cfg


def _rewards(rewards: dict[str, RewardTermCfg]) -> None:
    """The recipe's rewards, reweighted for a biped, plus the gait clock's and a biped's
    posture terms."""
    rewards["track_lin_vel_xy"].weight = 2.0
    rewards["track_ang_vel_z"].weight = 2.0
    rewards["lin_vel_z"].weight = -0.2
    rewards["flat_orientation"].weight = -2.0
    gait = {"gait_command": "gait", "velocity_command": COMMAND}
    rewards |= {
        "termination": RewardTermCfg(func=mdp.is_terminated, weight=-200.0),
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
        "base_height": RewardTermCfg(
            func=mdp.base_height_l2, weight=-10.0, params={"target_height": 0.73}
        ),
        "energy": RewardTermCfg(func=mdp.energy, weight=-1e-3),
    }


def play_env_cfg() -> ManagerBasedRLEnvCfg:
    return velocity_play_cfg(env_cfg())


def agent_cfg() -> AgentCfg:
    cfg = velocity_agent_cfg()
    cfg.max_iterations = 1000
    cfg.obs_groups = {"actor": ["policy"], "critic": ["critic"]}
    # Every sample and its mirror image (the humanoid is left-right symmetric): the walking
    # thresholds in under half the env steps; the doubled update runs in bf16 where the
    # CPU or GPU has it (docs/humanoid_walk.md, "Learning speed").
    cfg.algorithm.symmetry.use_data_augmentation = True
    cfg.algorithm.use_mixed_precision = "auto"
    return cfg


register_task(
    TaskSpec(
        name="humanoid_walk",
        description=(
            "Humanoid (21 joints, 13 driven) walks on velocity commands on flat ground; "
            "learns to walk in about 7 minutes on 2 CPU cores"
        ),
        env_cfg=env_cfg,
        agent_cfg=agent_cfg,
        play_env_cfg=play_env_cfg,
    )
)
