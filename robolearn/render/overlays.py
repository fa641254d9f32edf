"""Debug drawings added to a MuJoCo scene: what command terms draw (velocity arrows,
targets), what observation terms draw (a height scan's points), the terrain tile of the
env; contacts come from MuJoCo's own visualization flags (contact points and forces)."""

from __future__ import annotations

import mujoco
import numpy as np

from robolearn.managers import Marker


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
    elif marker.kind == "text":
        # MuJoCo writes a geom's label beside it: an invisible dot carries the text.
        geom = scene.geoms[scene.ngeom]
        mujoco.mjv_initGeom(
            geom,
            mujoco.mjtGeom.mjGEOM_SPHERE,
            np.full(3, 1e-3),
            np.asarray(marker.start, dtype=np.float64),
            np.eye(3).flatten(),
            np.zeros(4, dtype=np.float32),
        )
        geom.label = marker.text[:99]  # mjvGeom.label holds 100 bytes
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
    """What the env's terms draw for env ``env_id``: the command terms' markers (velocity
    arrows, targets...) for terms with ``debug_vis`` on, then those of any class-based
    observation term that has ``debug_markers`` (a height scan's ground points)."""
    markers = []
    for term in env.command_manager.terms.values():
        if term.cfg.debug_vis:
            markers += term.debug_markers(env_id)
    return markers + env.observation_manager.debug_markers(env_id) + terrain_label(env, env_id)


def terrain_label(env, env_id: int) -> list:
    """On a generated terrain, env ``env_id``'s sub-terrain and level written above its
    robot; nothing elsewhere."""
    terrain = env.scene.terrain
    if terrain is None or env.scene.root_body_id is None:
        return []
    x, y, z = env.scene.root_pos_w[env_id].tolist()
    kind = terrain.column_types[int(terrain.env_cols[env_id])]
    text = f"{kind}, level {int(terrain.levels[env_id])}/{terrain.num_rows - 1}"
    return [Marker("text", (x, y, z + 0.5), text=text)]
