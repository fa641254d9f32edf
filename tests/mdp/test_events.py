"""Event terms of robolearn.mdp: what they write, and that the physics feels it."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest
import torch

from robolearn import mdp
from robolearn.errors import RobolearnError

from .truth import (
    FEET,
    body_velocity,
    dof,
    joint,
    keyframe,
    mj_data,
    poses,
    set_state,
)

# ---- events -----------------------------------------------------------------------------


def test_reset_root_state_uniform_places_and_moves_the_root(fresh_humanoid):
    env = fresh_humanoid
    e = env.scene.engine
    default = env.scene.default_qpos
    # a default orientation of its own (pitched forward, turned), so that "after the default
    # orientation" has a meaning: rotations do not commute
    mujoco.mju_euler2Quat(q := np.zeros(4), np.array([0.0, 0.2, -0.5]), "XYZ")
    default[3:7] = torch.as_tensor(q)
    before = e.qpos.clone()
    ids = torch.tensor([0, 2])
    pose = {"x": (0.2, 0.2), "z": (0.1, 0.1), "roll": (0.3, 0.3), "yaw": (1.0, 1.0)}
    velocity = {"x": (0.5, 0.5), "y": (-0.1, -0.1), "roll": (0.2, 0.2), "yaw": (0.4, 0.4)}
    mdp.reset_root_state_uniform(env, ids, pose_range=pose, velocity_range=velocity)
    set_state(env, e.qpos.clone(), e.qvel.clone())
    # roll and yaw in the world, after the default orientation
    delta = np.zeros(4)
    mujoco.mju_euler2Quat(delta, np.array([0.3, 0.0, 1.0]), "XYZ")
    quat = np.zeros(4)
    mujoco.mju_mulQuat(quat, delta, default[3:7].numpy())
    for i in (0, 2):
        torch.testing.assert_close(
            e.qpos[i, 0:3], default[0:3] + torch.tensor([0.2, 0.0, 0.1], dtype=torch.float64)
        )
        torch.testing.assert_close(e.qpos[i, 3:7], torch.as_tensor(quat))
        lin, ang = body_velocity(env, mj_data(env, i), "pelvis", local=False)
        np.testing.assert_allclose(lin, [0.5, -0.1, 0.0], atol=1e-6)
        np.testing.assert_allclose(ang, [0.2, 0.0, 0.4], atol=1e-6)
    torch.testing.assert_close(e.qpos[1], before[1])  # env 1 was not reset
    # drawn ranges: every offset inside its range
    torch.manual_seed(0)
    for _ in range(20):
        mdp.reset_root_state_uniform(
            env, env.all_env_ids, pose_range={"x": (-0.5, 0.5), "yaw": (-3.0, 3.0)}
        )
        offset = e.qpos[:, 0:3] - default[0:3]
        assert bool((offset[:, 0].abs() <= 0.5).all()) and bool((offset[:, 1:] == 0).all())
        for i in range(3):  # the rotation applied after the default one: about z, <= 3 rad
            delta, inverse = np.zeros(4), np.zeros(4)
            mujoco.mju_negQuat(inverse, default[3:7].numpy())
            mujoco.mju_mulQuat(delta, e.qpos[i, 3:7].numpy(), inverse)
            np.testing.assert_allclose(delta[1:3], 0.0, atol=1e-9)
            assert abs(2 * math.atan2(delta[3], delta[0])) <= 3.0 + 1e-6
    with pytest.raises(RobolearnError, match="unknown axes"):
        mdp.reset_root_state_uniform(env, ids, pose_range={"pitchh": (0.0, 1.0)})


def test_reset_joints_by_scale_and_by_offset_stay_within_the_limits(fresh_humanoid):
    env = fresh_humanoid
    e, m = env.scene.engine, env.scene.engine.model
    names = env.scene.joint_names
    cols = [joint(env, n) for n in names]
    dofs = [dof(env, n) for n in names]
    key = keyframe(env)[cols]
    lo, hi = (torch.as_tensor(r) for r in m.jnt_range[[m.joint(n).id for n in names]].T)
    ids = torch.tensor([0, 2])
    before_q, before_v = e.qpos.clone(), e.qvel.clone()

    mdp.reset_joints_by_scale(env, ids, position_range=(1.5, 1.5), velocity_range=(0.3, 0.3))
    for i in (0, 2):
        torch.testing.assert_close(e.qpos[i, cols], key * 1.5)
    # 5 x the default pose is past some limits: those joints stop at their limit
    mdp.reset_joints_by_scale(env, ids, position_range=(5.0, 5.0), velocity_range=(0.3, 0.3))
    expected = torch.minimum(torch.maximum(key * 5.0, lo), hi)
    assert bool((expected != key * 5.0).any())
    for i in (0, 2):
        torch.testing.assert_close(e.qpos[i, cols], expected)
        torch.testing.assert_close(
            e.qvel[i, dofs], torch.full((len(names),), 0.3, dtype=torch.float64)
        )
    torch.testing.assert_close(e.qpos[1], before_q[1])
    torch.testing.assert_close(e.qvel[1], before_v[1])
    torch.testing.assert_close(e.qpos[:, 0:7], before_q[:, 0:7])  # the root stays

    knees = [joint(env, "left_knee"), joint(env, "right_knee")]
    mdp.reset_joints_by_offset(env, ids, position_range=(-0.2, -0.2), joints=".*_knee")
    for i in (0, 2):
        torch.testing.assert_close(e.qpos[i, knees], keyframe(env)[knees] - 0.2)
        torch.testing.assert_close(e.qpos[i, cols[:3]], expected[:3])  # hips kept
    mdp.reset_joints_by_offset(env, ids, position_range=(5.0, 5.0), joints="left_knee")
    assert e.qpos[0, joint(env, "left_knee")].item() == pytest.approx(2.4)  # clamped
    # drawn offsets lie in their range
    torch.manual_seed(0)
    mdp.reset_joints_by_offset(
        env, env.all_env_ids, position_range=(-0.05, 0.05), velocity_range=(-1, 1)
    )
    inner = (key > lo + 0.05) & (key < hi - 0.05)
    offsets = e.qpos[:, cols] - key
    assert bool((offsets[:, inner].abs() <= 0.05 + 1e-6).all()) and offsets.abs().max() > 0.01
    assert bool((e.qvel[:, dofs].abs() <= 1.0).all()) and e.qvel[:, dofs].abs().max() > 0.5


def test_push_by_setting_velocity_adds_to_the_root_velocity(fresh_humanoid):
    env = fresh_humanoid
    e = env.scene.engine
    e.qvel[:] = torch.as_tensor(np.random.default_rng(11).normal(size=e.qvel.shape))
    before = e.qvel.clone()
    push = {"x": (0.5, 0.5), "y": (-0.2, -0.2), "yaw": (0.3, 0.3)}
    mdp.push_by_setting_velocity(env, torch.tensor([1]), velocity_range=push)
    expected = before.clone()
    expected[1, 0:6] += torch.tensor([0.5, -0.2, 0.0, 0.0, 0.0, 0.3], dtype=torch.float64)
    torch.testing.assert_close(e.qvel, expected)


def test_randomize_friction_sets_one_draw_per_env_on_the_named_geoms(fresh_humanoid):
    env = fresh_humanoid
    field = env.scene.engine.model_field("geom_friction")
    nominal = torch.as_tensor(env.scene.engine.model.geom_friction)
    feet = [env.scene.engine.model.geom(f).id for f in FEET]
    mdp.randomize_friction(env, torch.tensor([0, 2]), friction_range=(0.7, 0.7), geoms=".*_foot")
    expected = nominal.repeat(3, 1, 1)
    expected[0, feet, 0] = expected[2, feet, 0] = 0.7
    torch.testing.assert_close(field, expected.to(field.dtype))
    torch.manual_seed(0)
    mdp.randomize_friction(env, env.all_env_ids, friction_range=(0.4, 1.2), geoms=".*_foot")
    drawn = field[:, feet, 0]
    assert bool((drawn[:, 0] == drawn[:, 1]).all())  # one value per env
    assert bool(((drawn >= 0.4) & (drawn < 1.2)).all()) and len(set(drawn[:, 0].tolist())) == 3
    torch.testing.assert_close(field[:, :, 1:], nominal[:, 1:].repeat(3, 1, 1).to(field.dtype))


def test_randomize_body_mass_draws_around_the_nominal_mass_and_the_physics_feels_it(
    geared_slider,
):
    env = geared_slider
    mass = env.scene.engine.model_field("body_mass")
    box = env.scene.engine.model.body("box").id
    env0 = torch.tensor([0])
    for _ in range(2):  # a second draw does not add to the first
        mdp.randomize_body_mass(env, env0, bodies="box", mass_range=(1.0, 1.0))
    assert mass[:, box].tolist() == [2.0, 1.0]
    # a free box with one geom is a body whose mass MuJoCo caches: 4 N now accelerate it
    # at 2 m/s^2 in env 0, 4 m/s^2 in env 1
    env.scene.engine.qfrc_applied[:, 0] = 4.0
    set_state(env, env.scene.engine.qpos.clone())
    assert env.scene.engine.qacc[:, 0].tolist() == pytest.approx([2.0, 4.0])
    mdp.randomize_body_mass(env, env0, bodies="box", mass_range=(0.25, 0.25), operation="scale")
    assert mass[0, box].item() == 0.25
    with pytest.raises(RobolearnError, match="mass stays > 0"):  # never zero or negative
        mdp.randomize_body_mass(env, env0, bodies="box", mass_range=(-5.0, -5.0))
    with pytest.raises(RobolearnError, match="add or scale"):
        mdp.randomize_body_mass(env, env0, bodies="box", mass_range=(1.0, 1.0), operation="mul")


def test_randomize_actuator_gains_scales_kp_and_kv_in_the_physics(fresh_humanoid):
    env = fresh_humanoid
    e, m = env.scene.engine, env.scene.engine.model
    mdp.randomize_actuator_gains(
        env,
        torch.tensor([0]),
        stiffness_scale=(2.0, 2.0),
        damping_scale=(3.0, 3.0),
        actuators=".*_knee",
    )
    knees = [m.actuator("left_knee").id, m.actuator("right_knee").id]
    kp, kv = m.actuator_gainprm[knees, 0], -m.actuator_biasprm[knees, 2]
    assert kp.tolist() == [150.0, 150.0] and kv.tolist() == [4.0, 4.0]
    # a knee 0.05 rad short of its target, moving at 0.5 rad/s, in the air
    ctrl = e.ctrl.clone()
    qpos = poses(env, "high", "high", "high")
    qvel = torch.zeros_like(e.qvel)
    cols = [joint(env, "left_knee"), joint(env, "right_knee")]
    qpos[:, cols] = ctrl[:, knees] - 0.05
    qvel[:, [dof(env, "left_knee"), dof(env, "right_knee")]] = 0.5
    set_state(env, qpos, qvel, ctrl)
    force = e.actuator_force[:, knees]
    scaled = 2 * kp * 0.05 - 3 * kv * 0.5
    nominal = kp * 0.05 - kv * 0.5
    torch.testing.assert_close(force[0], torch.as_tensor(scaled))
    torch.testing.assert_close(force[1], torch.as_tensor(nominal))
    torch.testing.assert_close(force[2], torch.as_tensor(nominal))
    # the other actuators keep their gains
    hips = [m.actuator("left_hip_pitch").id]
    gain = e.model_field("actuator_gainprm")
    assert gain[0, hips, 0].tolist() == m.actuator_gainprm[hips, 0].tolist()


def test_randomize_joint_parameters_draws_per_env_and_the_physics_feels_it(geared_slider):
    env = geared_slider
    e = env.scene.engine
    slide = int(e.model.joint("slide").dofadr[0])
    env0 = torch.tensor([0])
    mdp.randomize_joint_parameters(
        env, env0, joints="slide", damping_range=(4.0, 4.0), operation="add"
    )
    assert e.model_field("dof_damping")[:, slide].tolist() == [4.0, 0.0]  # env 0 alone
    # a second draw starts from the model's value again, it does not add to the first
    mdp.randomize_joint_parameters(
        env, env0, joints="slide", damping_range=(4.0, 4.0), armature_range=(0.5, 0.5),
        operation="add",
    )  # fmt: skip
    assert e.model_field("dof_damping")[:, slide].tolist() == [4.0, 0.0]
    assert e.model_field("dof_armature")[:, slide].tolist() == [0.5, 0.0]
    # the same push: the damped, heavier cart (1 kg + 0.5 armature) slows, the other coasts
    qvel = torch.zeros_like(e.qvel)
    qvel[:, slide] = 1.0
    set_state(env, e.qpos.clone(), qvel)
    env.scene.step(50)  # 0.1 s
    fast = e.qvel[:, slide].tolist()
    assert fast[1] == pytest.approx(1.0) and fast[0] == pytest.approx(
        math.exp(-4.0 / 1.5 * 0.1), rel=0.02
    )
    # scales draw around the model's value, one draw per env
    mdp.randomize_joint_parameters(env, torch.ones(2, dtype=torch.bool), friction_range=(0.0, 2.0))
    assert e.model_field("dof_frictionloss")[:, slide].tolist() == [0.0, 0.0]  # 0 x anything


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        (
            {"damping_range": (-1.0, 2.0)},
            "damping_range must be [low, high] with low <= high and scales >= 0",
        ),
        ({"armature_range": (-0.1, 0.0), "operation": "add"}, "armature_range must be [low, high]"),
        ({"damping_range": (2.0, 1.0)}, "damping_range must be [low, high]"),
        ({"damping_range": (1.0, 2.0), "operation": "mul"}, "operation must be add or scale"),
    ],
)
def test_randomize_joint_parameters_refuses_ranges_that_could_go_negative(
    geared_slider, params, fragment
):
    with pytest.raises(RobolearnError) as err:
        mdp.randomize_joint_parameters(geared_slider, torch.tensor([0]), joints="slide", **params)
    assert fragment in str(err.value)
