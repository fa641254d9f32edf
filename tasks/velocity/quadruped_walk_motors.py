"""quadruped_walk_motors: quadruped_walk on the motors of a real robot, with the sim-to-real
randomizations.

The task a robot owner trains before the real robot: every joint is a DC motor (the PD loop
run by robolearn at every physics step, limited by the motor's torque-speed line) whose
commands arrive 0-2 physics steps (0-10 ms) late, and each env's robot differs from the
model as real units do: PD gains, torque limits, rotor inertia and gearbox friction, the
trunk's center of mass, encoder zeros and the IMU's mounting, the IMU's readings a policy
step late at random, and noise on every joint target. docs/actuators.md says how each range
was picked; BENCHMARKS.md section 16 how much later it walks than quadruped_walk.

The gains and limits are the MJCF's position actuators' (kp 30/35/40, kd 0.8/0.8/1.0, 25/25/35
N m for hip/thigh/calf); the motors' lines are a Unitree Go1-class drive's (stall torque
1.25x the current limit; no-load speed 30 rad/s at hip and thigh, 20 at the knee, whose
gearing is 1.5x slower).
"""

from __future__ import annotations

from robolearn.tasks.velocity.quadruped import quadruped_agent_cfg, quadruped_play
from robolearn.tasks.velocity.robots import quadruped_flat_cfg

from robolearn import mdp
from robolearn.env import ManagerBasedRLEnvCfg
from robolearn.managers import EventTermCfg
from robolearn.scene import DCMotorCfg

MOTORS = DCMotorCfg(
    joints=".*",
    stiffness={".*_hip": 30.0, ".*_thigh": 35.0, ".*_calf": 40.0},
    damping={".*_calf": 1.0, ".*": 0.8},
    effort_limit={".*_calf": 35.0, ".*": 25.0},
    saturation_effort={".*_calf": 43.75, ".*": 31.25},
    velocity_limit={".*_calf": 20.0, ".*": 30.0},
    delay=(0, 2),
)
"""The quadruped's 12 drives (see the module docstring)."""


def sim_to_real_events() -> dict[str, EventTermCfg]:
    """The randomizations, each drawn per env at every reset."""

    def at_reset(func, **params) -> EventTermCfg:
        return EventTermCfg(func=func, mode="reset", params=params)

    return {
        "motor_gains": at_reset(
            mdp.randomize_actuator_gains, stiffness_range=(0.8, 1.2), damping_range=(0.8, 1.2)
        ),
        "motor_limits": at_reset(mdp.randomize_effort_limits, effort_range=(0.85, 1.0)),
        "joint_parameters": at_reset(
            mdp.randomize_joint_parameters, armature_range=(0.8, 1.2), friction_range=(0.5, 2.0)
        ),
        "trunk_com": at_reset(
            mdp.randomize_body_com,
            bodies="trunk",
            com_range={"x": (-0.02, 0.02), "y": (-0.02, 0.02), "z": (-0.01, 0.01)},
        ),
        "encoder_bias": at_reset(mdp.randomize_encoder_bias, bias_range=(-0.02, 0.02)),
        "imu_mounting": at_reset(
            mdp.randomize_imu_mounting, tilt_range={"roll": (-0.03, 0.03), "pitch": (-0.03, 0.03)}
        ),
    }


def env_cfg() -> ManagerBasedRLEnvCfg:
    cfg = quadruped_flat_cfg()
    cfg.scene.robot.actuators = {"legs": MOTORS}
    cfg.events |= sim_to_real_events()
    policy = cfg.observations["policy"].terms
    for term in ("base_ang_vel", "projected_gravity"):
        policy[term].latency = (0, 1)  # the IMU's estimate a policy step (20 ms) late at random
    cfg.actions["joint_pos"].noise_std = (0.0, 0.02)
    return cfg


def play_env_cfg() -> ManagerBasedRLEnvCfg:
    return quadruped_play(env_cfg())


agent_cfg = quadruped_agent_cfg
