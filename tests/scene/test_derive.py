"""Deriving a robot config from Menagerie's own files (not their scene.xml: no floor)."""

from __future__ import annotations

import math

import pytest
from conftest import menagerie_roots

from robolearn.errors import RobolearnError
from robolearn.scene.derive import compile_scene, derive_robot
from robolearn.sim.stability import stiffest_joint


def menagerie(relative: str) -> str:
    for root in menagerie_roots():
        if (root / relative).is_file():
            return str(root / relative)
    pytest.fail(f"{relative} is in neither Menagerie test package (run scripts/setup.sh)")


@pytest.fixture(scope="module")
def go1():
    return derive_robot(menagerie("unitree_go1/go1.xml"))


@pytest.fixture(scope="module")
def h1():
    return derive_robot(menagerie("unitree_h1/h1.xml"))


def test_position_servos_are_kept_and_the_keyframe_is_the_pose(go1):
    """Go1: Menagerie's position servos (kp 100, forcerange 23.7 / 35.55 N m) stay as they
    are, the keyframe ``home`` is the pose, and the four foot spheres are found by where
    the robot touches the floor, with the mirror map."""
    assert go1.kind == "quadruped"
    assert {d.source for d in go1.drives} == {"position servo"}
    assert {d.stiffness for d in go1.drives} == {100.0}
    calf = next(d for d in go1.drives if d.joint == "FR_calf_joint")
    assert calf.effort_limit == pytest.approx(35.55)
    assert go1.joint_pos["FR_thigh_joint"] == pytest.approx(0.9)
    assert "keyframe 'home'" in go1.why["pose"]
    assert sorted(go1.feet) == ["FL", "FR", "RL", "RR"]  # geoms on the calves: made bodies
    assert not go1.has_floor and "lays a plane" in go1.why["floor"]
    assert 0.2 < go1.base_pos[2] < 0.35
    assert go1.physics_dt == 0.005 and go1.decimation == 4
    assert go1.mirror is not None and go1.mirror.pairs["FL_calf_joint"] == "FR_calf_joint"
    assert sorted(go1.mirror.flip) == sorted(f"{leg}_hip_joint" for leg in ("FL", "FR", "RL", "RR"))
    # the calf keeps its shin capsule when its foot sphere becomes a body of its own
    assert "FR_calf" in go1.shin_bodies and "trunk" not in go1.shin_bodies
    # a unit action asks a quarter of the torque the motor has (mjlab's rule)
    assert go1.action_scale == pytest.approx(0.25 * 23.7 / 100, rel=1e-3)


def test_torque_motors_become_pd_loops_over_the_armature(h1):
    """H1 drives every joint with a torque <motor>, has no keyframe, and its armature is
    0.1 kg m^2: each joint gets kp = I w^2, kd = 2 zeta I w at 10 Hz and ratio 2, its
    effort limit the motor's ctrlrange (H1's knee 300 N m, ankle 40 N m)."""
    omega = 2 * math.pi * 10.0
    for d in h1.drives:
        assert d.source == "torque motor"
        assert d.stiffness == pytest.approx(0.1 * omega**2)
        assert d.damping == pytest.approx(2 * 2.0 * 0.1 * omega)
    limits = {d.joint: d.effort_limit for d in h1.drives}
    assert limits["left_knee"] == 300 and limits["left_ankle"] == 40
    assert "no keyframe" in h1.why["pose"]
    assert set(h1.joint_pos.values()) == {0.0}
    assert h1.kind == "biped" and sorted(h1.feet) == ["left_ankle_link", "right_ankle_link"]
    # the tree says which joints are hips (yaw, roll), ankles and waist, not the names
    assert sorted(h1.hips) == ["left_hip_roll", "left_hip_yaw", "right_hip_roll", "right_hip_yaw"]
    assert sorted(h1.ankles) == ["left_ankle", "right_ankle"]
    assert h1.waist == ["torso"]
    # the policy drives the legs and the waist's yaw; the arms hold the pose
    assert len(h1.driven_joints) == 11 and "left_elbow" not in h1.driven_joints
    assert 0.95 < h1.base_pos[2] < 1.1


def test_the_physics_step_is_checked_against_the_gains(h1):
    """The step chosen is at most half the step the gains could be stable at, and the
    robot stood at it."""
    scene = compile_scene(h1.entity(), h1.physics_dt)
    stiff = stiffest_joint(scene, scene.key("init_state").qpos)
    assert h1.physics_dt <= 0.5 * stiff.max_timestep
    assert h1.stance.stands and h1.stance.max_joint_speed < 1.0


@pytest.mark.slow
def test_a_model_whose_geoms_collide_only_in_another_files_pairs():
    """Apollo's own file: every geom has contype and conaffinity 0 (scene.xml adds contact
    pairs). Its collision geoms (group 3) are made to touch the floor and nothing else,
    so that it has feet; the floor the scene lays collides whatever the model's default
    geom class says."""
    apollo = derive_robot(menagerie("apptronik_apollo/apptronik_apollo.xml"))
    assert apollo.floor_contact_group == 3 and "group 3" in apollo.why["contacts"]
    assert apollo.kind == "biped" and sorted(apollo.feet) == ["l_foot_link", "r_foot_link"]


@pytest.mark.slow
def test_no_keyframe_no_mirror_small_biped():
    """OP3: no keyframe, zero pose; a 3 kg biped whose head is off the centre line by more
    than the mirror's 2 mm: no mirror map, so no symmetry augmentation, said."""
    op3 = derive_robot(menagerie("robotis_op3/op3.xml"))
    assert op3.kind == "biped" and len(op3.feet) == 2
    assert op3.mirror is None and "head_tilt" in op3.why["mirror"]
    assert op3.legs.length < 0.3  # a small robot: slower commands (WalkerCfg.speed_scale)


def test_servos_too_soft_to_carry_the_robot_are_remade():
    """The Berkeley humanoid's own servos (kp 1 at the knees and ankles) give up to 1.7 rad
    under the torque of standing and sag its base 9 cm below the keyframe's pose: each is
    remade as a 10 Hz PD loop over its armature, saying why, and the robot then stands at
    the keyframe's height."""
    berkeley = derive_robot(menagerie("berkeley_humanoid/berkeley_humanoid.xml"))
    knee = next(d for d in berkeley.drives if d.joint == "LL_KFE")
    assert knee.source == "soft servo" and "too soft" in knee.why
    assert knee.stiffness == pytest.approx(0.0056 * (2 * math.pi * 10) ** 2)
    assert berkeley.base_pos[2] > 0.49
    assert berkeley.kind == "biped" and sorted(berkeley.feet) == ["ll_faa", "lr_faa"]


def test_arm_and_unknown_kind():
    with pytest.raises(RobolearnError, match="--kind must be one of"):
        derive_robot(menagerie("unitree_go1/go1.xml"), kind="snake")
    with pytest.raises(RobolearnError, match="floats"):
        derive_robot(menagerie("unitree_go1/go1.xml"), kind="arm")
    panda = derive_robot(menagerie("franka_emika_panda/panda.xml"))
    assert (
        panda.kind == "arm"
        and panda.root_body is None
        and panda.base_body == "link0"
        and panda.tool_body == "hand"
    )
    # the fingers' tendon actuator stays the model's; the seven arm joints are driven
    assert [d.joint for d in panda.drives] == [f"joint{i}" for i in range(1, 8)]
    assert panda.driven_actuators == [f"actuator{i}" for i in range(1, 8)]
