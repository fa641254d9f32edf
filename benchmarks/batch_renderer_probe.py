"""Images per second of the camera sensor (MuJoCo's renderer on Mesa, env after env) against
MuJoCo Warp's batch renderer on warp's CPU device (every world in one call), side by side.

Both draw the quadruped standing on its floor from a camera 0.3 m ahead of its trunk's
origin, looking forward, 58 degrees of vertical field of view. The sensor's reading is what
``CameraCfg`` costs today (each env's pose into a host MjData, kinematics, render, the image
into a tensor). MuJoCo Warp's is kinematics, camera poses and a render of every world, on
a model with the same camera added to the trunk (that camera only). The two depth images
of the standing robot agree within 1e-6 m (checked once by hand, 2026-12-05). A probe for
choosing the cameras' path: MuJoCo Warp's renderer is not used by the sensor yet.

    python benchmarks/batch_renderer_probe.py --num_envs 16 64 --size 64
"""

from __future__ import annotations

import argparse
import time

import mujoco
import torch
from camera_throughput import camera_scene

from robolearn.scene.models import resolve_model_path


def sensor_rate(num_envs: int, size: int, kind: str, rounds: int) -> float:
    scene = camera_scene(num_envs, size, kind)
    cam = scene.sensors["cam"]
    every = torch.ones(num_envs, dtype=torch.bool)
    cam.invalidate(every)
    getattr(cam, kind)  # warm-up: the renderer's context
    start = time.perf_counter()
    for _ in range(rounds):
        cam.invalidate(every)
        getattr(cam, kind)
    return rounds * num_envs / (time.perf_counter() - start)


def warp_rate(num_envs: int, size: int, kind: str, rounds: int) -> float:
    import mujoco_warp as mjw
    import warp as wp

    spec = mujoco.MjSpec.from_file(str(resolve_model_path("quadruped/scene.xml")))
    # MJCF cameras look along their -z; image right = -y and up = +z of the trunk
    spec.body("trunk").add_camera(name="front", pos=[0.3, 0, 0], xyaxes=[0, -1, 0, 0, 0, 1])
    spec.camera("front").fovy = 58.0
    model = spec.compile()
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("stand").id)
    mujoco.mj_forward(model, data)
    with wp.ScopedDevice("cpu"):
        m = mjw.put_model(model)
        d = mjw.put_data(model, data, nworld=num_envs)
        rc = mjw.create_render_context(
            model, nworld=num_envs, cam_res=(size, size), render_rgb=kind == "rgb",
            render_depth=kind == "depth", render_seg=False, cam_active=["front"],
        )  # fmt: skip

        def reading() -> None:
            mjw.kinematics(m, d)
            mjw.camlight(m, d)
            mjw.render(m, d, rc)
            wp.synchronize()

        reading()  # warm-up: kernels compile once into warp's cache
        start = time.perf_counter()
        for _ in range(rounds):
            reading()
        return rounds * num_envs / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num_envs", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print("| envs | image | kind | camera sensor (Mesa) images/s | MuJoCo Warp (warp cpu) "
          "images/s | ratio |")  # fmt: skip
    print("|---:|---|---|---:|---:|---:|")
    for n in args.num_envs:
        for kind in ("depth", "rgb"):
            ours = sensor_rate(n, args.size, kind, args.rounds)
            theirs = warp_rate(n, args.size, kind, args.rounds)
            print(
                f"| {n} | {args.size}x{args.size} | {kind} | {ours:,.0f} | {theirs:,.0f} | "
                f"{theirs / ours:.1f}x |",
                flush=True,
            )


if __name__ == "__main__":
    main()
