"""quadruped_walk_rough_obstacles: quadruped_walk_rough with boxes on the terrain, which only
a ray-cast height scan sees.

The terrain, commands, curriculum and rewards are quadruped_walk_rough's. Six boxes (0.4 to
0.7 m wide, 6 to 12 cm high: steps to climb or walk around) stand on the ground around
each robot, scattered afresh at every reset between 1 and 3.5 m from where the robot
spawned (:func:`robolearn.mdp.scatter_on_ground`). They are mocap entities (placed per
env, pushed by nothing, no contacts with the ground), not part of the terrain's height
field, so the height field's scan is blind to them: the height scan here is read from a
187-ray grid ray caster (the same 1.6 m x 1.0 m grid every 0.1 m, in the same order),
which sees the boxes and looks past the robot's own legs.

The observations keep quadruped_walk_rough's sizes, so training starts from the shipped
quadruped_walk_rough policy (``agent.init_from``). Seeing the boxes, that policy falls in
5.5% of episodes here, against 13.3% with the height field's scan; 200 iterations of
fine-tuning among them gave 4-10% (BENCHMARKS.md section 25).
"""

from __future__ import annotations

import dataclasses

from robolearn.tasks.velocity.quadruped import rough_quadruped_play
from robolearn.tasks.velocity.recipe import velocity_agent_cfg
from robolearn.tasks.velocity.robots import quadruped_rough_cfg

from robolearn import mdp
from robolearn.env import ManagerBasedRLEnvCfg
from robolearn.managers import EventTermCfg
from robolearn.rl.config import AgentCfg
from robolearn.scene import EntityCfg, GridPattern, RayCasterCfg

OBSTACLES = {
    "box_a": (0.20, 0.20, 0.03),
    "box_b": (0.25, 0.20, 0.04),
    "box_c": (0.20, 0.30, 0.05),
    "box_d": (0.30, 0.25, 0.06),
    "box_e": (0.35, 0.20, 0.04),
    "box_f": (0.25, 0.35, 0.05),
}
"""The boxes' half-sizes (x, y, z), m."""


def with_obstacles(cfg: ManagerBasedRLEnvCfg) -> ManagerBasedRLEnvCfg:
    """A rough task's config with the boxes, their reset, and its height scan read from a
    ray caster (``cfg`` changed and returned)."""
    for k, (name, half) in enumerate(OBSTACLES.items()):
        # apart from each other and from the robot until the reset scatters them
        cfg.scene.entities[name] = EntityCfg(
            box=half, rgba=(0.55, 0.35, 0.2, 1.0), pos=(2.5, k - 2.5, 0.3), free=False,
            mocap=True,
        )  # fmt: skip
    cfg.events["scatter_obstacles"] = EventTermCfg(
        func=mdp.scatter_on_ground, mode="reset",
        params={"entities": tuple(OBSTACLES), "radius": (1.0, 3.5)},
    )  # fmt: skip
    cfg.scene.sensors["scan"] = RayCasterCfg(pattern=GridPattern((1.6, 1.0), 0.1))
    for group in cfg.observations.values():
        term = group.terms["height_scan"]
        group.terms["height_scan"] = dataclasses.replace(
            term, params={**term.params, "sensor": "scan"}
        )
    return cfg


def env_cfg() -> ManagerBasedRLEnvCfg:
    return with_obstacles(quadruped_rough_cfg())


def play_env_cfg() -> ManagerBasedRLEnvCfg:
    return with_obstacles(rough_quadruped_play(quadruped_rough_cfg()))


def agent_cfg() -> AgentCfg:
    cfg = velocity_agent_cfg()
    cfg.init_from = "pretrained:quadruped_walk_rough"
    cfg.max_iterations = 200
    return cfg
