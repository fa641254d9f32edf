"""What a quadruped adds to the velocity recipe, on flat ground and rough.

quadruped_walk's changes (a command curriculum, feet air time, torque, joint-limit and
shin-contact penalties, an end to episodes where the trunk tilts too far, PPO on every
sample and its mirror image) as :func:`quadruped_terms`, and quadruped_walk_rough's way of
making such a task rough as :func:`rough_quadruped`. Our quadruped's tasks and the Go2's
share them; they lived in quadruped_walk's and quadruped_walk_rough's modules, which
go2_walk and go2_walk_rough imported.
"""

from __future__ import annotations

from robolearn.tasks.velocity.recipe import (
    COMMAND,
    velocity_agent_cfg,
    velocity_command,
    velocity_play_cfg,
)
from robolearn.tasks.velocity.rough import height_scan, make_rough, rough_play_cfg

from robolearn import mdp
from robolearn.env import ManagerBasedRLEnvCfg
from robolearn.managers import CurriculumTermCfg, RewardTermCfg, TerminationTermCfg
from robolearn.rl.config import AgentCfg
from robolearn.terrain import TerrainCfg

# ---- flat ground ----------------------------------------------------------------------------


def quadruped_terms(cfg: ManagerBasedRLEnvCfg, shin_bodies: str) -> ManagerBasedRLEnvCfg:
    """What the recipe gets for a quadruped (``cfg`` is changed and returned): forward
    commands up to 0.6 m/s that a curriculum widens to 1 m/s, feet air time, torque and
    joint-limit penalties, a penalty on ``shin_bodies`` touching anything, and an end to
    episodes where the trunk tilts past 1 rad."""
    cfg.commands[COMMAND] = velocity_command(lin_vel_x=(-0.6, 0.6))
    cfg.rewards |= {
        "torques": RewardTermCfg(func=mdp.joint_torques_l2, weight=-1e-4),
        "feet_air_time": RewardTermCfg(
            func=mdp.feet_air_time, weight=0.25, params={"command_name": COMMAND, "threshold": 0.3}
        ),
        "undesired_contacts": RewardTermCfg(
            func=mdp.undesired_contacts, weight=-1.0, params={"bodies": shin_bodies}
        ),
        "joint_limits": RewardTermCfg(func=mdp.joint_pos_limits, weight=-1.0),
    }
    cfg.terminations["bad_orientation"] = TerminationTermCfg(
        func=mdp.bad_orientation, params={"limit_angle": 1.0}
    )
    cfg.curriculum = {
        "command_levels": CurriculumTermCfg(
            func=mdp.command_velocity_levels,
            params={
                "command_name": COMMAND,
                "reward_term": "track_lin_vel_xy",
                "limit_lin_vel_x": (-1.0, 1.0),
                "limit_ang_vel_z": (-1.0, 1.0),
            },
        )
    }
    return cfg


def quadruped_play(cfg: ManagerBasedRLEnvCfg) -> ManagerBasedRLEnvCfg:
    """The play variant of a quadruped task (``cfg`` is changed and returned): the family's,
    with forward commands over the curriculum's final range."""
    cfg = velocity_play_cfg(cfg)
    cfg.commands[COMMAND].ranges.lin_vel_x = (-1.0, 1.0)
    return cfg


def quadruped_agent_cfg() -> AgentCfg:
    """The family's PPO for a quadruped on flat ground: every sample and its mirror image in
    the update."""
    cfg = velocity_agent_cfg()
    # The quadruped is left-right symmetric: the update learns from every sample and its
    # mirror image, in bf16 where the CPU or GPU has it (docs/training.md, "Symmetry and
    # mixed precision"). Without the mirror, 512 envs had not met the thresholds in 4 minutes.
    cfg.algorithm.symmetry.use_data_augmentation = True
    cfg.algorithm.use_mixed_precision = "auto"
    return cfg


# ---- rough terrain --------------------------------------------------------------------------


def rough_quadruped(cfg: ManagerBasedRLEnvCfg, standing_height: float) -> ManagerBasedRLEnvCfg:
    """A flat quadruped task of the family made rough (``cfg`` is changed and returned): the
    default terrain grid, legged_gym's height scan, 1024 envs, a fifth of the flat task's
    flat-orientation penalty, heading commands; ``standing_height``: the trunk's height
    standing on flat ground (m)."""
    cfg = make_rough(cfg, TerrainCfg(), height_scan(standing_height))
    # The rough recipe was measured at 1024 envs, about 10 robots per tile of the 10 x 10
    # terrain grid; the flat task's 512 would halve that.
    cfg.scene.num_envs = 1024
    cfg.rewards["flat_orientation"].weight = -0.2
    # Heading commands (Isaac Lab's and legged_gym's rough setting): the robot turns to a
    # target heading and walks straight, so the distance it covers says how well it walks
    # (the curriculum's measure); yaw-rate commands walk it in circles.
    cfg.commands[COMMAND].rel_heading_envs = 1.0
    return cfg


def rough_quadruped_play(cfg: ManagerBasedRLEnvCfg) -> ManagerBasedRLEnvCfg:
    """The play variant of :func:`rough_quadruped`'s tasks."""
    cfg = rough_play_cfg(cfg)
    cfg.commands[COMMAND].ranges.lin_vel_x = (-1.0, 1.0)  # the curriculum's final range
    return cfg


def rough_quadruped_agent_cfg() -> AgentCfg:
    """The family's PPO for a quadruped on rough terrain: 1500 iterations."""
    cfg = velocity_agent_cfg()
    cfg.max_iterations = 1500
    return cfg
