"""The velocity family's recipe: a legged robot follows (vx, vy, yaw rate) commands.

Not a task itself: :func:`velocity_env_cfg` is the shared recipe (Isaac Lab's and
legged_gym's flat locomotion shape), and each robot's task is that recipe plus what
differs for the robot: its scene, the bodies whose contact ends an episode, weights,
heights, extra terms. What a kind of robot adds lives beside it (``quadruped.py``,
``biped.py``), and ``rough.py`` turns a flat task rough. A new robot's task is a short
file (docs/writing-a-task.md shows one for a robot that is not ours):

    def env_cfg():
        cfg = velocity_env_cfg(robot_scene("my_robot.xml", feet=".*_foot"), base_body="base")
        cfg.rewards["feet_air_time"].weight = 0.5
        return cfg

Every function returns new config objects, so a task may change its copy freely.
"""

from __future__ import annotations

import sys

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
from robolearn.mdp import JointPositionActionCfg, UniformVelocityCommandCfg, VelocityRanges
from robolearn.rl.config import AgentCfg, PolicyCfg, PpoAlgorithmCfg
from robolearn.scene import SceneCfg
from robolearn.scene.models import resolve_model_path
from robolearn.sim import load_spec

COMMAND = "base_velocity"
"""The name of the velocity command every term of the family reads."""


def velocity_command(
    lin_vel_x: tuple[float, float] = (-1.0, 1.0),
    lin_vel_y: tuple[float, float] = (-0.5, 0.5),
    ang_vel_z: tuple[float, float] = (-1.0, 1.0),
    rel_standing_envs: float = 0.02,
) -> UniformVelocityCommandCfg:
    """Uniform (vx, vy, yaw rate) commands in the heading frame, resampled every 10 s."""
    return UniformVelocityCommandCfg(
        resampling_time_range=(10.0, 10.0),
        rel_standing_envs=rel_standing_envs,
        ranges=VelocityRanges(lin_vel_x=lin_vel_x, lin_vel_y=lin_vel_y, ang_vel_z=ang_vel_z),
    )


def proprioception(
    extra: dict[str, ObservationTermCfg] | None = None,
) -> dict[str, ObservationTermCfg]:
    """What a legged policy observes of itself and its command, in this order (the order
    is the policy's input layout: a trained policy needs the same); ``extra`` terms go
    right after the velocity command. The noise applies when the group's
    ``enable_corruption`` is on."""

    def noise(a: float):
        return uniform_noise(-a, a)

    terms = {
        "base_lin_vel": ObservationTermCfg(func=mdp.base_lin_vel, noise=noise(0.1)),
        "base_ang_vel": ObservationTermCfg(func=mdp.base_ang_vel, noise=noise(0.2)),
        "projected_gravity": ObservationTermCfg(func=mdp.projected_gravity, noise=noise(0.05)),
        "velocity_commands": ObservationTermCfg(
            func=mdp.generated_commands, params={"command_name": COMMAND}
        ),
        **(extra or {}),
        "joint_pos": ObservationTermCfg(func=mdp.joint_pos_rel, noise=noise(0.01)),
        "joint_vel": ObservationTermCfg(func=mdp.joint_vel_rel, noise=noise(1.5), scale=0.05),
        "actions": ObservationTermCfg(func=mdp.last_action),
    }
    return terms


def policy_observations(
    noisy: bool, extra: dict[str, ObservationTermCfg] | None = None
) -> ObservationGroupCfg:
    """The policy's observation group: :func:`proprioception`, noise on in training."""
    return ObservationGroupCfg(enable_corruption=noisy, terms=proprioception(extra))


def velocity_rewards(
    track_lin: float = 1.5, track_ang: float = 0.75, std: float = 0.5
) -> dict[str, RewardTermCfg]:
    """Tracking in the heading frame (exponential kernels) and the regularizers every legged
    robot needs: no vertical bouncing, no roll or pitch rates, smooth actions, a flat base."""
    cmd = {"command_name": COMMAND, "std": std}
    return {
        "track_lin_vel_xy": RewardTermCfg(
            func=mdp.track_lin_vel_xy_exp, weight=track_lin, params=dict(cmd)
        ),
        "track_ang_vel_z": RewardTermCfg(
            func=mdp.track_ang_vel_z_exp, weight=track_ang, params=dict(cmd)
        ),
        "lin_vel_z": RewardTermCfg(func=mdp.lin_vel_z_l2, weight=-2.0),
        "ang_vel_xy": RewardTermCfg(func=mdp.ang_vel_xy_l2, weight=-0.05),
        "joint_acc": RewardTermCfg(func=mdp.joint_acc_l2, weight=-2.5e-7),
        "action_rate": RewardTermCfg(func=mdp.action_rate_l2, weight=-0.01),
        "flat_orientation": RewardTermCfg(func=mdp.flat_orientation_l2, weight=-1.0),
    }


# ---- events ---------------------------------------------------------------------------------


def foot_friction(
    friction_range: tuple[float, float], geoms: str | None = None, bodies: str | None = None
) -> EventTermCfg:
    """At startup, one sliding friction per env, uniform in the range, for every colliding
    geom of the robot's feet (the robot config's ``feet``, whatever the model names them);
    or, where the task names them, for the ``geoms`` (regexes of geom names) or every
    colliding geom of the ``bodies`` (which take the place of ``geoms``)."""
    params: dict = {"friction_range": friction_range}
    if geoms is None and bodies is None:
        params["feet"] = True
    if geoms is not None:
        params["geoms"] = geoms
    if bodies is not None:
        params["bodies"] = bodies
    return EventTermCfg(func=mdp.randomize_friction, mode="startup", params=params)


def body_mass(body: str, mass_range: tuple[float, float]) -> EventTermCfg:
    """At startup, add uniform(mass_range) kg to ``body``'s mass, per env."""
    return EventTermCfg(
        func=mdp.randomize_body_mass,
        mode="startup",
        params={"bodies": body, "mass_range": mass_range},
    )


def reset_base(speed: float) -> EventTermCfg:
    """At reset, the base within 0.5 m of its default x and y, at any heading, moving at up
    to ``speed`` (m/s along x and y, rad/s about z)."""
    return EventTermCfg(
        func=mdp.reset_root_state_uniform,
        mode="reset",
        params={
            "pose_range": {"x": (-0.5, 0.5), "y": (-0.5, 0.5), "yaw": (-3.14, 3.14)},
            "velocity_range": {"x": (-speed, speed), "y": (-speed, speed), "yaw": (-speed, speed)},
        },
    )


def push_base() -> EventTermCfg:
    """Every 10 to 15 s per env, add up to 0.5 m/s to the base's x and y velocity."""
    return EventTermCfg(
        func=mdp.push_by_setting_velocity,
        mode="interval",
        interval_range_s=(10.0, 15.0),
        params={"velocity_range": {"x": (-0.5, 0.5), "y": (-0.5, 0.5)}},
    )


# ---- the recipe -----------------------------------------------------------------------------


CONTROL_DT = 0.02
"""The family's policy period, s: 50 Hz, legged_gym's and Isaac Lab's rate."""


def velocity_env_cfg(
    scene: SceneCfg,
    base_body: str,
    contact_bodies: str | list[str] | None = None,
    control_dt: float = CONTROL_DT,
    decimation: int | None = None,
) -> ManagerBasedRLEnvCfg:
    """The velocity-tracking recipe for a legged robot.

    Args:
        scene: the robot's scene; it needs ``root_body`` (the floating base) and ``feet``
            (the friction randomization and the foot terms read them). Its ``ground`` is
            set: a plane is laid where the model's world has none (a vendor's robot file
            usually has no floor; a model with its own keeps it), so that the robot never
            trains falling through nothing.
        base_body: the body whose mass is randomized (the trunk or torso).
        contact_bodies: bodies whose touching anything ends the episode; default the base.
        control_dt: the policy's period, s (default 0.02: 50 Hz).
        decimation: physics steps per policy step, for a task that sets its own physics
            step; None reads the MJCF's timestep (which loads the model: a robot from
            Menagerie is then found or downloaded when the config is made, not when the
            env is).

    Joint-position actions on every actuator around the default pose (scale 0.25), the
    policy every ``control_dt`` on the MJCF's own timestep (decimation ``control_dt /
    timestep``: 4 at 5 ms, 10 at 2 ms; a timestep that does not divide it is warned about,
    with the rate the policy gets), 20 s episodes; commands (vx, vy, yaw rate); the policy
    observes :func:`proprioception`; rewards :func:`velocity_rewards`; episodes end on a
    time-out or a base contact; foot friction (of the robot config's feet), base mass,
    initial pose and pushes are randomized; joints reset to 0.8-1.2 x their default.
    """
    scene.ground = True
    return ManagerBasedRLEnvCfg(
        scene=scene,
        decimation=decimation or control_decimation(scene.robot.model or "", control_dt),
        episode_length_s=20.0,
        actions={"joint_pos": JointPositionActionCfg(scale=0.25)},
        commands={COMMAND: velocity_command()},
        observations={"policy": policy_observations(noisy=True)},
        rewards=velocity_rewards(),
        terminations={
            "time_out": TerminationTermCfg(func=mdp.time_out, time_out=True),
            "base_contact": TerminationTermCfg(
                func=mdp.illegal_contact, params={"bodies": contact_bodies or base_body}
            ),
        },
        events={
            "friction": foot_friction((0.6, 1.25)),
            "base_mass": body_mass(base_body, (-1.0, 2.0)),
            "reset_base": reset_base(speed=0.3),
            "reset_joints": EventTermCfg(
                func=mdp.reset_joints_by_scale, mode="reset", params={"position_range": (0.8, 1.2)}
            ),
            "push": push_base(),
        },
    )


def control_decimation(model: str, control_dt: float = CONTROL_DT) -> int:
    """Physics steps per policy step that make ``control_dt`` on ``model``'s own timestep
    (its MJCF ``<option timestep>``); one line on stderr when no whole number does, saying
    the rate the policy gets instead."""
    timestep = float(load_spec(resolve_model_path(model)).option.timestep)
    decimation = max(1, round(control_dt / timestep))
    period = decimation * timestep
    if abs(period - control_dt) > 1e-3 * control_dt and (model, control_dt) not in _warned:
        _warned.add((model, control_dt))
        print(
            f"robolearn: warning: {model}'s timestep {timestep:g} s does not divide the "
            f"velocity recipe's control period {control_dt:g} s: the policy runs at "
            f"{1 / period:.1f} Hz ({decimation} steps of {timestep:g} s), not "
            f"{1 / control_dt:g} Hz; set sim.physics_dt and decimation to choose",
            file=sys.stderr,
        )
    return decimation


_warned: set[tuple[str, float]] = set()


def velocity_play_cfg(cfg: ManagerBasedRLEnvCfg) -> ManagerBasedRLEnvCfg:
    """The play variant of a family task's config: 64 envs, no observation or action noise,
    no pushes, no curriculum (``cfg`` is changed and returned)."""
    cfg.scene.num_envs = 64
    for group in cfg.observations.values():
        group.enable_corruption = False
    for action in cfg.actions.values():
        action.noise_std = None
    cfg.events.pop("push", None)
    cfg.curriculum = {}
    return cfg


def velocity_agent_cfg() -> AgentCfg:
    """PPO for the family: 24 steps per env per iteration, 3x128 ELU MLPs."""
    return AgentCfg(
        num_steps_per_env=24,
        max_iterations=300,
        save_interval=50,
        algorithm=PpoAlgorithmCfg(learning_rate=1e-3, entropy_coef=0.01),
        policy=PolicyCfg(actor_hidden_dims=(128, 128, 128), critic_hidden_dims=(128, 128, 128)),
    )
