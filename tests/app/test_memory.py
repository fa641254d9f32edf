"""Env counts too large for the machine are refused before anything is allocated
(robolearn.sim.memory, robolearn.rl.ppo_memory), with a line that says how much they need."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from cli_helpers import one_line_error, robolearn, robolearn_in_process

import robolearn.sim.memory as sim_memory


def test_ten_million_envs_are_refused_with_what_they_need_and_no_run_folder(tmp_path):
    """Before: grew until the kernel killed it (exit 137, no message), an empty run folder
    left behind."""
    out = robolearn(
        "train", "--task", "humanoid_walk", "--num_envs", 10_000_000, "--log_root", tmp_path
    )
    one_line_error(out, "10,000,000 envs need about ")
    assert "GiB of memory (" in out.stderr and "GiB available; use fewer envs" in out.stderr
    assert not (tmp_path / "humanoid_walk").exists()


def test_training_that_does_not_fit_beside_its_env_is_refused(tmp_path, capsys, monkeypatch):
    """The env fits, its rollout and update do not: refused once the env is built (its
    observation sizes known), before the run folder is made. The machine's free memory is
    set low here; the estimates are the real ones."""
    monkeypatch.setattr(sim_memory, "available_bytes", lambda device: 64 * 2**20)
    out = robolearn_in_process(
        capsys,
        "train",
        "--task",
        "cartpole_balance",
        "--num_envs",
        20_000,
        "--log_root",
        tmp_path,
    )
    one_line_error(out, "training 20,000 envs (rollout storage and the PPO update) need about ")
    assert "64.0 MiB available" in out.stderr
    assert not (tmp_path / "cartpole_balance").exists()


def test_networks_too_wide_for_the_machine_are_refused_by_their_fields(tmp_path, capsys):
    """Hidden layers of a million units (16 TiB as trained) are refused with the fields
    that size them, not an allocator's traceback, and nothing is written."""
    out = robolearn_in_process(
        capsys, "train", "--task", "cartpole_balance", "--num_envs", 8, "--log_root", tmp_path,
        "agent.policy.actor_hidden_dims=[1000000,1000000]",
    )  # fmt: skip
    one_line_error(
        out, "the policy's networks (agent.policy.actor_hidden_dims, critic_hidden_dims) need"
    )
    assert not any(tmp_path.rglob("*"))


_PEAK = """
import json, resource, sys
from robolearn.wrappers.rsl_rl import RslRlVecEnv
from robolearn.env import ManagerBasedRLEnv
from robolearn.rl.ppo_memory import training_bytes_per_env
from robolearn.rl.runner import Runner
from robolearn.app.configs import build_setup
from robolearn.sim.memory import field_bytes_per_env, model_field_bytes_per_env

def resident():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
setup = build_setup(sys.argv[1], [], num_envs=int(sys.argv[2]), engine="cpu")
before = resident()
env = ManagerBasedRLEnv(setup.env_cfg)
built = resident()
Runner(RslRlVecEnv(env), setup.agent_cfg.to_rsl_rl("cpu"), device="cpu").learn(
    1, log=lambda _: None)
model = env.scene.engine.model
dims = {g: sum(d.values()) for g, d in env.observation_manager.term_dims.items()}
print(json.dumps({
    "env": (built - before) * 1024, "training": (peak() - built) * 1024,
    "env_estimate": env.num_envs * (1.5 * field_bytes_per_env(model)
        + model_field_bytes_per_env(model, env.scene.engine.per_env_fields)),
    "training_estimate": env.num_envs * training_bytes_per_env(
        setup.agent_cfg, dims, env.num_actions),
}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("task", ["humanoid_walk", "quadruped_walk"])
def test_the_estimates_are_near_what_the_process_takes(task):
    """Resident memory the env takes, and the peak training adds, grown between 512 and
    4096 envs, against the estimates' growth: within a factor of 1.6 under and 1.8 over
    (measured: 0.9-1.6; the env's estimate counts a copy per env of every per-env model
    field, of which a task's events expand only those they randomize)."""
    runs = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", _PEAK, task, str(n)],
                capture_output=True,
                text=True,
                check=True,
                timeout=600,
            ).stdout.splitlines()[-1]
        )
        for n in (512, 4096)
    ]
    for part in ("env", "training"):
        measured = runs[1][part] - runs[0][part]
        estimated = runs[1][f"{part}_estimate"] - runs[0][f"{part}_estimate"]
        assert 1 / 1.6 < estimated / measured < 1.8, (task, part, estimated, measured)
