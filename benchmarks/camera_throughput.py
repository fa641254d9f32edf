"""Images per second of a camera sensor on the cpu engine, against the renderer's own
ceiling measured bare, side by side.

The scene is the quadruped with a camera on its trunk (shadows and reflections off, the
camera's default; ``--shadows`` turns them on); each reading renders every env
(its pose put into a host MjData, kinematics, MuJoCo's renderer, the image copied into
the sensor's tensor). The bare ceiling renders one MjData again and again with the same
renderer: no pose sync, no copy. Both run in one process, round by round in turn.

    python benchmarks/camera_throughput.py --num_envs 16 64 256 --sizes 64 128
    python benchmarks/camera_throughput.py --antialias --num_envs 64 --sizes 64 128
"""

from __future__ import annotations

import argparse
import time

import torch
from robolearn.envs.quadruped import quadruped_scene

from robolearn.scene import CameraCfg, Scene, SimCfg


def camera_scene(
    num_envs: int, size: int, kind: str, shadows: bool = False, antialias: bool = False
) -> Scene:
    cfg = quadruped_scene()
    cfg.num_envs = num_envs
    cam = CameraCfg(
        width=size, height=size, data_types=(kind,), body="trunk", offset=(0.3, 0, 0),
        shadows=shadows, reflections=shadows, antialias=antialias,
    )  # fmt: skip
    cfg.sensors = {"cam": cam}
    scene = Scene(cfg, SimCfg(engine="cpu"))
    every = torch.ones(num_envs, dtype=torch.bool)
    scene.reset_to_default(every)
    scene.forward(every)
    return scene


def sensor_rate(scene: Scene, kind: str, rounds: int) -> float:
    """Images per second of the sensor's readings (every env each time)."""
    cam = scene.sensors["cam"]
    every = torch.ones(scene.num_envs, dtype=torch.bool)
    start = time.perf_counter()
    for _ in range(rounds):
        cam.invalidate(every)
        getattr(cam, kind)
    return rounds * scene.num_envs / (time.perf_counter() - start)


def bare_rate(scene: Scene, kind: str, images: int) -> float:
    """Images per second of the renderer alone, on one unchanging MjData."""
    import mujoco  # after robolearn, which picks MuJoCo's GL backend (EGL headless)

    cam = scene.sensors["cam"]
    renderer, data = cam._renderer, cam._data
    if kind == "depth":
        renderer.enable_depth_rendering()
    mujoco.mj_forward(scene.model, data)
    start = time.perf_counter()
    for _ in range(images):
        renderer.update_scene(data, camera=cam._camera)
        renderer.render()
    seconds = time.perf_counter() - start
    renderer.disable_depth_rendering()
    return images / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num_envs", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--sizes", type=int, nargs="+", default=[64, 128])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--shadows", action="store_true", help="shadows and reflections on")
    parser.add_argument(
        "--antialias",
        action="store_true",
        help="compare the sensor antialiased (4 samples per pixel) and not, side by side",
    )
    args = parser.parse_args()
    if args.antialias:
        compare_antialias(args)
        return
    print("| envs | image | kind | sensor images/s | bare images/s | sensor / bare | MB per env |")
    print("|---:|---|---|---:|---:|---:|---:|")
    for size in args.sizes:
        for kind in ("rgb", "depth"):
            for n in args.num_envs:
                scene = camera_scene(n, size, kind, args.shadows)
                sensor_rate(scene, kind, 1)  # warm-up
                sensor, bare = 0.0, 0.0
                for _ in range(args.rounds):  # in turn, so load falls on both alike
                    sensor += sensor_rate(scene, kind, 1)
                    bare += bare_rate(scene, kind, n)
                sensor, bare = sensor / args.rounds, bare / args.rounds
                per_env = size * size * (3 if kind == "rgb" else 4) / 1e6
                print(
                    f"| {n} | {size}x{size} | {kind} | {sensor:,.0f} | {bare:,.0f} | "
                    f"{sensor / bare:.2f} | {per_env:.3f} |",
                    flush=True,
                )


def compare_antialias(args: argparse.Namespace) -> None:
    """The sensor's images per second with 4 samples per pixel and with 1, in turn."""
    print("| envs | image | kind | 1 sample images/s | 4 samples images/s | 1 / 4 |")
    print("|---:|---|---|---:|---:|---:|")
    for size in args.sizes:
        for kind in ("rgb", "depth"):
            for n in args.num_envs:
                plain, smooth = (camera_scene(n, size, kind, antialias=a) for a in (False, True))
                for scene in (plain, smooth):
                    sensor_rate(scene, kind, 1)  # warm-up
                rates = [0.0, 0.0]
                for _ in range(args.rounds):
                    rates[0] += sensor_rate(plain, kind, 1) / args.rounds
                    rates[1] += sensor_rate(smooth, kind, 1) / args.rounds
                print(
                    f"| {n} | {size}x{size} | {kind} | {rates[0]:,.0f} | {rates[1]:,.0f} | "
                    f"{rates[0] / rates[1]:.2f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
