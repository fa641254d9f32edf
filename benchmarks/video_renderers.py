"""Seconds per video frame of one env through robolearn's two renderers, side by side.

The scene is a task's play variant with one env (humanoid_walk by default), after a reset.
Each renderer draws that env at the video's size (640x480, ``play --video``'s default)
from the video camera's pose (3 m from the robot's root, 15 degrees above it, azimuth 135):

* ``opengl-shadows``: :class:`robolearn.render.video.EnvRenderer` with shadows and floor
  reflections, MuJoCo's own look (videos before issue 62; the web viewer's rendered mode):
  MuJoCo's OpenGL renderer (Mesa through EGL without a GPU), the model's antialiasing, the
  camera following the root;
* ``opengl``: the same without shadows and reflections, as videos draw now;
* ``opengl-no-aa``: that without antialiasing too (the model's offscreen samples at 0);
* ``batch``: a camera sensor through MuJoCo Warp's batch renderer (ray tracing, on warp's
  CPU device on the cpu engine), fixed at the same pose: no markers, no antialiasing;
  ``batch-shadows`` with shadows.

Each renderer draws ``--frames`` frames per round after one that warms it up (kernels
compile, GL starts); the rounds alternate the renderers so that load falls on each alike.
One PNG of each goes to ``--out`` to compare the look.

    MUJOCO_GL=egl python benchmarks/video_renderers.py --task humanoid_walk --frames 10
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import statistics
import time
from pathlib import Path

import numpy as np
import torch

from robolearn.env import ManagerBasedRLEnv
from robolearn.math import quat_mul
from robolearn.registry import get_task
from robolearn.render.video import EnvRenderer, track_body_of
from robolearn.scene import CameraCfg

WIDTH, HEIGHT = 640, 480
DISTANCE, ELEVATION, AZIMUTH = 3.0, -15.0, 135.0  # EnvRenderer's camera


def _axis_quat(axis: int, deg: float) -> torch.Tensor:
    q = torch.zeros(4)
    q[0], q[1 + axis] = math.cos(math.radians(deg) / 2), math.sin(math.radians(deg) / 2)
    return q


def video_camera(lookat: np.ndarray, **kw) -> CameraCfg:
    """A camera sensor fixed in the env's frame where the video camera stands."""
    el, az = math.radians(ELEVATION), math.radians(AZIMUTH)
    forward = np.array([math.cos(el) * math.cos(az), math.cos(el) * math.sin(az), math.sin(el)])
    pos = lookat - DISTANCE * forward
    rot = quat_mul(_axis_quat(2, AZIMUTH), _axis_quat(1, -ELEVATION))  # yaw, then pitch down
    return CameraCfg(
        width=WIDTH, height=HEIGHT, fov_y=45.0, data_types=("rgb",),
        offset=tuple(float(x) for x in pos), rot=tuple(float(x) for x in rot), **kw,
    )  # fmt: skip


def make_env(task: str, camera: CameraCfg | None = None) -> ManagerBasedRLEnv:
    cfg = get_task(task).make_env_cfg(play=True)
    sensors = dict(cfg.scene.sensors)
    if camera is not None:
        sensors["video"] = camera
    cfg.scene = dataclasses.replace(cfg.scene, num_envs=1, sensors=sensors)
    env = ManagerBasedRLEnv(cfg)
    torch.manual_seed(0)
    env.reset()
    return env


def opengl(env: ManagerBasedRLEnv, antialias: bool = True, **look) -> EnvRenderer:
    model = env.scene.engine.model
    samples = model.vis.quality.offsamples
    if not antialias:
        model.vis.quality.offsamples = 0  # read when the renderer makes its buffers
    try:
        return EnvRenderer(env.scene.engine, WIDTH, HEIGHT, track_body=track_body_of(env), **look)
    finally:
        model.vis.quality.offsamples = samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="humanoid_walk")
    parser.add_argument("--frames", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default="/tmp/video_renderers")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    env = make_env(args.task)
    renderers = {
        "opengl-shadows": opengl(env, shadows=True, reflections=True),
        "opengl": opengl(env),
        "opengl-no-aa": opengl(env, antialias=False),
    }
    draw = {name: (lambda r=r: r.frame(0)) for name, r in renderers.items()}
    first = renderers["opengl"]
    first.frame(0)
    root = track_body_of(env)
    lookat = first.data.xpos[root].copy() if root is not None else first.model.stat.center
    for name, shadows in (("batch", False), ("batch-shadows", True)):
        camera = make_env(args.task, video_camera(lookat, shadows=shadows)).scene.sensors["video"]

        def frame(camera=camera) -> np.ndarray:
            camera.invalidate(torch.ones(1, dtype=torch.bool))
            return camera.rgb[0].cpu().numpy()

        draw[name] = frame
    import imageio.v2 as imageio

    for name, fn in draw.items():  # warm-up, and one image of each
        imageio.imwrite(out / f"{name}.png", fn())
    times: dict[str, list[float]] = {name: [] for name in draw}
    for _ in range(args.rounds):
        for name, fn in draw.items():
            start = time.perf_counter()
            for _ in range(args.frames):
                fn()
            times[name].append((time.perf_counter() - start) / args.frames)
    base = statistics.median(times["opengl-shadows"])
    print(f"{args.task}, {WIDTH}x{HEIGHT}, {args.frames} frames x {args.rounds} rounds")
    print(f"{'renderer':16s} {'s/frame median':>15s} {'min':>7s} {'max':>7s} {'speed-up':>9s}")
    for name, values in times.items():
        med = statistics.median(values)
        print(f"{name:16s} {med:15.4f} {min(values):7.4f} {max(values):7.4f} {base / med:8.2f}x")
    print(f"images: {out}/*.png")


if __name__ == "__main__":
    main()
