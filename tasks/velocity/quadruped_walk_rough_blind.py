"""quadruped_walk_rough_blind: walk the rough terrain without seeing it, a student distilled
from the shipped quadruped_walk_rough policy.

The terrain, commands, curriculum and rewards are quadruped_walk_rough's. The student (the
actor) reads proprioception only: no height scan and no base linear velocity, which a real
robot's sensors do not give; an LSTM carries what its feet felt from step to step. It
learns by distillation (rsl-rl's ``Distillation``: behaviour cloning on the student's own
rollouts, DAgger-style) from the teacher, ``pretrained:quadruped_walk_rough``, which reads
its own observation group ``teacher``: exactly the observations it was trained on (the
height scan and base velocity included), without noise.
"""

from __future__ import annotations

import copy

from robolearn.tasks.velocity.quadruped import rough_quadruped_play
from robolearn.tasks.velocity.robots import quadruped_rough_cfg

from robolearn.env import ManagerBasedRLEnvCfg
from robolearn.rl.config import AgentCfg, DistillationCfg, PolicyCfg, RecurrentCfg

PRIVILEGED = ("base_lin_vel", "height_scan")
"""The teacher's observation terms the student goes without."""


def blind(cfg: ManagerBasedRLEnvCfg) -> ManagerBasedRLEnvCfg:
    """A rough task's config with the student's blind ``policy`` group and the teacher's
    ``teacher`` group (the old ``policy`` group, noise off); changed and returned."""
    teacher = copy.deepcopy(cfg.observations["policy"])
    teacher.enable_corruption = False
    for name in PRIVILEGED:
        cfg.observations["policy"].terms.pop(name)
    cfg.observations["teacher"] = teacher
    return cfg


def env_cfg() -> ManagerBasedRLEnvCfg:
    return blind(quadruped_rough_cfg())


def play_env_cfg() -> ManagerBasedRLEnvCfg:
    return blind(rough_quadruped_play(quadruped_rough_cfg()))


def agent_cfg() -> AgentCfg:
    return AgentCfg(
        num_steps_per_env=24,
        max_iterations=500,  # within 1.5x of the teacher's errors by 500 (BENCHMARKS.md)
        save_interval=50,
        obs_groups={"student": ["policy"], "teacher": ["teacher"]},
        policy=PolicyCfg(
            actor_hidden_dims=(128, 128, 128),
            init_noise_std=0.1,
            recurrent=RecurrentCfg(type="lstm", hidden_dim=128),
        ),
        distillation=DistillationCfg(
            enabled=True,
            teacher="pretrained:quadruped_walk_rough",
            learning_rate=1e-3,
            num_learning_epochs=2,
            gradient_length=8,
        ),
    )
