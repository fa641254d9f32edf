"""A ray caster: rays from a body in a pattern, against every geom of the scene but the
sensor's own entity, on every engine.

Rays are cast by the engine (:meth:`robolearn.sim.engine.Engine.cast_rays`: MuJoCo's
``mj_ray`` threaded over envs on ``cpu``, MuJoCo Warp's ray kernel on the Warp engines),
so they see what the physics collides with and the renderer draws: the terrain, boxes
and steps placed as entities, other robots. The sensor's own entity (the robot carrying
it) is skipped, so that a height scan sees the ground under the robot's feet rather than
the feet: its moving geoms sit in a geom group of their own that the sensor's casts
leave out (:mod:`~robolearn.scene.sensors.ray_groups`). Where no group is spare, a ray
that hits one of them is cast again from just past the hit, a few times over, and one
that still hits the robot after that reads as a miss.

Rays straight down (a grid pattern along -z, aligned by yaw or to the world) read a
generated terrain from its height field, on the same triangles MuJoCo collides with
(:class:`robolearn.terrain.HeightMap`), and MuJoCo casts them against everything else:
the field is most of MuJoCo's cost per ray. Such a ray that starts under the terrain's
surface reads 0 (it starts in the ground), where MuJoCo would read the field's base.

The frame is the body's pose, turned by the config's offset, and then aligned as
``alignment`` says: ``yaw`` keeps only the body's heading (a height scan stays level when
the base pitches), ``full`` the whole orientation (a camera on a head), ``world`` none.
A floating base's pose is its free joint's, the current state; any other body's comes
from MuJoCo's derived body poses, which lag one physics substep behind it (as every
body-pose term's).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch

from robolearn.errors import RobolearnError
from robolearn.math import matrix_from_quat, quat_mul, quat_rotate, yaw_quat
from robolearn.scene.entities import ROBOT
from robolearn.scene.sensors.base import Sensor, SensorCfg, SensorHost, find_body
from robolearn.scene.sensors.ray_patterns import GridPattern, PinholePattern, RayPattern
from robolearn.sim.host_sync import host_syncs_allowed

ALIGNMENTS = ("yaw", "full", "world")
"""How a ray caster's frame follows its body (:attr:`RayCasterCfg.alignment`)."""

BYTES_PER_RAY = 150
"""Memory a ray takes per env at the peak of a cast: its readings (distance, hit, geom,
origin and direction in the world: 37 bytes) and the cast's temporaries (the engine's
float64 copies, its results). Measured 136-145 bytes on the cpu engine
(quadruped_walk_rough_obstacles' scan at 0.01-0.02 m, 64-256 envs, against 0.1 m)."""

RECASTS = 3
"""How often a ray that hit the sensor's own entity is cast again from past the hit."""
_PAST = 1e-4  # m beyond a hit on the own entity where the ray starts again


@dataclass(frozen=True)
class RayCasterCfg(SensorCfg):
    """Rays from a body of an entity in a pattern (see the module docstring)."""

    body: str | None = None
    """The body carrying the sensor (the entity's own name for it); None: the entity's
    floating base."""
    entity: str = ROBOT
    """The entity that carries the sensor; its moving bodies are invisible to the rays."""
    pattern: RayPattern = field(default_factory=GridPattern)
    """Where the rays go in the sensor's frame: :class:`GridPattern`,
    :class:`PinholePattern` or :class:`LidarPattern`."""
    offset: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """The sensor frame's position in the body's (aligned) frame (m)."""
    rot: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0)
    """The sensor frame's orientation in the body's aligned frame (w x y z): a camera
    pitched down by 30 degrees is ``(0.966, 0, 0.259, 0)``."""
    alignment: str = "yaw"
    """``yaw``, ``full`` or ``world`` (see the module docstring)."""
    max_distance: float = 10.0
    """Rays see no farther (m): a hit beyond it, or none, reads ``max_distance``."""
    geom_groups: tuple[int, ...] | None = None
    """The geom groups rays hit; None for every group."""
    hit_static: bool = True
    """Whether rays hit the geoms welded to the world (the floor, the terrain, fixed boxes)."""

    def build(self, name: str, scene: SensorHost) -> RayCaster:
        return RayCaster(self, name, scene)

    def check(self, name: str) -> None:
        super().check(name)
        what = f"scene.sensors.{name}"
        if self.alignment not in ALIGNMENTS:
            raise RobolearnError(
                f"{what}.alignment must be one of {', '.join(ALIGNMENTS)}, got {self.alignment!r}"
            )
        if not self.max_distance > 0:
            raise RobolearnError(f"{what}.max_distance must be > 0, got {self.max_distance}")
        try:
            self.pattern.check()
        except RobolearnError as exc:
            raise RobolearnError(f"{what}.pattern: {exc}") from None

    def memory_per_env(self) -> tuple[int, str]:
        rays = math.prod(self.pattern.shape)
        return rays * BYTES_PER_RAY, f"{rays:,} rays"


class RayCaster(Sensor):
    """A running ray caster; read :attr:`distances`, :attr:`hits_w`, :attr:`hit` (each
    computed when first read after the state changed)."""

    cfg: RayCasterCfg

    def __init__(self, cfg: RayCasterCfg, name: str, scene: SensorHost) -> None:
        super().__init__(cfg, name, scene)
        try:
            origins, directions = cfg.pattern.rays()
        except RobolearnError as exc:
            raise RobolearnError(f"scene.sensors.{name}: {exc}") from None
        self.shape = cfg.pattern.shape
        """The readings' shape per env: (nx, ny) for a grid, (height, width) for a
        pinhole, (channels, rays per ring) for a lidar."""
        dev = scene.device
        self.local_origins = origins.to(dev, torch.float32)
        """(R, 3) ray origins in the sensor's frame."""
        self.local_directions = directions.to(dev, torch.float32)
        """(R, 3) unit ray directions in the sensor's frame."""
        self.num_rays = origins.shape[0]
        self.body_id, self._from_free_joint = _carrier(scene, cfg, name)
        self._offset = torch.tensor(cfg.offset, dtype=torch.float32, device=dev)
        rot = torch.tensor(cfg.rot, dtype=torch.float32, device=dev)
        self._rot = rot / rot.norm()
        moving = _moving_geoms(scene, cfg.entity)
        own_group = scene.ray_groups.group(f"entity:{cfg.entity}", moving) if moving else None
        self._excluded = _geom_table(scene, moving) if moving and own_group is None else None
        """(ngeom,) bool: the own entity's geoms, cast past again; None where MuJoCo skips
        them by their group (see :mod:`~robolearn.scene.sensors.ray_groups`)."""
        self._terrain, terrain_group = _terrain_lookup(scene, cfg)
        self._groups = (
            cfg.geom_groups
            if cfg.geom_groups is not None
            else scene.ray_groups.all_but(own_group, terrain_group)
        )
        skipped = set(moving) if own_group is not None else set()
        if self._terrain is not None:
            skipped.add(self._terrain.geom)
        self._cast_by_mujoco = _anything_left(scene, cfg, self.body_id, skipped)
        """Whether MuJoCo's cast has any geom left to hit (none on a bare terrain read from
        its height field: the scan is then a lookup alone)."""
        n, r = self.num_envs, self.num_rays
        self.distances = torch.full((n, r), cfg.max_distance, device=dev)
        self.hit = torch.zeros(n, r, dtype=torch.bool, device=dev)
        self.geom = torch.full((n, r), -1, dtype=torch.long, device=dev)
        self.origins_w = torch.zeros(n, r, 3, device=dev)
        self.directions_w = torch.zeros(n, r, 3, device=dev)
        self.pos_w = torch.zeros(n, 3, device=dev)
        """(N, 3) the sensor frame's position (the body's, moved by ``offset``)."""
        self.quat_w = torch.zeros(n, 4, device=dev)
        """(N, 4) the sensor frame's orientation (aligned, then turned by ``rot``)."""
        self.body_pos_w = torch.zeros(n, 3, device=dev)
        """(N, 3) the carrying body's position at the reading."""

    # ---- the readings ----------------------------------------------------------------

    def read(self) -> RayCaster:
        """The sensor with its readings current (computed now if stale)."""
        self._refresh()
        return self

    @property
    def hits_w(self) -> torch.Tensor:
        """(N, R, 3) world points where each ray hit, or its end at ``max_distance``."""
        self._refresh()
        return self.origins_w + self.directions_w * self.distances.unsqueeze(-1)

    @property
    def depth(self) -> torch.Tensor:
        """(N, height, width) a pinhole pattern's depth image: each pixel's distance along
        the optical axis (m, ``max_distance`` where nothing is seen), as a depth camera
        reports it."""
        if not isinstance(self.cfg.pattern, PinholePattern):
            raise RobolearnError(f"sensor {self.name!r} has no pinhole pattern: no depth image")
        self._refresh()
        along_axis = self.distances * self.local_directions[:, 0]
        missed = ~self.hit
        along_axis = torch.where(missed, self.cfg.max_distance, along_axis)
        return along_axis.view(self.num_envs, *self.shape)

    # ---- the cast --------------------------------------------------------------------

    def _frame(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The body's position, and the sensor frame's position and orientation."""
        scene, cfg = self.scene, self.cfg
        if self._from_free_joint:
            pos, quat = scene.root_pos_w, scene.root_quat_w
        else:
            engine = scene.engine
            pos = engine.xpos[:, self.body_id].float()
            quat = engine.xquat[:, self.body_id].float()
        if cfg.alignment == "yaw":
            quat = yaw_quat(quat)
        elif cfg.alignment == "world":
            quat = torch.zeros_like(quat)
            quat[:, 0] = 1.0
        frame_pos = pos + quat_rotate(quat, self._offset.expand_as(pos))
        return pos, frame_pos, quat_mul(quat, self._rot.expand_as(quat))

    def _update(self, env_mask: torch.Tensor) -> None:
        # every env is cast (no engine selects envs without a host sync); where only some
        # are stale (resets between readings), the others keep their last reading
        body_pos, pos, quat = self._frame()
        to_world = matrix_from_quat(quat).mT  # (N, 3, 3): one product for all rays
        origins = pos.unsqueeze(1) + self.local_origins @ to_world
        directions = self.local_directions @ to_world
        dist, geom = self._cast(origins, directions)
        hit = (geom >= 0) & (dist <= self.cfg.max_distance)
        new = {
            "body_pos_w": body_pos,
            "pos_w": pos,
            "quat_w": quat,
            "origins_w": origins,
            "directions_w": directions,
            "distances": torch.where(hit, dist, self.cfg.max_distance),
            "hit": hit,
            "geom": torch.where(hit, geom, -1),
        }
        every = self.cfg.update_period == 1  # then every env is stale at every reading
        for key, value in new.items():
            if not every:
                rows = env_mask.view(-1, *([1] * (value.dim() - 1)))
                value = torch.where(rows, value, getattr(self, key))
            setattr(self, key, value)

    def _cast(
        self, origins: torch.Tensor, directions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Distances (float32, -1 for a miss) and geoms of the first hit past the own
        entity's moving bodies (the carrier's own are skipped by MuJoCo itself)."""
        engine = self.scene.engine
        dist, geom = self._cast_from(origins, directions)
        if self._excluded is None:
            return dist, geom
        travelled = torch.zeros_like(dist)
        for _ in range(RECASTS):
            own = self._own(geom)
            past = travelled + dist + _PAST
            start = origins + directions * past.unsqueeze(-1)
            if engine.host_side:
                recast = self._recast_own(start, directions, own)
                if recast is None:
                    break
                again, again_geom = recast
            else:  # every ray of every env: choosing them would wait for the device
                again, again_geom = self._cast_from(start, directions)
            travelled = torch.where(own, past, travelled)
            dist = torch.where(own, again, dist)
            geom = torch.where(own, again_geom, geom)
        geom = torch.where(self._own(geom), -1, geom)
        return torch.where(geom >= 0, travelled + dist, -1.0), geom

    def _recast_own(
        self, origins: torch.Tensor, directions: torch.Tensor, own: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor] | None:
        """Cast again the rays where ``own`` is set, on a host-side engine: only in the
        envs that have any, each env's such rays first and padded to the most any env has
        (a few of 187 under a quadruped's feet). None when there are none. The results
        where ``own`` is not set are meaningless."""
        with host_syncs_allowed():
            rows = own.any(dim=1).nonzero().flatten()
            if rows.numel() == 0:
                return None
            k = int(own[rows].sum(dim=1).max())
        some = own[rows]
        order = torch.argsort((~some).to(torch.int8), dim=1, stable=True)[:, :k]
        pick = order.unsqueeze(-1).expand(-1, -1, 3)
        some_dist, some_geom = self.scene.engine.cast_rays(
            origins[rows].gather(1, pick), directions[rows].gather(1, pick), env_ids=rows,
            geom_groups=self._groups, static=self.cfg.hit_static, exclude_body=self.body_id,
        )  # fmt: skip
        dist = torch.full_like(own, -1.0, dtype=torch.float32)
        geom = torch.full_like(own, -1, dtype=torch.long)
        dist[rows] = dist[rows].scatter(1, order, some_dist.float())
        geom[rows] = geom[rows].scatter(1, order, some_geom)
        return dist, geom

    def _own(self, geom: torch.Tensor) -> torch.Tensor:
        """(N, R) bool: the hits on the own entity's moving bodies."""
        assert self._excluded is not None
        return (geom >= 0) & self._excluded[geom.clamp(min=0)]

    def _cast_from(
        self, origins: torch.Tensor, directions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One cast of every ray in every env: MuJoCo's, and the terrain's height field
        where it is read apart."""
        if not self._cast_by_mujoco:
            if self._terrain is None:  # nothing to see
                missed = torch.full(origins.shape[:2], -1, dtype=torch.long, device=origins.device)
                return missed.float(), missed
            ground = self._terrain.distance_down(origins)
            return ground, torch.where(ground >= 0, self._terrain.geom, -1)
        dist, geom = self.scene.engine.cast_rays(
            origins, directions, geom_groups=self._groups, static=self.cfg.hit_static,
            exclude_body=self.body_id,
        )  # fmt: skip
        dist = dist.float()
        if self._terrain is None:
            return dist, geom
        ground = self._terrain.distance_down(origins)
        nearer = (ground >= 0) & ((dist < 0) | (ground < dist))
        return torch.where(nearer, ground, dist), torch.where(nearer, self._terrain.geom, geom)


def _carrier(scene: SensorHost, cfg: RayCasterCfg, name: str) -> tuple[int, bool]:
    """The carrying body's id, and whether its pose is a free joint's (the current state)."""
    entity = scene.entity(cfg.entity)
    if cfg.body is None:
        if entity.root_body_id is None:
            raise RobolearnError(
                f"scene.sensors.{name}: entity {cfg.entity!r} has no floating base; name the "
                "body that carries the sensor (body=...)"
            )
        return entity.root_body_id, True
    body = find_body(scene, cfg.entity, cfg.body, name)
    return body, body == entity.root_body_id


def _moving_geoms(scene: SensorHost, entity_name: str) -> list[int]:
    """The entity's geoms on bodies not welded to the world (what its rays skip)."""
    model = scene.model
    entity = scene.entity(entity_name)
    return [g for g in entity.geom_ids if int(model.body_weldid[model.geom_bodyid[g]]) != 0]


def _anything_left(scene: SensorHost, cfg: RayCasterCfg, body: int, skipped: set[int]) -> bool:
    """Whether some geom is left for MuJoCo's cast to hit: not ``skipped``, not on the
    carrying body, static only if the sensor hits static geoms, in its named groups."""
    model = scene.model
    for g in range(model.ngeom):
        if g in skipped or int(model.geom_bodyid[g]) == body:
            continue
        if not cfg.hit_static and int(model.body_weldid[model.geom_bodyid[g]]) == 0:
            continue
        if cfg.geom_groups is not None and int(model.geom_group[g]) not in cfg.geom_groups:
            continue
        return True
    return False


def _geom_table(scene: SensorHost, geoms: list[int]) -> torch.Tensor:
    """A (ngeom,) bool table, true at ``geoms``."""
    table = torch.zeros(scene.model.ngeom, dtype=torch.bool, device=scene.device)
    table[geoms] = True
    return table


class _TerrainBelow:
    """Distances straight down to a generated terrain's height field, read from its
    samples on MuJoCo's triangles instead of cast."""

    def __init__(self, height_map: Any, geom: int) -> None:
        self.height_map = height_map
        self.geom = geom

    def distance_down(self, origins: torch.Tensor) -> torch.Tensor:
        """(N, R) distance from each origin down to the surface: 0 from under it, -1 off
        the field (as MuJoCo misses there)."""
        hm = self.height_map
        x, y = origins[..., 0], origins[..., 1]
        x0, x1, y0, y1 = hm.bounds
        on = (x >= x0) & (x <= x1) & (y >= y0) & (y <= y1)
        down = (origins[..., 2] - hm.height_at(origins[..., :2])).clamp(min=0.0)
        return torch.where(on, down, -1.0)


def _terrain_lookup(
    scene: SensorHost, cfg: RayCasterCfg
) -> tuple[_TerrainBelow | None, int | None]:
    """The terrain read apart from MuJoCo's cast, and the group its geom was moved to, when
    every ray of the sensor points straight down onto a generated terrain; else None."""
    terrain = getattr(scene, "terrain", None)
    pattern = cfg.pattern
    down = (
        isinstance(pattern, GridPattern)
        and torch.equal(_unit(pattern.direction), torch.tensor([0.0, 0.0, -1.0]))
        and cfg.alignment in ("yaw", "world")
        and torch.allclose(_unit(cfg.rot).abs(), torch.tensor([1.0, 0.0, 0.0, 0.0]))
    )
    if terrain is None or not down or not cfg.hit_static or cfg.geom_groups is not None:
        return None, None
    group = scene.ray_groups.group("terrain", [terrain.geom_id])
    if group is None:
        return None, None
    return _TerrainBelow(terrain.height_map, terrain.geom_id), group


def _unit(values: tuple[float, ...]) -> torch.Tensor:
    v = torch.tensor(values, dtype=torch.float64)
    return (v / v.norm()).float()
