"""examples/deploy/run_onnx.py: the pretrained humanoid walks on a plain MuJoCo model,
driven by its ONNX export and observations built from policy.json alone."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import mujoco
import numpy as np
import pytest
import torch
from cli_helpers import one_line_error, run_script, script_report
from robolearn.assets import asset_path

from robolearn.app.runs import pretrained_path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "deploy" / "run_onnx.py"
SHIPPED = pretrained_path("humanoid_walk").parent
ONNX = SHIPPED / "policy.onnx"
HUMANOID = asset_path("humanoid/scene.xml")


def deploy(*args, timeout: float = 300) -> subprocess.CompletedProcess:
    return run_script(SCRIPT, *args, timeout=timeout)


def report(*args) -> dict:
    return script_report(SCRIPT, *args)


def load_script():
    spec = importlib.util.spec_from_file_location("run_onnx", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_humanoid_walks_forward_on_plain_mujoco():
    """5 s at 50 Hz, paced in real time as on the robot, commanded 0.5 m/s forward: the
    pelvis stays up (0.757 m standing; the task ends an episode below 0.45 m; measured
    lowest 0.71) and moves forward (measured 2.2 m of the commanded 2.5)."""
    r = report("--policy", ONNX, "--mjcf", HUMANOID, "--command", 0.5, 0, 0, "--duration", 5)
    assert r["steps"] == 250 and r["decimation"] == 2 and r["physics_dt_s"] == 0.01
    assert r["min_base_height_m"] > 0.6, r
    assert r["forward_m"] > 1.5, r
    assert abs(r["lateral_m"]) < 0.75, r
    for what in ("policy", "control_step"):
        p = r["latency_us"][what]
        assert 0 < p["p50"] <= p["p90"] <= p["p99"], r["latency_us"]
    assert r["latency_us"]["policy"]["p50"] <= r["latency_us"]["control_step"]["p50"]


def test_it_walks_because_of_the_command():
    """Commanded to stand, the same policy stays within a stride of where it started
    (measured 0.02 m forward): the forward walk above is the command's doing."""
    r = report(
        "--policy", ONNX, "--mjcf", HUMANOID, "--command", 0, 0, 0, "--duration", 5,
        "--no-realtime",
    )  # fmt: skip
    assert r["min_base_height_m"] > 0.6, r
    assert abs(r["forward_m"]) < 0.4, r


def flat_env(task: str):
    """The play variant of ``task`` with one env on the cpu engine; a rough task on the
    MJCF's own flat ground (its height scan then reads the plane z = 0, which the script's
    rays find in the plain MJCF)."""
    from robolearn.env import ManagerBasedRLEnv
    from robolearn.registry import get_task

    cfg = get_task(task).make_env_cfg(play=True)
    cfg.scene.num_envs, cfg.sim.engine = 1, "cpu"
    if cfg.scene.terrain is not None:
        cfg.scene.terrain = None
        cfg.curriculum = {}
        cfg.terminations.pop("out_of_bounds")
    return ManagerBasedRLEnv(cfg)


@pytest.mark.parametrize(
    ("task", "mjcf"),
    [("humanoid_walk", "humanoid/scene.xml"), ("quadruped_walk_rough", "quadruped/scene.xml")],
)
def test_its_observation_and_controls_are_robolearns(task, mjcf):
    """The script's observation vector, built from policy.json and a plain MjData, equals
    robolearn's observation manager's on the same state; its ctrl equals the action
    term's. The state is the env's after 30 steps of the policy (walking, mid-gait, with a
    command and a last action that are not zero); the quadruped's includes the height
    scan."""
    from robolearn.rl.checkpoint_policy import act, load_for_env

    folder = pretrained_path(task).parent
    env = flat_env(task)
    policy, _ = load_for_env(env, folder / "model.pt")
    for _ in range(30):
        env.step(act(policy, env.obs_buf, 1))
    command = env.command_manager.get_command("base_velocity")[0].double().numpy()
    assert np.abs(command).max() > 0.05  # a command that shows in the observation

    run_onnx = load_script()
    desc = run_onnx.load_description(folder / "policy.json")
    robot = run_onnx.Robot(asset_path(mjcf), desc)
    robot.data.qpos[:] = env.scene.engine.qpos[0].numpy()
    robot.data.qvel[:] = env.scene.engine.qvel[0].numpy()
    mujoco.mj_forward(robot.model, robot.data)
    observe = run_onnx.Observer(desc, robot, command)
    if "gait" in env.command_manager.terms:
        observe.clocks["gait"] = float(env.command_manager.terms["gait"].phase[0])
    observe.last_action = env.action_manager.action[0].double().numpy()
    expected = env.obs_buf["policy"][0].numpy()
    np.testing.assert_allclose(observe(), expected, atol=1e-5)

    n = env.num_actions
    action = 0.7 * torch.randn(1, n, generator=torch.Generator().manual_seed(1))
    env.action_manager.process_action(action)
    env.action_manager.apply_action()
    actuate = run_onnx.Actuation(desc, robot)
    actuate.hold()
    actuate.apply(action[0].double().numpy())
    np.testing.assert_allclose(robot.data.ctrl, env.scene.engine.ctrl[0].numpy(), atol=1e-6)


def test_the_script_needs_only_mujoco_numpy_and_onnxruntime():
    """What a robot's computer has: loading the script imports neither torch nor
    robolearn."""
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('run_onnx', {str(SCRIPT)!r})\n"
        "spec.loader.exec_module(importlib.util.module_from_spec(spec))\n"
        "heavy = {'torch', 'robolearn', 'rsl_rl', 'tensordict'}\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


@pytest.fixture
def exported(tmp_path) -> Path:
    """A copy of the shipped ONNX policy and its policy.json, to damage."""
    shutil.copy(ONNX, tmp_path / "policy.onnx")
    shutil.copy(SHIPPED / "policy.json", tmp_path / "policy.json")
    return tmp_path / "policy.onnx"


def edit_description(policy: Path, edit) -> None:
    path = policy.with_name("policy.json")
    desc = json.loads(path.read_text())
    edit(desc)
    path.write_text(json.dumps(desc))


def test_bad_inputs_exit_2_with_one_line(exported, tmp_path):
    args = ("--mjcf", HUMANOID, "--duration", 0.1, "--no-realtime")

    def set_dim(desc):
        desc["observation"]["dim"] = 70

    edit_description(exported, set_dim)
    one_line_error(deploy("--policy", exported, *args), "maps 69 observation values to 13")

    def old_schema(desc):
        del desc["schema_version"]

    edit_description(exported, old_schema)
    one_line_error(deploy("--policy", exported, *args), "of schema 1")

    exported.with_name("policy.json").unlink()
    one_line_error(deploy("--policy", exported, *args), "policy.json does not exist")

    not_onnx = tmp_path / "other" / "policy.onnx"
    not_onnx.parent.mkdir()
    not_onnx.write_bytes(b"not a protobuf")
    shutil.copy(SHIPPED / "policy.json", not_onnx.with_name("policy.json"))
    one_line_error(deploy("--policy", not_onnx, *args), "is not an ONNX policy")

    # the humanoid's policy on the quadruped's MJCF
    quadruped = asset_path("quadruped/scene.xml")
    one_line_error(
        deploy("--policy", ONNX, "--mjcf", quadruped, "--duration", 0.1),
        "names body 'pelvis', which",
    )
