"""Count host-device synchronisations per env step on CUDA, with torch's profiler.

Steps a task's env on the cuda engine and counts, among the CUDA runtime calls the profiler
records, those that make the CPU wait for the GPU (stream, device and event synchronise and
device-to-host copies). Prints one JSON object.

    python benchmarks/gpu/count_syncs.py --task humanoid_walk --num_envs 4096 --steps 50
"""

from __future__ import annotations

import argparse
import json

import torch

SYNC_CALLS = (
    "cudaStreamSynchronize",
    "cudaDeviceSynchronize",
    "cudaEventSynchronize",
    "cuStreamSynchronize",
    "cuCtxSynchronize",
    "cuEventSynchronize",
)


def count_syncs(env, steps: int, actions=None) -> dict[str, float]:
    """Synchronising CUDA runtime calls per env step over ``steps`` env steps."""
    from torch.profiler import ProfilerActivity, profile

    act = (
        actions
        if actions is not None
        else torch.zeros(env.num_envs, env.num_actions, device=env.device)
    )
    for _ in range(5):  # warm up: graph capture and first-use allocations are not the step
        env.step(act)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            env.step(act)
        torch.cuda.synchronize()
    counts: dict[str, int] = {}
    for event in prof.events():
        name = event.name
        if any(s in name for s in SYNC_CALLS) or ("Memcpy" in name and "DtoH" in name):
            counts[name] = counts.get(name, 0) + 1
    total = sum(counts.values()) - 1  # the closing torch.cuda.synchronize() above
    return {"syncs_per_step": total / steps, "by_call": counts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="humanoid_walk")
    parser.add_argument("--num_envs", type=int, default=4096)
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    from robolearn.adapters import make_env

    env = make_env(args.task, num_envs=args.num_envs, engine="cuda")
    print(
        json.dumps({"task": args.task, "num_envs": args.num_envs, **count_syncs(env, args.steps)})
    )


if __name__ == "__main__":
    main()
