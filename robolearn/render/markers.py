"""What viewers and videos draw for an env: every term's markers, gathered, and the
scene's own drawings (the terrain label, contact forces, the root's frame).

The marker type and its palette are :mod:`robolearn.managers.markers`; this module reads a
running env to fill a list of them, per displayed env per frame, never in the training
step.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch

from robolearn.managers.markers import CONTACT_RGBA, LABEL_RGBA, Marker
from robolearn.scene.sensors import BodyContactSensor, RayCaster

if TYPE_CHECKING:
    from robolearn.env import ManagerBasedRLEnv


# The managers whose terms may draw, in the order their markers are drawn.
MANAGERS = (
    "command_manager",
    "observation_manager",
    "action_manager",
    "reward_manager",
    "termination_manager",
    "event_manager",
    "curriculum_manager",
)


def term_markers(env: ManagerBasedRLEnv, env_id: int) -> list[Marker]:
    """What the terms of every manager draw for env ``env_id``: each term that has
    ``debug_markers`` (command terms only with ``cfg.debug_vis`` on)."""
    markers: list[Marker] = []
    for name in MANAGERS:
        manager = getattr(env, name, None)
        if manager is not None:
            markers += manager.debug_markers(env_id)
    return markers


def collect_markers(
    env: ManagerBasedRLEnv,
    env_id: int,
    *,
    contacts: bool = False,
    contact_scale: float | None = None,
    root_frame: bool = False,
) -> list[Marker]:
    """Everything drawn for env ``env_id``: the terms' markers (:func:`term_markers`), the
    terrain label, and on request the external forces on bodies as arrows
    (:func:`contact_force_markers`) and the root body's frame (:func:`root_frame_markers`).

    Read on the thread that steps the env, between steps (a viewer's simulation thread).
    """
    markers = term_markers(env, env_id) + terrain_label(env, env_id) + sensor_markers(env, env_id)
    if contacts:
        markers += contact_force_markers(env, env_id, contact_scale)
    if root_frame:
        markers += root_frame_markers(env, env_id)
    return markers


RAY_HIT_RGBA = (0.1, 0.8, 1.0, 0.9)
"""Cyan: where a ray caster's rays hit."""
TOUCH_RGBA = (0.2, 0.9, 0.2, 0.9)
"""Green: a contact sensor's bodies that touch something."""
MAX_RAY_MARKERS = 400
"""A denser pattern (a depth image) is drawn every k-th ray, to stay drawable per frame."""


def sensor_markers(env: ManagerBasedRLEnv, env_id: int) -> list[Marker]:
    """The readings of the scene's sensors whose config sets ``debug_vis``, for env
    ``env_id``: a ray caster's hits as small spheres, a contact sensor's touching bodies
    as larger ones."""
    markers: list[Marker] = []
    for sensor in env.scene.sensors.values():
        if not sensor.cfg.debug_vis:
            continue
        if isinstance(sensor, RayCaster):
            stride = max(1, math.ceil(sensor.num_rays / MAX_RAY_MARKERS))
            hits = sensor.hits_w[env_id, ::stride][sensor.hit[env_id, ::stride]]
            markers += [
                Marker("sphere", (x, y, z), rgba=RAY_HIT_RGBA, size=0.012)
                for x, y, z in hits.detach().cpu().double().tolist()  # one transfer
            ]
        elif isinstance(sensor, BodyContactSensor):
            ids = sensor.body_ids[sensor.in_contact[env_id].to(sensor.body_ids.device)]
            points = env.scene.engine.xpos[env_id, ids]
            markers += [
                Marker("sphere", (x, y, z), rgba=TOUCH_RGBA, size=0.04)
                for x, y, z in points.detach().cpu().double().tolist()
            ]
    return markers


def terrain_label(env: ManagerBasedRLEnv, env_id: int) -> list[Marker]:
    """On a generated terrain, env ``env_id``'s sub-terrain and level written above its
    robot; nothing elsewhere."""
    terrain = env.scene.terrain
    if terrain is None or env.scene.root_body_id is None:
        return []
    x, y, z = env.scene.root_pos_w[env_id].tolist()
    kind = terrain.column_types[int(terrain.env_cols[env_id])]
    text = f"{kind}, level {int(terrain.levels[env_id])}/{terrain.num_rows - 1}"
    return [Marker("text", (x, y, z + 0.5), text=text, rgba=LABEL_RGBA)]


def model_weight(env: ManagerBasedRLEnv) -> float:
    """The whole model's weight, N (its mass under its gravity, or 9.81 m/s^2 without)."""
    model = env.scene.model
    gravity = math.sqrt(sum(float(g) ** 2 for g in model.opt.gravity)) or 9.81
    return float(model.body_subtreemass[0]) * gravity


def contact_force_markers(
    env: ManagerBasedRLEnv,
    env_id: int,
    scale: float | None = None,
    rgba: tuple[float, float, float, float] = CONTACT_RGBA,
    min_force: float | None = None,
) -> list[Marker]:
    """The net external force on each body of env ``env_id`` as an arrow, ``scale`` m per
    N (None: the model's weight is 0.5 m long), for every body with more than
    ``min_force`` N (None: 1% of the model's weight).

    Read from the engine's ``cfrc_ext`` (every engine has it): contacts, and also pushes
    and equality constraints, summed per body. A body's contacts make one arrow, not one
    per contact point: it lies on the summed force's line of action, starting at the
    point of that line nearest the body's origin (for a foot flat on the ground, above
    its centre of pressure), pointing along the force.
    """
    engine, weight = env.scene.engine, model_weight(env)
    if scale is None:
        scale = 0.5 / weight if weight > 0 else 1e-3
    if min_force is None:
        min_force = 0.01 * weight
    # one transfer: wrench (torque, force), subtree centre of mass, origin of every body
    rows = torch.cat(
        (engine.cfrc_ext[env_id], engine.subtree_com[env_id], engine.xpos[env_id]), dim=-1
    )
    rows = rows.detach().to("cpu", torch.float64)
    torque, force, origin = rows[1:, 0:3], rows[1:, 3:6], rows[1:, 9:12]  # body 0: the world
    # cfrc_ext is taken about the centre of mass of the body's whole tree
    centre = rows[:, 6:9][torch.as_tensor(env.scene.model.body_rootid[1:], dtype=torch.long)]
    norm2 = (force * force).sum(-1)
    keep = norm2 > max(min_force, 1e-9) ** 2
    if not bool(keep.any()):
        return []
    torque, force, centre, origin, norm2 = (t[keep] for t in (torque, force, centre, origin, norm2))
    # The point of the line of action nearest the centre (c + f x tau / |f|^2), then the
    # one nearest the body's origin along it.
    on_line = centre + torch.linalg.cross(force, torque) / norm2.unsqueeze(-1)
    direction = force / norm2.sqrt().unsqueeze(-1)
    along = ((origin - on_line) * direction).sum(-1, keepdim=True)
    start = on_line + along * direction
    end = start + scale * force
    return [
        Marker("arrow", (a[0], a[1], a[2]), (b[0], b[1], b[2]), rgba, size=0.012)
        for a, b in zip(start.tolist(), end.tolist(), strict=True)
    ]


def root_frame_markers(env: ManagerBasedRLEnv, env_id: int, length: float = 0.3) -> list[Marker]:
    """The root body's frame (x red, y green, z blue, ``length`` m long) of env
    ``env_id``; nothing for a model with no floating root."""
    scene = env.scene
    if scene.root_body_id is None:
        return []
    pose = torch.cat((scene.root_pos_w[env_id], scene.root_quat_w[env_id])).tolist()
    return [Marker("frame", tuple(pose[:3]), quat=tuple(pose[3:]), size=length)]
