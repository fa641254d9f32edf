"""A generated terrain into a model: one MuJoCo height field in place of the ground planes.

One height field (not boxes) because both engines collide it with every primitive the
robots use (MuJoCo's ``mjc_ConvexHField``; MuJoCo Warp's convex-height-field path) at a
cost that grows with the cells under a geom, not with the size of the terrain, and because
its surface is known exactly on the torch side (:mod:`robolearn.terrain.heightmap`).
"""

from __future__ import annotations

import mujoco
import numpy as np

from robolearn.terrain.generator import TerrainGrid

TERRAIN_GEOM = "terrain"
"""The name of the height field geom (and of its asset) a terrain adds."""
BASE_THICKNESS = 1.0
"""Solid ground below the lowest point of the terrain (m)."""


def add_terrain(spec: mujoco.MjSpec, grid: TerrainGrid) -> None:
    """Replace the world's ground planes with ``grid`` as one height field geom.

    The first plane's material and contact settings (contype, conaffinity, condim,
    friction) carry over to the terrain, so a scene file's floor decides how the terrain
    looks and touches.
    """
    planes = [g for g in spec.worldbody.geoms if g.type == mujoco.mjtGeom.mjGEOM_PLANE]
    heights = grid.heights
    lo, hi = float(heights.min()), float(heights.max())
    span = hi - lo
    # MuJoCo normalizes height field data to [0, 1]; give it data already normalized so the
    # compiled heights are exactly lo + data * span.
    data = (heights - lo) / span if span > 0 else np.zeros_like(heights)
    nx, ny = heights.shape
    hs = grid.horizontal_scale
    rx, ry = (nx - 1) * hs / 2, (ny - 1) * hs / 2
    spec.add_hfield(
        name=TERRAIN_GEOM,
        size=[rx, ry, span if span > 0 else 1.0, BASE_THICKNESS],
        nrow=ny,
        ncol=nx,
        userdata=data.T.ravel().tolist(),  # MuJoCo's rows run along y
    )
    geom = spec.worldbody.add_geom(
        name=TERRAIN_GEOM,
        type=mujoco.mjtGeom.mjGEOM_HFIELD,
        hfieldname=TERRAIN_GEOM,
        pos=[grid.x0 + rx, grid.y0 + ry, lo],
    )
    if planes:
        floor = planes[0]
        geom.material = floor.material
        geom.rgba = floor.rgba
        geom.contype, geom.conaffinity = floor.contype, floor.conaffinity
        geom.condim = floor.condim
        geom.friction = floor.friction
    for plane in planes:
        spec.delete(plane)
