"""Milliseconds per env step spent outside the engine, for A/B runs of two checkouts.

Steps a task's env on the cpu engine with fixed random actions (robots fall and reset as in
early training) and prints one JSON line: env steps/s, ms per step, and ms per step outside
the engine's own calls (the managers, resets included). Run it once per checkout, in
alternation, with ``PYTHONPATH`` pointing at each:

    PYTHONPATH=<checkout> python benchmarks/reset_path_cost.py humanoid_walk 1024 60
"""

from __future__ import annotations

import json
import sys
import time

import torch

from robolearn.wrappers import make_env

task, n, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
env = make_env(task, num_envs=n, engine="cpu")
gen = torch.Generator().manual_seed(0)
acts = [0.5 * torch.randn(n, env.num_actions, generator=gen) for _ in range(8)]
for i in range(10):
    env.step(acts[i % 8])
with env.scene.engine.timed() as timer:
    t0 = time.perf_counter()
    for i in range(steps):
        env.step(acts[i % 8])
    el = time.perf_counter() - t0
phys = sum(timer.seconds.values())
print(
    json.dumps(
        {
            "src": __import__("robolearn").__file__.split("/robolearn/")[0],
            "steps_per_s": steps * n / el,
            "ms_outside": 1e3 * (el - phys) / steps,
            "ms_step": 1e3 * el / steps,
            "engine_calls": {k: round(v, 3) for k, v in timer.seconds.items()},
        }
    )
)
