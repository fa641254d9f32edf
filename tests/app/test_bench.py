"""robolearn bench: one run, every column, as JSON."""

from __future__ import annotations

import math

import pytest
from cli_helpers import cli_json, one_line_error, robolearn, robolearn_in_process

from robolearn.app.bench import GPU_MEMORY_KEYS, Clock, physics_marks


def test_bench_json_reports_every_column(capsys):
    r = cli_json(
        "bench",
        "--task",
        "cartpole_balance",
        "--num_envs",
        64,
        "--engine",
        "cpu",
        "--seconds",
        0.5,
        "--rounds",
        1,
        "--train_iterations",
        1,
        "--json",
        capsys=capsys,
    )
    for key in (
        "physics_steps_per_s",
        "env_steps_per_s",
        "env_steps_per_s_inference",
        "env_steps_per_s_training",
        "decimation",
        "num_envs",
        "engine",
        "peak_rss_mb",
        "overhead_vs_bare",
    ):
        assert key in r, key
    assert r["engine"] == "cpu" and r["num_envs"] == 64 and r["decimation"] == 2
    # every phase was measured: a finite, positive rate (not compared with each other: on
    # a busy machine a later phase may get the cores an earlier one waited for)
    for key in (
        "physics_steps_per_s",
        "env_steps_per_s",
        "env_steps_per_s_inference",
        "env_steps_per_s_training",
    ):
        assert math.isfinite(r[key]) and r[key] > 0, (key, r[key])
    assert r["peak_rss_mb"] > 50
    # where a step's time went: physics, managers and policy, each a share, together all
    shares = [r["share_physics"], r["share_managers"], r["share_policy"]]
    assert all(0 < s < 1 for s in shares) and math.isclose(sum(shares), 1.0), shares
    assert r["fused_step"] is False  # auto: the plain step on the CPU
    # GPU memory is reported on CUDA only: the keys are there, null, on the CPU
    for key in GPU_MEMORY_KEYS:
        assert key in r and r[key] is None, key


def test_bench_human_readable(capsys):
    out = robolearn_in_process(
        capsys,
        "bench",
        "--task",
        "cartpole_balance",
        "--num_envs",
        32,
        "--engine",
        "cpu",
        "--seconds",
        0.3,
        "--rounds",
        1,
        "--train_iterations",
        1,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "env steps/s + training (PPO)" in out.stdout and "of the ceiling" in out.stdout
    assert "a step: physics / managers / policy" in out.stdout and "plain step" in out.stdout


def test_bench_bad_durations_are_one_line_errors(capsys):
    for flag, value in (("--seconds", "-1"), ("--seconds", "nan"), ("--rounds", "0")):
        out = robolearn_in_process(
            capsys, "bench", "--task", "cartpole_balance", "--num_envs", 4, flag, value
        )
        one_line_error(out, f"argument {flag}")


# slow: a whole run end to end (the default suite keeps under 10 minutes)
@pytest.mark.slow
def test_bench_picks_device_and_engine_as_train_does():
    r = cli_json(
        "bench", "--task", "cartpole_balance", "--num_envs", 16, "--device", "cpu",
        "--seconds", 0.2, "--rounds", 1, "--train_iterations", 1, "--json",
    )  # fmt: skip
    assert (r["engine"], r["device"], r["num_envs"]) == ("cpu", "cpu", 16)
    # the flags disagree: the same one-line refusal as train's
    out = robolearn("bench", "--task", "cartpole_balance", "--device", "cpu", "--engine", "cuda")
    one_line_error(out, "--device cpu with --engine cuda: policy and physics share one device")
    out = robolearn("bench", "--task", "cartpole_balance", "--device", "tpu")
    one_line_error(out, "unknown device 'tpu'")


class _Engine:
    """An engine's public calls, one calling another as reset calls forward on some."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def step(self, n: int) -> None:
        self.calls.append(f"step {n}")

    def forward_envs(self, ids) -> None:
        self.calls.append("forward_envs")

    def reset(self, ids) -> None:
        self.calls.append("reset")
        self.forward_envs(ids)

    def diverged(self) -> None:
        self.calls.append("diverged")


def test_physics_marks_time_outermost_physics_calls_and_restore_the_engine():
    import torch

    engine = _Engine()
    clock = Clock(torch.device("cpu"))
    with physics_marks(engine, clock) as spans:
        engine.step(4)
        engine.reset([0])  # its inner forward_envs is inside the reset's span
        engine.diverged()  # the env's check, not physics
    assert engine.calls == ["step 4", "reset", "forward_envs", "diverged"]
    assert len(spans) == 2
    assert all(clock.seconds(a, b) >= 0.0 for a, b in spans)
    # the class's own methods again, no wrapper left on the instance
    assert not {"step", "reset", "forward_envs"} & set(vars(engine))
    with physics_marks(engine, clock) as spans:
        pass
    engine.step(1)
    assert spans == []
