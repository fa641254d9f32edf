"""Observation terms of robolearn.mdp on hand-built states, against MuJoCo's own view."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from robolearn import mdp
from robolearn.errors import RobolearnError

from . import truth as mj

# ---- observations -----------------------------------------------------------------------


def test_base_velocity_gravity_and_height_match_mujoco(humanoid):
    env, rng = humanoid, np.random.default_rng(1)
    qpos = mj.poses(env, "high", "high", "high")
    qpos[:, 3:7] = mj.random_quats(rng, 3)
    qpos[:, 2] += torch.as_tensor(rng.uniform(-0.5, 0.5, size=3))
    qvel = torch.as_tensor(rng.normal(size=(3, env.scene.engine.model.nv)))
    mj.set_state(env, qpos, qvel)
    root = "pelvis"
    mj.check(
        mdp.base_lin_vel(env),
        mj.per_env(env, lambda d: mj.body_velocity(env, d, root, True)[0]),
        env,
    )
    mj.check(
        mdp.base_ang_vel(env),
        mj.per_env(env, lambda d: mj.body_velocity(env, d, root, True)[1]),
        env,
    )
    down = np.array([0.0, 0.0, -1.0])
    gravity = mj.per_env(env, lambda d: d.body(root).xmat.reshape(3, 3).T @ down)
    mj.check(mdp.projected_gravity(env), gravity, env)
    mj.check(mdp.base_height(env), mj.per_env(env, lambda d: d.body(root).xpos[2:3]), env)
    # upright and still: gravity straight down, no velocity
    mj.set_state(env, mj.poses(env, "high", "high", "high"))
    mj.check(mdp.projected_gravity(env), torch.tensor([[0.0, 0.0, -1.0]] * 3), env)
    mj.check(mdp.base_lin_vel(env), torch.zeros(3, 3), env)


def test_joint_observations_are_joint_state_relative_to_each_envs_default(humanoid):
    env, rng = humanoid, np.random.default_rng(2)
    m = env.scene.engine.model
    names = env.scene.joint_names
    lo, hi = m.jnt_range[[m.joint(n).id for n in names]].T
    qpos = mj.poses(env, "stand", "stand", "stand")
    q = torch.as_tensor(rng.uniform(lo, hi, size=(3, len(names))))
    qpos[:, [mj.joint(env, n) for n in names]] = q
    qvel = torch.as_tensor(rng.normal(size=(3, m.nv)))
    mj.set_state(env, qpos, qvel)
    key = mj.keyframe(env)[[mj.joint(env, n) for n in names]]
    mj.check(mdp.joint_pos(env), q, env)
    mj.check(mdp.joint_pos_rel(env), q - key, env)
    mj.check(mdp.joint_vel_rel(env), qvel[:, [mj.dof(env, n) for n in names]], env)
    # a regex picks joints in model order
    knees = [mj.joint(env, "left_knee"), mj.joint(env, "right_knee")]
    mj.check(mdp.joint_pos(env, joints=".*_knee"), qpos[:, knees], env)
    mj.check(
        mdp.joint_pos_rel(env, joints=".*_knee"), qpos[:, knees] - mj.keyframe(env)[knees], env
    )
    mj.check(mdp.joint_vel_rel(env, joints="waist_yaw"), qvel[:, [mj.dof(env, "waist_yaw")]], env)
    # an env whose default pose was changed (by an event) is relative to its own default
    saved = env.scene.default_joint_pos.clone()
    try:
        env.scene.default_joint_pos[1] += 0.1
        expected = q - key
        expected[1] -= 0.1
        mj.check(mdp.joint_pos_rel(env), expected, env)
    finally:
        env.scene.default_joint_pos[:] = saved


def test_last_action_and_commands(humanoid):
    env = humanoid
    action = torch.arange(3 * env.num_actions, dtype=mj.F32).reshape(3, -1) / 10
    env.action_manager.process_action(action)
    mj.check(mdp.last_action(env), action, env)
    command = env.command_manager.get_command("base_velocity")
    command[:] = torch.tensor([[0.5, -0.2, 0.3], [0.0, 0.0, 0.0], [1.0, 0.5, -1.0]])
    mj.check(mdp.generated_commands(env, "base_velocity"), command.clone(), env)
    # the gait clock: a quarter period on from phase 0.25 is phase 0.5, (sin, cos) = (0, -1)
    gait = env.command_manager.terms["gait"]
    gait.phase[:] = torch.tensor([0.25, 0.0, 0.75])
    gait.compute(0.25 * gait.cfg.period_s)
    expected = torch.tensor([[0.0, -1.0], [1.0, 0.0], [0.0, 1.0]])
    mj.check(mdp.generated_commands(env, "gait"), expected, env, atol=1e-6, rtol=0)
    with pytest.raises(RobolearnError, match="base_velocity"):
        mdp.generated_commands(env, "nope")


def test_sensor_is_mujocos_sensordata(humanoid):
    env, rng = humanoid, np.random.default_rng(3)
    qpos = mj.poses(env, "stand", "left_up", "air")
    qpos[:, 3:7] = mj.quat_about_z(rng.uniform(-3, 3, size=3))
    qvel = torch.as_tensor(rng.normal(size=(3, env.scene.engine.model.nv)) * 0.3)
    mj.set_state(env, qpos, qvel)
    for name, width in (("imu_gyro", 3), ("imu_quat", 4), ("imu_vel", 3), ("left_foot_touch", 1)):
        expected = mj.per_env(env, lambda d, name=name: d.sensor(name).data.copy())
        assert expected.shape == (3, width)
        mj.check(mdp.sensor(env, name), expected, env, atol=1e-3, rtol=1e-4)
    # the left foot's touch sensor feels the ground only where the left foot is down
    touch = mdp.sensor(env, "left_foot_touch")[:, 0]
    assert touch[0] > 10.0 and touch[1] == 0.0 and touch[2] == 0.0
    with pytest.raises(RobolearnError, match="imu_gyro"):
        mdp.sensor(env, "nope")


def test_foot_contact_force_and_feet_contact_match_mujocos_contacts(humanoid):
    env = humanoid
    mj.set_state(env, mj.poses(env, "stand", "air", "left_up"))
    expected = mj.per_env(env, lambda d: mj.contact_force(env, d, mj.FEET))
    force = mdp.foot_contact_force(env)
    mj.check(force, expected, env, atol=1e-3, rtol=1e-4)
    # standing on both feet, the floor carries the robot's weight (about 60 % here, the
    # pose is not balanced and the rest accelerates it)
    assert force[0, :, 2].min() > 100.0
    mj.check(mdp.feet_contact(env), torch.tensor([[1.0, 1.0], [0.0, 0.0], [0.0, 1.0]]), env)
    mj.check(mdp.feet_contact(env, threshold=1e5), torch.zeros(3, 2), env)
