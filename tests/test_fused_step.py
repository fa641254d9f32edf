"""The fused env step (robolearn.managers.fused): the plain step's results from a fifth of
its torch ops, on the cpu engine, and its fallback when torch.compile cannot trace.

The fused step computes every env's rows as a GPU does; it is compared with the plain step
computing them the same way (``host_masks`` off), from the same seed and actions, so that
both draw the same random numbers. Inductor's generated loops round ``sqrt``, ``sin`` and
norms differently from ATen's kernels in the last bit, so observations and rewards are
compared to float32 rounding; terminations, time-outs and episode lengths must be equal.
"""

from __future__ import annotations

import warnings

import pytest
import torch
from cli_helpers import robolearn
from torch.profiler import ProfilerActivity, profile

from robolearn.env import ManagerBasedRLEnv
from robolearn.errors import RobolearnError
from robolearn.managers.fused import Region, fused_wanted
from robolearn.registry import get_task


def _env(task: str, num_envs: int, fused: str, engine: str = "cpu") -> ManagerBasedRLEnv:
    cfg = get_task(task).make_env_cfg()
    cfg.scene.num_envs = num_envs
    cfg.sim.engine = engine
    cfg.fused_step = fused
    return ManagerBasedRLEnv(cfg)


def _top_level_ops(env: ManagerBasedRLEnv, actions: list[torch.Tensor]) -> float:
    """aten ops with no op above them, per env step (an Inductor kernel of a fused region
    is not an aten op: the counts compare launches the plain step makes one by one)."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for action in actions:
            env.step(action)
    count = 0
    for event in prof.events():
        if not event.name.startswith("aten::"):
            continue
        parent = event.cpu_parent
        while parent is not None and not parent.name.startswith("aten::"):
            parent = parent.cpu_parent
        count += parent is None
    return count / len(actions)


def compare_fused(
    task: str, num_envs: int, steps: int, engine: str = "cpu"
) -> tuple[ManagerBasedRLEnv, ...]:
    """Step a plain env (every env's rows, as on a GPU) and a fused one of ``task`` on
    ``engine`` side by side through every path of the step, asserting that they agree;
    returns (plain, fused)."""
    plain = _env(task, num_envs, "off", engine)
    fused = _env(task, num_envs, "on", engine)
    plain.host_masks = False
    assert fused.fused and not plain.fused
    gen = torch.Generator().manual_seed(0)
    resets = 0
    for i in range(steps):
        action = 0.3 * torch.randn(num_envs, plain.num_actions, generator=gen)
        for env in (plain, fused):  # every path of the step: time-outs, pushes, resampling
            if i % 8 == 3:
                env.episode_length_buf[: num_envs // 2] = env.max_episode_length - 1
            for timers in env.event_manager._time_left.values():
                timers[i % num_envs] = 0.0
            for term in env.command_manager.terms.values():
                if hasattr(term, "time_left"):
                    term.time_left[(i + 1) % num_envs] = 0.0
        torch.manual_seed(i)
        obs_p, rew_p, term_p, out_p, _ = plain.step(action)
        torch.manual_seed(i)
        obs_f, rew_f, term_f, out_f, _ = fused.step(action)
        assert torch.equal(term_p, term_f) and torch.equal(out_p, out_f), f"step {i}"
        assert torch.equal(plain.episode_length_buf, fused.episode_length_buf)
        for group in obs_p:
            torch.testing.assert_close(obs_f[group], obs_p[group], rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(rew_f, rew_p, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(
            fused.scene.engine.qpos, plain.scene.engine.qpos, rtol=1e-5, atol=1e-5
        )
        resets += int((term_p | out_p).sum())
    assert resets > 0, "no episode ended: the reset path went untested"
    return plain, fused


def test_fused_humanoid_step_matches_the_plain_one_from_a_fifth_of_the_ops():
    _, fused = compare_fused("humanoid_walk", 16, 40)
    host = _env("humanoid_walk", 16, "off")  # the cpu engine's own plain step
    gen = torch.Generator().manual_seed(1)
    actions = [0.3 * torch.randn(16, host.num_actions, generator=gen) for _ in range(10)]
    plain_ops = _top_level_ops(host, actions)
    fused_ops = _top_level_ops(fused, actions)
    assert fused_ops <= plain_ops / 5, (plain_ops, fused_ops)


@pytest.mark.slow
@pytest.mark.parametrize("task", ["g1_walk", "quadruped_walk_rough", "panda_lift"])
def test_fused_step_matches_the_plain_one(task):
    compare_fused(task, 16, 40)


@pytest.mark.slow
def test_fused_step_matches_the_plain_one_on_the_warp_engine():
    """The GPU's code path (MuJoCo Warp's graphs, float32 views) on warp's CPU device."""
    compare_fused("humanoid_walk", 8, 24, engine="warp-cpu")


def test_auto_fuses_on_a_gpu_only_and_a_bad_value_is_refused():
    assert fused_wanted("auto", "cuda") and fused_wanted("on", "cpu")
    assert not fused_wanted("auto", "cpu") and not fused_wanted("off", "cuda")
    assert not _env("cartpole_balance", 2, "auto").fused
    with pytest.raises(RobolearnError, match="fused_step must be one of auto, on, off"):
        fused_wanted("yes", "cpu")


def test_a_bad_fused_step_on_the_command_line_is_one_line_and_exit_2(tmp_path):
    proc = robolearn(
        "train",
        "--task",
        "cartpole_balance",
        "--max_iterations",
        "1",
        "--log_root",
        str(tmp_path),
        "env.fused_step=fast",
    )
    assert proc.returncode == 2
    assert "fused_step must be one of auto, on, off, got 'fast'" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not any(tmp_path.rglob("*.pt"))


def test_a_region_torch_compile_cannot_trace_runs_plainly_with_one_warning():
    calls = []

    def reads_on_the_host(x: torch.Tensor) -> torch.Tensor:
        calls.append(1)
        torch._dynamo.graph_break()  # what a term that reads a value on the host causes
        return x * 2

    region = Region("a term of ours", reads_on_the_host)
    x = torch.arange(3.0)
    assert torch.equal(region(x), x * 2)  # the first call runs plainly
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert torch.equal(region(x), x * 2)
        assert torch.equal(region(x), x * 2)
    said = [str(w.message) for w in caught if "fused step" in str(w.message)]
    assert len(said) == 1 and "a term of ours runs plainly" in said[0]
    assert not region.fused and len(calls) == 3  # each call ran the function once


@pytest.mark.parametrize("whole", [True, False])
def test_a_region_that_cannot_be_built_runs_plainly_and_nothing_twice(whole):
    """No C++ compiler (Inductor's build fails): a region compiled whole warns once and
    runs plainly; a region compiled in pieces runs the failed pieces plainly. Either way
    each call runs the function's effects once."""
    import time

    import torch._inductor.config as inductor_config

    effects = []
    scale = 1.0 + time.time() % 1.0  # a constant of its own: no cached kernel has it

    def step(x: torch.Tensor) -> torch.Tensor:
        effects.append(1)
        y = torch.sin(x) * scale
        if not whole:
            torch._dynamo.graph_break()
        return y + 1.0

    region = Region("a region", step, fullgraph=whole)
    x = torch.linspace(0.0, 1.0, 5)
    expected = torch.sin(x) * scale + 1.0
    broken = {"cpp.cxx": (None, "/nonexistent/g++"), "fx_graph_cache": False}
    with inductor_config.patch(broken), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            torch.testing.assert_close(region(x), expected)
    assert len(effects) == 3
    said = [str(w.message) for w in caught if "fused step" in str(w.message)]
    assert len(said) == (1 if whole else 0)
