"""Event terms the legged locomotion tasks share (humanoid_walk, quadruped_walk).

Each call returns a new config, so a task may change its copy freely.
"""

from __future__ import annotations

from robolearn import mdp
from robolearn.managers import EventTermCfg


def foot_friction(friction_range: tuple[float, float]) -> EventTermCfg:
    """At startup, one sliding friction per env, uniform in the range, for the foot geoms
    (``.*_foot``)."""
    return EventTermCfg(
        func=mdp.randomize_friction,
        mode="startup",
        params={"friction_range": friction_range, "geoms": ".*_foot"},
    )


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
