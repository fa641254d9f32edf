"""The Franka manipulation family's shared pieces: the Panda's physics, its arm action, the
reset that scatters the arm's pose, the PPO settings and the play variant.

Not a task itself: ``panda_reach``, ``panda_lift`` (and ``panda_lift_ik``) and
``panda_open_drawer`` build on it. Every function returns new config objects.
"""

from __future__ import annotations

from collections.abc import Callable

from robolearn.envs.franka_panda import ARM

from robolearn import mdp
from robolearn.env import ManagerBasedRLEnvCfg
from robolearn.managers import EventTermCfg
from robolearn.rl.config import AgentCfg, PolicyCfg, PpoAlgorithmCfg
from robolearn.scene import SimCfg

ARM_ACTUATORS = "actuator[1-7]"
PHYSICS_DT = 0.005  # s; with decimation 4, a 50 Hz policy (Isaac Lab's Lift: 100 Hz, 2)
PLAY_ENVS = 64


def panda_sim() -> SimCfg:
    """The Panda's physics: 5 ms steps (MuJoCo's implicitfast, as Menagerie's file says)."""
    return SimCfg(physics_dt=PHYSICS_DT)


def arm_joint_action() -> mdp.JointPositionActionCfg:
    """The arm's joint targets: home pose + 0.5 rad per unit of action, actions within 4."""
    return mdp.JointPositionActionCfg(actuators=ARM_ACTUATORS, scale=0.5, clip=(-4, 4))


def arm_relative_joint_action() -> mdp.RelativeJointPositionActionCfg:
    """The arm's joint targets moved on from the last step's by 0.05 rad per unit of action,
    actions within 1 (2.5 rad/s at most at 50 Hz): action 0 holds the arm where it was
    sent, so holding an object still at a goal is the policy's zero, not a pose it must
    name to the hundredth of a radian."""
    return mdp.RelativeJointPositionActionCfg(actuators=ARM_ACTUATORS, scale=0.05, clip=(-1, 1))


def reset_arm(position_range: tuple[float, float]) -> EventTermCfg:
    """At each reset, the arm's joints at the home pose scaled by a draw from
    ``position_range``, at rest."""
    return EventTermCfg(
        func=mdp.reset_joints_by_scale,
        mode="reset",
        params={
            "joints": list(ARM),
            "position_range": position_range,
            "velocity_range": (0.0, 0.0),
        },
    )


def panda_agent_cfg(
    max_iterations: int,
    learning_rate: float,
    entropy_coef: float,
    hidden: tuple[int, ...] = (256, 128, 64),
    init_noise_std: float = 1.0,
) -> AgentCfg:
    """PPO for the family: 24 steps per env and iteration, 4 mini-batches, an adaptive
    learning rate at KL 0.01, checkpoints every 50 iterations."""
    return AgentCfg(
        num_steps_per_env=24,
        max_iterations=max_iterations,
        save_interval=50,
        algorithm=PpoAlgorithmCfg(
            learning_rate=learning_rate,
            num_mini_batches=4,
            entropy_coef=entropy_coef,
            desired_kl=0.01,
        ),
        policy=PolicyCfg(
            actor_hidden_dims=hidden, critic_hidden_dims=hidden, init_noise_std=init_noise_std
        ),
    )


def play_variant(
    make: Callable[[], ManagerBasedRLEnvCfg], module: str
) -> Callable[[], ManagerBasedRLEnvCfg]:
    """The play variant of a task's config: 64 envs, no observation noise."""

    def play() -> ManagerBasedRLEnvCfg:
        cfg = make()
        cfg.scene.num_envs = PLAY_ENVS
        cfg.observations["policy"].enable_corruption = False
        return cfg

    play.__module__ = module
    return play
