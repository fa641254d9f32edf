"""Debug drawings added to a MuJoCo scene: what command terms draw (velocity arrows,
targets); contacts come from MuJoCo's own visualization flags (contact points and forces)."""

from __future__ import annotations

import mujoco
import numpy as np


def add_marker(scene: mujoco.MjvScene, marker) -> None:
    """Append a :class:`~robolearn.managers.Marker` (an arrow or a sphere) to ``scene``, if
    there is room."""
    if scene.ngeom >= scene.maxgeom:
        return
    rgba = np.asarray(marker.rgba, dtype=np.float32)
    if marker.kind == "arrow":
        add_arrow(scene, marker.start, marker.end, rgba, width=marker.size)
    elif marker.kind == "sphere":
        geom = scene.geoms[scene.ngeom]
        mujoco.mjv_initGeom(
            geom,
            mujoco.mjtGeom.mjGEOM_SPHERE,
            np.full(3, marker.size),
            np.asarray(marker.start, dtype=np.float64),
            np.eye(3).flatten(),
            rgba,
        )
        scene.ngeom += 1


def add_arrow(scene: mujoco.MjvScene, start, end, rgba: np.ndarray, width: float = 0.025) -> None:
    """Append an arrow from ``start`` to ``end`` (world, m) to ``scene``, if there is room."""
    if scene.ngeom >= scene.maxgeom:
        return
    start, end = np.asarray(start, dtype=np.float64), np.asarray(end, dtype=np.float64)
    if np.linalg.norm(end - start) < 1e-4:
        return
    geom = scene.geoms[scene.ngeom]
    mujoco.mjv_initGeom(
        geom, mujoco.mjtGeom.mjGEOM_ARROW, np.zeros(3), np.zeros(3), np.zeros(9), rgba
    )
    mujoco.mjv_connector(geom, mujoco.mjtGeom.mjGEOM_ARROW, width, start, end)
    scene.ngeom += 1


def contact_option(show: bool = True) -> mujoco.MjvOption:
    """Scene options that draw contact points and contact forces."""
    option = mujoco.MjvOption()
    option.flags[mujoco.mjtVisFlag.mjVIS_CONTACTPOINT] = show
    option.flags[mujoco.mjtVisFlag.mjVIS_CONTACTFORCE] = show
    return option


def command_markers(env, env_id: int) -> list:
    """What the env's command terms draw for env ``env_id`` (velocity arrows, targets...):
    their :meth:`~robolearn.managers.CommandTerm.debug_markers`, for terms with
    ``debug_vis`` on."""
    markers = []
    for term in env.command_manager.terms.values():
        if term.cfg.debug_vis:
            markers += term.debug_markers(env_id)
    return markers
