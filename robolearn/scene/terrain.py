"""The terrain in a running scene: the ground's heights, and the tile each env is on.

Rows of tiles are difficulty levels, columns are sub-terrain types. Envs are shared out
among the columns in contiguous blocks (legged_gym's and Isaac Lab's layout) and start on
rows 0..``max_init_level``; a terrain curriculum moves them between rows with
:meth:`SceneTerrain.move`. An env's origin is the center of its tile, on the ground: resets
place the robot there.
"""

from __future__ import annotations

import mujoco
import torch

from robolearn.terrain import TERRAIN_GEOM, HeightMap, TerrainCfg, TerrainGrid


class SceneTerrain:
    """A generated terrain's heights and tiles, and each env's tile, on ``device``."""

    def __init__(
        self,
        cfg: TerrainCfg,
        grid: TerrainGrid,
        model: mujoco.MjModel,
        num_envs: int,
        device: torch.device,
    ) -> None:
        self.cfg = cfg
        geom = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, TERRAIN_GEOM)
        self.geom_id = geom
        """The terrain's height field geom."""
        self.height_map = HeightMap(model, geom, device)
        self.num_rows, self.num_cols = grid.tile_origins.shape[:2]
        self.tile_size = grid.tile_size
        self.tile_origins = torch.as_tensor(grid.tile_origins, dtype=torch.float32, device=device)
        """(rows, cols, 3) the spawn point of each tile."""
        self.column_types = list(grid.column_types)
        """The sub-terrain name of each column."""
        self.type_names = list(dict.fromkeys(self.column_types))
        """The sub-terrain names that have columns, in column order."""
        self.difficulties = grid.difficulties
        cols = [c for c, t in enumerate(self.column_types) if cfg.sub_terrain in (None, t)]
        blocks = torch.arange(num_envs, device=device) * len(cols) // max(num_envs, 1)
        self.env_cols = torch.as_tensor(cols, device=device)[blocks]
        """(N,) each env's column (its sub-terrain type)."""
        self.env_types = torch.as_tensor(
            [self.type_names.index(t) for t in self.column_types], device=device
        )[self.env_cols]
        """(N,) index into :attr:`type_names` of each env's sub-terrain."""
        if cfg.level is not None:
            levels = torch.full((num_envs,), int(cfg.level), device=device)
        else:
            top = min(int(cfg.max_init_level), self.num_rows - 1)
            levels = torch.randint(0, top + 1, (num_envs,), device=device)
        self.levels = levels
        """(N,) each env's row (difficulty level)."""
        self.env_origins = self.tile_origins[self.levels, self.env_cols]
        """(N, 3) where each env's robot spawns."""
        self._envs_per_type = torch.zeros(len(self.type_names), device=device).index_add_(
            0, self.env_types, torch.ones(num_envs, device=device)
        )

    def move(self, up: torch.Tensor, down: torch.Tensor) -> None:
        """Move envs one row up where ``up``, one down where ``down`` (both (N,) bool);
        past the top row an env goes to a random row (so the hardest terrain keeps being
        mixed with the rest), below row 0 it stays there. Pinned levels stay."""
        if self.cfg.level is not None:
            return
        levels = self.levels + up.long() - down.long()
        wrapped = torch.randint_like(levels, 0, self.num_rows)
        levels = torch.where(levels >= self.num_rows, wrapped, levels.clamp(min=0))
        self.levels.copy_(levels)
        self.env_origins.copy_(self.tile_origins[levels, self.env_cols])

    def mean_level(self) -> torch.Tensor:
        """The mean row over envs, a 0-d tensor (``Curriculum/terrain_level``)."""
        return self.levels.float().mean()

    def mean_level_per_type(self) -> dict[str, torch.Tensor]:
        """The mean row of each sub-terrain type's envs (0-d tensors, no host sync)."""
        sums = torch.zeros_like(self._envs_per_type).index_add_(
            0, self.env_types, self.levels.float()
        )
        means = sums / self._envs_per_type.clamp(min=1)
        return {name: means[k] for k, name in enumerate(self.type_names)}
