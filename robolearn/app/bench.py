"""``robolearn bench``: a task's speed, measured side by side in one process.

Isaac Lab's three columns plus mjlab's physics column, for one task, env count and engine,
all from the same run of the task's own (untrained) policy in the env, so that every
figure sees the same robot states (fallen robots, with more contacts, cost more physics):

* ``physics_steps_per_s``: the engine's substeps per second of time spent inside the
  engine (stepping, resets and the forward passes after them): the bare engine's speed on
  those states, the ceiling;
* ``env_steps_per_s``: env steps per second of ``ManagerBasedRLEnv.step`` (all managers);
* ``env_steps_per_s_inference``: the same, plus the actor network choosing the actions;
* ``env_steps_per_s_training``: ``robolearn train``'s loop, rollout and PPO update.

``overhead_vs_bare`` = 1 - env steps/s x decimation / physics steps/s: what robolearn's
managers add to the engine.

``share_physics``, ``share_managers``, ``share_policy``: of the time of a step with
inference (the policy's forward pass, then the env step), the shares in the engine's
physics calls, in the rest of the env step (the managers' terms, resets, the divergence
check) and in the policy, from the same marks as the columns (CUDA events on a GPU): the
next bottleneck, named by measurement. ``fused_step`` says whether the env step ran fused
(``env.fused_step``, :mod:`robolearn.managers.fused`).

How the time is taken. Each timed window (a round of the env columns, a training
iteration) starts and ends with the device synchronised, so that its wall-clock time holds
all the work queued in it; bench adds no synchronisation inside a window. Within it, marks
split the time between the policy, the env step and the engine's calls: on the CPU (the
``cpu`` and ``warp-cpu`` engines) the host clock, as a call returns once its work is done;
on CUDA, events recorded on torch's current stream (where the engine launches too), which
the GPU timestamps when it reaches them, so that a span is the stretch of the GPU's
timeline that the calls between its two marks account for: their kernels, and the time the
GPU waited for the host to launch them (a host-bound step costs what the host spends). A
kernel launch returns long before its work is done, so host-clock spans would measure
launches, not the GPU's work.

GPU memory (on CUDA; None elsewhere): ``peak_gpu_torch_mb`` is torch's peak allocation
(policy, rollout storage, the managers' tensors), which does not see MuJoCo Warp's arrays:
Warp allocates them itself, from the device's CUDA memory pool, and torch only views them.
``gpu_warp_mb`` and ``peak_gpu_warp_mb`` are that pool's use at the end and its high-water
mark (None where Warp's memory pool is off), and ``gpu_used_mb`` is the whole device's use
at the end as the driver reports it (every context and process on the GPU, caches
included).
"""

from __future__ import annotations

import contextlib
import functools
import io
import resource
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch

from robolearn.app.configs import build_setup, resolve_device_engine
from robolearn.app.health import TrainingHealth
from robolearn.threads import single_threaded

MB = 2**20

#: The engine's public calls that advance or recompute physics, timed as the engine's share
#: of a step (the divergence check is the env's, not physics); those an engine lacks are
#: skipped.
PHYSICS_CALLS = ("step", "forward", "forward_envs", "forward_where", "reset", "reset_where")

#: The shares of a step with inference (policy + env step, by the marks) spent in the
#: engine's physics calls, in the rest of the env step (the managers), and in the policy.
SHARE_KEYS = ("share_physics", "share_managers", "share_policy")

#: The GPU memory keys of the result, None where the device is not CUDA.
GPU_MEMORY_KEYS = ("peak_gpu_torch_mb", "gpu_warp_mb", "peak_gpu_warp_mb", "gpu_used_mb")


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
    from robolearn.env import ManagerBasedRLEnv
    from robolearn.rl.ppo_learner import make_runner

    engine = resolve_device_engine(device, engine)
    setup = build_setup(task, overrides or [], num_envs=num_envs, engine=engine)
    env = ManagerBasedRLEnv(setup.env_cfg)
    setup.agent_cfg.save_interval = 10**9
    runner = make_runner(env, setup.agent_cfg)
    policy = runner.get_inference_policy(device=str(env.device))
    rates = _env_rates(env, policy, seconds, rounds)
    iteration_s = _train_iteration_seconds(runner, env.device, train_iterations)
    rates["env_steps_per_s_training"] = runner.cfg["num_steps_per_env"] * env.num_envs / iteration_s
    return _result(task, env, rates)


def _sync(device: torch.device) -> None:
    """Wait for the GPU, so that a time measured on the host includes its work."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class Clock:
    """Marks on the timeline of the work the host queues on ``device``.

    On CUDA a mark is an event recorded on torch's current stream, timestamped by the GPU
    when it gets there; recording one does not wait for the GPU. Elsewhere it is the host
    clock: the work before it is done when the call that queued it returns.
    """

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.cuda = device.type == "cuda"

    def mark(self) -> Any:
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record(torch.cuda.current_stream(self.device))
            return event
        return time.perf_counter()

    def seconds(self, start: Any, end: Any) -> float:
        """Seconds from mark ``start`` to mark ``end``; on CUDA, once the device has
        reached ``end`` (after a synchronisation)."""
        if self.cuda:
            return start.elapsed_time(end) / 1e3
        return end - start


@contextlib.contextmanager
def physics_marks(engine, clock: Clock) -> Iterator[list[tuple[Any, Any]]]:
    """Inside the block, each of the engine's :data:`PHYSICS_CALLS` adds a (start, end)
    pair of ``clock`` marks to the list this yields (only the outermost call, when one
    calls another). The engine's own methods are back after the block."""
    spans: list[tuple[Any, Any]] = []
    depth = 0

    def marked(method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def call(*args: Any, **kwargs: Any) -> Any:
            nonlocal depth
            if depth:
                return method(*args, **kwargs)
            depth += 1
            start = clock.mark()
            try:
                return method(*args, **kwargs)
            finally:
                spans.append((start, clock.mark()))
                depth -= 1

        return call

    names = [name for name in PHYSICS_CALLS if callable(getattr(engine, name, None))]
    own = {name: engine.__dict__[name] for name in names if name in engine.__dict__}
    for name in names:
        setattr(engine, name, marked(getattr(engine, name)))
    try:
        yield spans
    finally:
        for name in names:
            if name in own:
                setattr(engine, name, own[name])
            else:
                delattr(engine, name)


def _env_rates(env, policy, seconds: float, rounds: int) -> dict[str, float]:
    """Medians over ``rounds`` of the physics, env and env + inference columns."""
    n, dec = env.num_envs, env.cfg.decimation
    physics, env_rate, infer_rate = [], [], []
    shares: dict[str, list[float]] = {key: [] for key in SHARE_KEYS}
    with single_threaded(env.device):  # as the training loop's rollout
        _warm_up(env, policy)
        for _ in range(rounds):
            env.reset()
            w = _policy_window(env, policy, seconds)
            physics.append(w["steps"] * n * dec / w["physics_s"])
            env_rate.append(w["steps"] * n / w["env_s"])
            infer_rate.append(w["steps"] * n / w["wall_s"])
            marked = w["env_s"] + w["policy_s"]
            shares["share_physics"].append(w["physics_s"] / marked)
            shares["share_managers"].append((w["env_s"] - w["physics_s"]) / marked)
            shares["share_policy"].append(w["policy_s"] / marked)
    return {
        "physics_steps_per_s": statistics.median(physics),
        "env_steps_per_s": statistics.median(env_rate),
        "env_steps_per_s_inference": statistics.median(infer_rate),
        **{key: statistics.median(values) for key, values in shares.items()},
    }


WARM_UP_STEPS = 5
"""Env steps before the timed rounds: the fused step compiles at its second step, and a
round that held the compile would time it, not the step (a first measure at 1024
humanoids read half the fused step's rate)."""


def _warm_up(env, policy) -> None:
    from robolearn.rl.checkpoint_policy import act

    for _ in range(WARM_UP_STEPS):
        env.step(act(policy, env.obs_buf, env.num_envs))
    _sync(env.device)


def _policy_window(env, policy, seconds: float) -> dict[str, float]:
    """Step ``env`` with ``policy`` for ``seconds``, the device synchronised at the window's
    ends only: the steps, the window's wall-clock seconds, and the seconds spent in the env
    steps and in the engine's physics calls (by :class:`Clock` marks)."""
    from robolearn.rl.checkpoint_policy import act

    clock = Clock(env.device)
    steps: list[tuple[Any, Any, Any]] = []  # (policy starts, policy done, env step done)
    _sync(env.device)
    start = time.perf_counter()
    with physics_marks(env.scene.engine, clock) as physics:
        while time.perf_counter() - start < seconds:
            asked = clock.mark()
            actions = act(policy, env.obs_buf, env.num_envs)
            acted = clock.mark()
            env.step(actions)
            steps.append((asked, acted, clock.mark()))
    _sync(env.device)
    wall = time.perf_counter() - start
    return {
        "steps": len(steps),
        "wall_s": wall,
        "policy_s": sum(clock.seconds(a, b) for a, b, _ in steps),
        "env_s": sum(clock.seconds(b, c) for _, b, c in steps),
        "physics_s": sum(clock.seconds(a, b) for a, b in physics),
    }


def _quiet(_line: str) -> None:
    """The training phase's progress lines and warnings: not part of the report."""


def _train_iteration_seconds(runner, device: torch.device, iterations: int) -> float:
    """Median seconds of one iteration of the runner's own loop (the first one warms up),
    the device synchronised before and after each."""
    times: list[float] = []
    with contextlib.redirect_stdout(io.StringIO()):
        for i in range(iterations + 1):
            _sync(device)
            t = time.perf_counter()
            health = TrainingHealth.for_runner(runner, log=_quiet)
            runner.learn(i + 1, log=_quiet, init_at_random_ep_len=False, health=health)
            _sync(device)
            if i > 0:
                times.append(time.perf_counter() - t)
    return statistics.median(times)


def gpu_memory(device: torch.device) -> dict[str, float | None]:
    """The :data:`GPU_MEMORY_KEYS` in MB (see the module docstring); all None off CUDA."""
    out: dict[str, float | None] = dict.fromkeys(GPU_MEMORY_KEYS)
    if device.type != "cuda":
        return out
    out["peak_gpu_torch_mb"] = torch.cuda.max_memory_allocated(device) / MB
    free, total = torch.cuda.mem_get_info(device)
    out["gpu_used_mb"] = (total - free) / MB
    try:
        import warp as wp

        index = torch.cuda.current_device() if device.index is None else device.index
        wp_device = wp.get_device(f"cuda:{index}")
        if wp.is_mempool_enabled(wp_device):
            out["gpu_warp_mb"] = wp.get_mempool_used_mem_current(wp_device) / MB
            out["peak_gpu_warp_mb"] = wp.get_mempool_used_mem_high(wp_device) / MB
    except (ImportError, RuntimeError, ValueError):  # no warp, or no memory pool
        pass
    return out


def _result(task: str, env, rates: dict[str, float]) -> dict[str, Any]:
    """The report: the measured rates, what the run was, and the ratios to the ceiling."""
    dec = env.cfg.decimation
    result = {
        "task": task,
        "engine": env.scene.engine.name,
        "device": str(env.device),
        "num_envs": env.num_envs,
        "decimation": dec,
        "physics_steps_per_s": rates["physics_steps_per_s"],
        "env_steps_per_s": rates["env_steps_per_s"],
        "env_steps_per_s_inference": rates["env_steps_per_s_inference"],
        "env_steps_per_s_training": rates["env_steps_per_s_training"],
        **{key: rates[key] for key in SHARE_KEYS},
        "fused_step": env.fused,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        **gpu_memory(env.device),
    }
    ceiling = result["physics_steps_per_s"] / dec
    result["overhead_vs_bare"] = 1.0 - result["env_steps_per_s"] / ceiling
    result["training_vs_bare"] = result["env_steps_per_s_training"] / ceiling
    return result


def format_report(r: dict[str, Any]) -> str:
    """:func:`run_bench`'s result as the table ``robolearn bench`` prints."""
    ceiling = r["physics_steps_per_s"] / r["decimation"]

    def row(label: str, value: str, note: str = "") -> str:
        return f"  {label:<38}{value:>12}   {note}".rstrip()

    def mb(key: str) -> str:
        return "n/a" if r.get(key) is None else f"{r[key]:,.0f} MB"

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
        row(
            "a step: physics / managers / policy",
            f"{r['share_physics']:.0%} / {r['share_managers']:.0%} / {r['share_policy']:.0%}",
            "fused step" if r["fused_step"] else "plain step",
        ),
        row("peak memory (process RSS)", f"{r['peak_rss_mb']:,.0f} MB"),
    ]
    if r.get("peak_gpu_torch_mb") is not None:
        lines += [
            row("peak GPU memory, torch", mb("peak_gpu_torch_mb")),
            row("GPU memory, MuJoCo Warp", mb("gpu_warp_mb"), f"peak {mb('peak_gpu_warp_mb')}"),
            row("GPU memory in use (whole device)", mb("gpu_used_mb")),
        ]
    return "\n".join(lines)
