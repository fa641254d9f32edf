"""Debug drawings added to a MuJoCo scene: velocity arrows; contacts come from MuJoCo's own
visualization flags (contact points and forces)."""

from __future__ import annotations

import mujoco
import numpy as np

COMMAND_RGBA = np.array([0.1, 0.8, 0.2, 0.9], dtype=np.float32)
"""Green: the commanded base velocity."""
ACTUAL_RGBA = np.array([0.15, 0.35, 1.0, 0.9], dtype=np.float32)
"""Blue: the actual base velocity."""


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


def velocity_arrows(env, env_id: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(start, end, rgba) of the commanded and actual base velocity arrows of one env."""
    from robolearn.managers import UniformVelocityCommand

    arrows = []
    for term in env.command_manager.terms.values():
        if isinstance(term, UniformVelocityCommand) and term.cfg.debug_vis:
            origin, commanded, actual = (
                t[env_id].detach().cpu().double().numpy() for t in term.debug_arrows()
            )
            arrows.append((origin, origin + commanded, COMMAND_RGBA))
            lifted = origin + np.array([0.0, 0.0, 0.05])  # drawn just above the command
            arrows.append((lifted, lifted + actual, ACTUAL_RGBA))
    return arrows
