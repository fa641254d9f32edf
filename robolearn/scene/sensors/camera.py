"""A camera: one rendered image per env (RGB, depth, segmentation) from a body or from a
fixed place in each env's frame.

The camera looks along its frame's +x with +z up (as a robot's base and
:class:`~robolearn.scene.sensors.PinholePattern`), with a vertical field of view of
``fov_y`` degrees. Two renderers draw it (``CameraCfg.renderer``):

* ``batch`` (the default): MuJoCo Warp's batch renderer ray-traces every env's image in one
  launch, on the GPU on ``cuda`` and on warp's CPU device otherwise
  (:mod:`robolearn.sim.batch_render`). The scene assembly adds one model camera per camera
  sensor (named ``camera/<sensor>``) on its body, and MuJoCo Warp poses it. Each env is
  drawn with its own sizes and colours (``mdp.randomize_object``), on every engine.
* ``opengl``: MuJoCo's OpenGL renderer (EGL without a display), env after env on the host
  (:mod:`~robolearn.scene.sensors.camera_opengl`): MuJoCo's own look, reflections included,
  4.8-7.2x slower at 64x64 than the batch renderer on warp's CPU device, 1.6-2.2x at
  128x128 (BENCHMARKS.md section 26).

Depth images agree between the two (metres along the optical axis); colours differ in
shading (two lighting models), geom ids agree where both see a geom.

Readings (computed when first read after the state changed, at most once per
``update_period`` env steps):

* ``rgb``: (N, height, width, 3) uint8;
* ``depth``: (N, height, width) float32, metres along the optical axis,
  ``max_distance`` beyond it or where nothing is drawn;
* ``segmentation``: (N, height, width) long, the id of the geom drawn at each pixel, -1
  where none is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import mujoco
import numpy as np
import torch

from robolearn.errors import RobolearnError
from robolearn.math import quat_mul
from robolearn.scene.entities import ROBOT
from robolearn.scene.sensors.base import Sensor, SensorCfg, SensorHost, find_body
from robolearn.scene.sensors.camera_opengl import OpenGLImages
from robolearn.sim.batch_render import BatchRenderer
from robolearn.sim.host_sync import host_syncs_allowed

DATA_TYPES = ("rgb", "depth", "segmentation")
"""What a camera can render (:attr:`CameraCfg.data_types`)."""
RENDERERS = ("batch", "opengl")
"""What can draw a camera (:attr:`CameraCfg.renderer`)."""
_BYTES_PER_PIXEL = {"rgb": 3 + 4, "depth": 4 + 4, "segmentation": 8 + 8}
"""The reading's bytes per pixel plus the batch renderer's own buffer's."""


@dataclass(frozen=True)
class CameraCfg(SensorCfg):
    """A camera on a body of an entity, or fixed in each env's frame (see the module
    docstring)."""

    width: int = 64
    height: int = 64
    fov_y: float = 58.0
    """Vertical field of view (degrees)."""
    data_types: tuple[str, ...] = ("rgb",)
    """Any of ``rgb``, ``depth``, ``segmentation``."""
    body: str | None = None
    """The body carrying the camera (the entity's own name for it); None fixes the camera
    in each env's frame at ``offset``."""
    entity: str = ROBOT
    offset: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """The camera's position in the body's frame (or the env's, without a body), m."""
    rot: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0)
    """The camera frame's orientation in the body's (or the env's) frame, w x y z."""
    max_distance: float = 10.0
    """Depth beyond this (m), or where nothing is drawn, reads ``max_distance``."""
    renderer: str = "batch"
    """``batch`` (MuJoCo Warp's batch renderer, every env at once) or ``opengl`` (MuJoCo's
    OpenGL renderer, env after env); see the module docstring."""
    shadows: bool = False
    """Draw shadows. Off by default: with shadows and reflections on, Mesa's software
    renderer drew 6x fewer 64x64 RGB images per second (BENCHMARKS.md section 23)."""
    reflections: bool = False
    """Draw reflections (of a reflective floor); ``opengl`` only, off by default for speed
    likewise."""
    antialias: bool = False
    """Sample each pixel several times, smoothing edges: 2x2 rays on ``batch``, the model's
    ``<visual><quality offsamples>`` (4 by default) on ``opengl``. Off by default: on Mesa
    antialiased RGB images came 1.9-2.6x slower, depth 1.04-1.15x (BENCHMARKS.md section
    24); the batch renderer casts 4x the rays."""

    def build(self, name: str, scene: SensorHost) -> Camera:
        return Camera(self, name, scene)

    def check(self, name: str) -> None:
        super().check(name)
        what = f"scene.sensors.{name}"
        for field in ("width", "height"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise RobolearnError(f"{what}.{field} must be an integer >= 1, got {value!r}")
        if not 0 < self.fov_y < 180:
            raise RobolearnError(f"{what}.fov_y lies in (0, 180) degrees, got {self.fov_y}")
        unknown = [t for t in self.data_types if t not in DATA_TYPES]
        if unknown or not self.data_types:
            raise RobolearnError(
                f"{what}.data_types must name some of {', '.join(DATA_TYPES)}, got "
                f"{list(self.data_types)}"
            )
        if not self.max_distance > 0:
            raise RobolearnError(f"{what}.max_distance must be > 0, got {self.max_distance}")
        if self.renderer not in RENDERERS:
            raise RobolearnError(
                f"{what}.renderer must be one of {', '.join(RENDERERS)}, got {self.renderer!r}"
            )
        if self.reflections and self.renderer != "opengl":
            raise RobolearnError(
                f"{what}: reflections are drawn by the opengl renderer only; set "
                "renderer='opengl' or reflections=False"
            )

    def memory_per_env(self) -> tuple[int, str]:
        types = "+".join(self.data_types)
        return image_bytes_per_env(self), f"{self.width}x{self.height} {types} images"


def image_bytes_per_env(cfg: CameraCfg) -> int:
    """Memory one env's images take (the readings and the batch renderer's buffers)."""
    return cfg.width * cfg.height * sum(_BYTES_PER_PIXEL[t] for t in cfg.data_types)


def model_camera_name(sensor: str) -> str:
    """The model camera the scene adds for camera sensor ``sensor``."""
    return f"camera/{sensor}"


_CAMERA_AXES = (0.5, 0.5, -0.5, -0.5)
"""An MJCF camera's frame (looking along its -z, +y up) in a camera sensor's frame (looking
along +x, +z up): its x is the sensor's -y, its y the sensor's z, its z the sensor's -x."""


def add_model_cameras(spec: mujoco.MjSpec, sensors: Mapping[str, SensorCfg]) -> None:
    """Add a model camera for each batch-rendered camera sensor in ``sensors``, on its body
    (or the world body, for one fixed in each env's frame), where that body exists: the
    sensor names a missing body itself, in one line."""
    bodies = {b.name: b for b in spec.bodies}
    for name, cfg in sensors.items():
        if not isinstance(cfg, CameraCfg):
            continue
        cfg.check(name)  # before MuJoCo's compiler sees its numbers
        if cfg.renderer != "batch":
            continue
        if cfg.body is None:
            body = spec.worldbody
        else:
            prefix = "" if cfg.entity == ROBOT else f"{cfg.entity}/"
            body = bodies.get(f"{prefix}{cfg.body}")
            if body is None:
                continue
        rot = np.asarray(cfg.rot, dtype=float)
        quat = np.zeros(4)
        mujoco.mju_mulQuat(quat, rot / np.linalg.norm(rot), np.array(_CAMERA_AXES))
        camera = body.add_camera(name=model_camera_name(name), pos=list(cfg.offset))
        camera.quat = quat
        camera.fovy = float(cfg.fov_y)
        camera.resolution = [cfg.width, cfg.height]


class Camera(Sensor):
    """A running camera; read :attr:`rgb`, :attr:`depth`, :attr:`segmentation`."""

    cfg: CameraCfg

    def __init__(self, cfg: CameraCfg, name: str, scene: SensorHost) -> None:
        super().__init__(cfg, name, scene)
        self.body_id = _camera_body(scene, cfg, name)
        # its images were counted in the memory check made before the engine was built
        dev, n, h, w = scene.device, self.num_envs, cfg.height, cfg.width
        rot = torch.tensor(cfg.rot, dtype=torch.float32, device=dev)
        self.offset = torch.tensor(cfg.offset, device=dev).repeat(n, 1)
        """(N, 3) each env's camera position in its body's (or env's) frame, m: ``offset``
        until a randomization term (``mdp.randomize_camera``) moves it."""
        self.rot = (rot / rot.norm()).repeat(n, 1)
        """(N, 4) each env's camera orientation in its body's (or env's) frame, w x y z."""
        self.fov_y = torch.full((n,), float(cfg.fov_y), device=dev)
        """(N,) each env's vertical field of view, degrees."""
        self.light_scale = torch.ones(n, device=dev)
        """(N,) each env's factor on the model lights' diffuse colour (lighting)."""
        self._batch: BatchRenderer | None = None
        self._opengl: OpenGLImages | None = None
        if cfg.renderer == "batch":
            self._batch = BatchRenderer(
                scene.engine, scene.model, scene.model.camera(model_camera_name(name)).id,
                w, h, cfg.data_types, shadows=cfg.shadows,
                # MuJoCo Warp samples sub-pixels for colour; depth and ids take one ray
                samples_per_axis=2 if cfg.antialias and "rgb" in cfg.data_types else 1,
            )  # fmt: skip
            self._light_diffuse = self._batch.light_diffuse.clone()
        else:
            self._opengl = OpenGLImages(cfg, name, scene, self.body_id)
        self._axes = torch.tensor(_CAMERA_AXES, device=dev)
        self._rgb = torch.zeros(n, h, w, 3, dtype=torch.uint8, device=dev)
        self._depth = torch.zeros(n, h, w, device=dev)
        self._segmentation = torch.full((n, h, w), -1, dtype=torch.long, device=dev)

    # ---- the readings ----------------------------------------------------------------

    @property
    def rgb(self) -> torch.Tensor:
        """(N, height, width, 3) uint8 colour images."""
        return self._reading("rgb", self._rgb)

    @property
    def depth(self) -> torch.Tensor:
        """(N, height, width) metres along the optical axis."""
        return self._reading("depth", self._depth)

    @property
    def segmentation(self) -> torch.Tensor:
        """(N, height, width) the geom drawn at each pixel, -1 for none."""
        return self._reading("segmentation", self._segmentation)

    def _reading(self, kind: str, value: torch.Tensor) -> torch.Tensor:
        if kind not in self.cfg.data_types:
            raise RobolearnError(
                f"camera {self.name!r} renders {', '.join(self.cfg.data_types)}, not {kind} "
                "(add it to data_types)"
            )
        self._refresh()
        return value

    def set_view(
        self,
        env_mask: torch.Tensor,
        offset: torch.Tensor | None = None,
        rot: torch.Tensor | None = None,
        fov_y: torch.Tensor | None = None,
        light_scale: torch.Tensor | None = None,
    ) -> None:
        """Give the envs where ``env_mask`` is true another camera pose (``offset`` (N, 3),
        ``rot`` (N, 4) in the body's frame), field of view (``fov_y`` (N,) degrees) or
        lighting (``light_scale`` (N,)); rows outside the mask are ignored. Their next
        reading renders afresh."""
        if fov_y is not None and self._batch is not None and not self._batch.free_fov():
            raise RobolearnError(
                f"camera {self.name!r}: the batch renderer antialiases with rays fixed for "
                "one field of view; randomize fov_y with antialias=False"
            )
        keep = env_mask.view(-1, 1)
        for target, value in (
            (self.offset, offset),
            (self.rot, None if rot is None else rot / rot.norm(dim=-1, keepdim=True)),
            (self.fov_y, fov_y),
            (self.light_scale, light_scale),
        ):
            if value is not None:
                mask = keep if target.dim() == 2 else env_mask
                target.copy_(torch.where(mask, value.to(target), target))
        self.invalidate(env_mask)

    # ---- rendering -------------------------------------------------------------------

    def _update(self, env_mask: torch.Tensor) -> None:
        if self._batch is not None:
            self._update_batch(env_mask)
            return
        with host_syncs_allowed():  # the OpenGL renderer draws env after env on the host
            rows = env_mask.nonzero().flatten().tolist()
        if not rows:
            return
        index = torch.tensor(rows, device=self.device)
        views = (self.offset, self.rot, self.fov_y, self.light_scale)
        for kind, images in self._opengl.render(rows, *views).items():
            target = getattr(self, f"_{kind}")
            target[index] = self._finish(kind, images.to(self.device))

    def _update_batch(self, env_mask: torch.Tensor) -> None:
        """Render every env at once and keep the new images where ``env_mask`` is set
        (a select on the device: no host synchronisation)."""
        batch, dev = self._batch, self._batch.device
        # The view is written at every reading, not only by set_view: a world camera sits
        # at its env's origin, which a terrain curriculum moves at resets (a few floats
        # per env, against a render).
        offset = self.offset
        if self.body_id is None:
            offset = offset + self.scene.env_origins
        batch.cam_pos.copy_(offset.to(dev))
        batch.cam_quat.copy_(quat_mul(self.rot, self._axes.expand_as(self.rot)).to(dev))
        batch.cam_fovy.copy_(self.fov_y.to(dev))
        batch.light_diffuse.copy_(self._light_diffuse * self.light_scale.to(dev).view(-1, 1, 1))
        batch.render()
        for kind in self.cfg.data_types:
            target = getattr(self, f"_{kind}")
            image = self._finish(kind, getattr(batch, kind)().to(self.device))
            keep = env_mask.view(-1, *([1] * (target.dim() - 1)))
            target.copy_(torch.where(keep, image, target))

    def _finish(self, kind: str, image: torch.Tensor) -> torch.Tensor:
        """A renderer's image as the reading has it: depth beyond ``max_distance`` or where
        nothing is drawn (0 from the batch renderer, the far plane from OpenGL) reads
        ``max_distance``."""
        if kind != "depth":
            return image
        far = self.cfg.max_distance
        return torch.where((image <= 0) | (image > far), far, image)


def _camera_body(scene: SensorHost, cfg: CameraCfg, name: str) -> int | None:
    """The carrying body's id, or None for a camera fixed in each env's frame."""
    return None if cfg.body is None else find_body(scene, cfg.entity, cfg.body, name)
