"""robolearn inspect: what robolearn sees in a model, and which engines run it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cli_helpers import one_line_error, robolearn, robolearn_in_process
from robolearn.assets import asset_path

USER_ROBOT = Path(__file__).parents[1] / "assets" / "user_quadruped" / "robot.xml"


def inspect_json(capsys, model) -> tuple[int, dict]:
    """``robolearn inspect MODEL --json`` (in this process: its report does not depend on
    a fresh interpreter, and each would import torch and warp again)."""
    out = robolearn_in_process(capsys, "inspect", model, "--json")
    return out.returncode, json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("model", ["humanoid/scene.xml", "quadruped/scene.xml"])
def test_our_robots_run_on_every_engine(capsys, model):
    status, report = inspect_json(capsys, asset_path(model))
    assert status == 0
    assert report["engines"] == {"cpu": None, "warp": None}
    assert len(report["floating_bases"]) == 1 and report["floating_bases"][0]["qpos"] == 0
    assert {a["kind"] for a in report["actuators"]} == {"position"}


def test_a_users_robot_with_classes_general_actuators_and_a_mesh(capsys):
    status, report = inspect_json(capsys, USER_ROBOT)
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
        "gear": 1.0,
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
    # nothing on stderr: before, warp's "could not find or load the NVIDIA CUDA driver" on
    # every machine without one (where the Warp engines run on warp's CPU device)
    assert text.returncode == 0 and text.stderr == "", text.stderr


def test_a_feature_warp_lacks_is_named_and_the_status_says_so(capsys, tmp_path):
    pgs = tmp_path / "pgs.xml"
    pgs.write_text(USER_ROBOT.read_text().replace('integrator="implicitfast"', 'solver="PGS"'))
    (tmp_path / "meshes").symlink_to(USER_ROBOT.parent / "meshes")
    status, report = inspect_json(capsys, pgs)
    assert status == 1
    assert report["engines"]["cpu"] is None
    assert report["engines"]["warp"] and "PGS" in report["engines"]["warp"].upper()


def test_models_that_do_not_compile_are_one_line_errors(capsys, tmp_path):
    def robolearn(*args):
        return robolearn_in_process(capsys, *args)

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


def inspect_in_process(capsys, model, *flags: str):
    """``robolearn inspect MODEL FLAGS`` in this process: (status, stdout)."""
    out = robolearn_in_process(capsys, "inspect", model, *flags)
    assert out.returncode == 0, out.stderr
    return out.stdout


def section(text: str, title: str) -> list[str]:
    """The lines of one section of the text report, its title line first."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(f"{title} ("))
    end = next(
        (i for i in range(start + 1, len(lines)) if not lines[i].startswith("  ")), len(lines)
    )
    return lines[start:end]


def test_the_humanoids_geoms_sites_and_joint_force_limits(capsys):
    model = asset_path("humanoid/humanoid.xml")
    report = json.loads(inspect_in_process(capsys, model, "--json"))
    geoms = {g["name"]: g for g in report["geoms"]}
    # the feet: collision boxes on the foot bodies, touching the floor (contype 1) but not
    # the robot's other geoms (conaffinity 0)
    assert geoms["left_foot"] == {
        "name": "left_foot",
        "named": True,
        "body": "left_foot",
        "type": "box",
        "size": pytest.approx([0.1, 0.045, 0.015]),
        "group": 0,
        "contype": 1,
        "conaffinity": 0,
        "condim": 3,
        "collides": True,
    }
    assert not geoms["left_hip"]["collides"]  # contype 0, conaffinity 0: visual only
    unnamed = [g for g in report["geoms"] if not g["named"]]
    assert unnamed and all(g["name"].startswith("<geom ") for g in unnamed)
    assert len(report["geoms"]) == 24
    assert {"name": "left_sole", "body": "left_foot"} in report["sites"]
    assert len(report["sites"]) == 6
    knee = next(j for j in report["joints"] if j["name"] == "left_knee")
    assert knee["range"] == [-0.05, 2.4]
    assert (knee["damping"], knee["armature"], knee["frictionloss"]) == (0.5, 0.04, 0.1)
    assert knee["actuators"] == [
        {"name": "left_knee", "gear": 1.0, "force": [-140.0, 140.0], "bounded_by": "forcerange"}
    ]
    assert knee["force_limit"] == [-140.0, 140.0] and "actuatorfrcrange" not in knee
    root = report["joints"][0]
    assert root["type"] == "free" and root["actuators"] == [] and root["force_limit"] is None

    text = inspect_in_process(capsys, model)
    assert (
        "  left_knee (hinge, body left_shin) range [-0.05, 2.4], damping 0.5, armature 0.04, "
        "frictionloss 0.1, torque ±140 (actuator forcerange)"
    ) in text.splitlines()
    geom_lines = section(text, "geoms")
    assert geom_lines[0].startswith("geoms (24; 14 can collide, contype/conaffinity 1/0")
    assert "  left_foot: left_foot (box)" in geom_lines
    assert "  left_hip_roll_link: left_hip (sphere, visual)" in geom_lines
    assert "  left_hip_yaw_link: 1 unnamed (sphere, visual)" in geom_lines
    assert len(geom_lines) == 1 + 22  # one line per body with geoms
    assert "  left_foot: left_sole" in section(text, "sites")


SMALL_ROBOT = """
<mujoco model="small">
  <worldbody>
    <geom name="floor" type="plane" size="1 1 0.1"/>
    <body name="base">
      <freejoint/>
      <geom name="chassis" type="box" size="0.2 0.1 0.05" contype="1" conaffinity="0"/>
      <geom type="sphere" size="0.1" contype="0" conaffinity="0" group="2"/>
      <site name="imu"/>
      <body name="arm">
        <joint name="shoulder" range="-1 1" damping="0.3" armature="0.01"
               actuatorfrcrange="-5 5"/>
        <geom name="upper" type="capsule" size="0.02 0.1"/>
        <body name="slider">
          <joint name="slide" type="slide" range="0 0.1"/>
          <geom type="sphere" size="0.02"/>
          <site name="tip"/>
        </body>
      </body>
      <body name="wheel">
        <joint name="spin"/>
        <geom name="tyre" type="cylinder" size="0.05 0.02"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor name="shoulder_motor" joint="shoulder" gear="10" ctrlrange="-1 1"/>
    <position name="slide_servo" joint="slide" kp="100" forcerange="-20 20" gear="2"/>
    <motor name="spin_a" joint="spin" ctrlrange="-1 1"/>
    <motor name="spin_b" joint="spin" gear="3" ctrlrange="-2 2"/>
    <position name="free_servo" joint="slide" kp="10"/>
  </actuator>
</mujoco>
"""


def test_force_limits_from_forcerange_ctrlrange_gear_and_actuatorfrcrange(capsys, tmp_path):
    model = tmp_path / "small.xml"
    model.write_text(SMALL_ROBOT)
    report = json.loads(inspect_in_process(capsys, model, "--json"))
    joints = {j["name"]: j for j in report["joints"]}
    # a motor's ctrlrange x gear (10), clipped by the joint's actuatorfrcrange
    shoulder = joints["shoulder"]
    assert shoulder["actuators"] == [
        {"name": "shoulder_motor", "gear": 10.0, "force": [-10.0, 10.0], "bounded_by": "ctrlrange"}
    ]
    assert shoulder["actuatorfrcrange"] == [-5.0, 5.0] and shoulder["force_limit"] == [-5.0, 5.0]
    assert (shoulder["damping"], shoulder["armature"]) == (0.3, 0.01)
    # a servo's forcerange x gear 2; a second servo without one leaves the joint unbounded
    slide = joints["slide"]
    assert slide["actuators"][0] == {
        "name": "slide_servo",
        "gear": 2.0,
        "force": [-40.0, 40.0],
        "bounded_by": "forcerange",
    }
    assert slide["actuators"][1]["force"] is None and slide["force_limit"] is None
    # two motors on one joint add up
    assert joints["spin"]["force_limit"] == [-7.0, 7.0]
    geoms = {g["name"]: g for g in report["geoms"]}
    assert geoms["floor"]["body"] == "world" and geoms["chassis"]["conaffinity"] == 0
    visual = next(g for g in report["geoms"] if g["group"] == 2)
    assert not visual["named"] and not visual["collides"] and visual["body"] == "base"
    assert report["sites"] == [{"name": "imu", "body": "base"}, {"name": "tip", "body": "slider"}]

    text = inspect_in_process(capsys, model).splitlines()
    assert (
        "  shoulder (hinge, body arm) range [-0.0174533, 0.0174533], damping 0.3, armature 0.01, "
        "torque ±5 (actuatorfrcrange ±5; shoulder_motor ±10 from ctrlrange x gear 10)"
    ) in text  # MJCF's ranges are in degrees unless <compiler angle="radian"/>
    assert any(
        ln.startswith("  slide (slide, body slider)") and "force unbounded" in ln for ln in text
    ), text
    assert any(
        "torque ±7 (spin_a ±1 from ctrlrange; spin_b ±6 from ctrlrange x gear 3)" in ln
        for ln in text
    ), text
    assert "  base: chassis (box, 1/0), 1 unnamed (sphere, visual)" in text
    assert "  slider: tip" in text


def test_a_hundred_geoms_stay_readable(capsys, tmp_path):
    bodies = "".join(
        f'<body name="link{b}" pos="0 0 {b}"><joint/>'
        + "".join(
            f'<geom name="link{b}_g{k}" size="0.01"/>' if k < 2 else '<geom size="0.01"/>'
            for k in range(10)
        )
        + "</body>"
        for b in range(10)
    )
    model = tmp_path / "many.xml"
    model.write_text(f"<mujoco><worldbody>{bodies}</worldbody></mujoco>")
    assert len(json.loads(inspect_in_process(capsys, model, "--json"))["geoms"]) == 100
    lines = section(inspect_in_process(capsys, model), "geoms")
    assert len(lines) == 11 and max(map(len, lines)) < 120, lines
    assert lines[1] == "  link0: link0_g0 (sphere), link0_g1 (sphere), 8 unnamed (sphere)"


def test_a_folder_or_a_file_that_is_not_mjcf_is_named_as_such(capsys, tmp_path):
    def error(path) -> str:
        out = robolearn_in_process(capsys, "inspect", path)
        one_line_error(out, "")
        return out.stderr.strip()

    assert f"{tmp_path} is a folder, not an MJCF file; it holds no .xml file" in error(tmp_path)
    humanoid = asset_path("humanoid/humanoid.xml")
    assert "the .xml files in it: humanoid.xml, scene.xml" in error(humanoid.parent)
    checkpoint = tmp_path / "model.pt"
    checkpoint.write_bytes(b"PK\x03\x04 not a model")
    assert f"{checkpoint} is not an MJCF file (a .pt file" in error(checkpoint)
    page = tmp_path / "page.xml"
    page.write_text("<html><body/></html>")
    assert "its top element is <html>, an MJCF's is <mujoco>" in error(page)
    binary = tmp_path / "binary.xml"
    binary.write_bytes(bytes(range(256)))
    assert f"{binary} is not an MJCF file: it is not XML" in error(binary)
    renamed = tmp_path / "robot.txt"
    renamed.write_text(SMALL_ROBOT)
    assert "holds MJCF, but MuJoCo reads a model only from a file whose name ends in .xml" in (
        error(renamed)
    )
    assert "does not exist" in error(tmp_path / "missing.xml")
    fifo = tmp_path / "robot.xml.fifo"
    os.mkfifo(fifo)  # read, it would block: refused by what it is, never opened
    assert f"MJCF file '{fifo}' is not a regular file" in error(fifo)
