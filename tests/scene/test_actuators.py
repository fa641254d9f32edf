"""Actuators from the robot config: a torque-motor MJCF (as vendors ship theirs) driven by
MuJoCo's own PD loop with the config's gains, limits and armature."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest
import torch

from robolearn.config import load_config, save_config
from robolearn.errors import RobolearnError
from robolearn.scene import (
    ActuatorNetCfg,
    DCMotorCfg,
    EntityCfg,
    IdealPDCfg,
    ImplicitPDCfg,
    Scene,
    SceneCfg,
    SimCfg,
    pd_gains,
    reflected_inertia,
)

# Two hinges as a vendor writes them: torque motors with a gear, a keyframe with controls;
# the second joint has no actuator at all. No gravity, no contacts: only the PD loop acts.
ARM = """
<mujoco>
  <compiler angle="degree"/>
  <option gravity="0 0 0" timestep="0.001"/>
  <worldbody>
    <body name="upper">
      <joint name="shoulder" type="hinge" axis="0 1 0" range="-90 90"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" mass="0.5" contype="0"/>
      <body name="lower" pos="0.3 0 0">
        <joint name="elbow" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" mass="0.3" contype="0"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor name="shoulder_motor" joint="shoulder" gear="6" ctrlrange="-1 1"/>
  </actuator>
  <keyframe>
    <key name="home" qpos="0.4 -0.2" ctrl="0.7"/>
  </keyframe>
</mujoco>
"""


def arm_scene(tmp_path, **actuators: ImplicitPDCfg) -> Scene:
    path = tmp_path / "arm.xml"
    path.write_text(ARM)
    return Scene(robot_cfg(path, 1, keyframe="home", actuators=actuators), SimCfg(engine="cpu"))


def robot_cfg(path, num_envs: int, **robot) -> SceneCfg:
    """A scene of ``num_envs`` whose robot is the MJCF at ``path``, configured by ``robot``."""
    return SceneCfg(num_envs=num_envs, entities={"robot": EntityCfg(model=str(path), **robot)})


def test_a_torque_motor_becomes_mujocos_pd_loop_and_a_bare_joint_gets_one(tmp_path):
    scene = arm_scene(
        tmp_path,
        arm=ImplicitPDCfg(
            joints=("shoulder", "elbow"),
            stiffness={"shoulder": 40.0, "elbow": 20.0},
            damping=2.0,
            effort_limit=5.0,
            armature=0.02,
        ),
    )
    m = scene.model
    # the MJCF's actuator keeps its name and place; the bare joint's comes after it
    assert [m.actuator(a).name for a in range(m.nu)] == ["shoulder_motor", "elbow"]
    np.testing.assert_allclose(m.actuator_gear[:, 0], [1.0, 1.0])
    np.testing.assert_allclose(m.actuator_gainprm[:, 0], [40.0, 20.0])
    np.testing.assert_allclose(m.actuator_biasprm[:, :3], [[0, -40, -2], [0, -20, -2]])
    np.testing.assert_allclose(m.actuator_forcerange, [[-5, 5], [-5, 5]])
    np.testing.assert_allclose(m.dof_armature, [0.02, 0.02])
    # targets are joint positions (radians, though the MJCF's ranges are in degrees): the
    # limited joint bounds its target, the other none
    np.testing.assert_allclose(m.actuator_ctrlrange[0], [-math.pi / 2, math.pi / 2])
    assert m.actuator_ctrllimited.tolist() == [1, 0]
    # the keyframe holds its pose: each new target is the key's joint position
    np.testing.assert_allclose(scene.default_ctrl.numpy(), [0.4, -0.2])


def test_the_gains_give_the_joint_the_natural_frequency_asked_for(tmp_path):
    """kp and kd from pd_gains over the joint's inertia make MuJoCo's joint ring at that
    frequency: the first overshoot comes half a damped period after a step of the target."""
    probe = arm_scene(tmp_path, arm=ImplicitPDCfg(joints="shoulder", stiffness=1.0))
    data = mujoco.MjData(probe.model)
    data.qpos[:] = 0.0
    mujoco.mj_forward(probe.model, data)
    full = np.zeros((probe.model.nv, probe.model.nv))
    mujoco.mj_fullM(probe.model, data, full)
    # the elbow held straight by its own stiff loop: the shoulder swings both links as one,
    # whose inertia about it is the mass matrix's first entry
    inertia = float(full[0, 0])
    kp, kd = pd_gains(inertia, natural_frequency_hz=2.0, damping_ratio=0.1)
    stiff, stiff_kd = pd_gains(float(full[1, 1]), natural_frequency_hz=40.0, damping_ratio=1.0)
    scene = arm_scene(
        tmp_path,
        shoulder=ImplicitPDCfg(joints="shoulder", stiffness=kp, damping=kd),
        elbow=ImplicitPDCfg(joints="elbow", stiffness=stiff, damping=stiff_kd),
    )
    engine = scene.engine
    engine.reset(qpos=torch.zeros(1, 2, dtype=engine.dtype))
    scene.write_ctrl(slice(0, 2), torch.tensor([[0.3, 0.0]]))
    angles = []
    for _ in range(400):  # 0.4 s of 1 ms steps
        scene.step(1)
        angles.append(float(engine.qpos[0, 0]))
    omega = 2 * math.pi * 2.0
    damped_half_period = math.pi / (omega * math.sqrt(1 - 0.1**2))
    peak = int(np.argmax(angles)) + 1
    assert peak * 1e-3 == pytest.approx(damped_half_period, rel=0.05)
    # and it overshoots by the damping ratio's amount, exp(-pi zeta / sqrt(1 - zeta^2))
    overshoot = max(angles) / 0.3 - 1
    assert overshoot == pytest.approx(math.exp(-math.pi * 0.1 / math.sqrt(0.99)), abs=0.06)


def test_the_effort_limit_caps_the_torque(tmp_path):
    scene = arm_scene(
        tmp_path, arm=ImplicitPDCfg(joints="shoulder", stiffness=500.0, effort_limit=3.0)
    )
    scene.write_ctrl(slice(0, 1), torch.tensor([[1.4]]))  # a full radian away: 500 N m asked
    scene.step(1)
    assert float(scene.engine.actuator_force[0, 0]) == pytest.approx(3.0)


def test_actuator_configs_survive_a_run_folder(tmp_path):
    legs = ImplicitPDCfg(joints=".*", stiffness={".*_hip": 30.0, ".*": 25.0})
    cfg = robot_cfg("quadruped/scene.xml", 1024, actuators={"legs": legs})
    save_config(cfg, tmp_path / "scene.yaml")
    back = load_config(tmp_path / "scene.yaml")
    assert back.robot.actuators == cfg.robot.actuators


@pytest.mark.parametrize(
    ("actuators", "fragment"),
    [
        ({"a": ImplicitPDCfg(joints="wrist")}, "scene.actuators.a.joints ['wrist'] match no"),
        (
            {"a": ImplicitPDCfg(joints=".*"), "b": ImplicitPDCfg(joints="elbow")},
            "scene.actuators.b: joint 'elbow' is driven by scene.actuators.a already",
        ),
        ({"a": ImplicitPDCfg(stiffness=-1.0)}, "scene.actuators.a.stiffness must be"),
        ({"a": ImplicitPDCfg(armature=float("nan"))}, "scene.actuators.a.armature must be"),
        (
            {"a": ImplicitPDCfg(stiffness={"shoulder": 1.0})},
            "scene.actuators.a.stiffness: no pattern of ['shoulder'] matches joint 'elbow'",
        ),
        ({"a": ImplicitPDCfg(joints="(")}, "scene.actuators.a.joints: invalid regex"),
        ({"a": ImplicitPDCfg(delay=(2, 1))}, "scene.actuators.a.delay must be [min, max]"),
        ({"a": ImplicitPDCfg(delay=(-1, 1))}, "scene.actuators.a.delay must be [min, max]"),
        (
            {"a": ImplicitPDCfg(delay=(0, 10**9))},
            "scene.actuators.a.delay's max of 1,000,000,000 physics steps is beyond the 10,000",
        ),
        (
            {"a": DCMotorCfg(stiffness=5.0, saturation_effort=3.0, velocity_limit=0.0)},
            "scene.actuators.a: a DC motor needs saturation_effort > 0 and velocity_limit > 0",
        ),
        # an explicit loop this stiff cannot be stable at 1 ms: refused before it blows up
        ({"a": IdealPDCfg(stiffness=1e6)}, "sim.physics_dt 0.001 s cannot be stable"),
    ],
)
def test_bad_actuator_configs_are_one_line_errors(tmp_path, actuators, fragment):
    with pytest.raises(RobolearnError) as err:
        arm_scene(tmp_path, **actuators)
    assert fragment in str(err.value) and "\n" not in str(err.value)


def test_mujocos_delay_histories_count_in_the_env_count_check(tmp_path, monkeypatch):
    """MuJoCo keeps each delayed loop's last commands (a lag of up to 10,000 steps: 234 KiB
    per env with the copy a reset makes); the check before the engine is built names them
    (before: not told apart from the rest of the simulation's state, and a reset's copy was
    not counted). The machine's free memory is set low; the estimate is the real one."""
    import robolearn.sim.memory as sim_memory

    monkeypatch.setattr(sim_memory, "available_bytes", lambda device: 64 * 2**20)
    (tmp_path / "arm.xml").write_text(ARM)
    arm = ImplicitPDCfg(joints="shoulder", stiffness=5.0, delay=(0, 10_000))
    cfg = robot_cfg(tmp_path / "arm.xml", 1000, keyframe="home", actuators={"arm": arm})
    with pytest.raises(RobolearnError) as err:
        Scene(cfg, SimCfg(engine="cpu"))
    message = str(err.value)
    assert message.startswith("1,000 envs need about ") and "\n" not in message
    assert "KiB of it MuJoCo's histories of the delayed actuators" in message


def test_reflected_inertia_and_gains_from_motor_facts():
    # one stage: the rotor's inertia times the ratio squared
    assert reflected_inertia(1.0e-5, 10.0) == pytest.approx(1.0e-3)
    # two stages: the rotor through both, the first stage's gears through the second
    assert reflected_inertia((1.0e-5, 2.0e-5), (4.0, 5.0)) == pytest.approx(
        1.0e-5 * 20.0**2 + 2.0e-5 * 5.0**2
    )
    kp, kd = pd_gains(0.01, natural_frequency_hz=10.0, damping_ratio=2.0)
    omega = 2 * math.pi * 10.0
    assert (kp, kd) == pytest.approx((0.01 * omega**2, 2 * 2.0 * 0.01 * omega))
    with pytest.raises(RobolearnError, match="one inertia per gear stage"):
        reflected_inertia((1e-5, 1e-5), 10.0)
    with pytest.raises(RobolearnError, match="pd_gains"):
        pd_gains(0.0, 10.0, 1.0)


# ---- explicit motor models and delay: robolearn computes the torque at every physics step


def test_an_explicit_pd_loop_applies_the_pd_law_at_every_physics_step(tmp_path):
    scene = arm_scene(
        tmp_path,
        arm=IdealPDCfg(joints=("shoulder", "elbow"), stiffness=8.0, damping=0.5, effort_limit=2.0),
    )
    m, engine = scene.model, scene.engine
    # the model's actuators are plain torque motors now: robolearn gives their torque
    assert m.actuator_biastype.tolist() == [0, 0] and m.actuator_ctrllimited.tolist() == [0, 0]
    assert scene.takes_position_targets([0, 1]) == [True, True]
    ranges, limited = scene.command_range([0, 1])
    np.testing.assert_allclose(ranges[0], [-math.pi / 2, math.pi / 2])
    assert limited.tolist() == [True, False]
    scene.write_ctrl(slice(0, 2), torch.tensor([[0.5, -0.1]]))
    for _ in range(5):
        q, qd = engine.qpos[0].clone(), engine.qvel[0].clone()
        scene.step(1)
        expected = (8.0 * (torch.tensor([0.5, -0.1], dtype=q.dtype) - q) - 0.5 * qd).clamp(-2, 2)
        torch.testing.assert_close(engine.ctrl[0], expected)
        torch.testing.assert_close(engine.actuator_force[0], expected)


def test_a_dc_motor_gives_less_torque_the_faster_it_turns(tmp_path):
    scene = arm_scene(
        tmp_path,
        arm=DCMotorCfg(
            joints="shoulder", stiffness=1000.0, effort_limit=3.0,
            saturation_effort=4.0, velocity_limit=10.0,
        ),
    )  # fmt: skip
    engine = scene.engine
    scene.write_ctrl(slice(0, 1), torch.tensor([[1.4]]))  # far away: the limits decide
    for speed, torque in ((0.0, 3.0), (2.5, 3.0), (5.0, 2.0), (10.0, 0.0), (-5.0, 3.0)):
        engine.qpos[0, 0] = 0.0
        engine.qvel[0, :] = 0.0
        engine.qvel[0, 0] = speed
        scene.step(1)
        # toward the target: min(effort, saturation (1 - v / v_max)), never below 0
        assert float(engine.ctrl[0, 0]) == pytest.approx(torque, abs=1e-6), speed


@pytest.mark.parametrize("engine", ["cpu", pytest.param("warp-cpu", marks=pytest.mark.warp)])
def test_a_delay_holds_each_envs_command_back_its_own_lag(tmp_path, engine):
    """MuJoCo's loop with a delay of 1-3 physics steps (MuJoCo runs it): each env's target
    reaches the loop exactly its own lag late, seen in the force the loop applies; until
    then it holds the reset's command, also after a reset in mid-episode."""
    path = tmp_path / "arm.xml"
    path.write_text(ARM)
    cfg = robot_cfg(
        path, 64, keyframe="home",
        actuators={"arm": ImplicitPDCfg(joints="shoulder", stiffness=5.0, delay=(1, 3))},
    )  # fmt: skip
    scene = Scene(cfg, SimCfg(engine=engine))
    assert scene.drive is None  # the decimation stays one engine call
    e, everyone = scene.engine, torch.ones(64, dtype=torch.bool)
    for episode in range(2):
        scene.reset_to_default(everyone)
        scene.forward(everyone)
        lags = scene.model_delay.lag[:, 0].clone()
        assert set(lags.tolist()) == {1, 2, 3}  # 64 draws over three lags: each one drawn
        scene.write_ctrl(slice(0, 1), torch.full((64, 1), 0.9 - 0.1 * episode))
        for k in range(4):
            q = e.qpos[:, 0].clone()
            scene.step(1)
            target = e.actuator_force[:, 0] / 5.0 + q  # the loop's force, kp (q* - q)
            arrived = lags <= k
            torch.testing.assert_close(target[arrived], torch.full_like(target[arrived],
                                       0.9 - 0.1 * episode), atol=1e-5, rtol=0)  # fmt: skip
            torch.testing.assert_close(target[~arrived], torch.full_like(target[~arrived],
                                       0.4), atol=1e-5, rtol=0)  # fmt: skip
        for _ in range(7):  # time passes before the next reset
            scene.step(1)


def quadruped_on_motors(engine: str, num_envs: int, net: str | None = None, kind: str = "dc"):
    """quadruped_walk with a delay of 0-2 physics steps on every joint and DC motors (or
    MuJoCo's loops: ``kind="implicit"``), or the learned actuator net in file ``net``."""
    from robolearn.env import ManagerBasedRLEnv
    from robolearn.registry import get_task

    cfg = get_task("quadruped_walk").env_cfg()
    cfg.scene.num_envs = num_envs
    cfg.sim.engine = engine
    motor = (
        DCMotorCfg(
            joints=".*", stiffness=25.0, damping=0.6, effort_limit=23.7,
            saturation_effort=30.0, velocity_limit=30.0, delay=(0, 2),
        )
        if net is None and kind == "dc"
        else ImplicitPDCfg(joints=".*", stiffness=25.0, damping=0.6, delay=(0, 2))
        if net is None
        else ActuatorNetCfg(network_file=net, effort_limit=23.7, delay=(0, 2))
    )  # fmt: skip
    cfg.scene.robot.actuators = {"legs": motor}
    return ManagerBasedRLEnv(cfg)


def pd_net(path) -> str:
    """A learned actuator net that is the PD law kp 25, kd 0.6 (history 3)."""
    from torch import nn

    from robolearn.actuators.network import save_actuator_net

    net = nn.Linear(6, 1, bias=False)
    with torch.no_grad():
        net.weight[:] = torch.tensor([[25.0, 0.0, 0.0, -0.6, 0.0, 0.0]])
    save_actuator_net(net, path, history=3)
    return str(path)


@pytest.mark.parametrize("kind", ["dc", "net", "implicit"])
@pytest.mark.parametrize("engine", ["cpu", pytest.param("warp-cpu", marks=pytest.mark.warp)])
def test_explicit_motors_and_delays_stand_the_robot_without_host_waits(engine, kind, tmp_path):
    """The step with DC motors, a learned net or MuJoCo's loops, and delays (robolearn's
    or MuJoCo's), never waits for the device
    (the guard fails at any op that would on CUDA), and the robot stands on its motors."""
    from robolearn.sim.host_sync import forbid_host_syncs

    net = pd_net(tmp_path / "net.pt") if kind == "net" else None
    env = quadruped_on_motors(engine, 4, net, kind)
    action = torch.zeros(4, env.num_actions)
    env.step(action)  # first uses fill caches once
    waits: list[str] = []
    with forbid_host_syncs(waits):
        for _ in range(20):
            env.step(action)
    assert waits == []
    assert bool((env.scene.root_height > 0.15).all())


def test_gain_randomization_refuses_a_learned_net(tmp_path):
    from robolearn import mdp

    env = quadruped_on_motors("cpu", 2, pd_net(tmp_path / "net.pt"))
    with pytest.raises(RobolearnError, match="a learned net has no gains"):
        mdp.randomize_actuator_gains(env, torch.ones(2, dtype=torch.bool), (0.9, 1.1), None)


def test_a_task_with_a_bad_actuator_config_is_one_line_and_exit_2(tmp_path):
    """A user's task whose actuator config claims a joint twice: exit 2, one line, no run
    folder written. (In a process of its own: the task it registers is a broken one.)"""
    from cli_helpers import one_line_error, robolearn

    (tmp_path / "my_motors.py").write_text(
        "from robolearn.registry import TaskSpec, get_task, register_task\n"
        "from robolearn.scene import DCMotorCfg, ImplicitPDCfg\n"
        "BASE = get_task('quadruped_walk')\n"
        "def env_cfg():\n"
        "    cfg = BASE.env_cfg()\n"
        "    cfg.scene.robot.actuators = {\n"
        "        'legs': DCMotorCfg(stiffness=25.0, saturation_effort=30.0, velocity_limit=30.0),\n"
        "        'hips': ImplicitPDCfg(joints='.*_hip', stiffness=30.0),\n"
        "    }\n"
        "    return cfg\n"
        "register_task(TaskSpec('motor_quadruped', 'on motors', env_cfg, BASE.agent_cfg))\n"
    )
    logs = tmp_path / "logs"
    result = robolearn(
        "train", "--task", "motor_quadruped", "--import", str(tmp_path / "my_motors.py"),
        "--num_envs", "4", "--max_iterations", "1", "--log_root", str(logs),
    )  # fmt: skip
    one_line_error(result, "scene.actuators.hips: joint 'FL_hip' is driven by scene.actuators.legs")
    assert not logs.exists() or not any(logs.rglob("*"))


def test_a_pd_loops_top_speed_stops_the_torque_that_would_turn_it_faster(tmp_path):
    scene = arm_scene(
        tmp_path, arm=IdealPDCfg(joints="shoulder", stiffness=10.0, velocity_limit=2.0)
    )
    engine = scene.engine
    scene.write_ctrl(slice(0, 1), torch.tensor([[1.0]]))  # ahead: the law pushes forward
    for speed, torque in ((0.0, 10.0), (1.0, 10.0), (2.0, 0.0), (3.0, 0.0), (-3.0, 10.0)):
        engine.qpos[0, 0] = 0.0
        engine.qvel[0, :] = 0.0
        engine.qvel[0, 0] = speed
        scene.step(1)
        assert float(engine.ctrl[0, 0]) == pytest.approx(torque), speed
    with pytest.raises(RobolearnError, match="velocity_limit must be > 0"):
        arm_scene(tmp_path, arm=IdealPDCfg(joints="shoulder", velocity_limit=0.0))
    with pytest.raises(TypeError):  # MuJoCo's own loop cannot limit speed
        ImplicitPDCfg(velocity_limit=2.0)


def test_a_joint_with_two_mjcf_actuators_is_refused_rather_than_driven_twice(tmp_path):
    path = tmp_path / "arm.xml"
    path.write_text(
        ARM.replace("</actuator>", '<velocity name="brake" joint="shoulder"/></actuator>')
    )
    cfg = robot_cfg(path, 1, actuators={"a": ImplicitPDCfg(joints="shoulder")})
    with pytest.raises(
        RobolearnError,
        match=r"joint 'shoulder' has 2 actuators in the MJCF \(shoulder_motor, brake\)",
    ):
        Scene(cfg, SimCfg(engine="cpu"))


def test_loops_with_different_delays_keep_each_its_own_lags(tmp_path):
    """Two configs whose longest lags differ: each MuJoCo loop's history has its own depth,
    and each env's lags stay within its config's range."""
    path = tmp_path / "arm.xml"
    path.write_text(ARM)
    cfg = robot_cfg(
        path, 32, keyframe="home",
        actuators={
            "shoulder": ImplicitPDCfg(joints="shoulder", stiffness=5.0, delay=(0, 1)),
            "elbow": ImplicitPDCfg(joints="elbow", stiffness=5.0, delay=(2, 4)),
        },
    )  # fmt: skip
    scene = Scene(cfg, SimCfg(engine="cpu"))
    everyone = torch.ones(32, dtype=torch.bool)
    scene.reset_to_default(everyone)
    lags = scene.model_delay.lag
    assert set(lags[:, 0].tolist()) <= {0, 1} and set(lags[:, 1].tolist()) <= {2, 3, 4}
    assert scene.model.actuator_history[:, 0].tolist() == [3, 6]
