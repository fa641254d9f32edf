"""A camera: one rendered image per env (RGB, depth, segmentation) from a body or from a
fixed place in each env's frame, through MuJoCo's renderer (EGL without a display).

The camera looks along its frame's +x with +z up (as a robot's base and
:class:`~robolearn.scene.sensors.PinholePattern`), with a vertical field of view of
``fov_y`` degrees. Each reading renders the envs one after another on the host: each env's
pose goes into one host ``MjData`` (its kinematics computed there), MuJoCo draws the scene
from the camera's pose, and the images are stacked into tensors on the env's device. On
the Warp engines this reads the state back to the host, once per reading. MuJoCo Warp's
batch renderer would render every env at once on a GPU; it is not used yet. The scene is
drawn as the model has it: per-env sizes and colours (``mdp.randomize_object``) are not
drawn per env yet, as videos draw them.

Readings (computed when first read after the state changed, at most once per
``update_period`` env steps):

* ``rgb``: (N, height, width, 3) uint8;
* ``depth``: (N, height, width) float32, metres along the optical axis (MuJoCo's
  linearised depth buffer), ``max_distance`` beyond it or where nothing is drawn;
* ``segmentation``: (N, height, width) long, the id of the geom drawn at each pixel, -1
  where none is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np
import torch

from robolearn.errors import RobolearnError
from robolearn.math import quat_mul, quat_rotate
from robolearn.scene.entities import ROBOT
from robolearn.scene.sensors.base import Sensor, SensorCfg, SensorHost, find_body
from robolearn.sim.host_sync import host_syncs_allowed

DATA_TYPES = ("rgb", "depth", "segmentation")
"""What a camera can render (:attr:`CameraCfg.data_types`)."""


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
    shadows: bool = False
    """Draw shadows. Off by default: with shadows and reflections on, Mesa's software
    renderer drew 6x fewer 64x64 RGB images per second (BENCHMARKS.md section 23)."""
    reflections: bool = False
    """Draw reflections (of a reflective floor); off by default, for speed likewise."""
    antialias: bool = False
    """Multisample each pixel (as many samples as the model's ``<visual><quality
    offsamples>``, 4 by default), smoothing edges. Off by default, one sample per pixel as
    GPU batch renderers draw: on Mesa's software renderer antialiased RGB images came
    1.9-2.6x slower, depth 1.04-1.15x (BENCHMARKS.md section 24)."""

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


class Camera(Sensor):
    """A running camera; read :attr:`rgb`, :attr:`depth`, :attr:`segmentation`."""

    cfg: CameraCfg

    def __init__(self, cfg: CameraCfg, name: str, scene: SensorHost) -> None:
        super().__init__(cfg, name, scene)
        self.body_id = _camera_body(scene, cfg, name)
        model = scene.model
        offwidth, offheight = model.vis.global_.offwidth, model.vis.global_.offheight
        if cfg.width > offwidth or cfg.height > offheight:
            raise RobolearnError(
                f"scene.sensors.{name}: {cfg.width}x{cfg.height} is larger than the model's "
                f"offscreen buffer ({offwidth}x{offheight}); raise <visual><global "
                "offwidth/offheight> in the MJCF"
            )
        samples = model.vis.quality.offsamples  # read when the renderer's buffers are made
        model.vis.quality.offsamples = samples if cfg.antialias else 0
        try:
            self._renderer = mujoco.Renderer(model, cfg.height, cfg.width)
        except Exception as exc:  # the GL backend could not start
            raise RobolearnError(
                f"scene.sensors.{name}: cannot render offscreen ({exc}); install Mesa's EGL "
                "(Debian: libegl1 libgl1-mesa-dri)"
            ) from None
        finally:
            model.vis.quality.offsamples = samples  # videos keep the model's antialiasing
        flags = self._renderer.scene.flags  # kept by every update_scene
        flags[mujoco.mjtRndFlag.mjRND_SHADOW] = int(cfg.shadows)
        flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = int(cfg.reflections)
        self._data = mujoco.MjData(model)
        self._camera = mujoco.MjvCamera()
        self._camera.type = mujoco.mjtCamera.mjCAMERA_FREE
        dev, n, h, w = scene.device, self.num_envs, cfg.height, cfg.width
        self._offset = torch.tensor(cfg.offset, dtype=torch.float64)
        rot = torch.tensor(cfg.rot, dtype=torch.float64)
        self._rot = rot / rot.norm()
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

    # ---- rendering -------------------------------------------------------------------

    def _update(self, env_mask: torch.Tensor) -> None:
        engine, scene = self.scene.engine, self.scene
        with host_syncs_allowed():  # the renderer draws from host memory
            rows = env_mask.nonzero().flatten().tolist()
            if not rows:
                return
            qpos = engine.qpos.detach().cpu().double().numpy()
            mocap = scene.model.nmocap > 0
            if mocap:
                mocap_pos = engine.mocap_pos.detach().cpu().double().numpy()
                mocap_quat = engine.mocap_quat.detach().cpu().double().numpy()
            pose = self._poses(rows)
            images = {kind: [] for kind in self.cfg.data_types}
            for k, env_id in enumerate(rows):
                self._data.qpos[:] = qpos[env_id]
                if mocap:  # obstacles the events placed per env
                    self._data.mocap_pos[:] = mocap_pos[env_id]
                    self._data.mocap_quat[:] = mocap_quat[env_id]
                mujoco.mj_kinematics(scene.model, self._data)
                mujoco.mj_camlight(scene.model, self._data)
                for kind in self.cfg.data_types:
                    images[kind].append(self._render(kind, *(p[k] for p in pose)))
            index = torch.tensor(rows, device=self.device)
            for kind, frames in images.items():
                target = getattr(self, f"_{kind}")
                target[index] = torch.from_numpy(np.stack(frames)).to(self.device, target.dtype)

    def _poses(self, rows: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(len(rows), 3) each: the camera's position, forward (+x) and up (+z) vectors."""
        scene = self.scene
        ids = torch.tensor(rows)
        if self.body_id is None:
            origins = scene.env_origins
            pos = origins[ids.to(origins.device)].detach().cpu().double().clone()
            quat = torch.zeros(len(rows), 4, dtype=torch.float64)
            quat[:, 0] = 1.0
        else:
            engine = scene.engine
            pos = engine.xpos[ids.to(engine.device), self.body_id].detach().cpu().double()
            quat = engine.xquat[ids.to(engine.device), self.body_id].detach().cpu().double()
        cam = quat_mul(quat, self._rot.expand_as(quat))
        pos = pos + quat_rotate(quat, self._offset.expand_as(pos))
        x = torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64).expand_as(pos)
        z = torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64).expand_as(pos)
        return pos.numpy(), quat_rotate(cam, x).numpy(), quat_rotate(cam, z).numpy()

    def _render(self, kind: str, pos: np.ndarray, forward: np.ndarray, up: np.ndarray):
        renderer, cfg = self._renderer, self.cfg
        renderer.disable_depth_rendering()
        renderer.disable_segmentation_rendering()
        if kind == "depth":
            renderer.enable_depth_rendering()
        elif kind == "segmentation":
            renderer.enable_segmentation_rendering()
        renderer.update_scene(self._data, camera=self._camera)
        self._aim(renderer.scene, pos, forward, up)
        image = renderer.render()
        if kind == "depth":
            return np.where(image > cfg.max_distance, cfg.max_distance, image).astype(np.float32)
        if kind == "segmentation":
            ids, types = image[..., 0], image[..., 1]
            return np.where(types == int(mujoco.mjtObj.mjOBJ_GEOM), ids, -1).astype(np.int64)
        return image.copy()

    def _aim(self, scn: mujoco.MjvScene, pos, forward, up) -> None:
        """Point the scene's GL cameras from ``pos`` along ``forward`` with ``up``, with the
        config's field of view (MuJoCo's free camera cannot roll: this can)."""
        model = self.scene.model
        near = model.vis.map.znear * model.stat.extent
        far = model.vis.map.zfar * model.stat.extent
        half = near * math.tan(math.radians(self.cfg.fov_y) / 2)
        for glcam in scn.camera:
            glcam.pos[:] = pos
            glcam.forward[:] = forward
            glcam.up[:] = up
            glcam.frustum_center = 0.0
            glcam.frustum_width = half * self.cfg.width / self.cfg.height
            glcam.frustum_bottom = -half
            glcam.frustum_top = half
            glcam.frustum_near = near
            glcam.frustum_far = far
            glcam.orthographic = 0


def _camera_body(scene: SensorHost, cfg: CameraCfg, name: str) -> int | None:
    """The carrying body's id, or None for a camera fixed in each env's frame."""
    return None if cfg.body is None else find_body(scene, cfg.entity, cfg.body, name)
