"""The off-policy learners (``--algo td3``, ``--algo sac``): the replay buffer's n-step
returns, the distributional critic's projection, SAC's squashed density, learning on the
cartpole, and the command line end to end (train, resume, export, play, load_policy,
overlap, a learner on its own device) on the cpu engine."""

from __future__ import annotations

import json

import pytest
import torch
from cli_helpers import one_line_error, play_eval, robolearn_in_process, train_from_run

from robolearn.registry import get_task
from robolearn.rl.checkpoint import load_checkpoint
from robolearn.rl.config.offpolicy import OffPolicyCfg
from robolearn.rl.offpolicy.networks import SquashedActor, TwinCritic
from robolearn.rl.offpolicy.replay import ReplayBuffer

TASK = "cartpole_balance"
SMALL = [
    "agent.offpolicy.batch_size=256",
    "agent.offpolicy.actor_hidden_dims=[32,32]",
    "agent.offpolicy.critic_hidden_dims=[32,32]",
    "agent.offpolicy.buffer_size=4096",
]


def _filled_buffer(ended: list[bool], failed: list[bool], capacity: int) -> ReplayBuffer:
    """One env whose step t has reward t + 1, observation t and next observation t + 0.5."""
    buffer = ReplayBuffer(1, capacity, 1, 1, 1, "cpu", shared=True)
    for t, (end, fail) in enumerate(zip(ended, failed, strict=True)):
        one = torch.ones(1, 1)
        buffer.add(
            actor_obs=one * t, critic_obs=one * t, actions=one * 0, rewards=torch.tensor([t + 1.0]),
            ended=torch.tensor([end]), failed=torch.tensor([fail]),
            next_actor_obs=one * (t + 0.5), next_critic_obs=one * (t + 0.5),
        )  # fmt: skip
    return buffer


def test_n_step_returns_stop_at_an_episode_end_and_a_failure_bootstraps_nothing():
    """Every sampled transition against the sum written out by hand: 3 steps summed unless
    an episode ends first; the bootstrap is the last summed step's next observation, with
    gamma to the steps summed, or 0 where that step failed (a time-out bootstraps)."""
    gamma, n = 0.5, 3
    ended = [False, False, True, False, False, False, True, False, False, False]
    failed = [False, False, True, False, False, False, False, False, False, False]
    # 12 slots for 10 steps, then 3 more that wrap the ring over the 3 oldest
    ended += [False, True, False]
    failed += [False, False, False]
    buffer = _filled_buffer(ended, failed, capacity=10)
    batch = buffer.sample(4000, n, gamma)
    starts = batch.actor_obs.squeeze(1).long().tolist()
    assert set(starts) == set(range(3, 11)), "only steps with n stored after them start one"
    for k, t in enumerate(starts):
        summed, ret = 0, 0.0
        while True:
            ret += gamma**summed * (t + summed + 1)
            summed += 1
            if ended[t + summed - 1] or summed == n:
                break
        last = t + summed - 1
        assert batch.returns[k].item() == pytest.approx(ret)
        expected = 0.0 if failed[last] else gamma**summed
        assert batch.discount[k].item() == pytest.approx(expected)
        assert batch.next_actor_obs[k].item() == pytest.approx(last + 0.5)


def test_the_distributional_target_keeps_its_mass_and_moves_its_mean():
    """C51's projection: probabilities that sum to 1, whose mean is the return plus the
    discounted mean where the moved atoms stay inside the support, and clipped to its
    ends where they leave it."""
    cfg = OffPolicyCfg(critic="c51", v_min=-10.0, v_max=10.0, num_atoms=51)
    critic = TwinCritic(3, 2, cfg)
    logits = torch.randn(64, 51)
    returns, discount = torch.rand(64) - 0.5, torch.full((64,), 0.9)
    target = critic.project(logits, returns, discount)
    assert torch.allclose(target.sum(-1), torch.ones(64), atol=1e-5)
    mean = (logits.softmax(-1) * critic.atoms).sum(-1)
    assert torch.allclose((target * critic.atoms).sum(-1), returns + 0.9 * mean, atol=1e-4)
    beyond = critic.project(logits, torch.full((64,), 100.0), discount)
    assert torch.allclose(beyond[:, -1], torch.ones(64))


def test_sac_log_probability_is_the_squashed_gaussian_density():
    """The actor's sample and log probability against torch's own tanh-transformed
    Normal with the same mean and std."""
    from torch.distributions import Normal, TransformedDistribution
    from torch.distributions.transforms import TanhTransform

    torch.manual_seed(0)
    actor = SquashedActor(5, 3, OffPolicyCfg(obs_normalization=False), stochastic=True)
    obs = torch.randn(32, 5)
    torch.manual_seed(1)
    action, log_prob = actor.sample(obs)
    features = actor.mean[:-1](obs)
    mu = actor.mean[-1](features)
    squashed = torch.tanh(actor.log_std(features))
    std = (-5.0 + 3.5 * (squashed + 1.0)).exp()
    dist = TransformedDistribution(Normal(mu, std), [TanhTransform(cache_size=1)])
    expected = dist.log_prob(action.clamp(-1 + 1e-6, 1 - 1e-6)).sum(-1)
    assert torch.allclose(log_prob, expected, atol=2e-3)
    assert torch.allclose(actor(obs), torch.tanh(mu))  # the deterministic action


def _train_and_evaluate(capsys, tmp_path, algo: str, iterations: int) -> dict:
    out = robolearn_in_process(
        capsys, "train", "--task", TASK, "--algo", algo, "--max_iterations", str(iterations),
        "--seed", "1", "--log_root", tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    return play_eval("--task", TASK, "--log_root", tmp_path, "--num_envs", "64", capsys=capsys)


@pytest.mark.slow  # 17-31 s; PPO's cartpole learns in the default suite
def test_td3_learns_to_balance_the_cartpole_through_the_cli(tmp_path, capsys):
    """The task's own off-policy recipe (256 envs, 8 small updates per env step): 20
    iterations (82k env steps, about 15 s here) take the evaluated return from about 0.1
    (the pole drops within a second) to 4.2-4.5 of 5 (seeds 1-2; 3.3 for seed 3) for
    the policy's deterministic action. A return of 3 needs the pole up for most of the 5
    s episode."""
    metrics = _train_and_evaluate(capsys, tmp_path, "td3", 20)
    assert metrics["mean_return"] > 3.0, metrics


@pytest.mark.slow
def test_sac_learns_to_balance_the_cartpole_through_the_cli(tmp_path, capsys):
    """SAC with the same recipe, given 30 iterations (its stochastic policy explores
    longer before its mean settles): 3.7-4.9 for seeds 1-2."""
    metrics = _train_and_evaluate(capsys, tmp_path, "sac", 30)
    assert metrics["mean_return"] > 3.0, metrics


def test_overlapped_collection_and_a_learner_on_its_own_device_train(tmp_path, capsys):
    """The collector thread beside the updates, and the learner behind host slots with its
    own copy of the policy (the path of a GPU learner under the cpu engine): both run, and
    collect the env steps they say."""
    for extra in (["agent.offpolicy.overlap=true"], ["agent.offpolicy.learner_device=cpu"]):
        out = robolearn_in_process(
            capsys, "train", "--task", TASK, "--algo", "sac", "--num_envs", "16",
            "--max_iterations", "3", "--log_root", tmp_path / extra[0][16:22], *SMALL, *extra,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr[-3000:]
        (run,) = (tmp_path / extra[0][16:22] / TASK).iterdir()
        rows = [json.loads(line) for line in (run / "progress.jsonl").read_text().splitlines()]
        per_iteration = 16 * get_task(TASK).agent_cfg().num_steps_per_env
        assert [r["env_steps"] for r in rows] == [per_iteration * k for k in (1, 2, 3)]
        assert rows[-1]["Loss/updates"] > 0


def test_train_td3_then_resume_then_export_and_play(tmp_path, capsys):
    """The command line end to end, through the run driver PPO's runs take: params and
    checkpoints, --resume with the learner its checkpoint names, an export whose ONNX and
    TorchScript act as the checkpoint's actor does, play evaluating the export, and
    load_policy taking the checkpoint itself."""
    common = ["--task", TASK, "--algo", "td3", "--num_envs", "16", "--log_root", tmp_path]
    out = robolearn_in_process(
        capsys, "train", *common, "--max_iterations", "2", "agent.offpolicy.critic=c51",
        "agent.offpolicy.action_bound=2", *SMALL,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    assert "training cartpole_balance with TD3 (c51 critic, 8 updates per env step)" in out.stdout
    (run,) = (tmp_path / TASK).iterdir()
    assert sorted(p.name for p in run.glob("model_*.pt")) == ["model_2.pt"]
    ppo = [a if a != "td3" else "ppo" for a in common]
    out = robolearn_in_process(capsys, "train", *ppo, "--max_iterations", "3", "--resume")
    one_line_error(out, "was trained with --algo td3")
    without = [a for a in common if a not in ("--algo", "td3")]
    out = robolearn_in_process(capsys, "train", *without, "--max_iterations", "3", "--resume")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "(2 iterations done)" in out.stdout
    data = load_checkpoint(run / "model_3.pt")
    steps = get_task(TASK).agent_cfg().num_steps_per_env
    assert data["algo"] == "td3" and data["env_steps"] == 3 * 16 * steps
    rows = [json.loads(line) for line in (run / "progress.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == [1, 2, 3]
    # --from the run: a new run with its learner and settings, no --algo needed
    stdout, new = train_from_run(capsys, run, tmp_path / "again")
    assert "with TD3 (c51 critic, 8 updates per env step)" in stdout
    assert load_checkpoint(new / "model_1.pt")["algo"] == "td3"
    out = robolearn_in_process(capsys, "export", "--checkpoint", run / "model_3.pt")
    assert out.returncode == 0, out.stderr[-3000:]
    onnx = run / "exported" / "policy.onnx"
    report = play_eval("--task", TASK, "--checkpoint", onnx, "--num_envs", "4", capsys=capsys)
    assert report["episodes"] == 4
    from robolearn import load_policy
    from robolearn.rl.offpolicy.run import TD3

    actor, groups, width = TD3().actor(data, "model_3.pt")
    assert (groups, width) == (["policy"], 1)
    obs = torch.randn(16, 4) * 2
    with torch.no_grad():
        expected = actor(obs)
        assert torch.allclose(expected, 2 * actor.unit(obs))  # the env's range, [-2, 2]
    for path in (onnx, run / "exported" / "policy.pt", run / "model_3.pt"):
        assert torch.allclose(load_policy(path)({"policy": obs}), expected, atol=1e-5), path


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["agent.offpolicy.n_step=0"], "agent.offpolicy.n_step must be a whole number >= 1, got 0"),
        (["agent.offpolicy.critic=c52"], "agent.offpolicy.critic must be one of twin, c51"),
        (["agent.offpolicy.tau=2"], "agent.offpolicy.tau must be in [0, 1], got 2"),
        (
            ["agent.offpolicy.noise_std_min=0.5", "agent.offpolicy.noise_std_max=0.1"],
            "agent.offpolicy.noise_std_min (0.5) is above noise_std_max (0.1)",
        ),
        (["--nproc", "2"], "--algo td3 runs in one process"),
        (["agent.pipelined=true"], "--algo td3 collects beside its updates with agent.offp"),
        (["agent.obs_groups.critic=[privileged]"], "agent.obs_groups.critic names 'privileged'"),
        (["agent.offpolicy.buffer_size=100000000000"], "the replay buffer"),
        (
            ["agent.offpolicy.critic_hidden_dims=[1000000,1000000]"],
            "the learner's networks and a batch through them (agent.offpolicy.actor_hidden_dims",
        ),
        (
            ["agent.offpolicy.batch_size=5000", "agent.offpolicy.buffer_size=1000"],
            "agent.offpolicy.batch_size (5,000) is larger than the replay buffer",
        ),
        (
            ["agent.offpolicy.symmetry=true"],
            "agent.offpolicy.symmetry trains on mirrored samples, but observation term",
        ),
        (["agent.offpolicy.learner_device=cuda"], "learner_device=cuda, but torch sees no CUDA"),
    ],
)
def test_off_policy_command_errors_are_one_line_and_write_nothing(tmp_path, capsys, args, fragment):
    if "cuda" in args[0] and torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    out = robolearn_in_process(
        capsys, "train", "--task", TASK, "--algo", "td3", "--num_envs", "2",
        "--max_iterations", "1", "--log_root", tmp_path, *args,
    )  # fmt: skip
    one_line_error(out, fragment)
    assert not any(tmp_path.rglob("*")), "a failed command left files behind"


def test_a_biped_trains_with_its_privileged_critic_and_mirrored_samples(tmp_path, capsys):
    """humanoid_walk's recipe carries over: the critic reads the privileged group, the
    actor the policy group, and every sampled transition is trained on with its mirror
    image (the task's PPO augments its samples the same way)."""
    out = robolearn_in_process(
        capsys, "train", "--task", "humanoid_walk", "--algo", "td3", "--num_envs", "8",
        "--max_iterations", "1", "--log_root", tmp_path, "agent.num_steps_per_env=12",
        *SMALL[:1], "agent.offpolicy.learning_starts=4",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    assert "mirrored samples" in out.stdout
    (run,) = (tmp_path / "humanoid_walk").iterdir()
    data = load_checkpoint(run / "model_1.pt")
    env_cfg = get_task("humanoid_walk").env_cfg()
    assert set(env_cfg.observations) >= {"policy", "critic"}
    critic_in = data["model"]["critic"]["obs_norm.mean"].numel()
    actor_in = data["model"]["actor"]["obs_norm.mean"].numel()
    assert critic_in > actor_in, (critic_in, actor_in)  # the privileged group is wider
    rows = [json.loads(line) for line in (run / "progress.jsonl").read_text().splitlines()]
    assert rows[0]["Loss/updates"] == 12 - 4 + 1
