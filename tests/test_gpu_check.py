"""The GPU check's calls (benchmarks/gpu/check_call*.sh) end to end on warp's CPU device
at toy sizes: a script a lent GPU runs must not fail there for want of a test here. Call 1
trains humanoid_walk with PPO, evaluates it and benches the fused and the plain step; call
2 measures the sizes, cameras, Newton and SHAC and trains the G1; call 3 trains with TD3,
SAC and pipelined PPO and feeds a learner behind host slots from the cpu engine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_call(script: str, out: Path, timeout: int, **settings: str) -> dict:
    """Run benchmarks/gpu/``script`` with ``settings`` (warp-cpu, results in ``out``),
    assert that it succeeded, and return its summary.json."""
    env = dict(os.environ, ENGINE="warp-cpu", OUT=str(out), PYTHON=sys.executable, **settings)
    env.pop("MENAGERIE_ROOT", None)  # call 2 finds the test packages' own
    proc = subprocess.run(
        ["bash", str(ROOT / "benchmarks/gpu" / script)],
        env=env, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return json.loads((out / "summary.json").read_text())


@pytest.mark.slow
def test_call_1_runs_end_to_end_on_warp_cpu(tmp_path):
    summary = run_call(
        "check_call1.sh", tmp_path, 600, TRAIN_ENVS="8", TRAIN_SECONDS="40", EVAL_ENVS="4",
        BENCH_ENVS="8", BUDGET="460",
    )  # fmt: skip
    assert summary["train_env_steps"] > 0 and summary["train_env_steps_per_s"] > 0
    assert summary["eval"]["fall_rate"] is not None
    assert summary["eval"]["lin_vel_error"] is not None
    assert summary["walking_thresholds_met"] in (True, False)
    bench = {row["fused_step"]: row for row in summary["bench"]}
    assert set(bench) == {True, False}
    for row in bench.values():
        shares = row["share_physics"] + row["share_managers"] + row["share_policy"]
        assert abs(shares - 1.0) < 1e-6 and row["env_steps_per_s"] > 0
    skipped_file = tmp_path / "skipped.txt"
    skipped = skipped_file.read_text() if skipped_file.exists() else ""
    assert "training" not in skipped and "evaluation" not in skipped and "bench" not in skipped


@pytest.mark.slow
def test_call_2_runs_end_to_end_on_warp_cpu(tmp_path):
    """The second call at toy sizes: the bare step, bench, cameras, Newton, SHAC, and the G1
    trained and evaluated (its Menagerie files found from the test packages)."""
    summary = run_call(
        "check_call2.sh", tmp_path, 900, SIZES="32", CAMERA_ENVS="16", NEWTON_ENVS="16",
        SHAC_ENVS="8", SHAC_ITERATIONS="2", TRAIN_ENVS="16", TRAIN_SECONDS="40",
    )  # fmt: skip
    assert [row["num_envs"] for row in summary] == [32]
    assert summary[0]["env_steps_per_s"] > 0
    assert json.loads((tmp_path / "eval.json").read_text().splitlines()[-1])["episodes"] > 0


@pytest.mark.slow
def test_call_3_runs_end_to_end_on_warp_cpu(tmp_path):
    """The third call at toy sizes: TD3, SAC and pipelined PPO each train humanoid_walk and
    are evaluated, and the cpu engine feeds a learner behind host slots (on the CPU here)."""
    summary = run_call(
        "check_call3.sh", tmp_path, 600, TRAIN_ENVS="8", TRAIN_SECONDS="40", EVAL_ENVS="4",
        SPLIT_ENVS="16", SPLIT_SECONDS="25", BUDGET="400",
    )  # fmt: skip
    for name in ("td3", "sac", "ppo_pipelined"):
        assert summary[name]["train_env_steps"] > 0, summary
        assert summary[name]["eval"]["fall_rate"] is not None, summary
        assert summary[name]["walking_thresholds_met"] in (True, False)
    assert summary["split"]["train_env_steps"] > 0, summary
