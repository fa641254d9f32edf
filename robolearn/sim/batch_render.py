"""One model camera drawn in every env at once by MuJoCo Warp's batch renderer.

MuJoCo Warp ray-traces each world's scene through a bounding-volume hierarchy of its geoms
(``mujoco_warp.render``): every env's image in one launch, on a GPU or on warp's CPU
device. On warp's CPU device it drew 4.8-7.2x more 64x64 images per second than MuJoCo's
OpenGL renderer on Mesa, env after env (BENCHMARKS.md section 26), so it serves every
engine: on ``cuda`` and ``warp-cpu`` it renders on the engine's device, in torch's stream
order, with no host synchronisation; on ``cpu`` on warp's CPU device (host copies, no
transfer).

The renderer keeps its own copy of the model and its own MuJoCo Warp data (positions only:
kinematics, camera and light poses), so a reading never touches the engine's state. Its
model has a per-env axis on the engine's per-env fields, copied in at each reading (each
env is drawn with its own sizes and colours), and on the camera's pose, field of view and
the lights' colour, which camera randomization writes (:attr:`cam_pos`, :attr:`cam_quat`,
:attr:`cam_fovy`, :attr:`light_diffuse`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import mujoco
import torch

from robolearn.sim.engine import Engine

KINDS = ("rgb", "depth", "segmentation")
_RANDOMIZED = ("cam_pos", "cam_quat", "cam_fovy", "light_diffuse")
"""Model fields the renderer holds per env whatever the engine holds: what camera
randomization writes."""


class BatchRenderer:
    """Model camera ``camera`` of ``model`` drawn in all of ``engine``'s envs at
    ``width`` x ``height``, the ``kinds`` asked for (of :data:`KINDS`)."""

    def __init__(
        self,
        engine: Engine,
        model: mujoco.MjModel,
        camera: int,
        width: int,
        height: int,
        kinds: tuple[str, ...],
        shadows: bool = False,
        samples_per_axis: int = 1,
    ) -> None:
        from robolearn.sim.mjwarp import WarpEngine, _import_warp, batchable_fields

        wp, mjw = _import_warp()  # here: warp loads slowly
        self._wp, self._mjw = wp, mjw
        self.engine = engine
        self.num_envs = n = engine.num_envs
        self.width, self.height = width, height
        on_engine = isinstance(engine, WarpEngine)
        self.wp_device = engine.wp_device if on_engine else wp.get_device("cpu")
        self.device = torch.device(str(self.wp_device))
        engines = sorted(set(engine.per_env_fields) & batchable_fields())
        batched = sorted(set(engines) | set(_RANDOMIZED))
        with wp.ScopedDevice(self.wp_device):
            self._m = mjw.put_model(model, batch_sizes={f: n for f in batched})
            data = mujoco.MjData(model)
            mujoco.mj_kinematics(model, data)
            self._d = mjw.put_data(model, data, nworld=n, nconmax=1, njmax=1)
        self._context_args = dict(
            nworld=n,
            cam_res=(width, height),
            render_rgb="rgb" in kinds,
            render_depth="depth" in kinds,
            render_seg="segmentation" in kinds,
            use_shadows=shadows,
            cam_active=[camera],
            samples_per_pixel=samples_per_axis,
            # the sky where nothing is hit, as MuJoCo's viewer draws it (else black)
            render_skybox=bool((model.tex_type == mujoco.mjtTexture.mjTEXTURE_SKYBOX).any()),
        )
        self._mj_model, self._kinds = model, kinds
        self.fixed_fov = True
        """Whether every env's rays were computed once, from the model's field of view
        (faster: MuJoCo Warp's precomputed rays); :meth:`free_fov` lifts it."""
        self._make_context()
        field = lambda name: wp.to_torch(getattr(self._m, name))  # noqa: E731
        self.cam_pos = field("cam_pos")[:, camera]
        """(N, 3) the camera's position in its body's frame, per env."""
        self.cam_quat = field("cam_quat")[:, camera]
        """(N, 4) the MJCF camera's orientation in its body's frame (w x y z), per env."""
        self.cam_fovy = field("cam_fovy")[:, camera]
        """(N,) the vertical field of view (degrees), per env: drawn only after
        :meth:`free_fov` (the model's in every env before, whatever this holds)."""
        self.light_diffuse = field("light_diffuse")
        """(N, nlight, 3) each model light's diffuse colour, per env."""
        self._qpos = wp.to_torch(self._d.qpos)
        self._mocap_pos = wp.to_torch(self._d.mocap_pos)
        self._mocap_quat = wp.to_torch(self._d.mocap_quat)
        self._nmocap = model.nmocap
        # (ours, the engine's): what events change per env in the engine's model
        self._fields = [(field(name), engine.model_field(name)) for name in engines]

    def _make_context(self) -> None:
        """MuJoCo Warp's render context (the BVH, the rays, the image buffers), and views
        of its buffers."""
        wp, mjw, n, kinds = self._wp, self._mjw, self.num_envs, self._kinds
        with wp.ScopedDevice(self.wp_device):
            self._rc = rc = mjw.create_render_context(
                self._mj_model, use_precomputed_rays=self.fixed_fov, **self._context_args
            )
        rgb, depth, seg = (wp.to_torch(b) for b in (rc.rgb_data, rc.depth_data, rc.seg_data))
        h, w = self.height, self.width  # a kind not rendered has an empty buffer
        self._rgb = rgb if "rgb" in kinds else None
        self._depth = depth.view(n, h, w) if "depth" in kinds else None
        self._seg = seg.view(n, h, w, 2) if "segmentation" in kinds else None

    def free_fov(self) -> bool:
        """Trace each env's rays from its own :attr:`cam_fovy` from now on (a new render
        context, made once). Rays precomputed for one field of view drew 64x64 depth
        1.4x faster on warp's CPU device (BENCHMARKS.md section 26), so they are kept
        until a field of view is randomized. False where it cannot: MuJoCo Warp's
        sub-pixel samples (antialiasing) need precomputed rays."""
        if not self.fixed_fov:
            return True
        if self._context_args["samples_per_pixel"] > 1:
            return False
        self.fixed_fov = False
        self._make_context()
        return True

    @contextlib.contextmanager
    def _ordered(self) -> Iterator[None]:
        """Warp's launches on our device, on CUDA in torch's current stream: they follow
        the engine's step and precede whatever torch does with the images, unsynchronised."""
        wp = self._wp
        with wp.ScopedDevice(self.wp_device):
            if self.wp_device.is_cuda:
                stream = wp.stream_from_torch(torch.cuda.current_stream(self.device))
                with wp.ScopedStream(stream):
                    yield
            else:
                yield

    def render(self) -> None:
        """Draw every env's current state."""
        engine, mjw, m, d = self.engine, self._mjw, self._m, self._d
        with self._ordered():
            self._qpos.copy_(engine.qpos.to(self.device))
            if self._nmocap:  # obstacles the events placed per env
                self._mocap_pos.copy_(engine.mocap_pos.to(self.device))
                self._mocap_quat.copy_(engine.mocap_quat.to(self.device))
            for ours, engines in self._fields:  # what events changed per env
                ours.copy_(engines.reshape(ours.shape))
            mjw.kinematics(m, d)
            mjw.camlight(m, d)
            mjw.refit_bvh(m, d, self._rc)
            mjw.render(m, d, self._rc)

    # ---- the images of the last render (views of the renderer's buffers) ---------------

    def rgb(self) -> torch.Tensor:
        """(N, height, width, 3) uint8."""
        # each pixel is one uint32, A R G B from the high byte: B G R A in memory
        packed = self._rgb.view(torch.int32).view(torch.uint8)
        return packed.view(self.num_envs, self.height, self.width, 4)[..., [2, 1, 0]]

    def depth(self) -> torch.Tensor:
        """(N, height, width) float32 metres along the optical axis, 0 where nothing is
        hit."""
        return self._depth

    def segmentation(self) -> torch.Tensor:
        """(N, height, width) the geom drawn at each pixel, -1 where none is."""
        ids, types = self._seg[..., 0], self._seg[..., 1]
        return torch.where(types == int(mujoco.mjtObj.mjOBJ_GEOM), ids, -1)
