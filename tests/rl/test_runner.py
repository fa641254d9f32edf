"""The progress line training prints each iteration (robolearn.rl.runner)."""

from __future__ import annotations

from conftest import slider_task_cfg

from robolearn.env import ManagerBasedRLEnv
from robolearn.rl import AgentCfg, PolicyCfg
from robolearn.rl.runner import Runner
from robolearn.wrappers.rsl_rl import RslRlVecEnv


def test_an_iteration_without_an_ending_episode_shows_the_last_values_or_a_dash():
    """Episodes of 12 steps, iterations of 8: none ends in iterations 1 and 4. Before, those
    lines read ``reward nan  ep_len nan``."""
    cfg = slider_task_cfg("biased_slider.xml", 4)
    cfg.episode_length_s = 12 * cfg.decimation * 0.01
    agent = AgentCfg(
        num_steps_per_env=8,
        save_interval=100,
        policy=PolicyCfg(actor_hidden_dims=(16,), critic_hidden_dims=(16,)),
    )
    runner = Runner(RslRlVecEnv(ManagerBasedRLEnv(cfg)), agent.to_rsl_rl(), device="cpu")
    lines: list[str] = []
    runner.learn(4, log=lines.append, init_at_random_ep_len=False)
    lines = [line for line in lines if line.startswith("it ")]
    assert len(lines) == 4 and not any("nan" in line for line in lines), lines
    assert "reward -  ep_len -  " in lines[0]
    shown = [line.split("reward ")[1].split("  lr")[0] for line in lines]
    assert shown[1].endswith("ep_len 12") and shown[2].endswith("ep_len 12"), shown
    assert shown[3] == shown[2]  # the last known values, carried
