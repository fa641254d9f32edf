"""Every term of robolearn.mdp on a hand-built state: its value, shape, dtype and device.

The envs are real tasks on the cpu engine with their random events removed, so the compiled
MjModel is the physics every env runs. A test writes qpos, qvel and ctrl by hand, runs the
forward pass, and compares each term with the value computed apart from robolearn: by hand,
or from MuJoCo itself on an MjData holding the same state (mj_objectVelocity for body
velocities, mj_contactForce for contact forces, sensordata, actuator_force, qacc).
"""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest
import torch
from conftest import slider_task_cfg

from robolearn import mdp
from robolearn.env import ManagerBasedRLEnv
from robolearn.errors import RobolearnError
from robolearn.managers import CurriculumTermCfg, RewardTermCfg
from robolearn.registry import get_task

F32 = torch.float32
# terms compute in float32 from float64 MuJoCo state
TOL = {"atol": 1e-4, "rtol": 1e-5}
FEET = ("left_foot", "right_foot")


def make(task: str, num_envs: int) -> ManagerBasedRLEnv:
    """A task on the cpu engine without its random events (friction, mass, gains, initial
    state, pushes): every env runs the compiled model, as an MjData of it does."""
    cfg = get_task(task).env_cfg()
    cfg.scene.num_envs = num_envs
    cfg.sim.engine = "cpu"
    cfg.events = {}
    return ManagerBasedRLEnv(cfg)


@pytest.fixture(scope="module")
def humanoid_env() -> ManagerBasedRLEnv:
    return make("humanoid_walk", 3)


@pytest.fixture
def humanoid(humanoid_env) -> ManagerBasedRLEnv:
    """The module's humanoid, reset: each test starts from the standing keyframe."""
    humanoid_env.reset(seed=0)
    return humanoid_env


# ---- state by hand, and MuJoCo's view of it ---------------------------------------------


def set_state(env, qpos, qvel=None, ctrl=None) -> None:
    """Write the state of every env, run the forward pass, drop the scene's cache."""
    e = env.scene.engine
    e.qpos[:] = torch.as_tensor(qpos, dtype=e.dtype)
    e.qvel[:] = 0.0 if qvel is None else torch.as_tensor(qvel, dtype=e.dtype)
    if ctrl is not None:
        e.ctrl[:] = torch.as_tensor(ctrl, dtype=e.dtype)
    env.scene.forward(torch.ones(env.num_envs, dtype=torch.bool, device=env.device))


def mj_data(env, i: int) -> mujoco.MjData:
    """A fresh MjData of the env's model holding env ``i``'s state, forward computed."""
    m = env.scene.engine.model
    d = mujoco.MjData(m)
    d.qpos[:] = env.scene.engine.qpos[i].numpy()
    d.qvel[:] = env.scene.engine.qvel[i].numpy()
    d.ctrl[:] = env.scene.engine.ctrl[i].numpy()
    mujoco.mj_forward(m, d)
    return d


def body_velocity(env, d, body: str, local: bool) -> tuple[np.ndarray, np.ndarray]:
    """(linear, angular) velocity of a body's frame origin, MuJoCo's mj_objectVelocity:
    in the body's frame (``local``) or the world's."""
    res = np.zeros(6)
    bid = env.scene.engine.model.body(body).id
    mujoco.mj_objectVelocity(
        env.scene.engine.model, d, mujoco.mjtObj.mjOBJ_XBODY, bid, res, int(local)
    )
    return res[3:6], res[0:3]


def contact_force(env, d, bodies) -> np.ndarray:
    """(len(bodies), 3) world force the contacts put on each body, summed from MuJoCo's
    contact list (mj_contactForce, in each contact's frame; geom2 is pushed along +normal)."""
    m = env.scene.engine.model
    ids = [m.body(b).id for b in bodies]
    total = np.zeros((len(bodies), 3))
    f6 = np.zeros(6)
    for c in range(d.ncon):
        con = d.contact[c]
        mujoco.mj_contactForce(m, d, c, f6)
        world = con.frame.reshape(3, 3).T @ f6[:3]
        for k, b in enumerate(ids):
            if m.geom_bodyid[con.geom2] == b:
                total[k] += world
            if m.geom_bodyid[con.geom1] == b:
                total[k] -= world
    return total


def per_env(env, fn) -> torch.Tensor:
    """Stack ``fn(d)`` over the envs, d an MjData of each env's state."""
    return torch.as_tensor(np.stack([fn(mj_data(env, i)) for i in range(env.num_envs)]), dtype=F32)


def check(value: torch.Tensor, expected, env, dtype=F32, **tol) -> None:
    """A term's value: its shape and dtype, on the env's device, equal to ``expected``."""
    expected = torch.as_tensor(expected)
    assert value.shape == expected.shape, (value.shape, expected.shape)
    assert value.dtype == dtype, value.dtype
    assert value.device == env.device
    torch.testing.assert_close(value, expected.to(dtype), **(tol or TOL))


def joint(env, name: str) -> int:
    """qpos column of a hinge joint."""
    return int(env.scene.engine.model.joint(name).qposadr[0])


def dof(env, name: str) -> int:
    """qvel column of a hinge joint."""
    return int(env.scene.engine.model.joint(name).dofadr[0])


def keyframe(env) -> torch.Tensor:
    return torch.as_tensor(env.scene.engine.model.key("stand").qpos, dtype=torch.float64)


def poses(env, *kinds: str) -> torch.Tensor:
    """One humanoid qpos row per env from its standing keyframe.

    ``stand``: both feet pressed 5 mm into the floor; ``air``: 0.3 m above it; ``left_up``:
    pressed down, left leg bent so that only the right foot touches; ``high``: 2 m up.
    """
    rows = keyframe(env).repeat(len(kinds), 1)
    for row, kind in zip(rows, kinds, strict=True):
        row[2] += {"stand": -0.005, "air": 0.3, "left_up": -0.005, "high": 1.3}[kind]
        if kind == "left_up":
            row[joint(env, "left_hip_pitch")] -= 0.4
            row[joint(env, "left_knee")] += 0.8
    return rows


def random_quats(rng, n: int) -> torch.Tensor:
    q = torch.as_tensor(rng.normal(size=(n, 4)))
    return q / q.norm(dim=-1, keepdim=True)


def tilted(roll: float) -> torch.Tensor:
    return torch.tensor([math.cos(roll / 2), math.sin(roll / 2), 0.0, 0.0], dtype=torch.float64)


# ---- observations -----------------------------------------------------------------------


def test_base_velocity_gravity_and_height_match_mujoco(humanoid):
    env, rng = humanoid, np.random.default_rng(1)
    qpos = poses(env, "high", "high", "high")
    qpos[:, 3:7] = random_quats(rng, 3)
    qpos[:, 2] += torch.as_tensor(rng.uniform(-0.5, 0.5, size=3))
    qvel = torch.as_tensor(rng.normal(size=(3, env.scene.engine.model.nv)))
    set_state(env, qpos, qvel)
    root = "pelvis"
    check(mdp.base_lin_vel(env), per_env(env, lambda d: body_velocity(env, d, root, True)[0]), env)
    check(mdp.base_ang_vel(env), per_env(env, lambda d: body_velocity(env, d, root, True)[1]), env)
    down = np.array([0.0, 0.0, -1.0])
    gravity = per_env(env, lambda d: d.body(root).xmat.reshape(3, 3).T @ down)
    check(mdp.projected_gravity(env), gravity, env)
    check(mdp.base_height(env), per_env(env, lambda d: d.body(root).xpos[2:3]), env)
    # upright and still: gravity straight down, no velocity
    set_state(env, poses(env, "high", "high", "high"))
    check(mdp.projected_gravity(env), torch.tensor([[0.0, 0.0, -1.0]] * 3), env)
    check(mdp.base_lin_vel(env), torch.zeros(3, 3), env)


def test_joint_observations_are_joint_state_relative_to_each_envs_default(humanoid):
    env, rng = humanoid, np.random.default_rng(2)
    m = env.scene.engine.model
    names = env.scene.joint_names
    lo, hi = m.jnt_range[[m.joint(n).id for n in names]].T
    qpos = poses(env, "stand", "stand", "stand")
    q = torch.as_tensor(rng.uniform(lo, hi, size=(3, len(names))))
    qpos[:, [joint(env, n) for n in names]] = q
    qvel = torch.as_tensor(rng.normal(size=(3, m.nv)))
    set_state(env, qpos, qvel)
    key = keyframe(env)[[joint(env, n) for n in names]]
    check(mdp.joint_pos(env), q, env)
    check(mdp.joint_pos_rel(env), q - key, env)
    check(mdp.joint_vel_rel(env), qvel[:, [dof(env, n) for n in names]], env)
    # a regex picks joints in model order
    knees = [joint(env, "left_knee"), joint(env, "right_knee")]
    check(mdp.joint_pos(env, joints=".*_knee"), qpos[:, knees], env)
    check(mdp.joint_pos_rel(env, joints=".*_knee"), qpos[:, knees] - keyframe(env)[knees], env)
    check(mdp.joint_vel_rel(env, joints="waist_yaw"), qvel[:, [dof(env, "waist_yaw")]], env)
    # an env whose default pose was changed (by an event) is relative to its own default
    saved = env.scene.default_joint_pos.clone()
    try:
        env.scene.default_joint_pos[1] += 0.1
        expected = q - key
        expected[1] -= 0.1
        check(mdp.joint_pos_rel(env), expected, env)
    finally:
        env.scene.default_joint_pos[:] = saved


def test_last_action_and_commands(humanoid):
    env = humanoid
    action = torch.arange(3 * env.num_actions, dtype=F32).reshape(3, -1) / 10
    env.action_manager.process_action(action)
    check(mdp.last_action(env), action, env)
    command = env.command_manager.get_command("base_velocity")
    command[:] = torch.tensor([[0.5, -0.2, 0.3], [0.0, 0.0, 0.0], [1.0, 0.5, -1.0]])
    check(mdp.generated_commands(env, "base_velocity"), command.clone(), env)
    # the gait clock: a quarter period on from phase 0.25 is phase 0.5, (sin, cos) = (0, -1)
    gait = env.command_manager.terms["gait"]
    gait.phase[:] = torch.tensor([0.25, 0.0, 0.75])
    gait.compute(0.25 * gait.cfg.period_s)
    expected = torch.tensor([[0.0, -1.0], [1.0, 0.0], [0.0, 1.0]])
    check(mdp.generated_commands(env, "gait"), expected, env, atol=1e-6, rtol=0)
    with pytest.raises(RobolearnError, match="base_velocity"):
        mdp.generated_commands(env, "nope")


def test_sensor_is_mujocos_sensordata(humanoid):
    env, rng = humanoid, np.random.default_rng(3)
    qpos = poses(env, "stand", "left_up", "air")
    qpos[:, 3:7] = quat_about_z(rng.uniform(-3, 3, size=3))
    qvel = torch.as_tensor(rng.normal(size=(3, env.scene.engine.model.nv)) * 0.3)
    set_state(env, qpos, qvel)
    for name, width in (("imu_gyro", 3), ("imu_quat", 4), ("imu_vel", 3), ("left_foot_touch", 1)):
        expected = per_env(env, lambda d, name=name: d.sensor(name).data.copy())
        assert expected.shape == (3, width)
        check(mdp.sensor(env, name), expected, env, atol=1e-3, rtol=1e-4)
    # the left foot's touch sensor feels the ground only where the left foot is down
    touch = mdp.sensor(env, "left_foot_touch")[:, 0]
    assert touch[0] > 10.0 and touch[1] == 0.0 and touch[2] == 0.0
    with pytest.raises(RobolearnError, match="imu_gyro"):
        mdp.sensor(env, "nope")


def quat_about_z(angles) -> torch.Tensor:
    a = torch.as_tensor(angles, dtype=torch.float64)
    zero = torch.zeros_like(a)
    return torch.stack((torch.cos(a / 2), zero, zero, torch.sin(a / 2)), dim=-1)


def test_foot_contact_force_and_feet_contact_match_mujocos_contacts(humanoid):
    env = humanoid
    set_state(env, poses(env, "stand", "air", "left_up"))
    expected = per_env(env, lambda d: contact_force(env, d, FEET))
    force = mdp.foot_contact_force(env)
    check(force, expected, env, atol=1e-3, rtol=1e-4)
    # standing on both feet, the floor carries the robot's weight (about 60 % here, the
    # pose is not balanced and the rest accelerates it)
    assert force[0, :, 2].min() > 100.0
    check(mdp.feet_contact(env), torch.tensor([[1.0, 1.0], [0.0, 0.0], [0.0, 1.0]]), env)
    check(mdp.feet_contact(env, threshold=1e5), torch.zeros(3, 2), env)


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


GEARED_SLIDER = """
<mujoco>
  <option gravity="0 0 0"/>
  <worldbody>
    <body name="box" pos="0 0 1">
      <freejoint/>
      <geom type="box" size="0.05 0.05 0.05" mass="1" contype="0" conaffinity="0"/>
    </body>
    <body name="cart">
      <joint name="slide" type="slide" axis="1 0 0"/>
      <geom type="box" size="0.1 0.1 0.1" mass="1" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
  <actuator>
    <motor name="slide" joint="slide" gear="3"/>
  </actuator>
</mujoco>
"""


@pytest.fixture
def geared_slider(tmp_path) -> ManagerBasedRLEnv:
    """A free box, and a cart on a slide driven by a motor of gear 3; no gravity."""
    path = tmp_path / "geared_slider.xml"
    path.write_text(GEARED_SLIDER)
    return ManagerBasedRLEnv(slider_task_cfg(str(path), num_envs=2))


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


# ---- terminations -----------------------------------------------------------------------


def test_time_out_fires_at_the_episode_length(humanoid):
    env = humanoid
    n = env.max_episode_length
    assert n == math.ceil(env.cfg.episode_length_s / env.step_dt) == 1000
    env.episode_length_buf[:] = torch.tensor([n - 1, n, n + 1])
    check(mdp.time_out(env), torch.tensor([False, True, True]), env, torch.bool)


def test_base_height_below_and_bad_orientation(humanoid):
    env = humanoid
    qpos = poses(env, "stand", "stand", "stand")
    qpos[:, 2] = torch.tensor([0.46, 0.44, 0.8], dtype=torch.float64)
    set_state(env, qpos)
    check(mdp.base_height_below(env, 0.45), torch.tensor([False, True, False]), env, torch.bool)
    qpos[:, 3:7] = torch.stack((tilted(0.98), tilted(-1.02), tilted(math.pi)))
    set_state(env, qpos)
    check(mdp.bad_orientation(env, 1.0), torch.tensor([False, True, True]), env, torch.bool)
    check(mdp.bad_orientation(env, 1.2), torch.tensor([False, False, True]), env, torch.bool)


def test_joint_pos_out_of_bounds(humanoid):
    env = humanoid
    qpos = poses(env, "stand", "stand", "stand")
    qpos[:, joint(env, "left_knee")] = torch.tensor([0.5, 1.21, 0.5], dtype=torch.float64)
    qpos[2, joint(env, "right_knee")] = -0.01
    set_state(env, qpos)
    got = mdp.joint_pos_out_of_bounds(env, ".*_knee", (0.0, 1.2))
    check(got, torch.tensor([False, True, True]), env, torch.bool)
    got = mdp.joint_pos_out_of_bounds(env, "left_knee", (0.0, 1.2))
    check(got, torch.tensor([False, True, False]), env, torch.bool)


# ---- events -----------------------------------------------------------------------------


@pytest.fixture
def fresh_humanoid() -> ManagerBasedRLEnv:
    """A humanoid of its own: event tests change its model fields."""
    return make("humanoid_walk", 3)


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
    mdp.randomize_body_mass(env, env0, bodies="box", mass_range=(-5.0, -5.0))
    assert mass[0, box].item() == pytest.approx(1e-3)  # never zero or negative
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


# ---- curriculum -------------------------------------------------------------------------


def test_command_velocity_levels_widens_the_ranges_once_per_episode_on_success():
    env = make("quadruped_walk", 2)
    params = {
        "command_name": "base_velocity",
        "reward_term": "track_lin_vel_xy",
        "limit_lin_vel_x": (-1.0, 1.0),
        "limit_ang_vel_z": (-1.0, 1.0),
    }
    term = mdp.command_velocity_levels(CurriculumTermCfg(func=mdp.command_velocity_levels), env)
    command = env.command_manager.terms["base_velocity"]
    assert command.cfg.ranges.lin_vel_x == (-0.6, 0.6) and command.cfg.ranges.ang_vel_z == (
        -1.0,
        1.0,
    )
    sums = env.reward_manager.episode_sums["track_lin_vel_xy"]
    weight = env.cfg.rewards["track_lin_vel_xy"].weight
    full = weight * env.max_episode_length_s  # tracking perfectly for a whole episode
    ids = env.all_env_ids  # env indices, as a hand-made call passes them; the env passes masks

    def level() -> float:
        value = term(env, ids, **params)
        assert isinstance(value, torch.Tensor) and value.dim() == 0  # no host read
        return float(value)

    sums[:] = 0.9 * full
    assert level() == pytest.approx(0.6)  # not an episode since the start yet
    env.common_step_counter = env.max_episode_length
    assert level() == pytest.approx(0.85)
    assert command.live_ranges().lin_vel_x == pytest.approx((-0.85, 0.85))
    assert command.live_ranges().ang_vel_z == (-1.0, 1.0)  # at its limit already
    assert level() == pytest.approx(0.85)  # checked once per episode
    env.common_step_counter += env.max_episode_length
    sums[:] = 0.7 * full  # below the 0.8 threshold
    assert level() == pytest.approx(0.85)
    env.common_step_counter += env.max_episode_length
    sums[:] = torch.tensor([0.7, 1.0]) * full  # the mean is 0.85 of it
    assert level() == pytest.approx(1.0)  # 1.1, capped at the limit
    assert command.live_ranges().lin_vel_x == pytest.approx((-1.0, 1.0))
    # the config keeps what the task set; an edit of it takes over from the curriculum
    assert command.cfg.ranges.lin_vel_x == (-0.6, 0.6)
    command.cfg.ranges.lin_vel_x = (-0.2, 0.2)
    assert command.live_ranges().lin_vel_x == pytest.approx((-0.2, 0.2))
