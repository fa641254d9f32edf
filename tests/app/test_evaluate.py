"""Evaluation (robolearn.app.evaluate, ``robolearn play --eval``) for any task: per-term
reward sums, the termination breakdown, command and declared metrics, and the locomotion
keys only where a task has a velocity command."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from cli_helpers import play_eval, robolearn, run_train
from conftest import slider_task_cfg

from robolearn.app.evaluate import SCHEMA_VERSION, evaluate
from robolearn.env import ManagerBasedRLEnv, MetricTermCfg
from robolearn.errors import RobolearnError
from robolearn.managers import TerminationTermCfg
from robolearn.managers.base import ManagerTerm
from robolearn.registry import get_task

REACH = Path(__file__).parents[2] / "examples" / "reach" / "reach.py"
LOCOMOTION_KEYS = ("base_velocity/lin_vel_error", "base_velocity/ang_vel_error", "terrain")


def ends_at(env: ManagerBasedRLEnv, step: int, envs: list[int]) -> torch.Tensor:
    """(N,) bool: true for ``envs`` from their episode's ``step``-th env step on."""
    chosen = torch.zeros(env.num_envs, dtype=torch.bool, device=env.device)
    chosen[envs] = True
    return chosen & (env.episode_length_buf >= step)


def episode_steps(env: ManagerBasedRLEnv) -> torch.Tensor:
    """(N,) env steps since each env's reset: a metric whose mean over steps is known."""
    return env.episode_length_buf.float()


def first_two(env: ManagerBasedRLEnv) -> torch.Tensor:
    """(N,) bool: envs 0 and 1 (a bool metric counts as 0 and 1)."""
    return env.all_env_ids < 2


def push(num_envs: int):
    """A policy that pushes every slider with a constant force, so the velocity penalty is
    not zero."""
    return lambda obs: torch.full((num_envs, 1), 2.0)


def slider_env(**terminations: TerminationTermCfg) -> ManagerBasedRLEnv:
    """8 sliders, 50 env steps of 0.02 s an episode, with extra termination terms."""
    cfg = slider_task_cfg("biased_slider.xml", 8)
    cfg.episode_length_s = 1.0
    cfg.terminations.update(terminations)
    cfg.metrics = {
        "episode_steps": MetricTermCfg(func=episode_steps),
        "first_two": MetricTermCfg(func=first_two),
    }
    return ManagerBasedRLEnv(cfg)


def test_endings_reward_sums_and_declared_metrics_follow_the_episodes():
    """Every way an episode can end, each in known envs at a known step: one failure term
    (env 0), two failure terms at once (env 2, split between them), a failure in the step
    of the time-out (env 1: a failure), divergence (env 7: nonfinite), time-outs (4-6)."""
    env = slider_env(
        even=TerminationTermCfg(func=ends_at, params={"step": 10, "envs": [0, 2]}),
        pair=TerminationTermCfg(func=ends_at, params={"step": 10, "envs": [2, 3]}),
        late=TerminationTermCfg(func=ends_at, params={"step": 50, "envs": [1]}),
    )
    assert env.max_episode_length == 50
    env.scene.engine.model_field("actuator_biasprm")[7, 0, 0] = 1e12  # diverges in its first step
    m = evaluate(env, push(8))

    assert m["schema_version"] == SCHEMA_VERSION == 3
    assert m["terminations"] == {
        "time_outs": {"time_out": pytest.approx(3 / 8)},
        "failures": {
            "even": pytest.approx(1.5 / 8),
            "pair": pytest.approx(1.5 / 8),
            "late": pytest.approx(1 / 8),
            "nonfinite": pytest.approx(1 / 8),
        },
    }
    assert m["fall_rate"] == pytest.approx(5 / 8)
    lengths = [10, 50, 10, 10, 50, 50, 50, 1]
    assert m["mean_episode_length_s"] == pytest.approx(sum(lengths) / 8 * 0.02)

    # The per-term sums make up the return: the slider's one term is all of it.
    assert set(m["reward_terms"]) == {"vel"}
    assert m["mean_return"] < -0.01
    assert m["reward_terms"]["vel"] == pytest.approx(m["mean_return"], rel=1e-5)

    # Steps 1..L-1 of each episode count (the last one's state is the next episode's).
    counted = [L - 1 for L in lengths]
    mean_steps = sum(c * (c + 1) / 2 for c in counted) / sum(counted)
    assert m["metrics"]["episode_steps"] == pytest.approx(mean_steps)
    assert m["metrics"]["first_two"] == pytest.approx((counted[0] + counted[1]) / sum(counted))
    for key in LOCOMOTION_KEYS:
        assert key not in m  # no velocity command, no terrain


def test_a_second_evaluation_starts_afresh():
    """The breakdown is of the episodes of one evaluation, not the env's history."""
    env = slider_env(early=TerminationTermCfg(func=ends_at, params={"step": 5, "envs": [0]}))
    first, second = evaluate(env, push(8)), evaluate(env, push(8))
    assert first["terminations"] == second["terminations"]
    assert second["terminations"]["failures"]["early"] == pytest.approx(1 / 8)
    assert second["reward_terms"]["vel"] == pytest.approx(first["reward_terms"]["vel"], rel=1e-5)


class StepsSinceReset(ManagerTerm):
    """A metric with state: env steps since the term last reset each env, kept by the term
    (so equal to ``episode_steps`` when the evaluation resets it with its episodes)."""

    def __init__(self, cfg, env) -> None:
        super().__init__(cfg, env)
        self.steps = torch.zeros(env.num_envs, device=env.device)
        self.masks: list[torch.Tensor] = []

    def reset(self, env_mask: torch.Tensor) -> None:
        self.masks.append(env_mask)
        self.steps.masked_fill_(env_mask, 0.0)

    def __call__(self, env) -> torch.Tensor:
        self.steps += 1
        return self.steps.clone()


def test_a_stateful_metric_is_reset_with_a_mask_of_the_ended_episodes():
    """ManagerTerm.reset takes an (N,) bool mask: evaluate passes the envs whose episode
    ended, as the managers do (it passed their indices once, which masked_fill_ refuses)."""
    env = slider_env(early=TerminationTermCfg(func=ends_at, params={"step": 10, "envs": [0]}))
    env.cfg.metrics["own_steps"] = MetricTermCfg(func=StepsSinceReset)
    m = evaluate(env, push(8))
    assert m["metrics"]["own_steps"] == pytest.approx(m["metrics"]["episode_steps"])


def test_a_broken_metric_is_an_error_naming_it():
    cfg = slider_task_cfg("biased_slider.xml", 4)
    cfg.metrics = {"wide": MetricTermCfg(func=lambda env: torch.zeros(env.num_envs, 2))}
    with pytest.raises(RobolearnError, match=r"metrics\.wide returned \(4, 2\)"):
        evaluate(ManagerBasedRLEnv(cfg), push(4))
    cfg.metrics = {"typo": MetricTermCfg(func=first_two, params={"envs": 3})}
    with pytest.raises(RobolearnError, match=r"metrics\.typo: unknown param\(s\) envs"):
        evaluate(ManagerBasedRLEnv(cfg), push(4))


def check_sums_and_shares(m: dict, task_cfg) -> None:
    """Reward terms and endings name the task's terms, add up to the return and to 1."""
    assert m["schema_version"] == 3
    assert list(m["reward_terms"]) == list(task_cfg.rewards)
    assert sum(m["reward_terms"].values()) == pytest.approx(m["mean_return"], rel=1e-4, abs=1e-5)
    ends = m["terminations"]
    terms = task_cfg.terminations
    assert list(ends["time_outs"]) == [k for k, t in terms.items() if t.time_out]
    assert list(ends["failures"]) == [k for k, t in terms.items() if not t.time_out] + ["nonfinite"]
    shares = [*ends["time_outs"].values(), *ends["failures"].values()]
    assert all(0 <= s <= 1 for s in shares) and math.isclose(sum(shares), 1.0, abs_tol=1e-6)
    assert sum(ends["failures"].values()) == pytest.approx(m["fall_rate"], abs=1e-6)


# slow: a whole run end to end (the default suite keeps under 10 minutes)
@pytest.mark.slow
def test_reach_reports_its_objective_and_no_locomotion_keys(tmp_path):
    """The reaching example's evaluation: its command's metrics, its declared ``held``
    metric, reward terms and endings; nothing about base velocity (absent, not null)."""
    logs = tmp_path / "logs"
    run_train(
        "--import", REACH, "--task", "reach_target", "--num_envs", 16,
        "--max_iterations", 1, "--log_root", logs,
    )  # fmt: skip
    args = ("--import", REACH, "--task", "reach_target", "--log_root", logs, "--num_envs", 8)
    m = play_eval(*args, "env.episode_length_s=2")
    from robolearn.registry import import_tasks

    import_tasks([str(REACH)])
    check_sums_and_shares(m, get_task("reach_target").env_cfg())
    for key in LOCOMOTION_KEYS:
        assert key not in m
    assert m["episodes"] == 8 and m["mean_episode_length_s"] == pytest.approx(2.0)
    assert m["terminations"] == {"time_outs": {"time_out": 1.0}, "failures": {"nonfinite": 0.0}}
    assert 0.0 < m["target/position_error"] < 1.2  # m: targets are 0.25-0.55 m from the shoulder
    assert 0.0 <= m["target/reached"] <= 1.0
    assert list(m["metrics"]) == ["held"] and 0.0 <= m["metrics"]["held"] <= m["target/reached"]

    # The text form, with the metric's params overridden so that every step holds (any
    # distance within 10 m, any joint speed): the override reaches the metric.
    text = robolearn(
        "play", "--eval", *args, "env.episode_length_s=2", "env.metrics.held.params.distance=10",
        "env.metrics.held.params.joint_speed=inf",
    )  # fmt: skip
    assert text.returncode == 0, text.stderr[-2000:]
    lines = text.stdout.splitlines()
    assert any("rewards (mean episode sum):" in ln and "distance" in ln for ln in lines)
    assert any("ended by time-out:" in ln and "time_out 100.0%" in ln for ln in lines)
    assert "  task metrics (mean over steps):  held 1.0000" in lines
    assert not any("lin_vel_error" in ln or "schema_version" in ln for ln in lines)


def test_humanoid_keeps_the_locomotion_keys_and_adds_the_breakdowns(capsys):
    """The shipped humanoid_walk policy: tracking errors as before, plus the new parts."""
    m = play_eval(
        "--task", "humanoid_walk", "--checkpoint", "pretrained", "--engine", "cpu",
        "--num_envs", 8, "env.episode_length_s=2", capsys=capsys,
    )  # fmt: skip
    check_sums_and_shares(m, get_task("humanoid_walk").env_cfg())
    lin, ang = m["base_velocity/lin_vel_error"], m["base_velocity/ang_vel_error"]
    assert 0 <= lin < 1.0 and 0 <= ang < 1.5
    assert 0 <= m["fall_rate"] <= 1 and m["episodes"] == 8
    assert m["metrics"] == {} and "terrain" not in m
    assert set(m["terminations"]["failures"]) == {"base_contact", "base_too_low", "nonfinite"}
