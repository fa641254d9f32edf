"""Objects that differ per env: a made object's shape, size, mass and friction drawn per env
(Isaac Lab's multi-asset spawner and mjlab's variant entities, on per-env model fields).

No engine varies a geom's type per env (MuJoCo's batch shares the model's structure;
MuJoCo Warp compiles its collision kernels per pair of geom types), so a made object with
several ``shapes`` (:class:`~robolearn.scene.EntityCfg`) carries one geom per shape, and
:func:`randomize_object` gives each env one of them at its drawn size and shrinks the
others to a speck at the centre (invisible, and never touching anything). What is varied
is what both engines hold per env: ``geom_size``, ``geom_rbound`` and ``geom_aabb`` (the
collision bounds that must follow the size), ``geom_rgba``, ``geom_friction``,
``body_mass`` and ``body_inertia``; the task lists them in ``sim.per_env_fields``
(:data:`OBJECT_PER_ENV_FIELDS`).
"""

from __future__ import annotations

import math

import torch

from robolearn.config import check_range
from robolearn.errors import RobolearnError
from robolearn.managers.base import as_env_mask
from robolearn.math import sample_uniform
from robolearn.mdp.protocol import TaskEnv
from robolearn.scene.assembly import NO_SIZE
from robolearn.sim import DEFAULT_PER_ENV_FIELDS

OBJECT_FIELDS = (
    "geom_size",
    "geom_rbound",
    "geom_aabb",
    "geom_rgba",
    "geom_friction",
    "body_mass",
    "body_inertia",
)
"""The model fields :func:`randomize_object` writes per env."""

OBJECT_PER_ENV_FIELDS: tuple[str, ...] = tuple(
    dict.fromkeys((*DEFAULT_PER_ENV_FIELDS, *OBJECT_FIELDS))
)
"""``sim.per_env_fields`` for a task that randomizes its objects: the defaults and
:data:`OBJECT_FIELDS`."""


def randomize_object(
    env: TaskEnv,
    env_mask: torch.Tensor,
    entity: str = "object",
    size_scale: tuple[float, float] = (1.0, 1.0),
    mass_range: tuple[float, float] | None = None,
    friction_range: tuple[float, float] | None = None,
) -> None:
    """Give each env's made object ``entity`` one of its shapes (uniformly), its half-sizes
    times uniform(``size_scale``), a mass uniform in ``mass_range`` kg (None: the config's)
    with the solid shape's inertia, and a sliding friction uniform in ``friction_range``
    (None: the config's). Use it as a ``startup`` event (or ``reset``, to redraw per
    episode)."""
    env_mask = as_env_mask(env, env_mask)
    scene, e = env.scene, env.scene.engine
    cfg, (low_s, high_s), (low_m, high_m), (low_f, high_f) = _checked(
        env, entity, size_scale, mass_range, friction_range
    )
    n, dev, dtype = env.num_envs, env.device, e.dtype
    model = scene.model
    geoms = [model.geom(f"{entity}/{shape}").id for shape in cfg.shapes]
    body = model.body(f"{entity}/box").id
    pick = torch.randint(len(geoms), (n,), device=dev)
    scale = sample_uniform(low_s, high_s, (n,), dev).to(dtype)
    m = sample_uniform(low_m, high_m, (n,), dev).to(dtype)
    half = torch.tensor(cfg.box, device=dev, dtype=dtype) * scale.unsqueeze(-1)  # (N, 3)
    mask1 = env_mask.unsqueeze(-1)

    size, rbound, aabb = e.model_field("geom_size"), e.model_field("geom_rbound"), None
    aabb = e.model_field("geom_aabb")
    rgba, friction = e.model_field("geom_rgba"), e.model_field("geom_friction")
    inertia = torch.zeros(n, 3, device=dev, dtype=dtype)
    speck = torch.full((n, 3), NO_SIZE, device=dev, dtype=dtype)
    alpha = float(cfg.rgba[3])
    for k, (shape, g) in enumerate(zip(cfg.shapes, geoms, strict=True)):
        on = pick == k
        geom_size, extent, bound, moments = _shape_geometry(shape, half, m)
        on1 = on.unsqueeze(-1)
        new_size = torch.where(on1, geom_size, speck)
        new_extent = torch.where(on1, extent, speck)
        new_bound = torch.where(on, bound, torch.full_like(bound, NO_SIZE * math.sqrt(3)))
        size[:, g] = torch.where(mask1, new_size.to(size.dtype), size[:, g])
        rbound[:, g] = torch.where(env_mask, new_bound.to(rbound.dtype), rbound[:, g])
        box = torch.cat((torch.zeros_like(new_extent), new_extent), dim=-1).to(aabb.dtype)
        # (N, 6) on the cpu engine, (N, 2, 3) on MuJoCo Warp: centre, then half-extents
        target = aabb[:, g]
        rows = env_mask.view(-1, *([1] * (target.dim() - 1)))
        aabb[:, g] = torch.where(rows, box.reshape(target.shape), target)
        a = torch.where(on, alpha, 0.0).to(rgba.dtype)
        rgba[:, g, 3] = torch.where(env_mask, a, rgba[:, g, 3])
        inertia = torch.where(on1, moments, inertia)
    if friction_range is not None:
        draw = sample_uniform(low_f, high_f, (n,), dev).to(friction.dtype)
        for g in geoms:
            friction[:, g, 0] = torch.where(env_mask, draw, friction[:, g, 0])
    body_mass, body_inertia = e.model_field("body_mass"), e.model_field("body_inertia")
    body_mass[:, body] = torch.where(env_mask, m.to(body_mass.dtype), body_mass[:, body])
    body_inertia[:, body] = torch.where(
        mask1, inertia.to(body_inertia.dtype), body_inertia[:, body]
    )
    # MuJoCo derives a free single-body object's mass matrix and the inverse weights from
    # mass and inertia once: recompute them for these envs
    e.set_const_where(env_mask)


def _checked(env: TaskEnv, entity: str, size_scale, mass_range, friction_range):
    """The made object's config and the three ranges, checked."""
    scene, e = env.scene, env.scene.engine
    cfg = scene.cfg.entities.get(entity)
    if cfg is None or cfg.model is not None:
        made = [n for n, c in scene.cfg.entities.items() if c.model is None]
        raise RobolearnError(
            f"randomize_object: {entity!r} is not a made object of scene.entities; made "
            f"objects: {', '.join(made) or 'none'}"
        )
    missing = [f for f in OBJECT_FIELDS if f not in e.per_env_fields]
    if missing:
        raise RobolearnError(
            f"randomize_object needs per-env values of {', '.join(missing)}: set "
            "sim.per_env_fields to robolearn.mdp.object_events.OBJECT_PER_ENV_FIELDS"
        )
    low_s, high_s = check_range(size_scale, "randomize_object.size_scale", what="scales")
    if not low_s > 0:
        raise RobolearnError(f"randomize_object.size_scale must be > 0, got {size_scale!r}")
    mass = (cfg.mass, cfg.mass) if mass_range is None else mass_range
    low_m, high_m = check_range(mass, "randomize_object.mass_range", what="masses")
    if not low_m > 0:
        raise RobolearnError(f"randomize_object.mass_range must be > 0 kg, got {mass_range!r}")
    mu = (cfg.friction[0],) * 2 if friction_range is None else friction_range
    low_f, high_f = check_range(mu, "randomize_object.friction_range", what="frictions")

    return cfg, (low_s, high_s), (low_m, high_m), (low_f, high_f)


def _shape_geometry(shape: str, half: torch.Tensor, m: torch.Tensor):
    """Per env, a solid ``shape`` of half-sizes ``half`` (N, 3) and mass ``m`` (N,): its geom
    size, its bounding box's half-extents, its bounding sphere's radius and its principal
    moments of inertia."""
    x, y, z = half[:, 0], half[:, 1], half[:, 2]
    zero = torch.zeros_like(x)
    n = half.shape[0]
    if shape == "box":
        moments = torch.stack((y**2 + z**2, x**2 + z**2, x**2 + y**2), dim=-1)
        return half, half, half.norm(dim=-1), moments * (m / 3).unsqueeze(-1)
    if shape == "cylinder":
        side = m * (3 * x**2 + 4 * z**2) / 12
        moments = torch.stack((side, side, m * x**2 / 2), dim=-1)
        size = torch.stack((x, z, zero), dim=-1)
        return size, torch.stack((x, x, z), dim=-1), torch.sqrt(x**2 + z**2), moments
    # a sphere
    moments = (0.4 * m * x**2).unsqueeze(-1).expand(n, 3)
    return torch.stack((x, zero, zero), dim=-1), torch.stack((x, x, x), dim=-1), x, moments


def object_shape(env: TaskEnv, entity: str = "object") -> torch.Tensor:
    """(N,) which of the made object's shapes each env has (its index in
    ``EntityCfg.shapes``): the shape whose geom has a size."""
    scene = env.scene
    cfg = scene.cfg.entities[entity]
    geoms = [scene.model.geom(f"{entity}/{shape}").id for shape in cfg.shapes]
    if "geom_size" not in scene.engine.per_env_fields:
        return torch.zeros(env.num_envs, dtype=torch.long, device=env.device)
    size = scene.engine.model_field("geom_size")[:, geoms, 0]
    return size.argmax(dim=-1)
