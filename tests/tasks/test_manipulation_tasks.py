"""The manipulation tasks on Menagerie's Panda: scripted through differential IK, the arm
picks up each env's own cube and pulls the drawer open, so the tasks' physics lets a
policy succeed; evaluation's success_rate counts what the tasks declare; bad settings are
one line and exit 2."""

from __future__ import annotations

import math

import pytest
import torch
from robolearn.envs.franka_panda import BASE, TCP
from robolearn.tasks.classic import cartpole_balance
from robolearn.tasks.manipulation import panda_lift, panda_open_drawer

from robolearn import mdp
from robolearn.app.evaluate import evaluate
from robolearn.env import ManagerBasedRLEnv, SuccessTermCfg
from robolearn.errors import RobolearnError
from robolearn.math import axis_angle_from_quat, quat_conjugate, quat_from_axis_angle, quat_mul
from robolearn.mdp import manipulation as manip
from robolearn.mdp.frames import frame_pos
from robolearn.mdp.task_space_actions import DifferentialIKActionCfg
from robolearn.scene import ContactSensorCfg
from tests.cli_helpers import play_eval, robolearn_in_process


def _scripted(cfg, num_envs: int) -> ManagerBasedRLEnv:
    """The task's env with the arm on absolute IK, for a scripted motion."""
    cfg.scene.num_envs = num_envs
    cfg.sim.engine = "cpu"
    cfg.actions["arm"] = DifferentialIKActionCfg(
        actuators="actuator[1-7]", frame=TCP, base=BASE, relative=False
    )
    cfg.observations["policy"].terms.pop("arm_targets", None)  # the joint targets' term's
    env = ManagerBasedRLEnv(cfg)
    env.reset()
    return env


def _move(env, pos, quat, grip: float, steps: int) -> None:
    action = torch.cat((pos, quat, torch.full((env.num_envs, 1), grip)), dim=-1)
    for _ in range(steps):
        env.step(action)


FINGERS = ("left_touch", "right_touch")


def _with_finger_sensors(cfg):
    cfg.scene.contact_sensors = {
        f"{side}_touch": ContactSensorCfg(f"{side}_finger", "box", entity2="object")
        for side in ("left", "right")
    }
    return cfg


def test_a_scripted_grasp_lifts_every_envs_own_cube(menagerie_root):
    env = _scripted(_with_finger_sensors(panda_lift.env_cfg()), num_envs=6)
    arm = env.action_manager.terms["arm"]
    _, down = arm.frame_pose_b()
    mass = env.scene.engine.model_field("body_mass")[:, env.scene.model.body("object/box").id]
    assert len(set(mass.tolist())) == env.num_envs  # each env's cube its own
    cube = manip.object_pos_b(env, base=BASE).clone()
    above = cube + torch.tensor([0.0, 0.0, 0.15])
    _move(env, above, down, 1.0, 50)
    _move(env, cube, down, 1.0, 40)
    assert manip.contact_found(env, FINGERS).sum() == 0  # open around it: no touch
    _move(env, cube, down, -1.0, 25)  # close on it
    _move(env, above + torch.tensor([0.0, 0.0, 0.1]), down, -1.0, 60)
    height = manip.object_height(env)
    assert float(height.min()) > 0.2, height  # held 25 cm up, not left on the floor
    # both fingers touch it, and together they carry its weight (the force the fingers
    # exert on the cube, world frame: up, m g within 15% as it hangs still)
    assert manip.contact_found(env, FINGERS).tolist() == [[1.0, 1.0]] * env.num_envs
    lift = manip.contact_force(env, FINGERS).reshape(-1, 2, 3).sum(dim=1)[:, 2]
    assert torch.allclose(lift, mass.float() * 9.81, rtol=0.15), (lift, mass * 9.81)


def test_a_scripted_carry_brings_each_cube_to_its_goal_as_the_observations_say(menagerie_root):
    """Grasped, lifted and carried to each env's own goal by IK: the observations of the way
    from the tool to the cube and from the cube to its goal agree with the cube's and the
    tool's positions, and reach 0 where the success condition says the cube is there."""
    env = _scripted(panda_lift.env_cfg(), num_envs=4)
    _, down = env.action_manager.terms["arm"].frame_pose_b()
    cube = manip.object_pos_b(env, base=BASE).clone()
    above = cube + torch.tensor([0.0, 0.0, 0.15])
    _move(env, above, down, 1.0, 40)
    _move(env, cube, down, 1.0, 30)
    _move(env, cube, down, -1.0, 20)
    goal = env.command_manager.terms["object_pose"].command[:, 0:3]
    assert not manip.object_at_goal(env, panda_lift.AT_GOAL).any()
    tool = frame_pos(env, TCP, relative_to=BASE)
    seen = manip.object_from_frame_b(env, frame_cfg=TCP, base=BASE)
    torch.testing.assert_close(seen, manip.object_pos_b(env, base=BASE) - tool)
    # within the 5 s episode (250 steps), aim the tool so that the cube, where it sits in
    # the hand, meets its goal
    for steps in (70, 40, 40):
        grip = manip.object_from_frame_b(env, frame_cfg=TCP, base=BASE)
        _move(env, goal - grip, down, -1.0, steps)
    delta = manip.command_position_delta(env, "object_pose")
    torch.testing.assert_close(delta, goal - manip.object_pos_b(env, base=BASE), atol=1e-4, rtol=0)
    assert float(delta.norm(dim=-1).max()) < panda_lift.AT_GOAL, delta
    assert manip.object_at_goal(env, panda_lift.AT_GOAL).all()


def test_a_relative_arm_action_holds_where_it_sent_the_arm(menagerie_root):
    """panda_lift's arm action moves each joint's target on by 0.05 rad per unit of action:
    ten steps of +1 on the shoulder send it 0.5 rad away, then action 0 holds it there; the
    policy reads the way from each joint to its target, large while it moves, small held."""
    cfg = panda_lift.env_cfg()
    cfg.scene.num_envs, cfg.sim.engine = 2, "cpu"
    cfg.events = {}  # the cube's draws are not the point here
    env = ManagerBasedRLEnv(cfg)
    env.reset()
    act = torch.zeros(env.num_envs, env.num_actions)
    act[:, -1] = 1.0  # the gripper open
    for _ in range(25):
        env.step(act)
    assert float(mdp.joint_target_error(env, "arm").abs().max()) < 0.02
    act[:, 0] = 1.0
    for _ in range(10):
        env.step(act)
    assert float(mdp.joint_target_error(env, "arm")[:, 0].min()) > 0.05  # still on its way
    act[:, 0] = 0.0
    for _ in range(50):
        env.step(act)
    shoulder = mdp.joint_pos_rel(env, "joint1")[:, 0]
    torch.testing.assert_close(shoulder, torch.full_like(shoulder, 0.5), atol=0.02, rtol=0)
    assert float(mdp.joint_target_error(env, "arm").abs().max()) < 0.02
    with pytest.raises(RobolearnError, match="'gripper' is not a joint position action term"):
        mdp.joint_target_error(env, "gripper")


def test_the_arm_targets_stay_in_the_tasks_workspace(menagerie_root):
    """``target_limits`` keeps the targets of the arm's three roll joints within 1 rad of the
    home pose, where the joints themselves turn 2.9: the shoulder driven on for 2 rad stops
    at 1; a range that leaves a joint nothing, or names none, is one line."""
    cfg = panda_lift.env_cfg()
    cfg.scene.num_envs, cfg.sim.engine = 2, "cpu"
    cfg.events = {}
    cfg.actions["arm"].target_limits = {"joint[135]": (-1.0, 1.0)}
    env = ManagerBasedRLEnv(cfg)
    env.reset()
    act = torch.zeros(env.num_envs, env.num_actions)
    act[:, -1] = 1.0  # the gripper open
    act[:, 0] = 1.0
    for _ in range(40):
        env.step(act)
    act[:, 0] = 0.0
    for _ in range(25):
        env.step(act)
    shoulder = mdp.joint_pos_rel(env, "joint1")[:, 0]
    torch.testing.assert_close(shoulder, torch.full_like(shoulder, 1.0), atol=0.02, rtol=0)
    for limits, message in (
        ({"joint1": (3.0, 4.0)}, "leaves joint1 no range"),
        ({"wrist": (-1.0, 1.0)}, "wrist"),
    ):
        bad = panda_lift.env_cfg()
        bad.scene.num_envs, bad.sim.engine = 1, "cpu"
        bad.actions["arm"].target_limits = limits
        with pytest.raises(RobolearnError, match=message):
            ManagerBasedRLEnv(bad)


@pytest.mark.parametrize("max_lead", [0.2, None])
def test_an_arm_pressed_into_the_floor_backs_off_when_told(menagerie_root, max_lead):
    """The shoulder driven forward until the hand presses on the floor: with ``max_lead``
    the arm's targets stay within 0.2 rad of the joints, so the arm backs off within a few
    steps of being told; a target left to run on (None, panda_lift's default) winds up to
    the joint's limit, and ten steps of full reverse do not move the arm."""
    cfg = panda_lift.env_cfg()
    cfg.scene.num_envs, cfg.sim.engine = 2, "cpu"
    cfg.events = {}
    cfg.actions["arm"].max_lead = max_lead
    env = ManagerBasedRLEnv(cfg)
    env.reset()
    act = torch.zeros(env.num_envs, env.num_actions)
    act[:, -1] = 1.0  # the gripper open
    act[:, 1] = 1.0  # joint2: the arm pitches forward and down
    for _ in range(60):
        env.step(act)
    pressed = mdp.joint_pos_rel(env, "joint2")[:, 0].clone()
    ahead = mdp.joint_target_error(env, "arm")[:, 1]
    act[:, 1] = -1.0
    for _ in range(10):
        env.step(act)
    back = pressed - mdp.joint_pos_rel(env, "joint2")[:, 0]
    if max_lead is None:
        assert float(ahead.min()) > 0.8  # wound up against the floor
        assert float(back.abs().max()) < 0.01
    else:
        torch.testing.assert_close(ahead, torch.full_like(ahead, 0.2), atol=1e-4, rtol=0)
        assert float(back.min()) > 0.1


@pytest.mark.parametrize("engine", ["cpu", "warp-cpu"])
def test_a_contact_sensor_weighs_each_envs_own_cube(menagerie_root, engine):
    """A cube resting on the floor, seen by a contact sensor on either engine: it touches,
    and presses with its own env's weight."""
    cfg = panda_lift.env_cfg()
    cfg.scene.num_envs, cfg.sim.engine = 4, engine
    cfg.scene.contact_sensors = {"rests": ContactSensorCfg("box", "world", entity1="object")}
    env = ManagerBasedRLEnv(cfg)
    env.reset()
    for _ in range(10):
        env.step(torch.zeros(env.num_envs, env.num_actions))
    mass = env.scene.engine.model_field("body_mass")[:, env.scene.model.body("object/box").id]
    assert manip.contact_found(env, ("rests",)).tolist() == [[1.0]] * 4
    press = manip.contact_force(env, ("rests",))
    assert torch.allclose(press[:, 2], -mass.float().cpu() * 9.81, rtol=0.05), press


def test_a_contact_sensor_on_a_missing_body_is_one_line(menagerie_root):
    cfg = panda_lift.env_cfg()
    cfg.scene.num_envs = 2
    cfg.scene.contact_sensors = {"touch": ContactSensorCfg("thumb", "box", entity2="object")}
    with pytest.raises(RobolearnError, match=r"the robot has no body 'thumb'; its bodies: .*hand"):
        ManagerBasedRLEnv(cfg)


def test_a_scripted_pull_opens_the_drawer(menagerie_root):
    env = _scripted(panda_open_drawer.env_cfg(), num_envs=4)
    arm = env.action_manager.terms["arm"]
    n = env.num_envs
    start_pos, start_quat = (t.clone() for t in arm.frame_pose_b())
    # the tool turned from pointing down to pointing at the drawer (+x), in small steps,
    # as differential IK follows a path, not a jump
    level = quat_from_axis_angle(torch.tensor([[0.0, math.pi / 2, 0.0]]).expand(n, 3))
    turn = axis_angle_from_quat(quat_mul(level, quat_conjugate(start_quat)))
    handle = frame_pos(env, panda_open_drawer.HANDLE, relative_to=BASE).clone()
    before = handle + torch.tensor([-0.12, 0.0, 0.0])
    for k in range(1, 61):
        f = k / 60
        _move(
            env,
            start_pos + (before - start_pos) * f,
            quat_mul(quat_from_axis_angle(turn * f), start_quat),
            1.0,
            1,
        )
    _move(env, before, level, 1.0, 20)
    _move(env, handle, level, 1.0, 40)
    _move(env, handle, level, -1.0, 25)
    _move(env, handle + torch.tensor([-0.28, 0.0, 0.0]), level, -1.0, 100)
    opened = manip.joint_opened(env, panda_open_drawer.DRAWER, panda_open_drawer.OPENED)
    assert int(opened.sum()) >= 2, manip.joint_opening(env, panda_open_drawer.DRAWER)


def _cartpole(success: SuccessTermCfg) -> ManagerBasedRLEnv:
    cfg = cartpole_balance.env_cfg()
    cfg.scene.num_envs = 8
    cfg.sim.engine = "cpu"
    cfg.terminations.pop("cart_out_of_bounds")
    cfg.terminations.pop("pole_fell")
    cfg.success = success
    return ManagerBasedRLEnv(cfg)


def _late(env, after_s: float) -> torch.Tensor:
    """True once an episode has run ``after_s`` seconds."""
    return env.episode_length_buf.float() * env.step_dt >= after_s


@pytest.mark.parametrize(
    ("after_s", "hold_s", "rate"),
    [
        (0.0, 0.0, 1.0),  # met throughout
        (10.0, 0.0, 0.0),  # never met
        (4.0, 0.5, 1.0),  # met over the last second of 5: held the last 0.5 s
        (4.0, 1.5, 0.0),  # but not the last 1.5 s
    ],
)
def test_success_rate_counts_episodes_whose_end_held_the_condition(after_s, hold_s, rate):
    env = _cartpole(SuccessTermCfg(func=_late, params={"after_s": after_s}, hold_s=hold_s))
    zero = lambda obs: torch.zeros(env.num_envs, 1)  # noqa: E731
    assert evaluate(env, zero)["success_rate"] == rate


def test_a_task_without_success_reports_none():
    env = _cartpole(None)
    assert evaluate(env, lambda obs: torch.zeros(env.num_envs, 1))["success_rate"] is None


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("env.commands.object_pose.ranges.pos_z=[0.5,0.25]", r"ranges.pos_z must be \[low, high\]"),
        ("env.success.hold_s=-1", r"success.hold_s must be a finite number >= 0"),
        ("env.success.params.threshold=0", r"success.params.threshold must be a positive number"),
    ],
)
def test_bad_manipulation_settings_exit_2_with_one_line(
    menagerie_root, capsys, tmp_path, override, message
):
    result = robolearn_in_process(
        capsys,
        "train",
        "--task",
        "panda_lift",
        "--num_envs",
        "2",
        "--max_iterations",
        "1",
        "--log_root",
        tmp_path,
        override,
    )
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert __import__("re").search(message, result.stderr), result.stderr


def test_the_pretrained_panda_lift_policy_holds_the_cubes_at_their_goals(capsys):
    """The shipped panda_lift checkpoint, evaluated as a user would (the play variant, one
    5 s episode per env), picks each cube up and holds it within 2 cm of its goal over the
    episode's last 0.5 s: measured, 64 of 64 episodes (249 of 256 with 256 envs;
    assets/pretrained/panda_lift/README.md), none dropped or pushed out of reach."""
    metrics = play_eval(
        "--task", "panda_lift", "--checkpoint", "pretrained", "--num_envs", "64", "--engine", "cpu",
        capsys=capsys,
    )  # fmt: skip
    assert metrics["episodes"] == 64, metrics
    assert metrics["success_rate"] >= 0.9, metrics
    # lifted for more than 80% of the episode time, over all envs
    cfg = panda_lift.env_cfg()
    whole_episode_lifted = cfg.rewards["lifting_object"].weight * cfg.episode_length_s
    assert metrics["reward_terms"]["lifting_object"] > 0.8 * whole_episode_lifted, metrics
    failures = metrics["terminations"]["failures"]
    assert failures["object_dropping"] == 0.0 and failures["object_out_of_reach"] == 0.0, metrics
