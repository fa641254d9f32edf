"""Images per second of a camera sensor on the cpu engine through each renderer, and the
batch renderer's own ceiling measured bare, side by side.

The scene is the quadruped with a camera on its trunk, 0.3 m ahead of its origin, looking
forward (shadows off, the camera's default). Each reading renders every env:

* ``batch``: the sensor through MuJoCo Warp's batch renderer on warp's CPU device (every
  env's qpos copied in, kinematics, camera poses, the BVH refit, one render, the images
  into the sensor's tensors);
* ``opengl``: the sensor through MuJoCo's OpenGL renderer on Mesa, env after env (its pose
  into a host MjData, kinematics, render, the image copied);
* ``bare``: ``mujoco_warp.render`` alone, on the batch sensor's own buffers: no copy in or
  out, no kinematics.

All run in one process, round by round in turn, so that load falls on each alike.
"MB per env" is what the sensor holds per env (its reading and the renderer's buffer).
``--engine cuda`` (or ``warp-cpu``) runs the scene on that engine, the batch renderer on
its device; ``--renderers batch`` leaves the OpenGL sensor out (a GPU machine without EGL).

    python benchmarks/camera_throughput.py --num_envs 16 64 256 1024 --sizes 64 128
    python benchmarks/camera_throughput.py --antialias --num_envs 64 --sizes 64 128
    python benchmarks/camera_throughput.py --engine cuda --renderers batch --num_envs 1024 4096
"""

from __future__ import annotations

import argparse
import time

import torch
from robolearn.envs.quadruped import quadruped_robot

from robolearn.scene import CameraCfg, Scene, SceneCfg, SimCfg
from robolearn.scene.sensors.camera import image_bytes_per_env


def camera_scene(
    num_envs: int,
    size: int,
    kind: str,
    renderer: str = "batch",
    engine: str = "cpu",
    antialias: bool = False,
) -> Scene:
    cfg = SceneCfg(entities={"robot": quadruped_robot()})
    cfg.num_envs = num_envs
    cam = CameraCfg(
        width=size, height=size, data_types=(kind,), body="trunk", offset=(0.3, 0, 0),
        renderer=renderer, antialias=antialias,
    )  # fmt: skip
    cfg.sensors = {"cam": cam}
    scene = Scene(cfg, SimCfg(engine=engine))
    every = torch.ones(num_envs, dtype=torch.bool)
    scene.reset_to_default(every)
    scene.forward(every)
    sensor_rate(scene, kind)  # warm-up: kernels compile, GL contexts start
    return scene


def sensor_rate(scene: Scene, kind: str) -> float:
    """Images per second of one reading of every env."""
    cam = scene.sensors["cam"]
    cam.invalidate(torch.ones(scene.num_envs, dtype=torch.bool))
    start = time.perf_counter()
    getattr(cam, kind)
    if cam.device.type == "cuda":
        torch.cuda.synchronize(cam.device)
    return scene.num_envs / (time.perf_counter() - start)


def bare_rate(scene: Scene) -> float:
    """Images per second of MuJoCo Warp's render alone, every env in one call."""
    batch = scene.sensors["cam"]._batch
    wp, mjw = batch._wp, batch._mjw
    with wp.ScopedDevice(batch.wp_device):
        start = time.perf_counter()
        mjw.render(batch._m, batch._d, batch._rc)
        wp.synchronize()
    return scene.num_envs / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num_envs", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--sizes", type=int, nargs="+", default=[64, 128])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--engine", default="cpu", choices=["cpu", "cuda", "warp-cpu"])
    parser.add_argument(
        "--renderers", default="batch,opengl", choices=["batch,opengl", "batch"],
        help="batch alone where EGL is missing",
    )  # fmt: skip
    parser.add_argument(
        "--antialias",
        action="store_true",
        help="compare the batch sensor antialiased (2x2 rays per pixel) and not, side by side",
    )
    args = parser.parse_args()
    if args.antialias:
        compare_antialias(args)
        return
    with_gl = "opengl" in args.renderers
    print(f"engine {args.engine}")
    print(
        "| envs | image | kind | batch images/s | opengl images/s | batch / opengl | "
        "bare render images/s | batch / bare | MB per env |"
    )
    print("|---:|---|---|---:|---:|---:|---:|---:|---:|")
    for size in args.sizes:
        for kind in ("rgb", "depth"):
            for n in args.num_envs:
                batch = camera_scene(n, size, kind, engine=args.engine)
                opengl = camera_scene(n, size, kind, "opengl", args.engine) if with_gl else None
                batch_r, gl_r, bare_r = [], [], []
                for _ in range(args.rounds):
                    batch_r.append(sensor_rate(batch, kind))
                    if opengl is not None:
                        gl_r.append(sensor_rate(opengl, kind))
                    bare_r.append(bare_rate(batch))
                rates = [sum(r) / len(r) if r else float("nan") for r in (batch_r, gl_r, bare_r)]
                gl, ratio = (
                    ("-", "-") if not gl_r else (f"{rates[1]:,.0f}", f"{rates[0] / rates[1]:.1f}x")
                )
                per_env = image_bytes_per_env(batch.sensors["cam"].cfg) / 1e6
                print(
                    f"| {n} | {size}x{size} | {kind} | {rates[0]:,.0f} | {gl} | {ratio} | "
                    f"{rates[2]:,.0f} | "
                    f"{rates[0] / rates[2]:.2f} | {per_env:.3f} |",
                    flush=True,
                )
                del batch, opengl


def compare_antialias(args: argparse.Namespace) -> None:
    """The batch sensor's images per second with 2x2 rays per pixel and with 1, in turn."""
    print("| envs | image | kind | 1 ray images/s | 2x2 rays images/s | 1 ray / 2x2 |")
    print("|---:|---|---|---:|---:|---:|")
    for size in args.sizes:
        for kind in ("rgb", "depth"):
            for n in args.num_envs:
                plain, smooth = (camera_scene(n, size, kind, antialias=a) for a in (False, True))
                rates = [0.0, 0.0]
                for _ in range(args.rounds):
                    rates[0] += sensor_rate(plain, kind) / args.rounds
                    rates[1] += sensor_rate(smooth, kind) / args.rounds
                print(
                    f"| {n} | {size}x{size} | {kind} | {rates[0]:,.0f} | {rates[1]:,.0f} | "
                    f"{rates[0] / rates[1]:.2f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
