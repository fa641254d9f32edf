"""Where a ray caster's rays go, in its own frame: a grid, a pinhole camera, lidar rings.

Each pattern gives (R, 3) ray origins and (R, 3) unit directions in the sensor's frame
(x forward, y left, z up, as a robot's base), in a fixed order that the observations keep.
A pattern of more than :data:`MAX_RAYS` rays is refused before any is made.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from robolearn.errors import RobolearnError

MAX_RAYS = 2048 * 2048
"""The most rays a pattern may have per env (a 2048 x 2048 depth image; the default height
scan has 187): each ray takes about 150 bytes per env, and a grid resolution or
image size off by a few orders of magnitude asked for billions of them."""


@dataclass(frozen=True)
class GridPattern:
    """Parallel rays from a ``size`` (x, y) metre grid every ``resolution`` metres, centred
    on the frame, all along ``direction``: a height scan (Isaac Lab's and legged_gym's
    1.6 m x 1.0 m at 0.1 m, 187 rays, straight down, is the default). Points are x-major:
    index ``i * ny + j`` is the i-th x and the j-th y, from the most negative."""

    size: tuple[float, float] = (1.6, 1.0)
    resolution: float = 0.1
    direction: tuple[float, float, float] = (0.0, 0.0, -1.0)

    def check(self) -> None:
        """Raise a RobolearnError for a bad field or too many rays."""
        size, res = self.size, self.resolution
        if len(size) != 2 or not min(size) >= 0 or not res > 0 or not math.isfinite(max(size)):
            raise RobolearnError(
                f"a grid pattern needs size (x, y) >= 0 and resolution > 0, got {size}, {res}"
            )
        nx, ny = self.shape
        _check_count(
            nx * ny,
            f"a grid of {tuple(size)} m every {res} m is {nx:,} x {ny:,} =",
            "raise pattern.resolution",
        )

    def rays(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(R, 3) origins and (R, 3) unit directions in the sensor's frame."""
        self.check()
        size, res = self.size, self.resolution
        gx, gy = torch.meshgrid(_axis(size[0], res), _axis(size[1], res), indexing="ij")
        origins = torch.stack((gx.reshape(-1), gy.reshape(-1), torch.zeros(gx.numel())), -1)
        return origins, _unit(self.direction, "grid direction").expand_as(origins).clone()

    @property
    def shape(self) -> tuple[int, ...]:
        """The readings' shape per env, (nx, ny)."""
        return tuple(_axis_length(s, self.resolution) for s in self.size)


@dataclass(frozen=True)
class PinholePattern:
    """A depth camera: one ray per pixel of a ``width`` x ``height`` image through a
    pinhole looking along the frame's +x, image up +z, with a vertical field of view of
    ``fov_y`` degrees. Pixels are row-major from the top left, as an image is stored."""

    width: int = 64
    height: int = 48
    fov_y: float = 58.0
    """Vertical field of view (degrees); 58 is a RealSense D435's depth stream."""

    def check(self) -> None:
        """Raise a RobolearnError for a bad field or too many rays."""
        w, h = self.width, self.height
        for field, value in (("width", w), ("height", h)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise RobolearnError(
                    f"a pinhole pattern's {field} must be an integer >= 1, got {value!r}"
                )
        if not 0 < self.fov_y < 180:
            raise RobolearnError(f"a pinhole pattern's fov_y lies in (0, 180), got {self.fov_y}")
        _check_count(w * h, f"a {w:,} x {h:,} pinhole is", "lower pattern.width and height")

    def rays(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(R, 3) origins (all at the pinhole) and (R, 3) unit directions."""
        self.check()
        w, h = self.width, self.height
        focal = (h / 2) / math.tan(math.radians(self.fov_y) / 2)  # pixels
        u = torch.arange(w, dtype=torch.float64) + 0.5 - w / 2  # rightwards
        v = torch.arange(h, dtype=torch.float64) + 0.5 - h / 2  # downwards
        gv, gu = torch.meshgrid(v, u, indexing="ij")
        dirs = torch.stack((torch.full_like(gu, focal), -gu, -gv), -1).reshape(-1, 3)
        dirs = (dirs / dirs.norm(dim=-1, keepdim=True)).float()
        return torch.zeros_like(dirs), dirs

    @property
    def shape(self) -> tuple[int, ...]:
        """The readings' shape per env, (height, width)."""
        return (self.height, self.width)


@dataclass(frozen=True)
class LidarPattern:
    """Rings of rays from the frame's origin: ``channels`` rings spread evenly over
    ``vertical_range`` (degrees of elevation, lowest first), each sweeping
    ``horizontal_fov`` degrees centred on +x every ``horizontal_resolution`` degrees
    (a full 360 sweep does not repeat its first ray)."""

    channels: int = 16
    vertical_range: tuple[float, float] = (-15.0, 15.0)
    horizontal_fov: float = 360.0
    horizontal_resolution: float = 10.0

    def check(self) -> None:
        """Raise a RobolearnError for a bad field or too many rays."""
        if (
            isinstance(self.channels, bool)
            or not isinstance(self.channels, int)
            or (self.channels < 1)
        ):
            raise RobolearnError(
                f"a lidar's channels must be an integer >= 1, got {self.channels!r}"
            )
        if not self.horizontal_resolution > 0 or not 0 < self.horizontal_fov <= 360:
            raise RobolearnError(
                "a lidar needs horizontal_resolution > 0 and horizontal_fov in (0, 360], got "
                f"{self.horizontal_resolution}, {self.horizontal_fov}"
            )
        channels, per_ring = self.shape
        _check_count(
            channels * per_ring,
            f"{channels:,} rings of {per_ring:,} rays (horizontal_resolution "
            f"{self.horizontal_resolution} degrees) are {channels:,} x {per_ring:,} =",
            "raise pattern.horizontal_resolution or lower pattern.channels",
        )

    def rays(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(R, 3) origins (all at the frame's origin) and (R, 3) unit directions."""
        self.check()
        low, high = self.vertical_range
        elevation = torch.linspace(low, high, self.channels, dtype=torch.float64)
        azimuth = torch.tensor(self._azimuths(), dtype=torch.float64)
        el, az = torch.meshgrid(torch.deg2rad(elevation), torch.deg2rad(azimuth), indexing="ij")
        dirs = torch.stack(
            (torch.cos(el) * torch.cos(az), torch.cos(el) * torch.sin(az), torch.sin(el)), -1
        ).reshape(-1, 3)
        return torch.zeros_like(dirs).float(), dirs.float()

    def _azimuths(self) -> list[float]:
        start = -self.horizontal_fov / 2 if self.horizontal_fov < 360 else -180.0
        return [start + k * self.horizontal_resolution for k in range(self._per_ring())]

    def _per_ring(self) -> int:
        fov, res = self.horizontal_fov, self.horizontal_resolution
        return max(math.floor(fov / res + 1e-9) + (0 if fov >= 360 else 1), 1)

    @property
    def shape(self) -> tuple[int, ...]:
        """The readings' shape per env, (channels, rays per ring)."""
        return (self.channels, self._per_ring())


RayPattern = GridPattern | PinholePattern | LidarPattern


def _axis(size: float, resolution: float) -> torch.Tensor:
    """Points every ``resolution`` over ``[-size / 2, size / 2]``, both ends included."""
    return torch.arange(-size / 2, size / 2 + 1e-6, resolution)


def _axis_length(size: float, resolution: float) -> int:
    """How many points :func:`_axis` gives, counted without making them (torch's count)."""
    return max(math.ceil((size / 2 + 1e-6 - (-size / 2)) / resolution), 0)


def _check_count(count: int, pattern: str, advice: str) -> None:
    """Refuse a pattern of more than :data:`MAX_RAYS` rays (``pattern`` says its shape)."""
    if count > MAX_RAYS:
        raise RobolearnError(
            f"{pattern} {count:,} rays per env, beyond the {MAX_RAYS:,} a pattern may have "
            f"(a 2048 x 2048 depth image; memory grows with them in every env): {advice}"
        )


def _unit(v: tuple[float, float, float], what: str) -> torch.Tensor:
    t = torch.tensor(v, dtype=torch.float32)
    norm = float(t.norm())
    if t.shape != (3,) or not norm > 0:
        raise RobolearnError(f"a {what} must be a nonzero (x, y, z), got {v}")
    return t / norm
