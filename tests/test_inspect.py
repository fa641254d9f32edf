"""robolearn inspect: what robolearn sees in a model, and which engines run it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import one_line_error, robolearn
from robolearn.assets import asset_path

USER_ROBOT = Path(__file__).parent / "assets" / "user_quadruped" / "robot.xml"


def inspect_json(model) -> tuple[int, dict]:
    out = robolearn("inspect", model, "--json")
    return out.returncode, json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("model", ["humanoid/scene.xml", "quadruped/scene.xml"])
def test_our_robots_run_on_every_engine(model):
    status, report = inspect_json(asset_path(model))
    assert status == 0
    assert report["engines"] == {"cpu": None, "warp": None}
    assert len(report["floating_bases"]) == 1 and report["floating_bases"][0]["qpos"] == 0
    assert {a["kind"] for a in report["actuators"]} == {"position"}


def test_a_users_robot_with_classes_general_actuators_and_a_mesh():
    status, report = inspect_json(USER_ROBOT)
    assert status == 0, report
    assert report["floating_bases"] == [{"body": "base_link", "qpos": 0, "dof": 0}]
    knee = next(a for a in report["actuators"] if a["name"] == "FL_calf")
    # a general actuator with an affine bias of -kp q - kv qdot is a position servo
    assert knee == {
        "name": "FL_calf",
        "kind": "position",
        "kp": 30.0,
        "kv": 0.8,
        "joint": "FL_calf_joint",
        "ctrlrange": [-2.7, -0.9],
        "forcerange": [-20.0, 20.0],
    }
    hip = next(j for j in report["joints"] if j["name"] == "RR_hip_joint")
    assert hip["range"] == [-0.8, 0.8]  # from its default class
    assert report["keyframes"] == ["home"]
    # its accelerometer makes MuJoCo compute contact forces per body: nothing is added
    assert [s["name"] for s in report["sensors"]] == ["base_gyro", "base_acc"]
    text = robolearn("inspect", USER_ROBOT)
    assert "FL_calf: position on FL_calf_joint (kp 30, kv 0.8" in text.stdout
    assert "MuJoCo Warp): runs it" in text.stdout


def test_a_feature_warp_lacks_is_named_and_the_status_says_so(tmp_path):
    pgs = tmp_path / "pgs.xml"
    pgs.write_text(USER_ROBOT.read_text().replace('integrator="implicitfast"', 'solver="PGS"'))
    (tmp_path / "meshes").symlink_to(USER_ROBOT.parent / "meshes")
    status, report = inspect_json(pgs)
    assert status == 1
    assert report["engines"]["cpu"] is None
    assert report["engines"]["warp"] and "PGS" in report["engines"]["warp"].upper()


def test_models_that_do_not_compile_are_one_line_errors(tmp_path):
    one_line_error(robolearn("inspect", tmp_path / "missing.xml"), "does not exist")
    broken = tmp_path / "broken.xml"
    broken.write_text("<mujoco><worldbody><body><geom type='sphere'/></worldbody></mujoco>")
    one_line_error(robolearn("inspect", broken), "is not valid MJCF")
    long_key = tmp_path / "long_key.xml"
    long_key.write_text(
        "<mujoco><worldbody><body><freejoint/><geom size='0.1'/></body></worldbody>"
        "<keyframe><key name='home' qpos='0 0 1 1 0 0 0 0.5 0.5'/></keyframe></mujoco>"
    )
    one_line_error(robolearn("inspect", long_key), "does not compile")
