"""examples/deploy/sim2sim.py: the shipped Go2 and G1 policies on Unitree's own torque-motor
models, the motor loop at the model's 500 Hz and the policy at its 50 Hz: they walk there,
on MuJoCo and on MuJoCo Warp, and bad inputs are one line with exit status 2."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from cli_helpers import one_line_error, run_script, script_report, shared_file

from robolearn.app.runs import pretrained_path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "deploy" / "sim2sim.py"
GO2 = shared_file("robots/unitree_mujoco/go2/go2.xml")
G1 = shared_file("robots/unitree_mujoco/g1/g1_29dof.xml")


def sim2sim(*args) -> subprocess.CompletedProcess:
    return run_script(SCRIPT, *args)


def report(*args) -> dict:
    return script_report(SCRIPT, *args)


def shipped(task: str) -> Path:
    return pretrained_path(task).parent / "policy.onnx"


@pytest.mark.skipif(not GO2.exists(), reason="Unitree's go2.xml is not here")
def test_the_shipped_go2_policy_walks_on_unitrees_torque_motor_model():
    r = report("--policy", shipped("go2_walk"), "--mjcf", GO2, "--episodes", 6, "--duration", 8)
    # the vendor's simulation, not the training one: its 2 ms step, 12 torque motors
    assert r["physics_dt_s"] == pytest.approx(0.002) and r["motors"] == 12
    assert r["falls"] <= 1, r["per_episode"]
    assert r["lin_vel_error"] < 0.3 and r["yaw_rate_error"] < 0.3, r


# slow: the Warp engine's parity with MuJoCo is tested in tests/sim/test_mjwarp.py
@pytest.mark.slow
@pytest.mark.skipif(not GO2.exists(), reason="Unitree's go2.xml is not here")
def test_the_go2_walks_on_mujoco_warp_as_on_mujoco():
    args = ("--policy", shipped("go2_walk"), "--mjcf", GO2, "--episodes", 1, "--duration", 1.0)
    args += ("--command", 0.5, 0, 0)
    warp, plain = report(*args, "--engine", "warp-cpu"), report(*args)
    assert warp["engine"] == "warp-cpu" and warp["falls"] == plain["falls"] == 0
    # the same loop on two engines: the walked velocity agrees to within a small error
    assert abs(warp["lin_vel_error"] - plain["lin_vel_error"]) < 0.1, (warp, plain)


@pytest.mark.skipif(not G1.exists(), reason="Unitree's g1_29dof.xml is not here")
def test_the_shipped_g1_policy_walks_on_unitrees_torque_motor_model():
    r = report("--policy", shipped("g1_walk"), "--mjcf", G1, "--episodes", 4, "--duration", 8)
    assert r["motors"] == 29
    assert r["falls"] <= 1, r["per_episode"]
    assert r["lin_vel_error"] < 0.35, r


@pytest.mark.skipif(not GO2.exists(), reason="Unitree's go2.xml is not here")
def test_bad_inputs_are_one_line_with_exit_2(tmp_path):
    onnx = shipped("go2_walk")
    old = tmp_path / "old"
    old.mkdir()
    shutil.copy(onnx, old / "policy.onnx")
    desc = json.loads(onnx.with_name("policy.json").read_text())
    del desc["robot"]["drives"]  # a policy.json of schema 3
    (old / "policy.json").write_text(json.dumps(desc))
    other = tmp_path / "other.xml"
    other.write_text("<mujoco><worldbody><body name='base'><freejoint/><geom size='.1'/></body>"
                     "</worldbody></mujoco>")  # fmt: skip
    cases = [
        (("--policy", old / "policy.onnx", "--mjcf", GO2), "no robot.drives"),
        (("--policy", onnx, "--mjcf", tmp_path / "none.xml"), "does not exist"),
        (("--policy", onnx, "--mjcf", other), "does not have"),
        (("--policy", onnx, "--mjcf", GO2, "--episodes", 0), "--episodes must be >= 1"),
    ]
    for args, fragment in cases:
        one_line_error(sim2sim(*args), fragment)
