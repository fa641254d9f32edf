"""Our legged robots' velocity configs that more than one task starts from.

A robot's flat task registers its config, and its rough-terrain and sim-to-real variants
start from the same config. The configs lived in the flat tasks' modules and the variants
imported those: humanoid_walk_rough imported humanoid_walk, g1_walk_rough g1_walk, and a
change to one task silently changed another. Here, what a change reaches is the tasks that
name the function.
"""

from __future__ import annotations

from robolearn.envs import CAPPED_SOLVER, quadruped, unitree_g1
from robolearn.envs.humanoid import LEG_JOINTS, humanoid_robot
from robolearn.envs.unitree_go2 import BASE as GO2_BASE
from robolearn.envs.unitree_go2 import go2_robot
from robolearn.tasks.velocity.biped import biped_terms
from robolearn.tasks.velocity.quadruped import quadruped_terms, rough_quadruped
from robolearn.tasks.velocity.recipe import foot_friction, velocity_env_cfg

from robolearn.env import ManagerBasedRLEnvCfg
from robolearn.mdp import JointPositionActionCfg
from robolearn.scene import SceneCfg, SimCfg

# ---- bipeds ---------------------------------------------------------------------------------


def humanoid_flat_cfg() -> ManagerBasedRLEnvCfg:
    """humanoid_walk's config: the biped recipe on our humanoid, 100 Hz physics, the legs
    and the waist driven (the arms hold their pose under their own position control)."""
    scene = SceneCfg(entities={"robot": humanoid_robot()})
    cfg = velocity_env_cfg(scene, base_body="torso", contact_bodies=["pelvis", "torso"])
    # MuJoCo Warp sizes its constraint buffer from the model's initial state (qpos0); a
    # humanoid lying on the floor uses more rows than that, so leave room.
    cfg.sim = SimCfg(physics_dt=0.01, njmax=128)
    cfg.decimation = 2
    # Legs and waist; the arms hold their default pose under their own position control.
    cfg.actions["joint_pos"] = JointPositionActionCfg(
        actuators=[*LEG_JOINTS, "waist_yaw"], scale=0.5
    )
    return biped_terms(cfg, base_body="torso", standing_height=0.73, min_height=0.45)


G1_DRIVEN = (".*_hip_.*", ".*_knee.*", ".*_ankle_.*", "waist_yaw.*")
"""Actuator-name regexes of the G1's joints the policy drives (Menagerie names the actuators
after the joints, Unitree after the joints without ``_joint``: these match both)."""


def g1_flat_cfg() -> ManagerBasedRLEnvCfg:
    """g1_walk's config: the biped recipe on the G1's robot config, 100 Hz physics on the
    capped solver, the legs and the waist's yaw driven."""
    scene = SceneCfg(
        num_envs=unitree_g1.NUM_ENVS, entities={"robot": unitree_g1.g1_robot()}, ground=True
    )
    cfg = velocity_env_cfg(
        scene, base_body="torso_link", contact_bodies=["pelvis", "torso_link"], decimation=2
    )
    # A G1 lying on the floor touches with many meshes: room for its constraint rows on
    # the Warp engines (MuJoCo Warp sizes them from the standing pose).
    # implicitfast, Menagerie's choice, on any file: Unitree's g1_29dof.xml says Euler,
    # which steps the position loops' damping explicitly, unstable at 100 Hz on the ankles
    cfg.sim = SimCfg(physics_dt=0.01, njmax=256, integrator="implicitfast", **CAPPED_SOLVER)
    cfg.actions["joint_pos"] = JointPositionActionCfg(actuators=list(G1_DRIVEN), scale=0.5)
    return biped_terms(
        cfg,
        base_body="torso_link",
        standing_height=unitree_g1.STANDING_HEIGHT,
        min_height=0.45,
        feet_bodies=".*_ankle_roll_link",
        hips=(".*_hip_yaw_joint", ".*_hip_roll_joint"),
        ankles=".*_ankle_.*_joint",
        waist="waist_yaw_joint",
    )


# ---- quadrupeds -----------------------------------------------------------------------------

QUADRUPED_NUM_ENVS = 512
"""On a CPU an env step costs the same at any count, so fewer envs mean more PPO updates per
minute: with the mirrored update, 512 envs meet the walking thresholds in 2.2-2.8 minutes on 2
cores where 1024 took 3.6 and 256 had not by 2.7 (BENCHMARKS.md section 7). A GPU wants
thousands: ``--num_envs 4096``."""

GO2_NUM_ENVS = 512
"""As for our quadruped: on a CPU fewer envs give more updates a minute."""


def quadruped_flat_cfg() -> ManagerBasedRLEnvCfg:
    """quadruped_walk's config: the quadruped recipe on our quadruped."""
    scene = SceneCfg(num_envs=QUADRUPED_NUM_ENVS, entities={"robot": quadruped.quadruped_robot()})
    cfg = velocity_env_cfg(scene, base_body="trunk")
    return quadruped_terms(cfg, shin_bodies=".*_calf")


def quadruped_rough_cfg() -> ManagerBasedRLEnvCfg:
    """quadruped_walk_rough's config: :func:`quadruped_flat_cfg` made rough."""
    return rough_quadruped(quadruped_flat_cfg(), quadruped.STANDING_HEIGHT)


def go2_flat_cfg() -> ManagerBasedRLEnvCfg:
    """go2_walk's config: the quadruped recipe on the Go2's robot config, 200 Hz physics on
    the capped solver, the thighs' and calves' contacts penalized."""
    scene = SceneCfg(num_envs=GO2_NUM_ENVS, entities={"robot": go2_robot()}, ground=True)
    cfg = velocity_env_cfg(scene, base_body=GO2_BASE, decimation=4)
    cfg.sim = SimCfg(physics_dt=0.005, **CAPPED_SOLVER)
    # the feet's geoms, as the recipe's feet default finds them too: named, the task's
    # config stays the one its saved runs recorded
    cfg.events["friction"] = foot_friction((0.6, 1.25), geoms="FL|FR|RL|RR")
    return quadruped_terms(cfg, shin_bodies=".*_(thigh|calf)")
