"""The sim-to-real randomizations: motors' gains and effort limits, centers of mass, encoder
bias, IMU mounting, observation latency and action noise, each checked against what the
physics does or what a policy reads, on quadruped_walk (cpu engine, its own events
removed)."""

from __future__ import annotations

import copy
import math

import mujoco
import numpy as np
import pytest
import torch

from robolearn import mdp
from robolearn.env import ManagerBasedRLEnv
from robolearn.errors import RobolearnError
from robolearn.managers import EventTermCfg
from robolearn.registry import get_task
from robolearn.scene import IdealPDCfg, ImplicitPDCfg


def quadruped(num_envs: int = 2, actuators=None, engine: str = "cpu", **changes):
    """quadruped_walk without its random events; ``actuators`` for scene.actuators;
    ``changes``: a function of the config to apply before building."""
    cfg = get_task("quadruped_walk").env_cfg()
    cfg.scene.num_envs = num_envs
    cfg.sim.engine = engine
    cfg.events = {}
    if actuators is not None:
        cfg.scene.robot.actuators = actuators
    for change in changes.values():
        change(cfg)
    env = ManagerBasedRLEnv(cfg)
    env.reset(seed=0)
    return env


def env0(env) -> torch.Tensor:
    mask = torch.zeros(env.num_envs, dtype=torch.bool)
    mask[0] = True
    return mask


LEGS = {"legs": ImplicitPDCfg(stiffness=25.0, damping=0.6, effort_limit=20.0)}


# ---- motors: gains and effort limits, MuJoCo's loops and explicit ones -------------------


def test_effort_limits_per_env_cap_mujocos_position_loops():
    stiff = {"legs": ImplicitPDCfg(stiffness=500.0, damping=0.6, effort_limit=20.0)}
    env = quadruped(actuators=stiff)
    scene = env.scene
    mdp.randomize_effort_limits(env, env0(env), effort_range=(0.5, 0.5))
    # every joint asked for the far end of its range: the limit decides the torque
    ranges, _ = scene.command_range(list(range(12)))
    low, high = (torch.as_tensor(ranges[:, i]) for i in (0, 1))
    q = scene.engine.qpos[:, 7:19]
    scene.write_ctrl(slice(0, 12), torch.where(q > (low + high) / 2, low, high))
    scene.step(1)
    force = scene.engine.actuator_force[:, :12].abs()
    assert torch.allclose(force[0], torch.full((12,), 10.0, dtype=force.dtype))
    assert torch.allclose(force[1], torch.full((12,), 20.0, dtype=force.dtype))
    # absolute limits, drawn around nothing: each env its own, within the range
    mdp.randomize_effort_limits(env, torch.ones(2, dtype=torch.bool), (5.0, 15.0), "abs")
    limits = scene.engine.model_field("actuator_forcerange")[:, :12, 1]
    assert bool(((limits >= 5.0) & (limits <= 15.0)).all()) and limits[0, 0] != limits[1, 0]


def test_gains_and_effort_limits_per_env_reach_explicit_motors():
    motors = {"legs": IdealPDCfg(stiffness=25.0, damping=0.6, effort_limit=20.0)}
    env = quadruped(actuators=motors)
    scene, drive = env.scene, env.scene.drive
    mdp.randomize_actuator_gains(env, env0(env), stiffness_range=(2.0, 2.0),
                                 damping_range=(0.0, 0.0))  # fmt: skip
    mdp.randomize_effort_limits(env, env0(env), effort_range=(7.0, 7.0), operation="abs")
    assert drive.stiffness[:, 0].tolist() == [50.0, 25.0]
    assert drive.damping[:, 0].tolist() == [0.0, 0.6]
    assert drive.effort_limit[:, 0].tolist() == [7.0, 20.0]
    target = scene.engine.qpos[:, 7:19] + 0.1
    scene.write_ctrl(slice(0, 12), target)
    q, qd = scene.engine.qpos[:, 7:19].clone(), scene.engine.qvel[:, 6:18].clone()
    scene.step(1)
    law = drive.stiffness * (target - q) - drive.damping * qd
    law = torch.maximum(torch.minimum(law, drive.effort_limit), -drive.effort_limit)
    torch.testing.assert_close(scene.engine.actuator_force[:, :12], law)
    assert float(scene.engine.actuator_force[0, 0]) == pytest.approx(min(50.0 * 0.1, 7.0))


def test_gain_randomization_refuses_motors_without_a_position_loop(geared_slider):
    with pytest.raises(RobolearnError, match="randomize_actuator_gains changes PD loops"):
        mdp.randomize_actuator_gains(geared_slider, env0(geared_slider), (0.9, 1.1), (0.9, 1.1))


# ---- the body: centers of mass ------------------------------------------------------------


def test_a_shifted_center_of_mass_moves_the_robots_in_mujocos_physics():
    env = quadruped()
    scene = env.scene
    mdp.randomize_body_com(env, env0(env), bodies="trunk", com_range={"x": (0.03, 0.03)})
    ipos = scene.engine.model_field("body_ipos")
    trunk = scene.model.body("trunk").id
    shift = (ipos[:, trunk] - torch.as_tensor(scene.model.body_ipos[trunk])).tolist()
    assert shift[0] == pytest.approx([0.03, 0, 0]) and shift[1] == pytest.approx([0, 0, 0])
    # MuJoCo with the same model change: the same subtree center of mass
    scene.forward(torch.ones(2, dtype=torch.bool))
    changed = copy.copy(scene.engine.model)
    changed.body_ipos[trunk, 0] += 0.03
    mujoco.mj_setConst(changed, mujoco.MjData(changed))
    d = mujoco.MjData(changed)
    d.qpos[:] = scene.engine.qpos[0].numpy()
    mujoco.mj_forward(changed, d)
    com = scene.engine.subtree_com
    np.testing.assert_allclose(com[0].numpy(), d.subtree_com, atol=1e-9)
    assert float(com[0, trunk, 0] - com[1, trunk, 0]) > 1e-3  # env 1 keeps the model's


# ---- sensors: encoder bias and IMU mounting -----------------------------------------------


def test_encoder_bias_is_read_by_the_policy_and_offsets_the_joints_targets():
    env = quadruped()
    scene = env.scene
    mdp.randomize_encoder_bias(env, env0(env), bias_range=(0.05, 0.05), joints=".*")
    measured = mdp.joint_pos_rel(env)
    exact = scene.joint_pos - scene.default_joint_pos
    torch.testing.assert_close(measured[0], exact[0] + 0.05)
    torch.testing.assert_close(measured[1], exact[1])
    # action 0 asks for the default pose in encoder readings: the joint is held 0.05 short
    env.action_manager.process_action(torch.zeros(2, 12))
    env.action_manager.apply_action()
    default = scene.default_joint_pos[:, :12].to(scene.command.dtype)
    torch.testing.assert_close(scene.command[0, :12], default[0] - 0.05)
    torch.testing.assert_close(scene.command[1, :12], default[1])
    # the rewards read the truth
    deviation = mdp.joint_deviation_l1(env, joints=".*")[0]
    assert float(deviation) == pytest.approx(float(exact[0].abs().sum()), abs=1e-5)


def test_a_tilted_imu_measures_gravity_and_rates_in_its_own_frame():
    env = quadruped()
    scene = env.scene
    scene.engine.qvel[:, 3:6] = torch.tensor([0.3, -0.2, 0.5], dtype=scene.engine.dtype)
    mdp.randomize_imu_mounting(env, env0(env), tilt_range={"roll": (0.1, 0.1)})
    c, s = math.cos(0.1), math.sin(0.1)
    rot = torch.tensor([[1, 0, 0], [0, c, -s], [0, s, c]])  # the IMU's frame in the base
    for term, truth in ((mdp.projected_gravity, scene.projected_gravity_b),
                        (mdp.base_ang_vel, scene.root_ang_vel_b)):  # fmt: skip
        read = term(env)
        torch.testing.assert_close(read[0], rot.T @ truth[0], atol=1e-6, rtol=1e-6)
        torch.testing.assert_close(read[1], truth[1])


def test_sensor_ranges_are_checked():
    env = quadruped()
    with pytest.raises(RobolearnError, match="bias_range must be"):
        mdp.randomize_encoder_bias(env, env0(env), bias_range=(0.1, -0.1))
    with pytest.raises(RobolearnError, match="unknown axes"):
        mdp.randomize_imu_mounting(env, env0(env), tilt_range={"x": (0.0, 0.1)})
    with pytest.raises(RobolearnError, match="mass stays > 0"):
        mdp.randomize_body_mass(env, env0(env), bodies="trunk", mass_range=(-100.0, 1.0))
    with pytest.raises(RobolearnError, match="mass stays > 0"):
        mdp.randomize_body_mass(env, env0(env), "trunk", (0.0, 1.0), operation="scale")
    with pytest.raises(RobolearnError, match="limits >= 0"):
        mdp.randomize_effort_limits(env, env0(env), effort_range=(-1.0, 1.0))


def test_effort_limits_refuse_a_loop_mujoco_does_not_limit():
    env = quadruped(actuators={"legs": ImplicitPDCfg(stiffness=25.0, damping=0.6)})
    with pytest.raises(RobolearnError, match="with a force limit"):
        mdp.randomize_effort_limits(env, env0(env), effort_range=(0.8, 1.2))


# ---- the policy's timing: observation latency and action noise ---------------------------


def _with_latency(latency):
    def change(cfg):
        cfg.observations["policy"].terms["joint_pos"].latency = latency
        cfg.observations["policy"].enable_corruption = False

    return change


def test_each_env_reads_its_joints_its_own_lag_late_and_a_reset_draws_again():
    env = quadruped(16, latency=_with_latency((0, 2)))
    group = env.observation_manager._terms["policy"]
    cols = env.observation_manager.term_slices("policy")["joint_pos"]
    lag = group.latencies["joint_pos"].lag.clone()
    assert set(lag.tolist()) == {0, 1, 2}
    truth = [mdp.joint_pos_rel(env).clone()]  # what the reset observed
    for t in range(1, 7):
        obs, *_ = env.step(0.3 * torch.randn(16, 12))
        truth.append(mdp.joint_pos_rel(env).clone())
        read = obs["policy"][:, cols]
        for i in range(16):
            # until the lag has passed, the episode's first value is held
            expected = truth[max(t - int(lag[i]), 0)][i]
            torch.testing.assert_close(read[i], expected)
    env.reset()
    assert not torch.equal(group.latencies["joint_pos"].lag, lag)


def test_action_noise_has_each_envs_own_spread_drawn_at_reset():
    def noisy(cfg):
        cfg.actions["joint_pos"].noise_std = (0.0, 0.2)

    env = quadruped(4, noise=noisy)
    term = env.action_manager.terms["joint_pos"]
    std = term.noise_std[:, 0].clone()
    assert bool(((std >= 0) & (std <= 0.2)).all()) and len(set(std.tolist())) == 4
    spread = []
    for _ in range(400):
        env.action_manager.process_action(torch.zeros(4, 12))
        spread.append(term.processed_actions - term._offset())
    measured = torch.stack(spread).std(dim=(0, 2))
    torch.testing.assert_close(measured, std, rtol=0.1, atol=2e-3)


@pytest.mark.parametrize("bad", [(2, 1), (-1, 0), (0.5, 1), (0, 10**9)])
def test_a_bad_latency_is_one_line(bad):
    with pytest.raises(RobolearnError, match=r"observations\.policy\.joint_pos\.latency"):
        quadruped(latency=_with_latency(bad))


def test_a_bad_action_noise_is_one_line():
    def bad(cfg):
        cfg.actions["joint_pos"].noise_std = (0.2, 0.1)

    with pytest.raises(RobolearnError, match=r"actions\.joint_pos\.noise_std"):
        quadruped(noise=bad)


# ---- all of them in the step: no wait for the device ----------------------------------


SIM_TO_REAL = {
    "gains": EventTermCfg(func=mdp.randomize_actuator_gains,
                          params={"stiffness_range": (0.8, 1.2), "damping_range": (0.8, 1.2)}),
    "effort": EventTermCfg(func=mdp.randomize_effort_limits, params={"effort_range": (0.8, 1.0)}),
    "joints": EventTermCfg(func=mdp.randomize_joint_parameters,
                           params={"armature_range": (0.8, 1.2), "friction_range": (0.0, 2.0)}),
    "com": EventTermCfg(func=mdp.randomize_body_com,
                        params={"bodies": "trunk", "com_range": {"x": (-0.02, 0.02)}}),
    "encoders": EventTermCfg(func=mdp.randomize_encoder_bias, params={"bias_range": (-0.02, 0.02)}),
    "imu": EventTermCfg(func=mdp.randomize_imu_mounting,
                        params={"tilt_range": {"roll": (-0.03, 0.03), "pitch": (-0.03, 0.03)}}),
}  # fmt: skip


def with_sim_to_real(cfg) -> None:
    """Every randomization at reset, observation latency and action noise."""
    cfg.events |= SIM_TO_REAL
    cfg.observations["policy"].terms["joint_pos"].latency = (0, 1)
    cfg.observations["policy"].terms["base_ang_vel"].latency = (0, 1)
    cfg.actions["joint_pos"].noise_std = (0.0, 0.02)


@pytest.mark.parametrize("engine", ["cpu", pytest.param("warp-cpu", marks=pytest.mark.warp)])
def test_every_randomization_at_once_keeps_the_step_free_of_host_waits(engine):
    from robolearn.sim.host_sync import forbid_host_syncs

    motors = {"legs": IdealPDCfg(stiffness=25.0, damping=0.6, effort_limit=23.7, delay=(0, 2))}
    env = quadruped(4, actuators=motors, engine=engine, all=with_sim_to_real)
    n = env.num_envs
    for _ in range(2):  # first uses fill caches
        env.step(torch.zeros(n, 12))
    waits: list[str] = []
    with forbid_host_syncs(waits):
        for i in range(8):
            env.episode_length_buf[i % n] = env.max_episode_length - 1  # resets draw again
            env.step(torch.zeros(n, 12))
    assert waits == []
    assert bool(torch.isfinite(env.scene.engine.qpos).all())
