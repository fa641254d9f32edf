"""robolearn bench: one run, every column, as JSON."""

from __future__ import annotations

import json

from cli_helpers import one_line_error, robolearn


def test_bench_json_reports_every_column():
    out = robolearn(
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
    )
    assert out.returncode == 0, out.stderr[-3000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
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
    # physics alone is the ceiling: each added stage can only cost time
    ceiling = r["physics_steps_per_s"] / r["decimation"]
    assert ceiling > r["env_steps_per_s"] > 0
    assert r["env_steps_per_s"] >= r["env_steps_per_s_inference"] > 0
    assert r["env_steps_per_s_training"] > 0 and r["peak_rss_mb"] > 50


def test_bench_human_readable():
    out = robolearn(
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


def test_bench_bad_durations_are_one_line_errors():
    for flag, value in (("--seconds", "-1"), ("--seconds", "nan"), ("--rounds", "0")):
        out = robolearn("bench", "--task", "cartpole_balance", "--num_envs", 4, flag, value)
        one_line_error(out, f"argument {flag}")


def test_bench_picks_device_and_engine_as_train_does():
    out = robolearn(
        "bench", "--task", "cartpole_balance", "--num_envs", 16, "--device", "cpu",
        "--seconds", 0.2, "--rounds", 1, "--train_iterations", 1, "--json",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert (r["engine"], r["device"], r["num_envs"]) == ("cpu", "cpu", 16)
    # the flags disagree: the same one-line refusal as train's
    out = robolearn("bench", "--task", "cartpole_balance", "--device", "cpu", "--engine", "cuda")
    one_line_error(out, "--device cpu with --engine cuda: policy and physics share one device")
    out = robolearn("bench", "--task", "cartpole_balance", "--device", "tpu")
    one_line_error(out, "unknown device 'tpu'")
