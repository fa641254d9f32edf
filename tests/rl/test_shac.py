"""The differentiable learner: a task's env stepped with gradients, SHAC on it, its command
line and its refusals; on newton-cpu (warp's CPU device) with Featherstone."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest
import torch
from cli_helpers import one_line_error, play_eval, robolearn_in_process, train_from_run

from robolearn import mdp
from robolearn.env import ManagerBasedRLEnv
from robolearn.errors import RobolearnError
from robolearn.managers import ObservationTermCfg, RewardTermCfg
from robolearn.registry import get_task
from robolearn.rl.checkpoint import load_checkpoint
from robolearn.rl.config import ShacCfg
from robolearn.rl.shac import DifferentiableRollout, ShacLearner
from robolearn.scene import NewtonCfg, SimCfg

pytestmark = pytest.mark.warp

TASK = "cartpole_balance"
# 5 ms Featherstone steps: the cartpole has no contacts, and its steps' gradients match
# finite differences there as at 1 ms (tests/sim/test_newton_grad.py)
SOLVER = NewtonCfg(solver="featherstone", substeps=2, differentiable=True)


def cartpole_cfg(num_envs: int, seed: int = 0, **sim):
    cfg = get_task(TASK).env_cfg()
    cfg.scene = replace(cfg.scene, num_envs=num_envs)
    cfg.sim = SimCfg(engine="newton-cpu", newton=replace(SOLVER, **sim))
    cfg.seed = seed
    return cfg


@pytest.fixture(scope="module")
def env():
    env = ManagerBasedRLEnv(cartpole_cfg(8))
    env.reset()
    return env


def test_rollout_values_are_the_envs_and_the_reward_has_a_gradient(env):
    """What the rollout hands out is what the env computed (controls, rewards, observations);
    what it adds is the gradient from the actions to them."""
    rollout = DifferentiableRollout(env)
    actions = torch.full((8, 1), 0.3, requires_grad=True)
    total = torch.zeros(())
    for _ in range(5):
        ctrl = rollout.ctrl_of(actions)
        step = rollout.step(actions)
        assert torch.equal(ctrl.detach(), env.scene.command)  # the env wrote the same ctrl
        total = total + step.reward.sum()
        assert torch.equal(step.obs.detach(), env.obs_buf["policy"])
    (grad,) = torch.autograd.grad(total, actions)
    assert torch.isfinite(grad).all() and grad.abs().min() > 0


def test_reward_matches_the_envs_reward_manager(env):
    rollout = DifferentiableRollout(env)
    for _ in range(3):
        step = rollout.step(torch.randn(8, 1))
        # the rollout's own evaluation of the terms, before the straight-through sum
        qpos, qvel = env.scene.engine.grad_outputs
        ours = rollout._reward(qpos, qvel, env.action_manager.action, None)
        assert torch.allclose(ours, step.reward.detach(), atol=1e-6)


def test_a_reset_cuts_the_gradient(env):
    """An env whose episode ended starts afresh: its next state has no gradient path to the
    actions before the reset, while the others keep theirs."""
    rollout = DifferentiableRollout(env)
    for output in ("obs", "final_obs"):
        env.episode_length_buf[:] = 0
        env.episode_length_buf[:4] = env.max_episode_length - 1  # 4 envs time out next step
        actions = torch.zeros(8, 1, requires_grad=True)
        step = rollout.step(actions)
        assert step.time_outs[:4].all() and not step.time_outs[4:].any()
        (grad,) = torch.autograd.grad(getattr(step, output).sum(), actions)
        if output == "obs":
            assert (grad[:4] == 0).all() and (grad[4:] != 0).all()
        else:  # the episode's last observation, before the reset, keeps it
            assert (grad != 0).all()


def test_scene_reads_the_state_it_is_given(env):
    scene = env.scene
    qpos = scene.engine.qpos.clone().requires_grad_()
    qvel = scene.engine.qvel.clone()
    engine_view = scene.joint_pos.clone()
    with scene.reading_state(qpos * 2.0, qvel):
        assert torch.allclose(scene.joint_pos, engine_view * 2.0)
        (grad,) = torch.autograd.grad(scene.joint_pos.sum(), qpos)
    assert torch.equal(grad, torch.full_like(grad, 2.0))
    assert torch.equal(scene.joint_pos, engine_view)  # the engine's again, not a stale cache


def test_terms_the_gradient_cannot_pass_are_refused_by_name():
    cfg = cartpole_cfg(2)
    cfg.rewards["accel"] = RewardTermCfg(func=mdp.joint_acc_l2, weight=-1e-3)
    with pytest.raises(RobolearnError, match=r"rewards.accel \(joint_acc_l2\) is not diff"):
        DifferentiableRollout(ManagerBasedRLEnv(cfg))
    cfg.rewards["accel"].weight = 0.0  # a term switched off is no obstacle
    cfg.observations["policy"].terms["joint_pos"] = ObservationTermCfg(
        func=mdp.joint_pos_rel, history_length=3
    )
    with pytest.raises(RobolearnError, match="joint_pos has a history or a latency"):
        DifferentiableRollout(ManagerBasedRLEnv(cfg))


def test_an_env_without_gradients_is_refused():
    cfg = cartpole_cfg(2, differentiable=False)
    with pytest.raises(RobolearnError, match="needs a Newton engine built for gradients"):
        DifferentiableRollout(ManagerBasedRLEnv(cfg))


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("horizon", 0, "agent.shac.horizon must be a whole number >= 1, got 0"),
        ("horizon", -4, "agent.shac.horizon must be a whole number >= 1, got -4"),
        ("actor_learning_rate", math.nan, "agent.shac.actor_learning_rate must be a number > 0"),
        ("max_step_gain", 0.5, "agent.shac.max_step_gain must be a number >= 1"),
        ("gamma", 1.5, "agent.shac.gamma must be in [0, 1]"),
    ],
)
def test_bad_learner_settings_are_refused(field, value, fragment):
    with pytest.raises(RobolearnError, match=fragment.replace("[", r"\[").replace("]", r"\]")):
        replace(ShacCfg(), **{field: value}).validate()


@pytest.mark.slow
def test_shac_learns_to_balance_the_cartpole():
    """32 envs, 25 iterations of 32 steps (26k env steps, about 30 s here): the episodes
    (250 steps, return 5 when balanced throughout) go from under a second to balanced.
    Behind ``-m slow``: the default suite's learning proof is PPO's cartpole
    (tests/app/test_train.py); SHAC's gradients are checked against finite differences
    in tests/sim/test_newton_grad.py and its runs below."""
    env = ManagerBasedRLEnv(cartpole_cfg(32, seed=1))
    env.reset()
    learner = ShacLearner(env, ShacCfg(horizon=32), max_iterations=25)
    logs = learner.learn(25)
    first = [log.mean_return for log in logs[:3] if not math.isnan(log.mean_return)]
    late = [log.mean_return for log in logs[-5:] if not math.isnan(log.mean_return)]
    assert max(first) < 1.0, first
    assert late and max(late) > 3.5, [round(log.mean_return, 2) for log in logs]
    assert all(math.isfinite(log.grad_norm) for log in logs)


def test_train_shac_then_resume_then_export_and_play_on_mujoco(tmp_path, capsys):
    """The command line end to end, through the one run driver PPO's runs take: a SHAC
    run writes params and checkpoints, --resume continues it with the learner its
    checkpoint names, export writes its actor as ONNX and TorchScript that act as the
    checkpoint does, and play evaluates the exported policy on the cpu engine (MuJoCo:
    sim-to-sim). In this process: the commands are the CLI's ``main``, without four
    interpreters starting and compiling Newton's kernels again."""
    common = ["--task", TASK, "--algo", "shac", "--num_envs", "8", "--log_root", tmp_path]
    out = robolearn_in_process(
        capsys, "train", *common, "--max_iterations", "2",
        "agent.shac.horizon=8", "env.sim.newton.substeps=2",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    assert "training cartpole_balance with SHAC (featherstone" in out.stdout
    assert ": 8 envs on newton-cpu (cpu)" in out.stdout
    (run,) = (tmp_path / TASK).iterdir()
    assert sorted(p.name for p in run.glob("model_*.pt")) == ["model_2.pt"]
    records = [json.loads(line) for line in (run / "progress.jsonl").read_text().splitlines()]
    assert [r["env_steps"] for r in records] == [64, 128]
    # the checkpoint says which learner resumes it: naming another is an error, none is fine
    ppo = [a if a != "shac" else "ppo" for a in common]
    out = robolearn_in_process(capsys, "train", *ppo, "--max_iterations", "3", "--resume")
    one_line_error(out, "was trained with --algo shac")
    without = [a for a in common if a not in ("--algo", "shac")]
    out = robolearn_in_process(capsys, "train", *without, "--max_iterations", "3", "--resume")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "(2 iterations done)" in out.stdout and (run / "model_3.pt").is_file()
    assert load_checkpoint(run / "model_3.pt")["algo"] == "shac"
    # --from the run: a new SHAC run with its settings, no --algo needed
    stdout, new = train_from_run(capsys, run, tmp_path / "again")
    assert "training cartpole_balance with SHAC (featherstone" in stdout
    assert load_checkpoint(new / "model_1.pt")["algo"] == "shac"
    out = robolearn_in_process(capsys, "export", "--checkpoint", run / "model_3.pt")
    assert out.returncode == 0, out.stderr[-3000:]
    onnx = run / "exported" / "policy.onnx"
    report = play_eval(
        "--task", TASK, "--checkpoint", onnx, "--num_envs", "4", "--engine", "cpu",
        capsys=capsys,
    )  # fmt: skip
    assert report["episodes"] == 4
    # the exported file acts as the checkpoint's actor does (its mean action)
    from robolearn import load_policy
    from robolearn.rl.config import ShacCfg as Cfg
    from robolearn.rl.shac import ShacActor

    data = load_checkpoint(run / "model_3.pt")
    actor = ShacActor(4, 1, replace(Cfg(), **data["agent"]["shac"]))
    actor.load_state_dict(data["model"]["actor"])
    obs = torch.randn(16, 4)
    exported = load_policy(onnx)
    assert torch.allclose(exported({"policy": obs}), actor(obs, deterministic=True), atol=1e-5)
    # and load_policy takes the checkpoint itself, as it takes a PPO one
    checkpoint = load_policy(run / "model_3.pt")
    assert torch.allclose(checkpoint({"policy": obs}), actor(obs, deterministic=True), atol=1e-5)


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--engine", "cpu"], "--algo shac trains through Newton's differentiable solvers"),
        (["agent.shac.horizon=0"], "agent.shac.horizon must be a whole number >= 1, got 0"),
        (
            ["agent.shac.horizon=100000"],  # its tape grew past 12 GiB before this refusal
            "agent.shac.horizon (100,000 steps) is longer than an episode of this task (250",
        ),
        (["env.sim.newton.solver=mujoco"], "Newton's mujoco solver is not differentiable"),
        (["env.sim.newton.solver=xpbd"], "Newton's xpbd solver is not differentiable"),
        (["--nproc", "2"], "--algo shac runs in one process"),
        (["agent.pipelined=true"], "--algo shac differentiates through its own rollout"),
        (
            ["env.sim.newton.friction_stiffness=0"],
            "env.sim.newton.friction_stiffness must be a number > 0, got 0",
        ),
        (
            ["--task", "quadruped_walk"],  # its reward terms include one on accelerations
            "rewards.joint_acc (joint_acc_l2) is not differentiable",
        ),
    ],
)
def test_shac_command_errors_are_one_line_and_write_nothing(tmp_path, capsys, args, fragment):
    out = robolearn_in_process(
        capsys, "train", "--task", TASK, "--algo", "shac", "--num_envs", "2",
        "--max_iterations", "1", "--log_root", tmp_path, *args,
    )  # fmt: skip
    one_line_error(out, fragment)
    assert not any(tmp_path.rglob("*")), "a failed command left files behind"


def test_the_viewer_acts_with_a_shac_checkpoint(tmp_path):
    """``robolearn view --checkpoint`` of a SHAC run: its actor's mean action, on whatever
    engine the viewer runs (here cpu)."""
    from dataclasses import asdict

    from robolearn.rl.checkpoint import save_checkpoint
    from robolearn.rl.shac import ShacActor
    from robolearn.viewer.live_state import PolicyActions

    cfg = get_task(TASK).env_cfg()
    cfg.scene = replace(cfg.scene, num_envs=3)
    cfg.sim = SimCfg(engine="cpu")
    env = ManagerBasedRLEnv(cfg)
    env.reset()
    actor = ShacActor(4, 1, ShacCfg())
    actor.obs_norm.update(torch.randn(64, 4) * 3.0)
    path = tmp_path / "model_1.pt"
    agent = {"shac": asdict(ShacCfg())}
    save_checkpoint(
        path, {"algo": "shac", "task": TASK, "agent": agent, "iterations": 1,
               "model": {"actor": actor.state_dict()}},
    )  # fmt: skip
    actions = PolicyActions(env, path, task=TASK)(env)
    expected = actor(env.obs_buf["policy"], deterministic=True)
    assert torch.allclose(actions, expected, atol=1e-6)
