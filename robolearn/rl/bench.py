"""``robolearn bench``: a task's speed, measured side by side in one process.

Isaac Lab's three columns plus mjlab's physics column, for one task, env count and engine,
all from the same run of the task's own (untrained) policy in the env, so that every
figure sees the same robot states (fallen robots, with more contacts, cost more physics):

* ``physics_steps_per_s``: the engine's substeps per second of time spent inside the
  engine (stepping, resets): the bare engine's speed on those states, the ceiling;
* ``env_steps_per_s``: env steps per second of ``ManagerBasedRLEnv.step`` (all managers);
* ``env_steps_per_s_inference``: the same, plus the actor network choosing the actions;
* ``env_steps_per_s_training``: ``robolearn train``'s loop, rollout and PPO update.

``overhead_vs_bare`` = 1 - env steps/s x decimation / physics steps/s: what robolearn's
managers add to the engine.
"""

from __future__ import annotations

import contextlib
import io
import resource
import statistics
import time
from typing import Any

import torch

from robolearn.rl.session import build_setup, resolve_device_engine
from robolearn.threads import single_threaded


def run_bench(
    task: str,
    num_envs: int | None,
    engine: str | None = None,
    seconds: float = 3.0,
    rounds: int = 3,
    train_iterations: int = 3,
    overrides: list[str] | None = None,
    device: str = "auto",
) -> dict[str, Any]:
    """Measure ``task`` (see the module docstring): ``rounds`` runs of ``seconds`` each for
    the env columns (their medians), then ``train_iterations`` timed PPO iterations.

    ``device`` and ``engine`` choose where it runs as for ``robolearn train``: the engine
    ``device`` implies unless ``engine`` names one (they must agree); neither: the task's.
    """
    from robolearn.adapters import RslRlVecEnv
    from robolearn.env import ManagerBasedRLEnv
    from robolearn.rl.runner import Runner

    engine = resolve_device_engine(device, engine)
    setup = build_setup(task, overrides or [], num_envs=num_envs, engine=engine)
    env = ManagerBasedRLEnv(setup.env_cfg)
    agent = setup.agent_cfg.to_rsl_rl()
    agent["save_interval"] = 10**9
    runner = Runner(RslRlVecEnv(env), agent, device=str(env.device))
    policy = runner.get_inference_policy(device=str(env.device))
    rates = _env_rates(env, policy, seconds, rounds)
    iteration_s = _train_iteration_seconds(runner, env.device, train_iterations)
    rates["env_steps_per_s_training"] = runner.cfg["num_steps_per_env"] * env.num_envs / iteration_s
    return _result(task, env, rates)


def _sync(device: torch.device) -> None:
    """Wait for the GPU, so that a time measured on the host includes its work."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _env_rates(env, policy, seconds: float, rounds: int) -> dict[str, float]:
    """Medians over ``rounds`` of the physics, env and env + inference columns."""
    n, dec = env.num_envs, env.cfg.decimation
    physics, env_rate, infer_rate = [], [], []
    with single_threaded(env.device):  # as the training loop's rollout
        for _ in range(rounds):
            env.reset()
            with env.engine.timed() as timer:
                steps, env_time, policy_time = _policy_steps(env, policy, seconds)
            # physics is what the env asks of the engine: substeps, resets and the forward
            # passes after them
            engine_time = timer.total("step", "reset", "forward_envs")
            physics.append(steps * n * dec / engine_time)
            env_rate.append(steps * n / env_time)
            infer_rate.append(steps * n / (env_time + policy_time))
    return {
        "physics_steps_per_s": statistics.median(physics),
        "env_steps_per_s": statistics.median(env_rate),
        "env_steps_per_s_inference": statistics.median(infer_rate),
    }


def _policy_steps(env, policy, seconds: float) -> tuple[int, float, float]:
    """Step ``env`` with ``policy`` for ``seconds``: (steps, env seconds, policy seconds)."""
    from robolearn.rl.policy import act

    env_time, policy_time, steps = 0.0, 0.0, 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        t0 = time.perf_counter()
        actions = act(policy, env.obs_buf, env.num_envs)
        _sync(env.device)
        t1 = time.perf_counter()
        env.step(actions)
        _sync(env.device)
        env_time += time.perf_counter() - t1
        policy_time += t1 - t0
        steps += 1
    return steps, env_time, policy_time


def _train_iteration_seconds(runner, device: torch.device, iterations: int) -> float:
    """Median seconds of one iteration of the runner's own loop (the first one warms up)."""
    times: list[float] = []
    with contextlib.redirect_stdout(io.StringIO()):
        for i in range(iterations + 1):
            t = time.perf_counter()
            runner.learn(i + 1, log=lambda _line: None, init_at_random_ep_len=False)
            _sync(device)
            if i > 0:
                times.append(time.perf_counter() - t)
    return statistics.median(times)


def _result(task: str, env, rates: dict[str, float]) -> dict[str, Any]:
    """The report: the measured rates, what the run was, and the ratios to the ceiling."""
    dec = env.cfg.decimation
    result = {
        "task": task,
        "engine": env.engine.name,
        "device": str(env.device),
        "num_envs": env.num_envs,
        "decimation": dec,
        "physics_steps_per_s": rates["physics_steps_per_s"],
        "env_steps_per_s": rates["env_steps_per_s"],
        "env_steps_per_s_inference": rates["env_steps_per_s_inference"],
        "env_steps_per_s_training": rates["env_steps_per_s_training"],
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    ceiling = result["physics_steps_per_s"] / dec
    result["overhead_vs_bare"] = 1.0 - result["env_steps_per_s"] / ceiling
    result["training_vs_bare"] = result["env_steps_per_s_training"] / ceiling
    if env.device.type == "cuda":
        result["peak_gpu_mb"] = torch.cuda.max_memory_allocated(env.device) / 2**20
    return result


def format_report(r: dict[str, Any]) -> str:
    """:func:`run_bench`'s result as the table ``robolearn bench`` prints."""
    ceiling = r["physics_steps_per_s"] / r["decimation"]

    def row(label: str, value: str, note: str = "") -> str:
        return f"  {label:<38}{value:>12}   {note}".rstrip()

    lines = [
        f"{r['task']}: {r['num_envs']} envs on {r['engine']} ({r['device']}), "
        f"decimation {r['decimation']}",
        row(
            "physics steps/s (inside the engine)",
            f"{r['physics_steps_per_s']:,.0f}",
            f"= {ceiling:,.0f} env steps/s ceiling",
        ),
        row(
            "env steps/s (all managers)",
            f"{r['env_steps_per_s']:,.0f}",
            f"{r['env_steps_per_s'] / ceiling:.1%} of the ceiling",
        ),
        row(
            "env steps/s + policy inference",
            f"{r['env_steps_per_s_inference']:,.0f}",
            f"{r['env_steps_per_s_inference'] / ceiling:.1%}",
        ),
        row(
            "env steps/s + training (PPO)",
            f"{r['env_steps_per_s_training']:,.0f}",
            f"{r['training_vs_bare']:.1%}",
        ),
        row("overhead over the bare engine", f"{r['overhead_vs_bare']:.1%}"),
        row("peak memory (process RSS)", f"{r['peak_rss_mb']:,.0f} MB"),
    ]
    if "peak_gpu_mb" in r:
        lines.append(row("peak GPU memory", f"{r['peak_gpu_mb']:,.0f} MB"))
    return "\n".join(lines)
