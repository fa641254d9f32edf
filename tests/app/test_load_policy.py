"""robolearn.load_policy: checkpoints, TorchScript and ONNX as one callable, checked against
robolearn's own inference; the shipped policy.json (schema 2) is what robolearn export
writes but for schema 3's keys about the files (tests/app/test_export.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
import torch

import robolearn
from robolearn import RobolearnError
from robolearn.app.runs import pretrained_path

SHIPPED = pretrained_path("humanoid_walk").parent
ROUGH = pretrained_path("quadruped_walk_rough").parent


@pytest.fixture(scope="module")
def stepped_env():
    """humanoid_walk's play env after 20 steps of the pretrained policy through robolearn's
    runner (the reference), and the reference's actions on its current observations."""
    from robolearn.rl.checkpoint_policy import act, load_for_env
    from robolearn.wrappers import make_env

    env = make_env("humanoid_walk", num_envs=8, engine="cpu", play=True)
    reference, _ = load_for_env(env, SHIPPED / "model.pt")
    for _ in range(20):
        env.step(act(reference, env.obs_buf, env.num_envs))
    return env, act(reference, env.obs_buf, env.num_envs)


@pytest.mark.parametrize(
    ("source", "kind", "atol"),
    [
        ("pretrained:humanoid_walk", "checkpoint", 1e-6),
        (str(SHIPPED / "policy.pt"), "torchscript", 1e-6),
        (str(SHIPPED / "policy.onnx"), "onnx", 1e-4),  # export checks ONNX to 1e-4 too
    ],
)
def test_every_kind_gives_robolearns_actions(stepped_env, source, kind, atol):
    env, expected = stepped_env
    policy = robolearn.load_policy(source)
    assert policy.kind == kind
    assert (policy.obs_dim, policy.action_dim, policy.obs_groups) == (69, 13, ["policy"])
    # the observation dict, as the env hands it out, and the flat policy group
    torch.testing.assert_close(policy(env.obs_buf), expected, atol=atol, rtol=0)
    torch.testing.assert_close(policy(env.obs_buf["policy"]), expected, atol=atol, rtol=0)
    # one observation in, one action out
    torch.testing.assert_close(policy(env.obs_buf["policy"][3]), expected[3], atol=atol, rtol=0)
    # the description travels with each kind: what the vectors hold and the timing
    desc = policy.description
    assert desc["schema_version"] == 2 and desc["task"] == "humanoid_walk"
    assert policy.control_dt == pytest.approx(0.02)
    assert desc["physics_dt_s"] == pytest.approx(0.01) and desc["decimation"] == 2


def test_the_three_kinds_agree_on_observations_far_from_training():
    """Random observations (twice the normalizer's typical range): the normalizer and the
    MLP are the same function in all three files, not only near the data."""
    obs = 2.0 * torch.randn(256, 69, generator=torch.Generator().manual_seed(0))
    checkpoint = robolearn.load_policy(SHIPPED / "model.pt")(obs)
    scripted = robolearn.load_policy(SHIPPED / "policy.pt")(obs)
    onnx = robolearn.load_policy(SHIPPED / "policy.onnx")(obs)
    torch.testing.assert_close(scripted, checkpoint, atol=1e-6, rtol=0)
    torch.testing.assert_close(onnx, checkpoint, atol=1e-4, rtol=0)
    assert checkpoint.abs().max() > 0.1  # a policy that acts, not zeros that agree trivially


def test_a_run_folder_gives_its_latest_checkpoint(tmp_path):
    """model_10 is newer than model_9 (by iteration, not by name); the folder has no
    policy.json, so the checkpoint has no description."""
    shutil.copy(ROUGH / "model.pt", tmp_path / "model_9.pt")
    shutil.copy(SHIPPED / "model.pt", tmp_path / "model_10.pt")
    policy = robolearn.load_policy(tmp_path)
    assert policy.path.name == "model_10.pt" and policy.obs_dim == 69
    assert policy.description is None and policy.control_dt is None
    # an exported/ folder beside the checkpoints is found (robolearn export's default)
    (tmp_path / "exported").mkdir()
    shutil.copy(SHIPPED / "policy.json", tmp_path / "exported" / "policy.json")
    assert robolearn.load_policy(tmp_path).description["task"] == "humanoid_walk"


def one_line_error(excinfo, fragment: str) -> None:
    message = str(excinfo.value)
    assert fragment in message, message
    assert "\n" not in message, message


def exported_copy(tmp_path, **changes):
    """The shipped ONNX file with its policy.json, the description's top-level keys
    replaced by ``changes`` (dotted paths one level deep, as ``observation.dim``)."""
    shutil.copy(SHIPPED / "policy.onnx", tmp_path / "policy.onnx")
    desc = json.loads((SHIPPED / "policy.json").read_text())
    for path, value in changes.items():
        section, key = path.split(".")
        desc[section][key] = value
    (tmp_path / "policy.json").write_text(json.dumps(desc))
    return tmp_path / "policy.onnx"


TINY = {"observation": {"dim": 4, "groups": ["policy"]}, "action": {"dim": 1}}
"""The least description an exported file loads with: 4 observations in, 1 action out."""


def test_bad_policy_files_are_one_line_errors(tmp_path):
    unknown = tmp_path / "policy.h5"
    unknown.write_bytes(b"\x89HDF\r\n")
    with pytest.raises(RobolearnError) as exc:
        robolearn.load_policy(unknown)
    one_line_error(exc, "unknown kind")

    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not a protobuf")
    with pytest.raises(RobolearnError) as exc:
        robolearn.load_policy(broken, description=TINY)
    one_line_error(exc, "is not a loadable ONNX policy")

    truncated = tmp_path / "model_5.pt"
    truncated.write_bytes((SHIPPED / "model.pt").read_bytes()[:5000])
    with pytest.raises(RobolearnError) as exc:
        robolearn.load_policy(truncated)
    one_line_error(exc, "is corrupted")

    with pytest.raises(RobolearnError) as exc:
        robolearn.load_policy(SHIPPED / "policy.pt", device="gpu")
    one_line_error(exc, "device 'gpu' is not a torch device")

    empty = tmp_path / "empty_run"
    (empty / "params").mkdir(parents=True)
    stray = tmp_path / "stray"
    stray.mkdir()
    for missing, fragment in (
        (tmp_path / "nope.onnx", "no policy at"),
        ("pretrained:no_such_task", "no pretrained checkpoint ships"),
        (empty, "has no checkpoint"),  # a run folder without model_<N>.pt
        (stray, "is a folder, not a checkpoint, and not a run folder"),
    ):
        with pytest.raises(RobolearnError) as exc:
            robolearn.load_policy(missing)
        one_line_error(exc, fragment)


def test_a_missing_or_inconsistent_description_is_a_one_line_error(tmp_path):
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(SHIPPED / "policy.onnx", alone / "policy.onnx")
    with pytest.raises(RobolearnError) as exc:
        robolearn.load_policy(alone / "policy.onnx")
    one_line_error(exc, "policy.json is missing")

    for change, fragment in (
        ({"observation.dim": 70}, "70 observation values, the model takes 69"),
        ({"action.dim": 12}, "12 action values, the model returns 13"),
    ):
        folder = tmp_path / next(iter(change)).replace(".", "_")
        folder.mkdir()
        with pytest.raises(RobolearnError) as exc:
            robolearn.load_policy(exported_copy(folder, **change))
        one_line_error(exc, fragment)

    # a checkpoint given another task's description
    with pytest.raises(RobolearnError) as exc:
        robolearn.load_policy(SHIPPED / "model.pt", description=ROUGH / "policy.json")
    one_line_error(exc, "235 observation values, the model takes 69")

    (tmp_path / "not.json").write_text("{ nope")
    with pytest.raises(RobolearnError) as exc:
        robolearn.load_policy(SHIPPED / "policy.pt", description=tmp_path / "not.json")
    one_line_error(exc, "is not valid JSON")


def test_observations_of_the_wrong_shape_are_one_line_errors():
    policy = robolearn.load_policy(SHIPPED / "policy.pt")
    with pytest.raises(RobolearnError) as exc:
        policy(torch.zeros(4, 70))
    one_line_error(exc, "observations of shape (N, 69), got (4, 70)")
    with pytest.raises(RobolearnError) as exc:
        policy({"critic": torch.zeros(4, 69)})
    one_line_error(exc, "lacks group(s) 'policy'")


def test_import_robolearn_stays_light():
    """load_policy is reached from the package root without making ``import robolearn``
    load torch (the CLI's start-up and robolearn.errors users depend on it)."""
    code = (
        "import sys, robolearn; light = 'torch' not in sys.modules; "
        "f = robolearn.load_policy; print(light, f.__module__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["True", "robolearn.app.load_policy"]


def _of_schema_4(shipped: dict, fresh: dict) -> tuple[dict, dict]:
    """A shipped policy.json of schema 4 and today's description of its task, less what
    schema 5 adds (the version, and the image groups: none for an MLP)."""
    assert (shipped.pop("schema_version"), fresh.pop("schema_version")) == (4, 5)
    assert fresh["observation"].pop("images") == []
    return shipped, fresh


def _shipped_and_fresh(task: str) -> tuple[dict, dict]:
    """A task's shipped policy.json (less what names the run's files, where it has them)
    and what export writes for its play env today."""
    from robolearn.app.export import describe
    from robolearn.wrappers import make_env

    env = make_env(task, num_envs=1, engine="cpu", play=True)
    fresh = json.loads(json.dumps(describe(env, ["policy"], task=task)))
    shipped = json.loads((pretrained_path(task).parent / "policy.json").read_text())
    for key in ("checkpoint", "files"):
        shipped.pop(key, None)
    return shipped, fresh


def test_the_shipped_descriptions_are_what_export_writes_today(menagerie_root):
    """policy.json of each pretrained task equals describe() of the task's play env (the
    docstrings aside): the regenerated files are current, and their values (joint order,
    defaults, scales, timing, command ranges) are the env's own."""

    def without_docs(node):
        if isinstance(node, dict):
            return {k: without_docs(v) for k, v in node.items() if k != "doc"}
        if isinstance(node, list):
            return [without_docs(v) for v in node]
        return node

    for task in ("humanoid_walk", "quadruped_walk_rough"):
        shipped, fresh = _shipped_and_fresh(task)
        # these shipped files are of schema 2; schema 3 adds only keys export_policy writes
        # about the export's files (checkpoint, files), schema 4 what a torque-motor model
        # needs (the drives, the base's start pose, the held actuators' joints), schema 5
        # the image groups (none for these MLPs; `network` is export_policy's too)
        assert (shipped.pop("schema_version"), fresh.pop("schema_version")) == (2, 5), task
        for key in ("drives", "root_pose"):
            fresh["robot"].pop(key, None)
        fresh["action"]["held_actuators"].pop("joints")
        assert fresh["observation"].pop("images") == []
        assert without_docs(shipped) == without_docs(fresh), task
    # the G1's, of schema 4, trained on Menagerie's file
    shipped, fresh = _of_schema_4(*_shipped_and_fresh("g1_walk"))
    assert without_docs(shipped) == without_docs(fresh)
    assert shipped["robot"]["model"] == "menagerie:unitree_g1/g1.xml"
    assert len(shipped["robot"]["drives"]) == 29 and shipped["robot"]["root_body"] == "pelvis"
    # the G1's tracking policy: its motion command names the clip it tracks
    shipped, fresh = _of_schema_4(*_shipped_and_fresh("g1_track"))
    assert without_docs(shipped) == without_docs(fresh)
    assert shipped["commands"]["motion"]["motion_files"] == ["motions/g1_walk.npz"]
    # the Panda's (schema 5, `network` export_policy's own), whose gripper says its own
    # controls and whose arm its relative targets
    shipped, fresh = _shipped_and_fresh("panda_lift")
    assert shipped.pop("network")["inputs"] == ["obs"]
    assert shipped["observation"]["dim"] == 49
    assert without_docs(shipped) == without_docs(fresh)
    arm, gripper = shipped["action"]["terms"]
    assert (gripper["open_ctrl"], gripper["close_ctrl"]) == ([255.0], [0.0])
    assert arm["type"] == "RelativeJointPositionAction" and arm["scale"] == 0.05
    # what the humanoid's policy.json says, spelled out
    desc = json.loads((SHIPPED / "policy.json").read_text())
    terms = {t["term"]: t for t in desc["observation"]["terms"]}
    assert terms["joint_pos"]["function"] == "robolearn.mdp.observations:joint_pos_rel"
    assert terms["joint_pos"]["joint_names"][:3] == [
        "left_hip_yaw",
        "left_hip_roll",
        "left_hip_pitch",
    ]
    assert terms["joint_pos"]["default_joint_pos"][3] == pytest.approx(0.6)  # left knee
    assert terms["joint_vel"]["scale"] == 0.05 and "noise" not in terms["joint_vel"]
    (action,) = desc["action"]["terms"]
    assert action["scale"] == 0.5 and action["offset"] == action["default_joint_pos"]
    assert action["joints"] == action["actuators"] and action["clip"] is None
    assert desc["action"]["held_actuators"]["actuators"][0] == "left_shoulder_pitch"
    assert desc["commands"]["base_velocity"]["ranges"]["lin_vel_x"] == [0.0, 1.0]
    assert desc["commands"]["gait"]["period_s"] == 0.8
