"""The bare MuJoCo Warp step on a task's model: the GPU ceiling robolearn is measured against.

Builds the task's compiled model (the same MJCF and timestep the env uses), ``nworld`` =
``--num_envs``, captures ``decimation`` substeps in a CUDA graph (on a CUDA device) and
times replays (the device synchronised every 10 replays, which bounds the queue, and at
the end); prints one JSON object with physics steps/s and, on CUDA, GPU memory: Warp's
memory pool (MuJoCo Warp's arrays; now and its high-water mark) and the whole device's.

    python benchmarks/gpu/bare_mjwarp.py --task humanoid_walk --num_envs 4096 [--engine warp-cpu]
"""

from __future__ import annotations

import argparse
import json
import time

import mujoco
import torch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="humanoid_walk")
    parser.add_argument("--num_envs", type=int, default=4096)
    parser.add_argument("--engine", default="cuda", choices=["cuda", "warp-cpu"])
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()

    import warp as wp

    # stdout is the JSON line: no banner, no line per loaded module (as robolearn's engine)
    if hasattr(wp, "LOG_WARNING"):
        wp.config.log_level = wp.LOG_WARNING
    else:  # warp < 1.14
        wp.config.quiet = True
    import mujoco_warp as mjw

    from robolearn.registry import get_task
    from robolearn.scene.models import resolve_model_path
    from robolearn.sim import compile_model, load_spec

    cfg = get_task(args.task).env_cfg()
    spec = load_spec(resolve_model_path(cfg.scene.robot.model))
    if cfg.sim.physics_dt is not None:
        spec.option.timestep = cfg.sim.physics_dt
    model = compile_model(spec)
    device = wp.get_device("cuda:0" if args.engine == "cuda" else "cpu")
    data = mujoco.MjData(model)
    if cfg.scene.robot.keyframe:
        mujoco.mj_resetDataKeyframe(model, data, model.key(cfg.scene.robot.keyframe).id)
    mujoco.mj_forward(model, data)
    dec = cfg.decimation
    iteration_limits = mjw.OverflowType.ITERATIONS | mjw.OverflowType.LS_ITERATIONS
    if cfg.scene.robot.keyframe:
        # standing targets, as robolearn's env starts; with zero targets the robots collapse
        # into a heap of contacts no training state looks like
        data.ctrl[:] = model.key(cfg.scene.robot.keyframe).ctrl
    with wp.ScopedDevice(device):
        m = mjw.put_model(model)
        # the solver's iteration limits are routine (robolearn's engine counts them so too):
        # unsilenced, every world that reaches one prints a line from the device
        m.opt.warn_overflow = int(m.opt.warn_overflow) & ~int(iteration_limits)
        d = mjw.put_data(
            model, data, nworld=args.num_envs, nconmax=cfg.sim.nconmax, njmax=cfg.sim.njmax
        )

        def substeps() -> None:
            for _ in range(dec):
                mjw.step(m, d)

        substeps()  # compile and warm up
        wp.synchronize()
        graph = None
        if device.is_cuda:
            with wp.ScopedCapture() as capture:
                substeps()
            graph = capture.graph
        calls, start = 0, time.perf_counter()
        while time.perf_counter() - start < args.seconds:
            for _ in range(10):
                wp.capture_launch(graph) if graph is not None else substeps()
            wp.synchronize()
            calls += 10
        elapsed = time.perf_counter() - start
    result = {
        "task": args.task,
        "engine": args.engine,
        "num_envs": args.num_envs,
        "decimation": dec,
        "bare_physics_steps_per_s": calls * dec * args.num_envs / elapsed,
        "cuda_graph": graph is not None,
        # worlds whose contact or constraint buffers overflowed (dropped work: a ceiling
        # measured with overflows is too high)
        "overflowed_worlds": int((d.overflow.numpy() & ~int(iteration_limits)).astype(bool).sum()),
    }
    if device.is_cuda:
        free, total = torch.cuda.mem_get_info()
        result["gpu_used_mb"] = (total - free) / 2**20  # the whole device's, as in bench
        if wp.is_mempool_enabled(device):  # Warp's own arrays (MuJoCo Warp's model, data)
            result["gpu_warp_mb"] = wp.get_mempool_used_mem_current(device) / 2**20
            result["peak_gpu_warp_mb"] = wp.get_mempool_used_mem_high(device) / 2**20
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
