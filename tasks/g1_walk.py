"""g1_walk: a Unitree G1 follows base velocity commands on flat ground.

humanoid_walk's recipe (``tasks/humanoid_walk.py``: the velocity family with a gait clock,
a privileged critic, biped posture rewards and mirror augmentation) on the G1's robot
config (``envs/unitree_g1.py``: its motors' limits, armature and gains, whichever MJCF of
the G1 it runs on). The policy drives the 12 leg joints and the waist's yaw; the arms and
the waist's roll and pitch hold the default pose under their own position loops, as the
humanoid's arms do. Physics at 100 Hz with ``implicitfast`` on a capped solver
(``velocity.CAPPED_SOLVER``), the policy at 50 Hz: as for humanoid_walk, 200 Hz cost 1.6
times as much per env step (BENCHMARKS.md, section 18).

The model is Menagerie's by default; Unitree's own file drives the same task:
``robolearn train --task g1_walk env.scene.model=PATH`` with PATH
``unitree_mujoco/unitree_robots/g1/g1_29dof.xml`` in a checkout of Unitree's repository.
"""

from __future__ import annotations

from robolearn.envs.unitree_g1 import g1_scene
from robolearn.tasks import humanoid_walk
from robolearn.tasks.velocity import CAPPED_SOLVER, velocity_env_cfg, velocity_play_cfg

from robolearn.env import ManagerBasedRLEnvCfg
from robolearn.mdp import JointPositionActionCfg
from robolearn.registry import TaskSpec, register_task
from robolearn.scene import SimCfg

NUM_ENVS = 1024

STANDING_HEIGHT = 0.74
"""The pelvis's height above flat ground in the config's default pose (m)."""

DRIVEN = (".*_hip_.*", ".*_knee.*", ".*_ankle_.*", "waist_yaw.*")
"""Actuator-name regexes of the joints the policy drives (Menagerie names the actuators
after the joints, Unitree after the joints without ``_joint``: these match both)."""


def env_cfg() -> ManagerBasedRLEnvCfg:
    scene = g1_scene()
    scene.num_envs = NUM_ENVS
    cfg = velocity_env_cfg(
        scene, base_body="torso_link", contact_bodies=["pelvis", "torso_link"], decimation=2
    )
    # A G1 lying on the floor touches with many meshes: room for its constraint rows on
    # the Warp engines (MuJoCo Warp sizes them from the standing pose).
    # implicitfast, Menagerie's choice, on any file: Unitree's g1_29dof.xml says Euler,
    # which steps the position loops' damping explicitly, unstable at 100 Hz on the ankles
    cfg.sim = SimCfg(physics_dt=0.01, njmax=256, integrator="implicitfast", **CAPPED_SOLVER)
    cfg.actions["joint_pos"] = JointPositionActionCfg(actuators=list(DRIVEN), scale=0.5)
    return humanoid_walk.biped_terms(
        cfg,
        base_body="torso_link",
        standing_height=STANDING_HEIGHT,
        min_height=0.45,
        feet_bodies=".*_ankle_roll_link",
        hips=(".*_hip_yaw_joint", ".*_hip_roll_joint"),
        ankles=".*_ankle_.*_joint",
        waist="waist_yaw_joint",
    )


def play_env_cfg() -> ManagerBasedRLEnvCfg:
    return velocity_play_cfg(env_cfg())


register_task(
    TaskSpec(
        name="g1_walk",
        description=(
            "Unitree G1 (Menagerie's or Unitree's MJCF, 29 joints, its motors from the "
            "config) walks on velocity commands on flat ground"
        ),
        env_cfg=env_cfg,
        agent_cfg=humanoid_walk.agent_cfg,
        play_env_cfg=play_env_cfg,
    )
)
