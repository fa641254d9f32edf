"""Debug drawings added to a MuJoCo scene, for the videos, the server-rendered frames and
the native viewer: every kind of :class:`~robolearn.managers.Marker` (arrow, sphere, box,
frame, line, text) that the env's terms draw (velocity arrows, targets, a height scan's
points, the terrain label: :func:`robolearn.render.markers.collect_markers`). Contacts in
these pictures come from MuJoCo's own visualization flags (:func:`contact_option`: contact
points and forces); the browser's 3D mode gets them as arrows
(:func:`~robolearn.render.markers.contact_force_markers`).
"""

from __future__ import annotations

import mujoco
import numpy as np

from robolearn.managers.markers import Marker

__all__ = [
    "add_arrow",
    "add_marker",
    "contact_option",
]

_AXIS_RGB = ((0.9, 0.1, 0.1), (0.1, 0.8, 0.1), (0.1, 0.3, 1.0))  # a frame's x, y, z
_IDENTITY = np.eye(3).flatten()


def add_marker(scene: mujoco.MjvScene, marker: Marker) -> None:
    """Append a :class:`~robolearn.managers.Marker` of any kind to ``scene``, as far as
    there is room (a frame takes three geoms)."""
    if scene.ngeom >= scene.maxgeom:
        return
    kind = marker.kind
    rgba = np.asarray(marker.rgba, dtype=np.float32)
    if kind == "arrow":
        add_arrow(scene, marker.start, marker.end, rgba, width=marker.size)
    elif kind == "line":
        _add_connector(
            scene, mujoco.mjtGeom.mjGEOM_CYLINDER, marker.start, marker.end, rgba, marker.size
        )
    elif kind == "sphere":
        _add_geom(
            scene,
            mujoco.mjtGeom.mjGEOM_SPHERE,
            np.full(3, marker.size),
            marker.start,
            _IDENTITY,
            rgba,
        )
    elif kind == "box":
        half = marker.half_extents if marker.half_extents is not None else (marker.size,) * 3
        _add_geom(
            scene,
            mujoco.mjtGeom.mjGEOM_BOX,
            np.asarray(half, dtype=np.float64),
            marker.start,
            _rotation(marker.quat),
            rgba,
        )
    elif kind == "frame":
        axes = _rotation(marker.quat).reshape(3, 3)
        start = np.asarray(marker.start, dtype=np.float64)
        width = max(marker.size / 25.0, 1e-3)
        for k, rgb in enumerate(_AXIS_RGB):
            color = np.asarray((*rgb, marker.rgba[3]), dtype=np.float32)
            add_arrow(scene, start, start + marker.size * axes[:, k], color, width=width)
    elif kind == "text":
        # MuJoCo writes a geom's label beside it: an invisible dot carries the text.
        geom = _add_geom(
            scene,
            mujoco.mjtGeom.mjGEOM_SPHERE,
            np.full(3, 1e-3),
            marker.start,
            _IDENTITY,
            np.zeros(4, dtype=np.float32),
        )
        geom.label = marker.text[:99]  # mjvGeom.label holds 100 bytes


def add_arrow(scene: mujoco.MjvScene, start, end, rgba: np.ndarray, width: float = 0.025) -> None:
    """Append an arrow from ``start`` to ``end`` (world, m) to ``scene``, if there is room."""
    _add_connector(scene, mujoco.mjtGeom.mjGEOM_ARROW, start, end, rgba, width)


def _add_connector(
    scene: mujoco.MjvScene, kind, start, end, rgba: np.ndarray, width: float
) -> None:
    if scene.ngeom >= scene.maxgeom:
        return
    start, end = np.asarray(start, dtype=np.float64), np.asarray(end, dtype=np.float64)
    if np.linalg.norm(end - start) < 1e-4:
        return
    geom = scene.geoms[scene.ngeom]
    mujoco.mjv_initGeom(geom, kind, np.zeros(3), np.zeros(3), np.zeros(9), rgba)
    mujoco.mjv_connector(geom, kind, width, start, end)
    scene.ngeom += 1


def _add_geom(scene: mujoco.MjvScene, kind, size, pos, mat, rgba: np.ndarray):
    """Append one geom (the caller checked there is room); returns it."""
    geom = scene.geoms[scene.ngeom]
    mujoco.mjv_initGeom(geom, kind, size, np.asarray(pos, dtype=np.float64), mat, rgba)
    scene.ngeom += 1
    return geom


def _rotation(quat) -> np.ndarray:
    """A (w, x, y, z) quaternion (None: none) as a flat 3x3 rotation matrix."""
    if quat is None:
        return _IDENTITY
    q = np.asarray(quat, dtype=np.float64)
    norm = np.linalg.norm(q)
    if not np.isfinite(norm) or norm < 1e-9:
        return _IDENTITY
    mat = np.zeros(9)
    mujoco.mju_quat2Mat(mat, q / norm)
    return mat


def contact_option(show: bool = True) -> mujoco.MjvOption:
    """Scene options that draw contact points and contact forces."""
    option = mujoco.MjvOption()
    option.flags[mujoco.mjtVisFlag.mjVIS_CONTACTPOINT] = show
    option.flags[mujoco.mjtVisFlag.mjVIS_CONTACTFORCE] = show
    return option
