"""A camera's images through MuJoCo's OpenGL renderer (EGL without a display), env after
env on the host: ``CameraCfg(renderer="opengl")``.

Each env's pose goes into one host ``MjData`` (its kinematics computed there), MuJoCo draws
the scene from the camera's pose with free GL cameras (which, unlike MuJoCo's free camera,
can roll), and the images are stacked. On the Warp engines this reads the state back to
the host once per reading. It draws what MuJoCo's own viewer draws (reflections included);
the batch renderer (:mod:`robolearn.sim.batch_render`) drew 4.8-7.2x more 64x64 images per
second (BENCHMARKS.md section 26).
"""

from __future__ import annotations

import math
from typing import Protocol

import mujoco
import numpy as np
import torch

from robolearn.errors import RobolearnError
from robolearn.math import quat_mul, quat_rotate
from robolearn.scene.sensors.base import SensorHost
from robolearn.sim.host_sync import host_syncs_allowed


class ImageSpec(Protocol):
    """What this renderer reads of a camera's config (a ``CameraCfg``; named by what it
    reads, so that the config's module, which builds this renderer, is not imported here)."""

    width: int
    height: int
    data_types: tuple[str, ...]
    shadows: bool
    reflections: bool
    antialias: bool


class OpenGLImages:
    """Renders ``cfg``'s images of chosen envs, one after another (see the module
    docstring); ``body_id`` carries the camera, or None for one fixed in each env."""

    def __init__(self, cfg: ImageSpec, name: str, scene: SensorHost, body_id: int | None):
        self.cfg, self.scene, self.body_id = cfg, scene, body_id
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
                "(Debian: libegl1 libgl1-mesa-dri), or use renderer='batch'"
            ) from None
        finally:
            model.vis.quality.offsamples = samples  # videos keep the model's antialiasing
        flags = self._renderer.scene.flags  # kept by every update_scene
        flags[mujoco.mjtRndFlag.mjRND_SHADOW] = int(cfg.shadows)
        flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = int(cfg.reflections)
        self._data = mujoco.MjData(model)
        self._camera = mujoco.MjvCamera()
        self._camera.type = mujoco.mjtCamera.mjCAMERA_FREE

    def render(
        self,
        rows: list[int],
        offset: torch.Tensor,
        rot: torch.Tensor,
        fov_y: torch.Tensor,
        light_scale: torch.Tensor,
    ) -> dict[str, torch.Tensor]:
        """Each kind of ``cfg.data_types``: the images of envs ``rows``, stacked (host),
        from each env's camera ``offset`` (N, 3) and ``rot`` (N, 4) in its body's frame,
        field of view ``fov_y`` (N,) and factor ``light_scale`` (N,) on the lights."""
        engine, model = self.scene.engine, self.scene.model
        with host_syncs_allowed():  # the renderer draws from host memory
            qpos = engine.qpos.detach().cpu().double().numpy()
            mocap = model.nmocap > 0
            if mocap:
                mocap_pos = engine.mocap_pos.detach().cpu().double().numpy()
                mocap_quat = engine.mocap_quat.detach().cpu().double().numpy()
            ids = torch.tensor(rows, device=offset.device)
            pose = self._poses(rows, offset[ids].cpu().double(), rot[ids].cpu().double())
            fov, light = fov_y[ids].tolist(), light_scale[ids].tolist()
        images = {kind: [] for kind in self.cfg.data_types}
        diffuse = model.light_diffuse.copy()
        try:
            for k, env_id in enumerate(rows):
                self._data.qpos[:] = qpos[env_id]
                if mocap:  # obstacles the events placed per env
                    self._data.mocap_pos[:] = mocap_pos[env_id]
                    self._data.mocap_quat[:] = mocap_quat[env_id]
                mujoco.mj_kinematics(model, self._data)
                mujoco.mj_camlight(model, self._data)
                model.light_diffuse[:] = diffuse * light[k]
                for kind in self.cfg.data_types:
                    images[kind].append(self._render(kind, fov[k], *(p[k] for p in pose)))
        finally:
            model.light_diffuse[:] = diffuse  # videos draw the model's own lights
        return {kind: torch.from_numpy(np.stack(frames)) for kind, frames in images.items()}

    def _poses(
        self, rows: list[int], offset: torch.Tensor, rot: torch.Tensor
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
        cam = quat_mul(quat, rot)
        pos = pos + quat_rotate(quat, offset)
        x = torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64).expand_as(pos)
        z = torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64).expand_as(pos)
        return pos.numpy(), quat_rotate(cam, x).numpy(), quat_rotate(cam, z).numpy()

    def _render(
        self, kind: str, fov_y: float, pos: np.ndarray, forward: np.ndarray, up: np.ndarray
    ):
        renderer = self._renderer
        renderer.disable_depth_rendering()
        renderer.disable_segmentation_rendering()
        if kind == "depth":
            renderer.enable_depth_rendering()
        elif kind == "segmentation":
            renderer.enable_segmentation_rendering()
        renderer.update_scene(self._data, camera=self._camera)
        self._aim(renderer.scene, fov_y, pos, forward, up)
        image = renderer.render()
        if kind == "depth":
            return image.astype(np.float32)
        if kind == "segmentation":
            ids, types = image[..., 0], image[..., 1]
            return np.where(types == int(mujoco.mjtObj.mjOBJ_GEOM), ids, -1).astype(np.int64)
        return image.copy()

    def _aim(self, scn: mujoco.MjvScene, fov_y: float, pos, forward, up) -> None:
        """Point the scene's GL cameras from ``pos`` along ``forward`` with ``up``, with a
        vertical field of view of ``fov_y`` degrees (MuJoCo's free camera cannot roll: this
        can)."""
        model = self.scene.model
        near = model.vis.map.znear * model.stat.extent
        far = model.vis.map.zfar * model.stat.extent
        half = near * math.tan(math.radians(fov_y) / 2)
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
