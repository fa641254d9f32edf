"""go2_walk: a Unitree Go2 follows base velocity commands on flat ground.

The velocity family's recipe (``tasks/velocity.py``) on the Go2's robot config
(``envs/unitree_go2.py``: its motors' limits, armature and gains, whichever MJCF of the
Go2 it runs on), with quadruped_walk's additions: forward commands up to 0.6 m/s that a
curriculum widens to 1 m/s, feet air time, torque, joint-limit and thigh/calf-contact
penalties, an end to episodes where the trunk tilts past 1 rad or touches the ground, and
every sample's mirror image in the update. Physics at 200 Hz (MuJoCo's implicit position
loop is stable there at these gains), the policy at 50 Hz.

The model is Menagerie's by default; Unitree's own file drives the same task:
``robolearn train --task go2_walk env.scene.model=PATH`` with PATH
``unitree_mujoco/unitree_robots/go2/go2.xml`` in a checkout of Unitree's repository.
"""

from __future__ import annotations

from robolearn.envs.unitree_go2 import BASE, go2_scene
from robolearn.tasks.velocity import (
    COMMAND,
    velocity_agent_cfg,
    velocity_command,
    velocity_env_cfg,
    velocity_play_cfg,
)

from robolearn import mdp
from robolearn.env import ManagerBasedRLEnvCfg
from robolearn.managers import CurriculumTermCfg, RewardTermCfg, TerminationTermCfg
from robolearn.registry import TaskSpec, register_task
from robolearn.rl.config import AgentCfg
from robolearn.scene import SimCfg

NUM_ENVS = 512
"""As for quadruped_walk: on a CPU fewer envs give more updates a minute."""


def env_cfg() -> ManagerBasedRLEnvCfg:
    scene = go2_scene()
    scene.num_envs = NUM_ENVS
    cfg = velocity_env_cfg(scene, base_body=BASE, decimation=4)
    cfg.sim = SimCfg(physics_dt=0.005)
    cfg.commands[COMMAND] = velocity_command(lin_vel_x=(-0.6, 0.6))
    cfg.events["friction"].params["geoms"] = "FL|FR|RL|RR"
    cfg.rewards |= {
        "torques": RewardTermCfg(func=mdp.joint_torques_l2, weight=-1e-4),
        "feet_air_time": RewardTermCfg(
            func=mdp.feet_air_time, weight=0.25, params={"command_name": COMMAND, "threshold": 0.3}
        ),
        "undesired_contacts": RewardTermCfg(
            func=mdp.undesired_contacts, weight=-1.0, params={"bodies": ".*_(thigh|calf)"}
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


def play_env_cfg() -> ManagerBasedRLEnvCfg:
    cfg = velocity_play_cfg(env_cfg())
    cfg.commands[COMMAND].ranges.lin_vel_x = (-1.0, 1.0)
    return cfg


def agent_cfg() -> AgentCfg:
    cfg = velocity_agent_cfg()
    cfg.algorithm.symmetry.use_data_augmentation = True
    cfg.algorithm.use_mixed_precision = "auto"
    return cfg


register_task(
    TaskSpec(
        name="go2_walk",
        description=(
            "Unitree Go2 (Menagerie's or Unitree's MJCF, its motors from the config) tracks "
            "velocity commands on flat ground"
        ),
        env_cfg=env_cfg,
        agent_cfg=agent_cfg,
        play_env_cfg=play_env_cfg,
    )
)
