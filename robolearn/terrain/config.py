"""A generated terrain's typed settings: a grid of tiles, rows of rising difficulty, columns
of sub-terrain types.

Row ``r`` of ``num_rows`` is difficulty ``lo + (hi - lo) * r / (num_rows - 1)`` over
``difficulty_range``; each column is one type, the columns shared out by ``proportion``.
Every type has one main quantity that difficulty scales from ``range[0]`` to ``range[1]``
(its units are in :data:`TYPES`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from robolearn.errors import RobolearnError

TYPES: dict[str, tuple[str, tuple[float, float]]] = {
    "flat": ("nothing (flat ground)", (0.0, 0.0)),
    "random_rough": ("bump amplitude, m (heights uniform in +-range)", (0.01, 0.06)),
    "pyramid_slope": ("slope, rise over run, up to a central platform", (0.0, 0.4)),
    "pyramid_slope_inv": ("slope, rise over run, down to a central pit", (0.0, 0.4)),
    "pyramid_stairs": ("step height, m, stairs up to a central platform", (0.02, 0.10)),
    "pyramid_stairs_inv": ("step height, m, stairs down to a central pit", (0.02, 0.10)),
    "discrete_obstacles": ("obstacle height, m (random boxes up and down)", (0.02, 0.10)),
    "gaps": ("gap width, m, a ring-shaped pit around the platform", (0.05, 0.30)),
}
"""Sub-terrain types: what ``SubTerrainCfg.range`` means for each, and its default."""


@dataclass
class SubTerrainCfg:
    """One column type of the terrain grid."""

    type: str = "flat"
    """One of :data:`TYPES`."""
    proportion: float = 1.0
    """Share of the columns (relative to the other sub-terrains' proportions)."""
    range: tuple[float, float] | None = None
    """The type's main quantity at difficulty 0 and 1; None takes the type's default."""
    platform_width: float = 1.5
    """Side of the flat square at a tile's center where robots spawn (m)."""
    feature_width: float = 0.3
    """Step depth of stairs, bump spacing of rough ground, obstacle size (m)."""


def default_sub_terrains() -> dict[str, SubTerrainCfg]:
    """Isaac Lab's and legged_gym's rough-terrain mix, in the quadruped's sizes."""
    return {
        "flat": SubTerrainCfg("flat", proportion=0.1),
        "random_rough": SubTerrainCfg("random_rough", proportion=0.2),
        "pyramid_slope": SubTerrainCfg("pyramid_slope", proportion=0.1),
        "pyramid_slope_inv": SubTerrainCfg("pyramid_slope_inv", proportion=0.1),
        "pyramid_stairs": SubTerrainCfg("pyramid_stairs", proportion=0.2),
        "pyramid_stairs_inv": SubTerrainCfg("pyramid_stairs_inv", proportion=0.2),
        "discrete_obstacles": SubTerrainCfg("discrete_obstacles", proportion=0.1),
    }


@dataclass
class TerrainCfg:
    """A generated terrain: one MuJoCo height field built into the model, seen the same by
    every engine, with an origin per tile where robots spawn."""

    seed: int = 0
    """The generator's seed: the same config and seed give the same heights, bit for bit."""
    num_rows: int = 10
    """Difficulty levels (rows, along x)."""
    num_cols: int = 10
    """Tiles per level (columns, along y), shared out among the sub-terrain types."""
    tile_size: tuple[float, float] = (8.0, 8.0)
    """A tile's size along x and y (m)."""
    border_width: float = 10.0
    """Flat ground around the grid (m), so robots leaving the outer tiles keep walking."""
    horizontal_scale: float = 0.1
    """Distance between height samples (m); steps are vertical within one sample."""
    difficulty_range: tuple[float, float] = (0.0, 1.0)
    """Difficulty of the first and last row, within [0, 1]."""
    sub_terrains: dict[str, SubTerrainCfg] = field(default_factory=default_sub_terrains)
    """The column types by name."""
    max_init_level: int = 3
    """With a curriculum, envs start on rows 0..max_init_level (drawn uniformly)."""
    level: int | None = None
    """Pin every env to this row (evaluation); None spreads them as training does."""
    sub_terrain: str | None = None
    """Pin every env to this sub-terrain's columns (evaluation); None uses every column."""

    def validate(self) -> None:
        """Raise RobolearnError, naming what is valid, for a config that cannot build.

        Every number must be finite (an ``inf`` or ``nan`` would end in the heights, and be
        blamed on the first term that reads them); sizes and sub-terrain ranges must not be
        negative; the height field must fit in memory (checked before it is allocated)."""
        for name, value in (("num_rows", self.num_rows), ("num_cols", self.num_cols)):
            if int(value) < 1:
                raise RobolearnError(f"terrain.{name} must be >= 1, got {value}")
        if len(self.tile_size) != 2:
            raise RobolearnError(f"terrain.tile_size is (x, y), got {self.tile_size}")
        _require("tile_size", self.tile_size, positive=True)
        _require("horizontal_scale", (self.horizontal_scale,), positive=True)
        _require("border_width", (self.border_width,))
        if len(self.difficulty_range) != 2:
            raise RobolearnError(
                f"terrain.difficulty_range is (low, high), got {self.difficulty_range}"
            )
        lo, hi = self.difficulty_range
        if not 0.0 <= lo <= hi <= 1.0:
            raise RobolearnError(
                "terrain.difficulty_range must be 0 <= low <= high <= 1, got "
                f"{self.difficulty_range}"
            )
        self._validate_sub_terrains()
        if self.level is not None and not 0 <= int(self.level) < int(self.num_rows):
            raise RobolearnError(
                f"terrain.level {self.level} is not a row; rows: 0..{int(self.num_rows) - 1}"
            )
        if self.sub_terrain is not None and self.sub_terrain not in self.sub_terrains:
            raise RobolearnError(
                f"terrain.sub_terrain {self.sub_terrain!r} is not one of the terrain's: "
                f"{', '.join(self.sub_terrains)}"
            )
        if int(self.max_init_level) < 0:
            raise RobolearnError(f"terrain.max_init_level must be >= 0, got {self.max_init_level}")
        self._require_memory()

    def _validate_sub_terrains(self) -> None:
        if not self.sub_terrains:
            raise RobolearnError(f"terrain.sub_terrains is empty; types: {', '.join(TYPES)}")
        for name, sub in self.sub_terrains.items():
            where = f"sub_terrains.{name}"
            if sub.type not in TYPES:
                raise RobolearnError(
                    f"terrain.{where}.type {sub.type!r} is unknown; types: {', '.join(TYPES)}"
                )
            _require(f"{where}.proportion", (sub.proportion,))
            _require(f"{where}.platform_width", (sub.platform_width,), positive=True)
            _require(f"{where}.feature_width", (sub.feature_width,), positive=True)
            if sub.range is not None:
                if len(sub.range) != 2:
                    raise RobolearnError(
                        f"terrain.{where}.range is (at difficulty 0, at 1), got {sub.range}"
                    )
                # a magnitude (the _inv types go down): a negative one would build the other
                # type, or nothing sensible (a negative gap)
                _require(f"{where}.range", sub.range, note=" (a magnitude; the _inv types go down)")
        if not sum(float(s.proportion) for s in self.sub_terrains.values()) > 0:
            raise RobolearnError("terrain.sub_terrains' proportions must sum to more than 0")

    def samples(self) -> tuple[int, int]:
        """The height field's size in samples, (along x, along y), border included."""
        hs = float(self.horizontal_scale)
        tnx, tny = (max(3, round(float(s) / hs)) for s in self.tile_size)
        border = round(float(self.border_width) / hs)
        return int(self.num_rows) * tnx + 2 * border + 1, int(self.num_cols) * tny + 2 * border + 1

    def _require_memory(self) -> None:
        from robolearn.sim.memory import require

        nx, ny = self.samples()
        # float64 while generated, float32 in the model, its spec and the scans' copy
        require(
            nx * ny * _BYTES_PER_SAMPLE,
            "cpu",
            f"a terrain of {nx:,} x {ny:,} height samples (terrain.horizontal_scale "
            f"{self.horizontal_scale} m over {self.num_rows} x {self.num_cols} tiles of "
            f"{tuple(self.tile_size)} m) would",
            advice="raise terrain.horizontal_scale, or use fewer or smaller tiles",
        )


_BYTES_PER_SAMPLE = 8 + 3 * 4


def _require(name: str, values, positive: bool = False, note: str = "") -> None:
    """Each of ``values`` a finite number, > 0 or >= 0, or a one-line error naming it."""
    values = tuple(values)
    try:
        numbers = [float(v) for v in values]
    except (TypeError, ValueError):
        numbers = []
    bound = "> 0" if positive else ">= 0"
    ok = bool(numbers) and all(
        math.isfinite(v) and (v > 0 if positive else v >= 0) for v in numbers
    )
    if not ok:
        shown = values[0] if len(values) == 1 else values
        raise RobolearnError(f"terrain.{name} must be finite and {bound}{note}, got {shown}")
