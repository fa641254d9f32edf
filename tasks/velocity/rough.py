"""Rough terrain for the velocity family: a flat task of the family made rough.

A generated terrain in place of the floor, a height scan in every observation group, a
terrain curriculum, and a play variant spread over every level. Each robot's rough task is
its flat config through :func:`make_rough`, with its own terrain mix and scan size.
"""

from __future__ import annotations

import copy

from robolearn.tasks.velocity.recipe import COMMAND, velocity_play_cfg

from robolearn import mdp
from robolearn.env import ManagerBasedRLEnvCfg
from robolearn.managers import (
    CurriculumTermCfg,
    ObservationTermCfg,
    TerminationTermCfg,
    uniform_noise,
)
from robolearn.terrain import TerrainCfg


def height_scan(
    standing_height: float, size: tuple[float, float] = (1.6, 1.0), noise: float = 0.02
) -> ObservationTermCfg:
    """The ground around the base (a ``size`` m grid every 0.1 m, in the heading frame), as
    heights below the base relative to ``standing_height`` (0 on flat ground when standing),
    clipped to +-1 m, scaled by 5 (legged_gym's scale), with +-``noise`` m noise."""
    return ObservationTermCfg(
        func=mdp.height_scan,
        params={"size": size, "resolution": 0.1, "offset": standing_height},
        noise=uniform_noise(-noise, noise),
        clip=(-1.0, 1.0),
        scale=5.0,
    )


def make_rough(
    cfg: ManagerBasedRLEnvCfg,
    terrain: TerrainCfg,
    scan: ObservationTermCfg,
) -> ManagerBasedRLEnvCfg:
    """A flat task of the family turned rough (``cfg`` is changed and returned): the
    terrain in place of the floor, the height scan last in every observation group (the
    critic's without noise), a terrain curriculum (legged_gym's rule, logged as
    ``Curriculum/terrain_levels``), and an end to episodes that near the terrain's edge."""
    cfg.scene.terrain = terrain
    for group in cfg.observations.values():
        # The noise applies only in groups with enable_corruption (the policy's in training).
        group.terms["height_scan"] = copy.deepcopy(scan)
    cfg.curriculum["terrain_levels"] = CurriculumTermCfg(
        func=mdp.terrain_levels, params={"command_name": COMMAND}
    )
    cfg.terminations["out_of_bounds"] = TerminationTermCfg(func=mdp.terrain_out_of_bounds)
    return cfg


def rough_play_cfg(cfg: ManagerBasedRLEnvCfg) -> ManagerBasedRLEnvCfg:
    """The play variant of a rough task: :func:`velocity_play_cfg`, with the envs spread
    over every level of the terrain (``env.scene.terrain.level=`` and ``.sub_terrain=``
    pin one) and no curriculum moving them."""
    velocity_play_cfg(cfg)
    if cfg.scene.terrain is not None:
        cfg.scene.terrain.max_init_level = cfg.scene.terrain.num_rows - 1
    return cfg
