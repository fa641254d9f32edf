"""Training health (robolearn.app.health) through the real runner and env: divergence share,
the stop on unstable physics, and non-finite rollouts named by term."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from cli_helpers import robolearn
from conftest import slider_task_cfg

from robolearn.app.health import TrainingHealth
from robolearn.env import ManagerBasedRLEnv
from robolearn.errors import RobolearnError
from robolearn.managers import (
    EventTermCfg,
    ObservationTermCfg,
    RewardTermCfg,
)
from robolearn.registry import get_task
from robolearn.rl import AgentCfg, PolicyCfg
from robolearn.rl.runner import Runner
from robolearn.wrappers.rsl_rl import RslRlVecEnv


def _agent(steps: int = 8) -> AgentCfg:
    return AgentCfg(
        num_steps_per_env=steps,
        save_interval=100,
        policy=PolicyCfg(actor_hidden_dims=(16,), critic_hidden_dims=(16,)),
    )


def _learn(runner: Runner, iterations: int, log) -> str:
    """``iterations`` of training under the application's health checks, warnings to
    ``log`` with the progress lines."""
    health = TrainingHealth.for_runner(runner, log=log)
    return runner.learn(iterations, log=log, init_at_random_ep_len=False, health=health)


def _runner(env: ManagerBasedRLEnv, run_dir: Path | None = None, steps: int = 8) -> Runner:
    return Runner(RslRlVecEnv(env), _agent(steps).to_rsl_rl(), device="cpu", run_dir=run_dir)


def _slider_env(num_envs: int) -> ManagerBasedRLEnv:
    return ManagerBasedRLEnv(slider_task_cfg("biased_slider.xml", num_envs))


def test_the_diverged_share_is_logged_and_warned_about(tmp_path):
    env = _slider_env(4)
    # env 3's actuator pushes with 1e12 N: its physics diverges in every step
    env.scene.engine.model_field("actuator_biasprm")[3, 0, 0] = 1e12
    lines: list[str] = []
    runner = _runner(env, run_dir=tmp_path)
    assert _learn(runner, 3, lines.append) == "done"
    rows = [json.loads(line) for line in (tmp_path / "progress.jsonl").read_text().splitlines()]
    assert [r["Health/diverged_share"] for r in rows] == [0.25, 0.25, 0.25]
    # a quarter is above the warning threshold (1%), below the stop (more than half)
    warnings = [line for line in lines if line.startswith("WARNING: the physics diverged")]
    assert len(warnings) == 1 and "25.0% of env steps in iteration 1" in warnings[0], lines


def test_training_stops_when_most_envs_diverge_for_several_iterations(tmp_path):
    env = _slider_env(4)
    env.scene.engine.model_field("actuator_biasprm")[1:, 0, 0] = 1e12  # 3 of 4 envs diverge
    lines: list[str] = []
    runner = _runner(env, run_dir=tmp_path)
    with pytest.raises(
        RobolearnError,
        match=r"in each of iterations 1-3 \(75% of env steps, 75% of envs in the last\)",
    ):
        _learn(runner, 10, lines.append)
    assert runner.iterations == 2  # stopped before the update of the third
    assert sum("WARNING: the physics diverged" in line for line in lines) == 2
    env.scene.engine.model_field("actuator_biasprm")[1:, 0, 0] = 0.0  # fixed: training goes on
    runner = _runner(env)
    assert _learn(runner, 2, lines.append) == "done"


def test_a_diverging_task_exits_2_with_one_error_line_through_the_cli(tmp_path):
    """cartpole under 1e12 g: every env diverges in every step. Before: exit 0 with reward 0
    and 18k MuJoCo warnings on stderr in 3 iterations."""
    out = robolearn(
        "train",
        "--task",
        "cartpole_balance",
        "--num_envs",
        64,
        "--max_iterations",
        20,
        "--log_root",
        tmp_path,
        "env.sim.gravity=[0,0,-1e12]",
    )
    assert out.returncode == 2, (out.stdout[-2000:], out.stderr[-2000:])
    err = [line for line in out.stderr.splitlines() if line.strip()]
    assert err[-1].startswith("robolearn: error: training stopped: the physics diverged"), err
    assert "Traceback" not in out.stderr
    # warnings go to stderr, apart from the progress lines
    warnings = [line for line in err if line.startswith("WARNING: the physics diverged")]
    assert "100.0% of env steps in iteration 1" in warnings[0], err
    assert "WARNING" not in out.stdout
    # MuJoCo's warnings, rate-limited: the first, and one summary with the count
    assert len([line for line in err if line.startswith("MuJoCo")]) <= 2, err
    assert "it 3/" not in out.stdout  # no update on garbage after the third iteration


def _kick(env, env_mask: torch.Tensor, speed: float) -> None:
    """An interval event: the slider of every env in ``env_mask`` gets ``speed``."""
    env.scene.engine.qvel[env_mask] = speed


def test_envs_that_all_blow_up_now_and_then_stop_training(tmp_path):
    """Every env goes past sim.max_speed once in 4 steps: 25% of env steps diverge, under
    the 50% of the step rule, but every env in every iteration does: a blown-up run, which
    before trained to the end."""
    cfg = slider_task_cfg("biased_slider.xml", 4)
    step_dt = 0.01 * cfg.decimation
    cfg.events["kick"] = EventTermCfg(
        func=_kick,
        mode="interval",
        interval_range_s=(3.5 * step_dt, 3.5 * step_dt),  # fires in every 4th step
        params={"speed": 2e4},  # m/s, beyond the default sim.max_speed of 1e4
    )
    runner = _runner(ManagerBasedRLEnv(cfg), run_dir=tmp_path)
    with pytest.raises(RobolearnError, match=r"25% of env steps, 100% of envs in the last"):
        _learn(runner, 10, lambda _line: None)
    assert runner.iterations == 2


def test_a_speed_beyond_max_speed_counts_as_diverged():
    """The speed bound, on the cpu engine: 2e4 m/s diverges (reset, counted), 5e3 does not;
    with max_speed=inf only MuJoCo's 1e10 bound is left."""
    cfg = slider_task_cfg("biased_slider.xml", 3)
    env = ManagerBasedRLEnv(cfg)
    env.scene.engine.qvel[:, 0] = torch.tensor([0.0, 5e3, 2e4], dtype=torch.float64)
    env.step(torch.zeros(3, 1))
    assert env.diverged.tolist() == [False, False, True]
    assert env.scene.engine.qvel[2].abs().max() < 1.0  # reset
    cfg.sim.max_speed = math.inf
    env = ManagerBasedRLEnv(cfg)
    env.scene.engine.qvel[:, 0] = 2e4
    env.step(torch.zeros(3, 1))
    assert not env.diverged.any()


def test_a_reset_state_that_terminates_stops_training_naming_the_term(tmp_path):
    """cartpole whose cart may only be in [2.5, 3] m, and starts near 0: every episode ends on
    its first step. Before: 10 iterations of 1-step episodes, exit 0."""
    out = robolearn(
        "train",
        "--task",
        "cartpole_balance",
        "--num_envs",
        32,
        "--max_iterations",
        10,
        "--log_root",
        tmp_path,
        "env.terminations.cart_out_of_bounds.params.bounds=[2.5,3.0]",
    )
    assert out.returncode == 2, (out.stdout[-2000:], out.stderr[-2000:])
    err = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(err) == 1 and "Traceback" not in out.stderr, err
    assert "episodes end on their first step" in err[0], err
    assert "more than 50% of env steps began an episode that ended in them" in err[0], err
    assert "cart_out_of_bounds 100%" in err[0], err
    assert "it 3/" not in out.stdout
    assert not (tmp_path / "cartpole_balance").exists()  # a run that saved nothing is removed


def _nan_for_env_1_after_3_steps(env) -> torch.Tensor:
    """An observation term with a bug: NaN in env 1 once its episode is 3 steps old."""
    value = env.scene.joint_vel.clone()
    bad = (env.episode_length_buf >= 3) & (torch.arange(env.num_envs) == 1)
    return torch.where(bad.unsqueeze(-1), torch.full_like(value, math.nan), value)


def _cartpole(edit) -> ManagerBasedRLEnv:
    cfg = get_task("cartpole_balance").make_env_cfg()
    cfg.scene.num_envs = 4
    cfg.sim.engine = "cpu"
    cfg.events = {}
    edit(cfg)
    return ManagerBasedRLEnv(cfg)


def test_a_nonfinite_observation_stops_training_naming_its_term():
    def edit(cfg):
        cfg.observations["policy"].terms["buggy"] = ObservationTermCfg(
            func=_nan_for_env_1_after_3_steps
        )

    runner = _runner(_cartpole(edit))
    with pytest.raises(RobolearnError) as error:
        _learn(runner, 3, lambda _: None)
    message = str(error.value)
    assert "observation group 'policy', term(s) observations.policy.buggy" in message, message
    assert "env 1" in message and "before the update of iteration 1" in message
    assert runner.iterations == 0


def _sqrt_of_pole_angle(env) -> torch.Tensor:
    """A reward term with a bug: the root of a number that turns negative."""
    return env.scene.joint_pos[:, 1].sqrt()


def test_a_nonfinite_reward_stops_training_naming_its_term():
    def edit(cfg):
        cfg.rewards["buggy"] = RewardTermCfg(func=_sqrt_of_pole_angle, weight=1.0)

    env = _cartpole(edit)
    env.scene.engine.qpos[:, 1] = torch.tensor([0.1, -0.1, 0.1, -0.1], dtype=torch.float64)
    runner = _runner(env)
    with pytest.raises(RobolearnError, match=r"non-finite rewards .* from reward term\(s\) buggy"):
        _learn(runner, 3, lambda _: None)
