"""The terrain generator: a :class:`TerrainCfg` to one height map with an origin per tile.

Heights are a (nx, ny) grid sampled every ``horizontal_scale`` metres, x along the rows of
difficulty and y along the columns of types, with flat border around. Each tile draws from
its own random stream (seeded by the config's seed and the tile's row and column), so a
tile's heights do not depend on the other tiles or on the order they are made in.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robolearn.terrain.config import TYPES, SubTerrainCfg, TerrainCfg

GAP_DEPTH = 1.0
"""Depth of a gap's pit (m): deep enough that a foot in it does not reach the bottom."""


@dataclass
class TerrainGrid:
    """A generated terrain: heights, where they lie, and where each tile's robots spawn."""

    heights: np.ndarray
    """(nx, ny) float64 heights (m); sample (i, j) is at (x0 + i h, y0 + j h)."""
    x0: float
    y0: float
    horizontal_scale: float
    tile_origins: np.ndarray
    """(num_rows, num_cols, 3) spawn point of each tile: its center, on the ground."""
    column_types: list[str]
    """The sub-terrain (a key of ``TerrainCfg.sub_terrains``) of each column."""
    difficulties: np.ndarray
    """(num_rows,) difficulty of each row, in [0, 1]."""
    tile_size: tuple[float, float]


def column_types(cfg: TerrainCfg) -> list[str]:
    """The sub-terrain of each column: columns shared out by proportion, in config order."""
    names = [n for n, s in cfg.sub_terrains.items() if s.proportion > 0]
    shares = np.array([cfg.sub_terrains[n].proportion for n in names], dtype=np.float64)
    bounds = np.cumsum(shares / shares.sum())
    cols = int(cfg.num_cols)
    picks = np.searchsorted(bounds, (np.arange(cols) + 0.5) / cols, side="right")
    return [names[min(int(k), len(names) - 1)] for k in picks]


def generate(cfg: TerrainCfg) -> TerrainGrid:
    """The terrain ``cfg`` describes (``cfg`` must be valid: see TerrainCfg.validate)."""
    cfg.validate()
    hs = float(cfg.horizontal_scale)
    rows, cols = int(cfg.num_rows), int(cfg.num_cols)
    tnx, tny = (max(3, round(float(s) / hs)) for s in cfg.tile_size)
    border = round(float(cfg.border_width) / hs)
    nx, ny = cfg.samples()
    heights = np.zeros((nx, ny))
    x0, y0 = -(nx - 1) * hs / 2, -(ny - 1) * hs / 2
    lo, hi = cfg.difficulty_range
    difficulties = np.array([lo + (hi - lo) * r / max(rows - 1, 1) for r in range(rows)])
    types = column_types(cfg)
    origins = np.zeros((rows, cols, 3))
    for r in range(rows):
        for c in range(cols):
            sub = cfg.sub_terrains[types[c]]
            rng = np.random.default_rng([int(cfg.seed), r, c])
            tile = make_tile(sub, float(difficulties[r]), tnx, tny, hs, rng)
            i, j = border + r * tnx, border + c * tny
            heights[i : i + tnx, j : j + tny] = tile
            ci, cj = i + (tnx - 1) / 2, j + (tny - 1) / 2
            origins[r, c] = (x0 + ci * hs, y0 + cj * hs, _spawn_height(tile, hs))
    return TerrainGrid(heights, x0, y0, hs, origins, types, difficulties, tuple(cfg.tile_size))


def _spawn_height(tile: np.ndarray, hs: float, radius: float = 0.3) -> float:
    """The highest ground within ``radius`` of the tile's center: a robot placed there at
    its standing height clears every bump under it."""
    nx, ny = tile.shape
    k = max(1, round(radius / hs))
    ci, cj = nx // 2, ny // 2
    return float(tile[max(ci - k, 0) : ci + k + 1, max(cj - k, 0) : cj + k + 1].max())


def make_tile(
    sub: SubTerrainCfg, difficulty: float, nx: int, ny: int, hs: float, rng: np.random.Generator
) -> np.ndarray:
    """One tile's (nx, ny) heights for ``sub`` at ``difficulty`` in [0, 1]."""
    lo, hi = sub.range if sub.range is not None else TYPES[sub.type][1]
    value = float(lo) + (float(hi) - float(lo)) * difficulty
    # Chebyshev distance of each sample from the tile's center: pyramids are square rings.
    x = (np.arange(nx) - (nx - 1) / 2) * hs
    y = (np.arange(ny) - (ny - 1) / 2) * hs
    ring = np.maximum(np.abs(x)[:, None], np.abs(y)[None, :])
    half = min(nx - 1, ny - 1) * hs / 2
    platform = float(sub.platform_width) / 2
    on_platform = ring <= platform
    kind = sub.type
    if kind == "flat":
        return np.zeros((nx, ny))
    if kind == "random_rough":
        tile = _rough(value, float(sub.feature_width), nx, ny, hs, rng)
        tile[on_platform] = 0.0
        return tile
    if kind in ("pyramid_slope", "pyramid_slope_inv"):
        tile = value * (half - np.maximum(ring, platform))
        return tile if kind == "pyramid_slope" else -tile
    if kind in ("pyramid_stairs", "pyramid_stairs_inv"):
        width = float(sub.feature_width)
        steps = np.floor((half - np.maximum(ring, platform)) / width)
        tile = value * steps
        return tile if kind == "pyramid_stairs" else -tile
    if kind == "discrete_obstacles":
        tile = _obstacles(value, float(sub.feature_width), nx, ny, hs, rng)
        tile[on_platform] = 0.0
        return tile
    if kind == "gaps":
        tile = np.zeros((nx, ny))
        tile[(ring > platform) & (ring <= platform + value)] = -GAP_DEPTH
        return tile
    raise AssertionError(f"unvalidated type {kind}")  # TerrainCfg.validate names the types


def _rough(amplitude: float, spacing: float, nx: int, ny: int, hs: float, rng) -> np.ndarray:
    """Uniform bumps in [-amplitude, amplitude] every ``spacing`` m, linearly interpolated
    (legged_gym's random uniform terrain)."""
    step = max(1, round(spacing / hs))
    coarse = rng.uniform(-amplitude, amplitude, (nx // step + 2, ny // step + 2))
    xi, yi = np.arange(nx) / step, np.arange(ny) / step
    i0, j0 = np.floor(xi).astype(int), np.floor(yi).astype(int)
    fx, fy = (xi - i0)[:, None], (yi - j0)[None, :]
    c00 = coarse[np.ix_(i0, j0)]
    c10 = coarse[np.ix_(i0 + 1, j0)]
    c01 = coarse[np.ix_(i0, j0 + 1)]
    c11 = coarse[np.ix_(i0 + 1, j0 + 1)]
    return (c00 * (1 - fx) + c10 * fx) * (1 - fy) + (c01 * (1 - fx) + c11 * fx) * fy


def _obstacles(height: float, size: float, nx: int, ny: int, hs: float, rng) -> np.ndarray:
    """Random boxes, ``size`` to 3 x ``size`` wide, up or down by ``height`` or half of it
    (legged_gym's discrete obstacles), about one per 2 square metres."""
    tile = np.zeros((nx, ny))
    count = max(1, round(nx * ny * hs * hs / 2))
    for _ in range(count):
        w = rng.uniform(size, 3 * size, 2) / hs
        wi, wj = max(1, round(w[0])), max(1, round(w[1]))
        i, j = rng.integers(0, max(1, nx - wi)), rng.integers(0, max(1, ny - wj))
        tile[i : i + wi, j : j + wj] = rng.choice([-height, -height / 2, height / 2, height])
    return tile
