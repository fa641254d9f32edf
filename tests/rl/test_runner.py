"""How a training run starts and reports: the progress line each iteration prints
(robolearn.rl.runner), and episodes spread at the start of a new or resumed run (both
learners)."""

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


def _slider(num_envs: int) -> ManagerBasedRLEnv:
    """Episodes of 500 steps that end only by time-out: nothing spreads them but the learner."""
    return ManagerBasedRLEnv(slider_task_cfg("biased_slider.xml", num_envs))


def _distinct_lengths_at_first_step(env: ManagerBasedRLEnv, learn) -> int:
    seen: list[int] = []

    def first_step(*_args) -> None:
        if not seen:
            seen.append(len(set(env.episode_length_buf.tolist())))

    learn(first_step)
    return seen[0]


def test_a_resumed_run_spreads_its_episodes_as_a_new_run_does(tmp_path):
    """A resumed run (a preempted job's) starts on a new env whose episodes all stand at
    step 0. Before, only iteration 0 spread them, so after --resume every env timed out in
    the same step from then on and each rollout saw one phase of the task."""
    agent = AgentCfg(
        num_steps_per_env=4,
        save_interval=100,
        policy=PolicyCfg(actor_hidden_dims=(16,), critic_hidden_dims=(16,)),
    ).to_rsl_rl()
    env = _slider(32)
    first = Runner(RslRlVecEnv(env), agent, device="cpu", meta={"agent": agent})
    fresh = _distinct_lengths_at_first_step(
        env, lambda step: first.learn(1, on_step=step, log=lambda _line: None)
    )
    first.save(tmp_path / "model_1.pt")
    env = _slider(32)
    resumed = Runner(RslRlVecEnv(env), agent, device="cpu", meta={"agent": agent})
    resumed.load(tmp_path / "model_1.pt")
    assert resumed.iterations == 1
    again = _distinct_lengths_at_first_step(
        env, lambda step: resumed.learn(2, on_step=step, log=lambda _line: None)
    )
    assert fresh > 16 and again > 16, (fresh, again)  # lockstep: one value


def test_an_off_policy_learner_spreads_the_episodes_of_a_resumed_run():
    """The off-policy learner, restored from its state as --resume restores it."""
    from robolearn.rl.offpolicy.learner import OffPolicyLearner

    agent = AgentCfg(num_steps_per_env=4)
    agent.offpolicy.learning_starts = 2
    agent.offpolicy.batch_size = 16
    agent.offpolicy.actor_hidden_dims = agent.offpolicy.critic_hidden_dims = (16,)
    first = OffPolicyLearner.for_agent(_slider(8), agent, "td3")
    first.learn_iteration(4)
    state = first.state_dict()
    env = _slider(8)
    resumed = OffPolicyLearner.for_agent(env, agent, "td3")
    resumed.load_state_dict(state)
    assert resumed.iteration == 1
    distinct = _distinct_lengths_at_first_step(
        env, lambda step: resumed.learn_iteration(2, on_step=step)
    )
    assert distinct > 4, distinct
