"""``robolearn new robot`` and ``robolearn doctor`` through the real command line."""

from __future__ import annotations

import math
import os
import re
import sys
from pathlib import Path

import mujoco
import pytest
from cli_helpers import (
    VENDOR_GO2,
    one_line_error,
    progress,
    robolearn,
    robolearn_in_process,
)
from scene.test_derive import menagerie

from robolearn.sim.inspect import actuator_force_bound


def rpy(quat) -> str:
    """URDF's roll, pitch, yaw (fixed axes x, y, z) of a MuJoCo (w, x, y, z) quaternion."""
    w, x, y, z = quat
    roll = math.atan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y))
    pitch = math.asin(max(-1.0, min(1.0, 2 * (w * y - z * x))))
    yaw = math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
    return f"{roll:.9g} {pitch:.9g} {yaw:.9g}"


def vec(v) -> str:
    return " ".join(f"{float(x):.9g}" for x in v)


def urdf_of(mjcf: str) -> str:
    """A URDF of an MJCF robot, as a vendor would write it: a link per body with its
    inertia, its primitive collision geoms (capsules as cylinders), revolute joints with
    limits and efforts, no actuators, no floating base, and each named sphere (a foot) a
    link of its own on a fixed joint."""
    model = mujoco.MjModel.from_xml_path(mjcf)
    links, joints = [], []

    def collision(g: int) -> str:
        kind, size = int(model.geom_type[g]), model.geom_size[g]
        shape = {
            int(mujoco.mjtGeom.mjGEOM_SPHERE): f'<sphere radius="{size[0]:.9g}"/>',
            int(
                mujoco.mjtGeom.mjGEOM_CAPSULE
            ): f'<cylinder radius="{size[0]:.9g}" length="{2 * size[1]:.9g}"/>',
            int(
                mujoco.mjtGeom.mjGEOM_CYLINDER
            ): f'<cylinder radius="{size[0]:.9g}" length="{2 * size[1]:.9g}"/>',
            int(mujoco.mjtGeom.mjGEOM_BOX): f'<box size="{vec(2 * size)}"/>',
        }.get(kind)
        if shape is None:
            return ""
        origin = f'<origin xyz="{vec(model.geom_pos[g])}" rpy="{rpy(model.geom_quat[g])}"/>'
        return f"<collision>{origin}<geometry>{shape}</geometry></collision>"

    for b in range(1, model.nbody):
        name = model.body(b).name
        inertia = model.body_inertia[b]
        inertial = (
            f'<inertial><origin xyz="{vec(model.body_ipos[b])}" rpy="{rpy(model.body_iquat[b])}"/>'
            f'<mass value="{model.body_mass[b]:.9g}"/><inertia ixx="{inertia[0]:.9g}" '
            f'iyy="{inertia[1]:.9g}" izz="{inertia[2]:.9g}" ixy="0" ixz="0" iyz="0"/></inertial>'
        )
        colliding = [
            g
            for g in range(model.ngeom)
            if model.geom_bodyid[g] == b and (model.geom_contype[g] or model.geom_conaffinity[g])
        ]
        feet = [g for g in colliding if model.geom(g).name and model.geom_type[g] == 2]
        body = "".join(collision(g) for g in colliding if g not in feet)
        links.append(f'<link name="{name}">{inertial}{body}</link>')
        for g in feet:
            foot = model.geom(g).name
            links.append(
                f'<link name="{foot}_foot"><inertial><mass value="0.01"/><inertia ixx="1e-6" '
                f'iyy="1e-6" izz="1e-6" ixy="0" ixz="0" iyz="0"/></inertial>'
                f'<collision><geometry><sphere radius="{model.geom_size[g][0]:.9g}"/></geometry>'
                f"</collision></link>"
            )
            joints.append(
                f'<joint name="{foot}_fixed" type="fixed"><parent link="{name}"/>'
                f'<child link="{foot}_foot"/><origin xyz="{vec(model.geom_pos[g])}"/></joint>'
            )
        if b == 1:
            continue
        parent = model.body(int(model.body_parentid[b])).name
        origin = f'<origin xyz="{vec(model.body_pos[b])}" rpy="{rpy(model.body_quat[b])}"/>'
        j = int(model.body_jntadr[b])
        if j < 0:
            joints.append(
                f'<joint name="{name}_fixed" type="fixed"><parent link="{parent}"/>'
                f'<child link="{name}"/>{origin}</joint>'
            )
            continue
        act = next(a for a in range(model.nu) if model.actuator_trnid[a, 0] == j)
        force, _ = actuator_force_bound(model, act)
        effort = max(abs(f) for f in force) * abs(float(model.actuator_gear[act, 0]))
        low, high = model.jnt_range[j]
        joints.append(
            f'<joint name="{model.joint(j).name}" type="revolute"><parent link="{parent}"/>'
            f'<child link="{name}"/>{origin}<axis xyz="{vec(model.jnt_axis[j])}"/>'
            f'<limit lower="{low:.9g}" upper="{high:.9g}" effort="{effort:.9g}" velocity="30"/>'
            "</joint>"
        )
    return f'<robot name="urdf_h1">{"".join(links)}{"".join(joints)}</robot>\n'


@pytest.fixture(scope="module")
def urdf_package(tmp_path_factory) -> Path:
    """A URDF of Menagerie's H1 brought into a package with ``new robot``."""
    folder = tmp_path_factory.mktemp("urdf")
    path = folder / "urdf_h1.urdf"
    path.write_text(urdf_of(menagerie("unitree_h1/h1.xml")))
    result = robolearn("new", "robot", path, "--out", folder / "my_robots", cwd=folder)
    assert result.returncode == 0, result.stderr[-3000:]
    return folder


def test_a_urdf_becomes_a_walking_task_that_trains(urdf_package):
    """The URDF has no floating base, no actuators, no floor and no keyframe; new robot
    adds the free joint, gives every joint a PD loop over the inertia it moves (the URDF
    states no armature) limited by the URDF's effort, finds the two feet, and the task
    trains."""
    text = (urdf_package / "my_robots" / "urdf_h1.py").read_text()
    assert "floating_base=True" in text
    assert "no actuator made a PD loop" in text and "the inertia below it" in text
    assert "effort_limit=300.0," in text and "from the joint's actuatorfrcrange" in text
    assert 'feet=("left_ankle_link", "right_ankle_link")' in text
    assert "no keyframe" in text
    log_root = urdf_package / "logs"
    result = robolearn(
        "train",
        "--import",
        "my_robots",
        "--task",
        "urdf_h1_walk",
        "--num_envs",
        "16",
        "--max_iterations",
        "2",
        "--log_root",
        log_root,
        cwd=urdf_package,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    (run,) = (log_root / "urdf_h1_walk").iterdir()
    assert (run / "model_2.pt").is_file()
    # play finds the task again from any folder: the run recorded the import
    played = robolearn(
        "play",
        "--task",
        "urdf_h1_walk",
        "--checkpoint",
        run / "model_2.pt",
        "--eval",
        "--num_envs",
        "4",
        "--json",
    )
    assert played.returncode == 0, played.stderr[-3000:]


def test_the_generated_files_are_a_users_to_read(urdf_package):
    """The generated modules import from anywhere (absolute package imports), name the
    task, and the lines the user writes are the command line only."""
    package = urdf_package / "my_robots"
    init = (package / "__init__.py").read_text()
    assert "from my_robots import urdf_h1_walk" in init
    walk = (package / "urdf_h1_walk.py").read_text()
    assert '"urdf_h1_walk"' in walk and '"urdf_h1_walk_rough"' in walk
    result = robolearn("list", "--import", str(package))
    assert "urdf_h1_walk_rough" in result.stdout, result.stderr


def test_new_robot_writes_nothing_over_a_file(urdf_package, capsys):
    path = urdf_package / "urdf_h1.urdf"
    out = urdf_package / "my_robots"
    before = (out / "urdf_h1.py").read_text()
    result = robolearn_in_process(capsys, "new", "robot", path, "--out", out)
    one_line_error(result, "exists: new robot writes no file over another")
    assert (out / "urdf_h1.py").read_text() == before


def test_bad_input_is_one_line(tmp_path, capsys):
    one_line_error(
        robolearn_in_process(
            capsys, "new", "robot", tmp_path / "nope.xml", "--out", tmp_path / "p"
        ),
        "does not exist",
    )
    one_line_error(
        robolearn_in_process(
            capsys,
            "new",
            "robot",
            menagerie("unitree_go1/go1.xml"),
            "--name",
            "1go",
            "--out",
            tmp_path / "p",
        ),
        "is not a Python module name",
    )
    one_line_error(
        robolearn_in_process(
            capsys,
            "new",
            "robot",
            menagerie("franka_emika_panda/panda.xml"),
            "--out",
            tmp_path / "p",
        ),
        "panda_reach is a task already",
    )
    one_line_error(
        robolearn_in_process(
            capsys,
            "new",
            "robot",
            menagerie("unitree_go1/go1.xml"),
            "--kind",
            "arm",
            "--out",
            tmp_path / "p",
        ),
        "--kind arm is for a fixed arm",
    )
    assert not (tmp_path / "p").exists()


@pytest.mark.slow
def test_an_arm_becomes_a_reach_task_that_trains(tmp_path):
    """Menagerie's Panda (no floating base): the tool is where the fingers branch (hand),
    the arm's joints are the seven from link0 to it, the fingers keep the model's tendon
    actuator, and the goals' box is centred on the hand's home position."""
    result = robolearn(
        "new",
        "robot",
        menagerie("franka_emika_panda/panda.xml"),
        "--name",
        "my_arm",
        "--out",
        tmp_path / "arms",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "an arm, tool hand, base link0" in result.stdout
    text = (tmp_path / "arms" / "my_arm.py").read_text()
    actuators = text.split("actuators = {")[1].split("\n    }")[0]
    assert 'tool_body="hand"' in text and "finger" not in actuators
    trained = robolearn(
        "train",
        "--import",
        "arms",
        "--task",
        "my_arm_reach",
        "--num_envs",
        "16",
        "--max_iterations",
        "2",
        "--log_root",
        tmp_path / "logs",
        cwd=tmp_path,
    )
    assert trained.returncode == 0, trained.stderr[-3000:]


def test_doctor_passes_a_healthy_model_and_a_generated_task(urdf_package, capsys):
    result = robolearn_in_process(capsys, "doctor", menagerie("unitree_go1/go1.xml"))
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert any(ln.startswith("WARN  floor") for ln in lines)  # its own file has no floor
    assert any(ln.startswith("PASS  feet") for ln in lines)
    assert not any(ln.startswith("FAIL") for ln in lines)
    cwd = os.getcwd()
    os.chdir(urdf_package)
    try:
        sys.path.insert(0, str(urdf_package))
        task = robolearn_in_process(capsys, "doctor", "--import", "my_robots", "urdf_h1_walk")
    finally:
        os.chdir(cwd)
        sys.path.remove(str(urdf_package))
    assert task.returncode == 0, task.stdout + task.stderr
    assert "PASS  floor           the task's scene has a floor" in task.stdout


class TextEdit:
    """An edit of a model's XML text, where MjSpec cannot write the mistake."""

    def __init__(self, fn) -> None:
        self.fn = fn

    def __call__(self, text: str) -> str:
        return self.fn(text)


def broken_go2(tmp_path: Path, edit) -> Path:
    """Unitree's Go2 with one thing broken by ``edit(spec)`` (or a :class:`TextEdit` of
    its XML), saved beside its meshes."""
    spec = mujoco.MjSpec.from_file(str(VENDOR_GO2))
    if not isinstance(edit, TextEdit):
        edit(spec)
    spec.meshdir = str(VENDOR_GO2.parent / spec.meshdir) if spec.meshdir else str(VENDOR_GO2.parent)
    tmp_path.mkdir()
    path = tmp_path / "go2.xml"
    text = spec.to_xml()
    path.write_text(edit(text) if isinstance(edit, TextEdit) else text)
    return path


def test_doctor_fails_what_would_not_train(tmp_path, capsys):
    """Each broken model is a FAIL line saying what to change, and exit status 2: a
    keyframe of the wrong size, masses in grams, a moving body with no mass (MuJoCo does
    not compile it), gains no physics step of the robot's can follow."""

    def short_key(text):
        # MjSpec pads a keyframe to the model's size: the file is cut as a user's would be
        return re.sub(
            r'<key name="home" qpos="([^"]*)"',
            lambda m: f'<key name="home" qpos="{" ".join(m.group(1).split()[:10])}"',
            text,
        )

    def grams(spec):
        for body in spec.bodies[1:]:
            body.mass = body.mass * 1000
            body.inertia = [i * 1000 for i in body.inertia]

    def massless(text):
        # MjSpec refuses to write it (MuJoCo does not compile it): cut by hand
        head, body = text.split('<body name="FL_calf"', 1)
        inertial = re.search(r"<inertial [^>]*/>", body).group(0)
        return (
            head
            + '<body name="FL_calf"'
            + body.replace(inertial, '<inertial pos="0 0 0" mass="0" diaginertia="0 0 0"/>', 1)
        )

    cases = {"keyframes": TextEdit(short_key), "masses": grams, "loads": TextEdit(massless)}
    for check, edit in cases.items():
        path = broken_go2(tmp_path / check, edit)
        result = robolearn_in_process(capsys, "doctor", path)
        failed = [ln for ln in result.stdout.splitlines() if ln.startswith("FAIL")]
        assert result.returncode == 2, result.stdout + result.stderr
        assert failed and failed[0].startswith(f"FAIL  {check}"), result.stdout
    assert "mass and inertia of moving bodies" in failed[0]


OVERLAPPING_LEGS = """
<mujoco model="overlap">
  <worldbody>
    <body name="base" pos="0 0 0.5">
      <freejoint/>
      <geom type="box" size="0.2 0.1 0.05" mass="5"/>
      <body name="left" pos="0.1 0 -0.05">
        <joint name="left_hip" axis="0 1 0" range="-1 1"/>
        <geom type="capsule" fromto="0 0 0 0 0 -0.4" size="0.03" mass="1"/>
      </body>
      <body name="right" pos="0.1 0.02 -0.05">
        <joint name="right_hip" axis="0 1 0" range="-1 1"/>
        <geom type="capsule" fromto="0 0 0 0 0 -0.4" size="0.03" mass="1"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <position joint="left_hip" kp="50"/>
    <position joint="right_hip" kp="50"/>
  </actuator>
</mujoco>
"""


def test_doctor_fails_legs_that_overlap(tmp_path, capsys):
    path = tmp_path / "overlap.xml"
    path.write_text(OVERLAPPING_LEGS)
    result = robolearn_in_process(capsys, "doctor", path)
    assert result.returncode == 2, result.stdout + result.stderr
    line = next(ln for ln in result.stdout.splitlines() if "self-collision" in ln)
    assert line.startswith("FAIL") and "left/right" in line, result.stdout


def test_doctor_checks_a_task_with_its_overrides(capsys):
    """A task is checked as it would train, overrides included: a physics step the gains
    cannot follow, a floating robot with no floor."""
    model = f"env.scene.model={VENDOR_GO2}"
    result = robolearn_in_process(
        capsys, "doctor", "go2_walk", model, "env.sim.physics_dt=0.05", "env.decimation=1"
    )
    assert result.returncode == 2
    assert "FAIL  gains           50 ms physics is past the" in result.stdout
    result = robolearn_in_process(capsys, "doctor", "go2_walk", model, "env.scene.ground=false")
    assert result.returncode == 2
    assert "FAIL  floor" in result.stdout and "env.scene.ground=true" in result.stdout
    ok = robolearn_in_process(capsys, "doctor", "go2_walk", model)
    assert ok.returncode == 0, ok.stdout
    one_line_error(
        robolearn_in_process(capsys, "doctor", str(VENDOR_GO2), "env.sim.physics_dt=0.01"),
        "apply to a task",
    )


@pytest.mark.slow
def test_a_generated_quadruped_learns(tmp_path):
    """Menagerie's Go1, brought with new robot, learns to stay up and track: its episodes
    last from a fraction of a second to their full 20 s, and its tracking reward grows.
    (Its walking curve, 10 minutes on 2 cores, is a benchmark: BENCHMARKS.md section 35.)"""
    result = robolearn(
        "new", "robot", menagerie("unitree_go1/go1.xml"), "--out", tmp_path / "zoo", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    trained = robolearn(
        "train",
        "--import",
        "zoo",
        "--task",
        "go1_walk",
        "--num_envs",
        "256",
        "--max_iterations",
        "60",
        "--log_root",
        tmp_path / "logs",
        cwd=tmp_path,
    )
    assert trained.returncode == 0, trained.stderr[-3000:]
    (run,) = (tmp_path / "logs" / "go1_walk").iterdir()
    rows = progress(run)
    early, late = rows[:5], rows[-5:]

    def mean(key: str, rows: list[dict]) -> float:
        return sum(r[key] for r in rows) / len(rows)

    assert mean("Train/mean_episode_length", late) > 3 * mean("Train/mean_episode_length", early)
    track = "Episode_Reward/track_lin_vel_xy"
    assert mean(track, late) > 2 * mean(track, early)
