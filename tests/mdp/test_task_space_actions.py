"""Manipulation actions on Menagerie's Panda: differential IK reaches commanded poses within
1 mm and 0.01 rad on the cpu engine and on the Warp code path, the gripper opens and
closes its fingers, relative joint targets accumulate within the limits, and bad settings
are one-line errors."""

from __future__ import annotations

import itertools

import mujoco
import numpy as np
import pytest
import torch
from robolearn.envs.franka_panda import ARM, BASE, GRIPPER, TCP, panda_robot

from robolearn import mdp
from robolearn.env import ManagerBasedRLEnv, ManagerBasedRLEnvCfg
from robolearn.errors import RobolearnError
from robolearn.managers import ObservationGroupCfg, ObservationTermCfg, TerminationTermCfg
from robolearn.math import quat_angle_between, quat_from_axis_angle, quat_mul, quat_rotate
from robolearn.mdp.frames import frame_pose
from robolearn.mdp.task_space_actions import DifferentialIKActionCfg
from robolearn.scene import FrameCfg, SceneCfg, SimCfg
from robolearn.wrappers import make_env


def _panda_env(actions: dict, num_envs: int = 4, engine: str = "cpu") -> ManagerBasedRLEnv:
    cfg = ManagerBasedRLEnvCfg(
        scene=SceneCfg(num_envs=num_envs, entities={"robot": panda_robot()}, ground=True),
        sim=SimCfg(engine=engine, physics_dt=0.005),
        decimation=4,
        episode_length_s=100.0,
        actions=actions,
        observations={
            "policy": ObservationGroupCfg(terms={"q": ObservationTermCfg(func=mdp.joint_pos_rel)})
        },
        terminations={"time_out": TerminationTermCfg(func=mdp.time_out, time_out=True)},
    )
    env = ManagerBasedRLEnv(cfg)
    env.reset()
    return env


def _ik(**kw) -> DifferentialIKActionCfg:
    return DifferentialIKActionCfg(actuators="actuator[1-7]", frame=TCP, base=BASE, **kw)


@pytest.mark.parametrize("engine", ["cpu", "warp-cpu"])
def test_differential_ik_reaches_commanded_poses_within_a_millimetre(menagerie_root, engine):
    n = 6
    env = _panda_env({"arm": _ik(relative=False)}, num_envs=n, engine=engine)
    term = env.action_manager.terms["arm"]
    start_pos, start_quat = term.frame_pose_b()
    g = torch.Generator().manual_seed(3)
    # reachable goals: up to 15 cm and 0.4 rad from the home pose
    offset = (torch.rand(n, 3, generator=g) - 0.5) * torch.tensor([0.3, 0.3, 0.3])
    turn = quat_from_axis_angle((torch.rand(n, 3, generator=g) - 0.5) * 0.8)
    goal_pos, goal_quat = start_pos + offset, quat_mul(turn, start_quat)
    action = torch.cat((goal_pos, goal_quat), dim=-1)
    for _ in range(100):  # 2 s
        env.step(action)
    env.scene.engine.forward()
    pos, quat = term.frame_pose_b()
    position_error = (pos - goal_pos).norm(dim=-1)
    angle_error = quat_angle_between(quat, goal_quat)
    assert float(position_error.max()) < 1e-3, position_error
    assert float(angle_error.max()) < 0.01, angle_error
    # the joint targets never left the joints' limits on the way
    limits = env.scene.joint_pos_limits[: len(ARM)].to(term.joint_targets.device)
    assert bool(((term.joint_targets >= limits[:, 0]) & (term.joint_targets <= limits[:, 1])).all())


def test_the_engines_jacobian_is_mujocos(menagerie_root):
    env = _panda_env({"arm": _ik()}, num_envs=3)
    engine, model = env.scene.engine, env.scene.model
    g = torch.Generator().manual_seed(0)
    qpos = engine.qpos.clone() + 0.3 * torch.randn(
        engine.qpos.shape, generator=g, dtype=torch.float64
    )
    engine.reset(qpos=qpos)
    hand = model.body("hand").id
    point = engine.xpos[:, hand] + 0.05
    jacp, jacr = engine.jacobian(hand, point)
    data = mujoco.MjData(model)
    for i in range(3):
        data.qpos[:] = qpos[i].numpy()
        mujoco.mj_forward(model, data)
        want_p, want_r = np.zeros((3, model.nv)), np.zeros((3, model.nv))
        mujoco.mj_jac(model, data, want_p, want_r, data.xpos[hand] + 0.05, hand)
        np.testing.assert_allclose(jacp[i].numpy(), want_p, atol=1e-12)
        np.testing.assert_allclose(jacr[i].numpy(), want_r, atol=1e-12)


@pytest.mark.parametrize("engine", ["cpu", "warp-cpu"])
def test_the_ik_terms_jacobian_from_body_poses_is_mujocos(menagerie_root, engine):
    """The IK term's Jacobian (joint axes from the bodies' poses, no engine call) is
    MuJoCo's mj_jac over the arm's joints, the fingers and the cube's joints left out."""
    env = _panda_env({"arm": _ik()}, num_envs=3, engine=engine)
    engine_, model = env.scene.engine, env.scene.model
    g = torch.Generator().manual_seed(1)
    qpos = engine_.qpos.clone().cpu()
    qpos += 0.4 * torch.randn(qpos.shape, generator=g, dtype=qpos.dtype)
    engine_.reset(qpos=qpos.to(engine_.qpos.device))  # derived fields of these poses
    term = env.action_manager.terms["arm"]
    point, _ = term.frame.pose_w()
    jac = term._jacobian(point).cpu().double()
    dofs = [model.joint(f"joint{k}").dofadr[0] for k in range(1, 8)]
    data = mujoco.MjData(model)
    for i in range(3):
        data.qpos[:] = qpos[i].numpy()
        mujoco.mj_forward(model, data)
        want_p, want_r = np.zeros((3, model.nv)), np.zeros((3, model.nv))
        mujoco.mj_jac(
            model, data, want_p, want_r, point[i].cpu().double().numpy(), term.frame.body_id
        )
        want = np.concatenate((want_p, want_r))[:, dofs]
        np.testing.assert_allclose(jac[i].numpy(), want, atol=2e-5)


def test_relative_ik_steps_from_where_the_tool_is_and_holds_it_at_zero(menagerie_root):
    # Isaac Lab's relative mode: each action is a step from the tool's current pose, so
    # the tool rises while the action says up and stays where it is once it says 0
    env = _panda_env({"arm": _ik(relative=True, command_type="position", scale=0.01)})
    term = env.action_manager.terms["arm"]
    start, _ = term.frame_pose_b()
    up = torch.tensor([[0.0, 0.0, 1.0]]).expand(env.num_envs, 3)
    heights = []
    for _ in range(20):
        env.step(up)
        heights.append(float(term.frame_pose_b()[0][0, 2]))
    for _ in range(15):
        env.step(torch.zeros_like(up))
    settled, _ = term.frame_pose_b()
    for _ in range(10):
        env.step(torch.zeros_like(up))
    end, _ = term.frame_pose_b()
    assert all(b > a for a, b in itertools.pairwise(heights)), heights
    rise = end - start
    assert rise[:, 2].min() > 0.04, rise
    assert rise[:, :2].abs().max() < 0.005, rise
    assert float((end - settled).norm(dim=-1).max()) < 1e-3


def test_the_binary_gripper_closes_and_opens_the_fingers(menagerie_root):
    env = _panda_env(
        {
            "arm": mdp.JointPositionActionCfg(actuators="actuator[1-7]"),
            "gripper": mdp.GripperActionCfg(
                actuators=GRIPPER, open_command=255.0, close_command=0.0
            ),
        }
    )
    fingers = [env.scene.joint_names.index(j) for j in ("finger_joint1", "finger_joint2")]
    act = torch.zeros(env.num_envs, 8)
    act[:, 7] = -1.0
    for _ in range(50):
        env.step(act)
    closed = env.scene.joint_pos[:, fingers]
    act[:, 7] = 0.5
    for _ in range(50):
        env.step(act)
    opened = env.scene.joint_pos[:, fingers]
    assert float(closed.max()) < 0.003, closed
    assert float(opened.min()) > 0.035, opened


def test_an_exported_gripper_says_the_controls_the_env_writes(menagerie_root):
    """policy.json's gripper entry is what a deployed program needs: its controls for a
    closing and an opening action are the ones the env writes, not offset + scale x action."""
    from robolearn.app.export import describe

    env = make_env("panda_lift", num_envs=2, engine="cpu", play=True)
    entry = describe(env, ["policy"], task="panda_lift")["action"]["terms"][1]
    assert entry["term"] == "gripper" and entry["mapping"].startswith("binary")
    term = env.action_manager.terms["gripper"]
    col = env.scene.actuator_names.index(entry["actuators"][0])
    act = torch.zeros(2, env.num_actions)
    for value, expected in ((-0.2, entry["close_ctrl"]), (0.7, entry["open_ctrl"])):
        act[:, -1] = value
        env.step(act)
        assert env.scene.engine.ctrl[:, col].tolist() == pytest.approx(expected * 2)
    assert term.processed_actions[:, 0].tolist() == pytest.approx(entry["open_ctrl"] * 2)


def test_the_continuous_gripper_stops_halfway(menagerie_root):
    env = _panda_env(
        {
            "gripper": mdp.GripperActionCfg(
                actuators=GRIPPER, open_command=255.0, close_command=0.0, binary=False
            )
        }
    )
    term = env.action_manager.terms["gripper"]
    for _ in range(50):
        env.step(torch.zeros(env.num_envs, 1))
    assert term.processed_actions[:, 0].tolist() == pytest.approx([127.5] * env.num_envs)
    finger = env.scene.joint_pos[:, env.scene.joint_names.index("finger_joint1")]
    assert float(finger.min()) > 0.015 and float(finger.max()) < 0.025, finger


def test_relative_joint_targets_accumulate_and_stop_at_the_limits(menagerie_root):
    env = _panda_env(
        {"arm": mdp.RelativeJointPositionActionCfg(actuators="actuator[1-7]", scale=0.1)}
    )
    term = env.action_manager.terms["arm"]
    start = term.processed_actions.clone()
    act = torch.zeros(env.num_envs, 7)
    act[:, 0] = 1.0  # joint1 +0.1 rad a step
    for _ in range(5):
        env.step(act)
    assert (term.processed_actions[:, 0] - start[:, 0]).tolist() == pytest.approx([0.5] * 4)
    for _ in range(40):
        env.step(act)
    high = float(env.scene.joint_pos_limits[env.scene.joint_names.index("joint1"), 1])
    assert term.processed_actions[:, 0].tolist() == pytest.approx([high] * 4)
    env.reset()
    assert torch.equal(term.processed_actions, start)


def test_a_frame_pose_is_the_tool_centre_point_in_the_base_frame(menagerie_root):
    env = _panda_env({"arm": mdp.JointPositionActionCfg(actuators="actuator[1-7]")}, num_envs=2)
    env.scene.engine.forward()
    pose = frame_pose(env, TCP, relative_to=BASE)
    model = env.scene.model
    data = mujoco.MjData(model)
    data.qpos[:] = env.scene.engine.qpos[0].numpy()
    mujoco.mj_forward(model, data)
    hand = model.body("hand").id
    want = data.xpos[hand] + data.xmat[hand].reshape(3, 3) @ np.array(TCP.offset)
    want = want - data.xpos[model.body("link0").id]  # link0 sits at the world's origin, unturned
    np.testing.assert_allclose(pose[0, :3].numpy(), want, atol=1e-6)
    # the tool points down at the home pose: its z axis is the world's -z
    tool_z = quat_rotate(pose[:1, 3:], torch.tensor([[0.0, 0.0, 1.0]]))
    assert tool_z[0].tolist() == pytest.approx([0.0, 0.0, -1.0], abs=1e-4)


@pytest.mark.parametrize(
    ("actions", "message"),
    [
        (
            {"arm": DifferentialIKActionCfg(actuators="actuator[1-7]", frame="tool")},
            r"actions.arm.frame: .tool. is neither a site nor a body of the robot; .*hand",
        ),
        (
            {"arm": DifferentialIKActionCfg(actuators="actuator[1-7]", command_type="twist")},
            r"command_type must be one of pose, position, got 'twist'",
        ),
        (
            {"arm": DifferentialIKActionCfg(actuators="actuator8")},
            r"needs position loops on joints; not such: actuator8",
        ),
        (
            {"gripper": mdp.GripperActionCfg(actuators="gripper")},
            r"actions\.gripper: actuators 'gripper' matches no actuator; actuators: .*actuator8",
        ),
        (
            {
                "arm": DifferentialIKActionCfg(
                    actuators="actuator[1-7]", frame=FrameCfg("hand", entity="cube")
                )
            },
            r"no entity 'cube' in the scene",
        ),
    ],
)
def test_bad_manipulation_actions_are_one_line_errors(menagerie_root, actions, message):
    with pytest.raises(RobolearnError, match=message) as info:
        _panda_env(actions, num_envs=1)
    assert "\n" not in str(info.value)
