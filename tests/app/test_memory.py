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


def _refused(capsys, tmp_path, task: str, num_envs: int, *overrides: str):
    """``train`` of ``task`` refused in one line, with nothing written; the line."""
    out = robolearn_in_process(
        capsys, "train", "--task", task, "--num_envs", num_envs, "--log_root", tmp_path,
        *overrides,
    )  # fmt: skip
    assert out.returncode == 2 and not any(tmp_path.rglob("*")), out.stderr
    one_line_error(out, "")
    return out.stderr.strip()


@pytest.mark.parametrize(
    "task, override, message",
    [
        (
            "quadruped_walk_motors",
            "env.scene.robot.actuators.legs.delay=[0,1e9]",
            "scene.actuators.legs.delay's max of 1,000,000,000 physics steps is beyond the "
            "10,000 a lag may have",
        ),
        (
            "quadruped_walk_rough_obstacles",
            "env.scene.sensors.scan.pattern.resolution=0.0001",
            "scene.sensors.scan.pattern: a grid of (1.6, 1.0) m every 0.0001 m is 16,001 x "
            "10,001 = 160,026,001 rays per env, beyond the 4,194,304 a pattern may have",
        ),
    ],
)
def test_absurd_sizes_are_refused_where_they_are_given(tmp_path, capsys, task, override, message):
    """Before: a delay of 0-1e9 steps asked the allocator for 384 GB (a RuntimeError's
    traceback); a 0.1 mm height scan was killed at 21 GB without a word."""
    assert message in _refused(capsys, tmp_path, task, 4, override)


@pytest.mark.parametrize(
    "task, override, largest",
    [
        (
            "quadruped_walk_motors",
            "env.scene.robot.actuators.legs.delay=[0,10000]",
            "of it scene.actuators.legs.delay's ring of 10,001 commands)",
        ),
        (
            "quadruped_walk_rough_obstacles",
            "env.scene.sensors.scan.pattern.resolution=0.01",
            "of it scene.sensors.scan's 16,261 rays)",
        ),
    ],
)
def test_the_env_count_check_counts_the_scenes_buffers_and_names_the_largest(
    tmp_path, capsys, monkeypatch, task, override, largest
):
    """The check made before the engine is built counts a delay's ring of commands and a
    ray caster's rays per env (a camera's images too: tests/scene/test_sensors.py), and
    names the largest part and the setting that sizes it. Before: neither was counted,
    and 64 envs went on to be built."""
    monkeypatch.setattr(sim_memory, "available_bytes", lambda device: 32 * 2**20)
    line = _refused(capsys, tmp_path, task, 64, override)
    assert line.startswith("robolearn: error: 64 envs need about "), line
    assert largest in line and line.endswith("make that smaller, or use fewer envs (--num_envs)")


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
