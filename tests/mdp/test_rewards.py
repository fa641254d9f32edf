"""Reward terms of robolearn.mdp on hand-built states, against MuJoCo's own view."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import torch

from robolearn import mdp
from robolearn.managers import RewardTermCfg

from .truth import (
    F32,
    FEET,
    body_velocity,
    check,
    contact_force,
    dof,
    joint,
    keyframe,
    per_env,
    poses,
    quat_about_z,
    random_quats,
    set_state,
    tilted,
)

# ---- rewards: task ----------------------------------------------------------------------


def test_velocity_tracking_is_in_the_heading_frame(humanoid):
    env, rng = humanoid, np.random.default_rng(4)
    qpos = poses(env, "high", "high", "high")
    qpos[:, 3:7] = random_quats(rng, 3)  # tilted as well: only the heading counts
    qvel = torch.zeros(3, env.scene.engine.model.nv, dtype=torch.float64)
    qvel[:, 0:6] = torch.as_tensor(rng.normal(size=(3, 6)))
    set_state(env, qpos, qvel)
    command = env.command_manager.get_command("base_velocity")
    command[:] = torch.tensor([[0.5, 0.2, 0.3], [-0.3, 0.1, -0.5], [1.0, 0.0, 0.0]])

    def heading_velocity(d):
        xmat = d.body("pelvis").xmat.reshape(3, 3)
        yaw = math.atan2(xmat[1, 0], xmat[0, 0])
        lin_w, _ = body_velocity(env, d, "pelvis", local=False)
        c, s = math.cos(yaw), math.sin(yaw)
        return np.array([c * lin_w[0] + s * lin_w[1], -s * lin_w[0] + c * lin_w[1]])

    vel = per_env(env, heading_velocity)
    yaw_rate = per_env(env, lambda d: body_velocity(env, d, "pelvis", local=False)[1][2:3])[:, 0]
    std = 0.5
    expected = torch.exp(-((command[:, :2] - vel) ** 2).sum(-1) / std**2)
    check(mdp.track_lin_vel_xy_exp(env, "base_velocity", std), expected, env)
    expected = torch.exp(-((command[:, 2] - yaw_rate) ** 2) / std**2)
    check(mdp.track_ang_vel_z_exp(env, "base_velocity", std), expected, env)
    # following the command exactly earns the whole reward
    command[:, :2], command[:, 2] = vel, yaw_rate
    check(mdp.track_lin_vel_xy_exp(env, "base_velocity", std), torch.ones(3), env)
    check(mdp.track_ang_vel_z_exp(env, "base_velocity", 0.1), torch.ones(3), env)


def test_is_alive_and_is_terminated_leave_time_outs_alive(humanoid):
    env = humanoid
    qpos = poses(env, "stand", "stand", "stand")
    qpos[1, 2] = 0.3  # below base_too_low's 0.45 m
    set_state(env, qpos)
    env.episode_length_buf[:] = torch.tensor([1, 1, env.max_episode_length])
    env.termination_manager.compute()
    check(mdp.is_terminated(env), torch.tensor([0.0, 1.0, 0.0]), env)
    check(mdp.is_alive(env), torch.tensor([1.0, 0.0, 1.0]), env)


# ---- rewards: base ----------------------------------------------------------------------


def test_base_penalties(humanoid):
    env, rng = humanoid, np.random.default_rng(5)
    qpos = poses(env, "high", "high", "high")
    qpos[:, 3:7] = random_quats(rng, 3)
    qvel = torch.zeros(3, env.scene.engine.model.nv, dtype=torch.float64)
    qvel[:, 0:6] = torch.as_tensor(rng.normal(size=(3, 6)))
    set_state(env, qpos, qvel)
    lin = per_env(env, lambda d: body_velocity(env, d, "pelvis", local=True)[0])
    ang = per_env(env, lambda d: body_velocity(env, d, "pelvis", local=True)[1])
    check(mdp.lin_vel_z_l2(env), lin[:, 2] ** 2, env)
    check(mdp.ang_vel_xy_l2(env), ang[:, 0] ** 2 + ang[:, 1] ** 2, env)
    check(mdp.base_height_l2(env, target_height=0.7), (qpos[:, 2] - 0.7) ** 2, env)

    # tilted by 0.4 rad, by 1.2 rad and upside down, at any heading
    qpos[:, 3:7] = torch.stack((tilted(0.4), tilted(1.2), tilted(math.pi)))
    yaw = quat_about_z([0.7, -2.0, 1.0])
    for i in range(3):
        q = np.zeros(4)
        mujoco.mju_mulQuat(q, yaw[i].numpy(), qpos[i, 3:7].numpy())
        qpos[i, 3:7] = torch.as_tensor(q)
    set_state(env, qpos)
    tilt = torch.tensor([0.4, 1.2, math.pi])
    check(mdp.flat_orientation_l2(env), torch.sin(tilt) ** 2, env)
    check(mdp.upright(env), torch.cos(tilt), env)


# ---- rewards: joints and actuators ------------------------------------------------------


def test_joint_torques_and_energy_match_mujocos_actuator_forces(humanoid):
    env, rng = humanoid, np.random.default_rng(6)
    m = env.scene.engine.model
    qpos = poses(env, "stand", "air", "left_up")
    ctrl = env.scene.engine.ctrl.clone() + torch.as_tensor(rng.uniform(-0.1, 0.1, size=(3, m.nu)))
    qvel = torch.as_tensor(rng.normal(size=(3, m.nv)))
    set_state(env, qpos, qvel, ctrl)
    force = per_env(env, lambda d: d.actuator_force.copy())
    assert force.abs().max() > 1.0  # the actuators do push
    check(mdp.joint_torques_l2(env), (force**2).sum(-1), env, rtol=1e-5, atol=1e-2)
    knees = [m.actuator("left_knee").id, m.actuator("right_knee").id]
    check(mdp.joint_torques_l2(env, actuators=".*_knee"), (force[:, knees] ** 2).sum(-1), env)
    power = per_env(env, lambda d: np.abs(d.actuator_force * d.actuator_velocity).sum())
    check(mdp.energy(env), power, env, rtol=1e-5, atol=1e-3)


def test_energy_is_power_at_the_joint_whatever_the_gear(geared_slider):
    env = geared_slider
    qpos = env.scene.engine.qpos.clone()
    qvel = torch.zeros_like(env.scene.engine.qvel)
    qvel[:, 6] = torch.tensor([0.5, -2.0])
    set_state(env, qpos, qvel, ctrl=torch.tensor([[2.0], [1.0]]))
    # force 2 on a gear of 3: 6 N on the cart, moving at 0.5 m/s: 3 W; then 1 x 3 x 2 = 6 W
    power = per_env(env, lambda d: np.abs(d.actuator_force * d.actuator_velocity).sum())
    torch.testing.assert_close(power, torch.tensor([3.0, 6.0]))
    check(mdp.energy(env), power, env)


def test_joint_velocity_and_position_penalties(humanoid):
    env, rng = humanoid, np.random.default_rng(7)
    m = env.scene.engine.model
    names = env.scene.joint_names
    qpos = poses(env, "stand", "stand", "stand")
    offset = torch.as_tensor(rng.uniform(-0.2, 0.2, size=(3, len(names))))
    qpos[:, [joint(env, n) for n in names]] += offset
    qvel = torch.as_tensor(rng.normal(size=(3, m.nv)))
    set_state(env, qpos, qvel)
    v = qvel[:, [dof(env, n) for n in names]]
    check(mdp.joint_vel_l2(env), (v**2).sum(-1), env)
    check(mdp.joint_vel_l1(env), v.abs().sum(-1), env)
    knees = [names.index("left_knee"), names.index("right_knee")]
    check(mdp.joint_vel_l1(env, joints=".*_knee"), v[:, knees].abs().sum(-1), env)
    q = qpos[:, [joint(env, n) for n in names]]
    check(
        mdp.joint_pos_target_l2(env, ".*_knee", target=0.3), ((q[:, knees] - 0.3) ** 2).sum(-1), env
    )
    check(mdp.joint_deviation_l1(env, ".*"), offset.abs().sum(-1), env)
    hips = [
        names.index(n) for n in ("left_hip_yaw", "left_hip_roll", "right_hip_yaw", "right_hip_roll")
    ]
    check(
        mdp.joint_deviation_l1(env, [".*_hip_yaw", ".*_hip_roll"]),
        offset[:, hips].abs().sum(-1),
        env,
    )


def test_joint_acc_l2_is_mujocos_qacc(humanoid):
    env, rng = humanoid, np.random.default_rng(8)
    m = env.scene.engine.model
    # in the air and away from the joint limits: no constraint, qacc is exact
    ctrl = env.scene.engine.ctrl.clone() + torch.as_tensor(rng.uniform(-0.2, 0.2, size=(3, m.nu)))
    qvel = torch.as_tensor(rng.normal(size=(3, m.nv)) * 0.5)
    set_state(env, poses(env, "high", "high", "high"), qvel, ctrl)
    dofs = [dof(env, n) for n in env.scene.joint_names]
    qacc = per_env(env, lambda d: d.qacc[dofs].copy())
    assert qacc.abs().max() > 10.0
    check(mdp.joint_acc_l2(env), (qacc**2).sum(-1), env, rtol=1e-5, atol=1e-2)
    knees = [dof(env, "left_knee"), dof(env, "right_knee")]
    knee_acc = per_env(env, lambda d: d.qacc[knees].copy())
    check(mdp.joint_acc_l2(env, joints=".*_knee"), (knee_acc**2).sum(-1), env, rtol=1e-5, atol=1e-2)


def test_action_penalties(humanoid):
    env, rng = humanoid, np.random.default_rng(9)
    first = torch.as_tensor(rng.normal(size=(3, env.num_actions)), dtype=F32)
    second = torch.as_tensor(rng.normal(size=(3, env.num_actions)), dtype=F32)
    env.action_manager.process_action(first)
    check(mdp.action_rate_l2(env), (first**2).sum(-1), env)  # from zero after a reset
    env.action_manager.process_action(second)
    check(mdp.action_rate_l2(env), ((second - first) ** 2).sum(-1), env)
    check(mdp.action_l2(env), (second**2).sum(-1), env)


def test_joint_pos_limits_counts_only_what_lies_past_the_soft_range(humanoid):
    env = humanoid
    names = env.scene.joint_names
    qpos = poses(env, "stand", "stand", "stand")
    # the soft range is the middle 90 % of the range: left ankle roll (-0.35, 0.35) has
    # (-0.315, 0.315), right knee (-0.05, 2.4) has (0.0725, 2.2775)
    # env 0: at the default pose; env 1: the ankle 0.02 past its upper soft limit; env 2:
    # the ankle 0.03 past its lower one and the knee 0.01 past its upper one
    ankle, knee = joint(env, "left_ankle_roll"), joint(env, "right_knee")
    qpos[:, ankle] = torch.tensor([0.0, 0.335, -0.345], dtype=torch.float64)
    qpos[2, knee] = 2.2875
    set_state(env, qpos)
    stand = keyframe(env)[[joint(env, n) for n in names]]
    lo, hi = (
        torch.as_tensor(r)
        for r in env.scene.engine.model.jnt_range[
            [env.scene.engine.model.joint(n).id for n in names]
        ].T
    )
    mid, half = (lo + hi) / 2, (hi - lo) / 2 * 0.9
    assert bool(((stand - mid).abs() < half).all())  # the default pose costs nothing
    check(mdp.joint_pos_limits(env), torch.tensor([0.0, 0.02, 0.04]), env, atol=1e-6, rtol=1e-5)
    check(
        mdp.joint_pos_limits(env, joints=".*_ankle_roll"),
        torch.tensor([0.0, 0.02, 0.03]),
        env,
        atol=1e-6,
        rtol=1e-5,
    )
    # a narrower soft range: the ankle's soft range is (-0.175, 0.175) at 0.5
    expected = torch.tensor([0.0, 0.16, 0.17])
    check(mdp.joint_pos_limits(env, "left_ankle_roll", 0.5), expected, env, atol=1e-6, rtol=1e-5)


def test_joint_pos_limits_ignores_unlimited_joints(geared_slider):
    env = geared_slider  # its slide joint has no range
    qpos = env.scene.engine.qpos.clone()
    qpos[:, 7] = torch.tensor([1e3, -1e3])
    set_state(env, qpos)
    check(mdp.joint_pos_limits(env), torch.zeros(2), env)


# ---- rewards: contacts ------------------------------------------------------------------


def test_undesired_contacts_and_illegal_contact_count_touching_bodies(humanoid):
    env = humanoid
    set_state(env, poses(env, "stand", "air", "left_up"))
    check(mdp.undesired_contacts(env, ".*_foot"), torch.tensor([2.0, 0.0, 1.0]), env)
    check(mdp.undesired_contacts(env, ["torso", "pelvis"]), torch.zeros(3), env)
    check(mdp.undesired_contacts(env, ".*_foot", threshold=1e5), torch.zeros(3), env)
    check(mdp.illegal_contact(env, ".*_foot"), torch.tensor([True, False, True]), env, torch.bool)
    check(
        mdp.illegal_contact(env, "left_foot"), torch.tensor([True, False, False]), env, torch.bool
    )
    check(
        mdp.illegal_contact(env, ["pelvis", "torso"]),
        torch.zeros(3, dtype=torch.bool),
        env,
        torch.bool,
    )
    # lying on its side on the floor: the pelvis and the torso touch it
    qpos = poses(env, "stand", "stand", "stand")
    qpos[1, 2] = 0.04
    qpos[1, 3:7] = tilted(math.pi / 2)
    set_state(env, qpos)
    trunk = ["pelvis", "torso"]
    trunk_force = per_env(env, lambda d: np.linalg.norm(contact_force(env, d, trunk), axis=-1))
    assert bool((trunk_force[1] > 1.0).all()) and trunk_force[0].max() == 0.0
    check(mdp.illegal_contact(env, "torso"), torch.tensor([False, True, False]), env, torch.bool)
    check(mdp.undesired_contacts(env, trunk), torch.tensor([0.0, 2.0, 0.0]), env)


def test_feet_slide_is_the_planar_speed_of_feet_on_the_ground(humanoid):
    env, rng = humanoid, np.random.default_rng(10)
    m = env.scene.engine.model
    qvel = torch.as_tensor(rng.normal(size=(3, m.nv)) * 0.3)
    set_state(env, poses(env, "stand", "air", "left_up"), qvel)

    def slide(d):
        down = np.linalg.norm(contact_force(env, d, FEET), axis=-1) > 1.0
        speed = [np.linalg.norm(body_velocity(env, d, f, local=False)[0][:2]) for f in FEET]
        return (np.array(speed) * down).sum()

    expected = per_env(env, slide)
    assert expected[0] > 0.1 and expected[1] == 0.0 and expected[2] > 0.1
    check(mdp.feet_slide(env), expected, env)
    # a pure slide of the whole robot at 0.6 m/s: each foot on the ground slides at 0.6
    qvel = torch.zeros(3, m.nv, dtype=torch.float64)
    qvel[:, 0:2] = torch.tensor([0.36, 0.48], dtype=torch.float64)
    set_state(env, poses(env, "stand", "air", "left_up"), qvel)
    check(mdp.feet_slide(env), torch.tensor([1.2, 0.0, 0.6]), env)


def test_feet_gait_contact_counts_feet_where_the_clock_wants_them(humanoid):
    env = humanoid
    set_state(env, poses(env, "stand", "air", "left_up"))
    gait = env.command_manager.terms["gait"]
    command = env.command_manager.get_command("base_velocity")
    params = {"gait_command": "gait", "velocity_command": "base_velocity"}
    command[:] = torch.tensor([[0.5, 0.0, 0.0]] * 3)
    # phase 0.25: left (foot 0) down, right swinging; 0.75: the opposite
    gait.phase[:] = torch.tensor([0.25, 0.25, 0.75])
    check(mdp.feet_gait_contact(env, **params), torch.tensor([1.0, 1.0, 2.0]), env)
    gait.phase[:] = torch.tensor([0.75, 0.75, 0.25])
    check(mdp.feet_gait_contact(env, **params), torch.tensor([1.0, 1.0, 0.0]), env)
    # near a switch of feet either foot may be anywhere
    gait.phase[:] = torch.tensor([0.48, 0.02, 0.99])
    check(mdp.feet_gait_contact(env, **params), torch.tensor([2.0, 2.0, 2.0]), env)
    # without the margin: env 0 stands on both feet (the right one should swing), env 1 has
    # both up (the left should be down), env 2 is right (left swinging at phase >= 0.5)
    narrow = mdp.feet_gait_contact(env, **params, swing_margin=0.01)
    check(narrow, torch.tensor([1.0, 1.0, 2.0]), env)
    # standing: both feet belong on the ground, whatever the clock
    command[:] = 0.0
    check(mdp.feet_gait_contact(env, **params), torch.tensor([2.0, 0.0, 1.0]), env)


def test_feet_swing_height_penalizes_low_swinging_feet(humanoid):
    env = humanoid
    qpos = poses(env, "stand", "air", "left_up")
    qpos[1, 2] -= 0.25  # feet a few cm above the floor
    set_state(env, qpos)
    z = per_env(env, lambda d: np.array([d.body(f).xpos[2] for f in FEET]))
    down = per_env(env, lambda d: np.linalg.norm(contact_force(env, d, FEET), axis=-1) > 1.0)
    assert down.tolist() == [[1.0, 1.0], [0.0, 0.0], [0.0, 1.0]]
    target = 0.2
    assert bool((z[1] < target).all()) and bool((z[1] > 0.05).all())
    expected = (((target - z).clamp(min=0) ** 2) * (1 - down)).sum(-1)
    assert expected[0] == 0.0 and expected[1] > 0 and expected[2] > 0
    check(mdp.feet_swing_height(env, target_height=target), expected, env, atol=1e-6, rtol=1e-5)
    # feet swinging above the target cost nothing
    check(mdp.feet_swing_height(env, target_height=0.01), torch.zeros(3), env)


def test_feet_distance_below(humanoid):
    env = humanoid
    qpos = poses(env, "stand", "stand", "stand")
    qpos[:, 3:7] = quat_about_z([0.0, 1.0, 2.5])  # the distance does not depend on heading
    qpos[2, joint(env, "left_hip_roll")] = -0.3  # left leg swung in, towards the right one
    set_state(env, qpos)
    xy = per_env(env, lambda d: np.array([d.body(f).xpos[:2] for f in FEET]))
    dist = (xy[:, 0] - xy[:, 1]).norm(dim=-1)
    torch.testing.assert_close(dist[0], dist[1])
    assert dist[2] < dist[0] - 0.05
    minimum = float(dist[0]) + 0.05
    check(mdp.feet_distance_below(env, minimum), minimum - dist, env, atol=1e-6, rtol=1e-5)
    check(mdp.feet_distance_below(env, float(dist[2]) - 0.01), torch.zeros(3), env)


def air_time_term(env, **params):
    cfg = RewardTermCfg(func=mdp.feet_air_time, params={"command_name": "base_velocity", **params})
    return mdp.feet_air_time(cfg, env), cfg.params


def test_feet_air_time_rewards_each_landing_foot_by_its_air_time(humanoid):
    env = humanoid
    dt = env.step_dt
    term, params = air_time_term(env, threshold=0.1)
    command = env.command_manager.get_command("base_velocity")
    command[:] = torch.tensor([[0.5, 0.0, 0.0], [0.0, 0.3, 0.0], [0.05, 0.05, 1.0]])
    set_state(env, poses(env, "air", "air", "air"))
    for _ in range(10):
        check(term(env, **params), torch.zeros(3), env)
    set_state(env, poses(env, "stand", "left_up", "stand"))
    # both feet land after 10 steps in the air (11 counting the landing step); in env 1
    # only the right foot; env 2 is commanded below 0.1 m/s
    landed = 11 * dt - 0.1
    check(term(env, **params), torch.tensor([2 * landed, landed, 0.0]), env, atol=1e-6, rtol=1e-5)
    check(term(env, **params), torch.zeros(3), env)  # still down: no new landing
    # env 1's left foot lands after 12 steps up (13 with its landing step)
    set_state(env, poses(env, "stand", "stand", "stand"))
    check(term(env, **params), torch.tensor([0.0, 13 * dt - 0.1, 0.0]), env, atol=1e-6, rtol=1e-5)
    # a reset forgets the air time: env 0 lands with none; in env 1 both feet land after
    # a short flight, which costs (air time below the threshold)
    set_state(env, poses(env, "air", "air", "air"))
    for _ in range(3):
        term(env, **params)
    term.reset(torch.tensor([0]))
    set_state(env, poses(env, "stand", "stand", "stand"))
    expected = torch.tensor([0.0, 2 * (4 * dt - 0.1), 0.0])
    check(term(env, **params), expected, env, atol=1e-6, rtol=1e-5)


def test_feet_air_time_single_stance_rewards_the_shorter_phase(humanoid):
    env = humanoid
    dt = env.step_dt
    term, params = air_time_term(env, threshold=0.07, single_stance=True)
    env.command_manager.get_command("base_velocity")[:] = torch.tensor([[0.5, 0.0, 0.0]] * 3)
    set_state(env, poses(env, "left_up", "stand", "air"))
    # one foot down in env 0 only: min(stance, swing) grows by dt a step, capped at 0.07
    for value in (dt, 2 * dt, 3 * dt, 0.07, 0.07):
        check(term(env, **params), torch.tensor([value, 0.0, 0.0]), env, atol=1e-6, rtol=1e-5)
    # a reset starts env 0's phases over (without it: min(6 dt, 6 dt), capped at 0.07)
    term.reset(torch.tensor([0]))
    check(term(env, **params), torch.tensor([dt, 0.0, 0.0]), env, atol=1e-6, rtol=1e-5)
    # the left foot comes down: two feet down, nothing
    set_state(env, poses(env, "stand", "stand", "air"))
    check(term(env, **params), torch.zeros(3), env)
