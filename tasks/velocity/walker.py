"""The velocity family for any legged robot, from what ``robolearn new robot`` derived.

A robot of our own has its task written by hand (``robots.py``); a robot brought with
``robolearn new robot`` has a :class:`WalkerCfg`, written into the user's package beside
its robot config, and these functions turn it into the family's tasks: two feet take
humanoid_walk's additions (``biped.py``), any other number the quadruped's
(``quadruped.py``). What the hand-written tasks state by name (the feet, the hips, the
ankles, the waist, the shins, the bodies that end an episode) comes from the WalkerCfg, and
what they state for their robot's size is scaled by the robot's legs: the commanded
speeds (by the square root of leg length, as walking speeds scale), the swing height and
the feet's minimum distance.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from robolearn.envs import CAPPED_SOLVER
from robolearn.tasks.velocity.biped import biped_agent_cfg, biped_terms, biped_terrain
from robolearn.tasks.velocity.quadruped import (
    quadruped_agent_cfg,
    quadruped_play,
    quadruped_terms,
    rough_quadruped,
    rough_quadruped_agent_cfg,
    rough_quadruped_play,
)
from robolearn.tasks.velocity.recipe import (
    COMMAND,
    CONTROL_DT,
    foot_friction,
    velocity_env_cfg,
    velocity_play_cfg,
)
from robolearn.tasks.velocity.rough import height_scan, make_rough, rough_play_cfg

from robolearn.env import ManagerBasedRLEnvCfg
from robolearn.mdp import JointPositionActionCfg
from robolearn.rl.config import AgentCfg
from robolearn.scene import EntityCfg, SceneCfg, SimCfg

BIPED_LEG, QUADRUPED_LEG = 0.7, 0.23
"""m, hip to foot: humanoid_walk's and go2_walk's legs, whose commanded speeds (1 m/s
forward) the family's settings were measured at; a shorter leg gets slower commands."""


@dataclass
class WalkerCfg:
    """What the velocity family needs of a legged robot beyond its :class:`EntityCfg`."""

    robot: EntityCfg
    feet: int
    """How many feet: 2 takes the biped's additions, others the quadruped's."""
    base_body: str
    """The floating base's body (its mass is randomized)."""
    standing_height: float
    """m, the base's height standing in the default pose."""
    physics_dt: float
    """s; the policy runs every 20 ms on it."""
    driven: tuple[str, ...]
    """The actuators the policy drives (regexes); the others hold the default pose."""
    leg_length: float
    """m, from the hips' first joints down to the feet, standing."""
    feet_width: float
    """m, between the outermost feet across the base, standing."""
    hips: tuple[str, ...] = ()
    """A biped's hip joints that walking keeps near their default (yaw and roll)."""
    ankles: tuple[str, ...] = ()
    waist: tuple[str, ...] = ()
    shin_bodies: tuple[str, ...] = ()
    """Bodies of the legs above the feet, whose contacts a quadruped is penalized for."""
    contact_bodies: tuple[str, ...] = ()
    """Bodies whose touching anything ends an episode (the base, the waist's)."""
    symmetric: bool = True
    """Train on every sample and its mirror image (needs a mirror map)."""
    action_scale: float = 0.25
    """rad of position target per unit of action."""
    num_envs: int = 1024

    @property
    def biped(self) -> bool:
        return self.feet == 2

    def speed_scale(self) -> float:
        """The commanded speeds' share of the family's: sqrt(leg / the family's leg), at
        most 1."""
        reference = BIPED_LEG if self.biped else QUADRUPED_LEG
        return min(1.0, math.sqrt(max(self.leg_length, 1e-3) / reference))


def _any(names: tuple[str, ...]) -> str:
    return "|".join(names)


def walk_env_cfg(walker: WalkerCfg) -> ManagerBasedRLEnvCfg:
    """The flat walking task for ``walker``."""
    scene = SceneCfg(num_envs=walker.num_envs, entities={"robot": walker.robot}, ground=True)
    cfg = velocity_env_cfg(
        scene,
        base_body=walker.base_body,
        contact_bodies=list(walker.contact_bodies) or None,
        decimation=max(1, round(CONTROL_DT / walker.physics_dt)),
    )
    # room for the constraint rows of a robot lying on the floor, on the Warp engines
    # (MuJoCo Warp sizes them from the standing pose)
    cfg.sim = SimCfg(
        physics_dt=walker.physics_dt, njmax=256, integrator="implicitfast", **CAPPED_SOLVER
    )
    feet = _any(tuple(re.escape(f) for f in walker.robot.feet))
    scale = walker.speed_scale()
    if walker.biped:
        cfg.actions["joint_pos"] = JointPositionActionCfg(
            actuators=list(walker.driven), scale=walker.action_scale
        )
        biped_terms(
            cfg,
            base_body=walker.base_body,
            standing_height=walker.standing_height,
            min_height=0.6 * walker.standing_height,
            feet_bodies=feet,
            hips=walker.hips,
            ankles=_any(walker.ankles),
            waist=_any(walker.waist),
        )
        for name, joints in (
            ("hip_deviation", walker.hips),
            ("ankle_limits", walker.ankles),
            ("torso_deviation", walker.waist),
        ):
            if not joints:
                cfg.rewards.pop(name)
        cfg.rewards["swing_height"].params["target_height"] = 0.15 * walker.leg_length
        cfg.rewards["feet_distance"].params["minimum"] = 0.6 * walker.feet_width
        cfg.commands[COMMAND].ranges.lin_vel_x = (0.0, scale)
    else:
        cfg.actions["joint_pos"] = JointPositionActionCfg(
            actuators=list(walker.driven), scale=walker.action_scale
        )
        cfg.events["friction"] = foot_friction((0.6, 1.25), bodies=feet)
        quadruped_terms(cfg, shin_bodies=_any(walker.shin_bodies))
        cfg.commands[COMMAND].ranges.lin_vel_x = (-0.6 * scale, 0.6 * scale)
        levels = cfg.curriculum["command_levels"].params
        levels["limit_lin_vel_x"] = (-scale, scale)
    cfg.commands[COMMAND].ranges.lin_vel_y = tuple(0.5 * scale * s for s in (-1, 1))
    return cfg


def walk_play_cfg(walker: WalkerCfg) -> ManagerBasedRLEnvCfg:
    """The flat task's play variant: no noise, no pushes, the full command range."""
    cfg = walk_env_cfg(walker)
    if walker.biped:
        return velocity_play_cfg(cfg)
    cfg = quadruped_play(cfg)
    scale = walker.speed_scale()
    cfg.commands[COMMAND].ranges.lin_vel_x = (-scale, scale)
    return cfg


def walk_rough_env_cfg(walker: WalkerCfg) -> ManagerBasedRLEnvCfg:
    """The walking task on rough terrain: the family's rough settings for the kind of
    robot (a biped's gentler terrain), the height scan sized by the legs."""
    cfg = walk_env_cfg(walker)
    if walker.biped:
        cfg = make_rough(cfg, biped_terrain(), height_scan(walker.standing_height, size=(1.0, 0.6)))
        cfg.rewards["flat_orientation"].weight = -1.0
        cfg.commands[COMMAND].rel_heading_envs = 1.0
    else:
        cfg = rough_quadruped(cfg, walker.standing_height)
    return cfg


def walk_rough_play_cfg(walker: WalkerCfg) -> ManagerBasedRLEnvCfg:
    """The rough task's play variant."""
    cfg = walk_rough_env_cfg(walker)
    return rough_play_cfg(cfg) if walker.biped else rough_quadruped_play(cfg)


def walk_agent_cfg(walker: WalkerCfg, rough: bool = False) -> AgentCfg:
    """PPO for ``walker``: the biped's or the quadruped's; mirror augmentation only for a
    robot with a mirror map."""
    if walker.biped:
        cfg = biped_agent_cfg()
    else:
        cfg = rough_quadruped_agent_cfg() if rough else quadruped_agent_cfg()
    if not walker.symmetric:
        cfg.algorithm.symmetry.use_data_augmentation = False
    return cfg
