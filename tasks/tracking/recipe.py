"""The motion-tracking family's recipe: a humanoid imitates motion clips (BeyondMimic's).

Each env follows a clip from a sampled start (:class:`~robolearn.mdp.MotionCommandCfg`:
adaptive sampling toward the stretches where episodes fail), started in the clip's own state
there, with noise. The policy sees the reference's next joint positions and velocities and
the reference anchor's position and orientation relative to its own (the position with
BeyondMimic's 25 cm of noise), besides its proprioception; the critic also sees where the
robot's tracked bodies are.
Rewards are BeyondMimic's exponential kernels on the anchor's and the bodies' poses and
velocities, with penalties on action rate, joint limits and contacts of bodies that should
not touch. An episode fails when the anchor's height or tilt or an end effector's height
leaves the reference by BeyondMimic's thresholds, and ends (a time-out) with its clip.

``robolearn play --eval --json`` reports the tracking metrics as the command's step means
(``motion/body_pos_error`` m, ``motion/anchor_pos_error`` m, ``motion/anchor_ori_error``
rad, ``motion/joint_pos_error`` rad) beside ``fall_rate`` and, per episode,
``motion/tracked_fraction``: the share of its clip's remaining time each episode followed.
"""

from __future__ import annotations

from collections.abc import Callable

from robolearn import mdp
from robolearn.env import ManagerBasedRLEnvCfg
from robolearn.managers import (
    EventTermCfg,
    ObservationGroupCfg,
    ObservationTermCfg,
    RewardTermCfg,
    TerminationTermCfg,
    uniform_noise,
)
from robolearn.mdp import tracking
from robolearn.mdp.motion_command import MotionCommandCfg
from robolearn.registry import TaskSpec, register_task
from robolearn.rl.config import AgentCfg, PolicyCfg, PpoAlgorithmCfg
from robolearn.scene import SceneCfg, SimCfg

COMMAND = "motion"
EPISODE_S = 12.0
"""Episodes end with their clip or after this long: BeyondMimic's 10 s, and 2 s more, so
that the 10 s clips robolearn ships end their episodes by themselves."""

# BeyondMimic's kernel widths: m, rad, m/s, rad/s
STD = {"anchor_pos": 0.3, "anchor_ori": 0.4, "body_pos": 0.3, "body_ori": 0.4}
STD |= {"body_lin_vel": 1.0, "body_ang_vel": 3.14}
# and its failure thresholds: m, the gravity components' difference, m
ANCHOR_HEIGHT, ANCHOR_TILT, END_EFFECTOR_HEIGHT = 0.25, 0.8, 0.25
VELOCITY_NOISE = {
    "x": (-0.5, 0.5),
    "y": (-0.5, 0.5),
    "z": (-0.2, 0.2),
    "roll": (-0.52, 0.52),
    "pitch": (-0.52, 0.52),
    "yaw": (-0.78, 0.78),
}
"""BeyondMimic's root velocity ranges (m/s, rad/s), of the pushes and of the start state's
noise alike."""


def tracking_env_cfg(
    scene: SceneCfg,
    sim: SimCfg,
    decimation: int,
    motion_files: list[str],
    anchor_body: str,
    body_names: list[str],
    end_effectors: list[str],
    contact_free: str,
    action_scale: float,
) -> ManagerBasedRLEnvCfg:
    """The family's config for a robot: its scene and physics, the clips, the anchor and
    tracked bodies, the ``end_effectors`` whose height ends episodes, a regex of the bodies
    whose contacts are penalised (``contact_free``), and the joint actions' scale (rad per
    unit, around the default pose)."""
    params = {"command_name": COMMAND}
    return ManagerBasedRLEnvCfg(
        scene=scene,
        sim=sim,
        decimation=decimation,
        episode_length_s=EPISODE_S,
        actions={"joint_pos": mdp.JointPositionActionCfg(actuators=[".*"], scale=action_scale)},
        commands={COMMAND: _command(motion_files, anchor_body, body_names)},
        observations=_observations(params),
        rewards=_rewards(params, contact_free),
        terminations=_terminations(params, end_effectors),
        events=_events(),
    )


def _observations(params: dict) -> dict:
    """The policy's view (the reference's next joint state and anchor pose, its
    proprioception, noisy) and the critic's (the same without noise, and the bodies)."""

    def noise(a: float):
        return uniform_noise(-a, a)

    policy = {
        "command": ObservationTermCfg(func=mdp.generated_commands, params=params),
        "motion_anchor_pos_b": ObservationTermCfg(
            func=tracking.motion_anchor_pos_b, params=params, noise=noise(0.25)
        ),
        "motion_anchor_ori_b": ObservationTermCfg(
            func=tracking.motion_anchor_ori_b, params=params, noise=noise(0.05)
        ),
        "base_lin_vel": ObservationTermCfg(func=mdp.base_lin_vel, noise=noise(0.5)),
        "base_ang_vel": ObservationTermCfg(func=mdp.base_ang_vel, noise=noise(0.2)),
        "joint_pos": ObservationTermCfg(func=mdp.joint_pos_rel, noise=noise(0.01)),
        "joint_vel": ObservationTermCfg(func=mdp.joint_vel_rel, noise=noise(0.5), scale=0.05),
        "actions": ObservationTermCfg(func=mdp.last_action),
    }
    critic = {
        "command": ObservationTermCfg(func=mdp.generated_commands, params=params),
        "motion_anchor_pos_b": ObservationTermCfg(func=tracking.motion_anchor_pos_b, params=params),
        "motion_anchor_ori_b": ObservationTermCfg(func=tracking.motion_anchor_ori_b, params=params),
        "body_pos": ObservationTermCfg(func=tracking.robot_body_pos_b, params=params),
        "body_ori": ObservationTermCfg(func=tracking.robot_body_ori_b, params=params),
        "base_lin_vel": ObservationTermCfg(func=mdp.base_lin_vel),
        "base_ang_vel": ObservationTermCfg(func=mdp.base_ang_vel),
        "joint_pos": ObservationTermCfg(func=mdp.joint_pos_rel),
        "joint_vel": ObservationTermCfg(func=mdp.joint_vel_rel, scale=0.05),
        "actions": ObservationTermCfg(func=mdp.last_action),
    }

    return {
        "policy": ObservationGroupCfg(terms=policy, enable_corruption=True),
        "critic": ObservationGroupCfg(terms=critic),
    }


def _rewards(params: dict, contact_free: str) -> dict:
    """BeyondMimic's kernels and penalties."""

    def kernel(func, std: float, weight: float) -> RewardTermCfg:
        return RewardTermCfg(func=func, weight=weight, params={"std": std, **params})

    rewards = {
        "anchor_pos": kernel(tracking.motion_anchor_position_error_exp, STD["anchor_pos"], 0.5),
        "anchor_ori": kernel(tracking.motion_anchor_orientation_error_exp, STD["anchor_ori"], 0.5),
        "body_pos": kernel(tracking.motion_body_position_error_exp, STD["body_pos"], 1.0),
        "body_ori": kernel(tracking.motion_body_orientation_error_exp, STD["body_ori"], 1.0),
        "body_lin_vel": kernel(tracking.motion_body_lin_vel_error_exp, STD["body_lin_vel"], 1.0),
        "body_ang_vel": kernel(tracking.motion_body_ang_vel_error_exp, STD["body_ang_vel"], 1.0),
        "action_rate": RewardTermCfg(func=mdp.action_rate_l2, weight=-0.1),
        "joint_limits": RewardTermCfg(func=mdp.joint_pos_limits, weight=-10.0),
        "undesired_contacts": RewardTermCfg(
            func=mdp.undesired_contacts,
            weight=-0.1,
            params={"bodies": contact_free, "threshold": 1.0},
        ),
    }
    return rewards


def _terminations(params: dict, end_effectors: list[str]) -> dict:
    """The clip's end (a time-out) and BeyondMimic's three failures."""
    terminations = {
        "clip_ended": TerminationTermCfg(
            func=tracking.motion_clip_ended, params=params, time_out=True
        ),
        "time_out": TerminationTermCfg(func=mdp.time_out, time_out=True),
        "anchor_height": TerminationTermCfg(
            func=tracking.motion_anchor_height_deviation,
            params={"threshold": ANCHOR_HEIGHT, **params},
        ),
        "anchor_tilt": TerminationTermCfg(
            func=tracking.motion_anchor_orientation_deviation,
            params={"threshold": ANCHOR_TILT, **params},
        ),
        "end_effector_height": TerminationTermCfg(
            func=tracking.motion_body_height_deviation,
            params={"threshold": END_EFFECTOR_HEIGHT, "body_names": end_effectors, **params},
        ),
    }
    return terminations


def _events() -> dict:
    """Friction per env at startup and pushes every 1 to 3 s (BeyondMimic's ranges)."""
    events = {
        "friction": EventTermCfg(
            func=mdp.randomize_friction,
            mode="startup",
            params={"friction_range": (0.3, 1.6), "bodies": ".*"},
        ),
        "push": EventTermCfg(
            func=mdp.push_by_setting_velocity,
            mode="interval",
            interval_range_s=(1.0, 3.0),
            params={"velocity_range": dict(VELOCITY_NOISE)},
        ),
    }
    return events


def _command(motion_files: list[str], anchor_body: str, body_names: list[str]) -> MotionCommandCfg:
    """Adaptive sampling, and BeyondMimic's noise on the start state."""
    return MotionCommandCfg(
        motion_files=list(motion_files),
        anchor_body=anchor_body,
        body_names=list(body_names),
        sampling="adaptive",
        pose_range={
            "x": (-0.05, 0.05),
            "y": (-0.05, 0.05),
            "z": (-0.01, 0.01),
            "roll": (-0.1, 0.1),
            "pitch": (-0.1, 0.1),
            "yaw": (-0.2, 0.2),
        },
        velocity_range=dict(VELOCITY_NOISE),
        joint_position_range=(-0.1, 0.1),
    )


def tracking_play_cfg(cfg: ManagerBasedRLEnvCfg) -> ManagerBasedRLEnvCfg:
    """The play variant: 64 envs, each from its clip's first frame without noise, no
    pushes, no observation noise (``cfg`` is changed and returned)."""
    cfg.scene.num_envs = 64
    for group in cfg.observations.values():
        group.enable_corruption = False
    cfg.events.pop("push", None)
    command = cfg.commands[COMMAND]
    assert isinstance(command, MotionCommandCfg)
    command.sampling = "start"
    command.pose_range, command.velocity_range = {}, {}
    command.joint_position_range = (0.0, 0.0)
    return cfg


def tracking_agent_cfg(max_iterations: int = 2000) -> AgentCfg:
    """PPO as BeyondMimic runs it (learning rate 1e-3 on an adaptive schedule, entropy
    0.005, 5 epochs of 4 mini-batches), on smaller networks for 2 cores and with a smaller
    initial action noise: at BeyondMimic's 1.0 over the G1's 29 joints the action-rate
    penalty of random actions (-0.1 x 29 x 2 a step) outweighs every tracking reward
    together (5 at best), and the first iterations learn to end episodes early; at 0.5 the
    return is positive from the first iteration."""
    return AgentCfg(
        num_steps_per_env=24,
        max_iterations=max_iterations,
        save_interval=50,
        obs_groups={"actor": ["policy"], "critic": ["critic"]},
        algorithm=PpoAlgorithmCfg(learning_rate=1e-3, entropy_coef=0.005),
        policy=PolicyCfg(
            actor_hidden_dims=(256, 128, 128),
            critic_hidden_dims=(256, 128, 128),
            init_noise_std=0.5,
        ),
    )


def register_tracking_tasks(
    name: str,
    robot: str,
    make: Callable[[str], ManagerBasedRLEnvCfg],
    walk: str,
    squat: str,
) -> None:
    """Register ``name`` (tracking the ``walk`` clip) and ``name``_squat (the ``squat``
    clip), each with its play variant, for the robot whose config ``make(clip)`` builds: a
    robot of your own's tasks (robolearn's own are registered by name in robolearn.tasks,
    from the functions of their modules)."""
    for task, clip, what in (
        (name, walk, "a recorded walk"),
        (f"{name}_squat", squat, "a keyframed squat with an arm swing"),
    ):

        def env_cfg(clip: str = clip) -> ManagerBasedRLEnvCfg:
            return make(clip)

        def play_env_cfg(clip: str = clip) -> ManagerBasedRLEnvCfg:
            return tracking_play_cfg(make(clip))

        env_cfg.__module__ = play_env_cfg.__module__ = make.__module__

        register_task(
            TaskSpec(
                name=task,
                description=f"{robot} imitates a motion clip (BeyondMimic's recipe): {what}",
                env_cfg=env_cfg,
                agent_cfg=tracking_agent_cfg,
                play_env_cfg=play_env_cfg,
            )
        )
