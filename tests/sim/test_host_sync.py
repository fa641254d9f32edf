"""The env step never makes the host wait for the GPU, checked without a GPU.

:func:`robolearn.sim.host_sync.forbid_host_syncs` raises at every op that would synchronise
on CUDA (a tensor read as a number, ``nonzero``, boolean-mask indexing, a tensor made from
Python data...). Each shipped task's step runs under it through every path a step can take:
episodes ending by failure and by time-out, interval pushes, command resampling, the
curriculum; on the cpu engine (whose own MuJoCo calls are host-side by design) and, for
one task, on the Warp engine's code path (warp-cpu).
"""

from __future__ import annotations

import pytest
import torch
from cli_helpers import local_robot_overrides

from robolearn.managers import EventTermCfg
from robolearn.registry import task_names
from robolearn.sim.host_sync import HostSyncError, forbid_host_syncs, host_syncs_allowed
from robolearn.wrappers import make_env


def test_the_guard_catches_each_kind_of_wait_and_names_the_line():
    x = torch.arange(6.0)
    waits = [
        lambda: x.sum().item(),
        lambda: bool((x > 2).any()),
        lambda: float(x[0]),
        lambda: x.nonzero(),
        lambda: x[x > 2],
        lambda: x.__setitem__(x > 2, 0.0),
        lambda: torch.tensor([1.0, 2.0]),
        lambda: x.tolist(),
        lambda: x.cpu(),
        lambda: torch.where(x > 2),
    ]
    for wait in waits:
        with forbid_host_syncs(), pytest.raises(HostSyncError, match=r"test_host_sync\.py:\d+"):
            wait()
    # sync-free forms of the same work pass
    with forbid_host_syncs():
        y = torch.where(x > 2, x, 0.0)
        y.masked_fill_(x < 1, -1.0)
        y[torch.arange(2)] = 5.0  # indices made on the device
        torch.as_tensor(y)
        with host_syncs_allowed():
            x.nonzero()


def _drive(env, steps: int) -> None:
    """Steps through which every path of the env step is taken: half the envs time out,
    pushes fall due, commands resample, random actions topple robots (failures)."""
    gen = torch.Generator().manual_seed(0)
    n = env.num_envs
    for i in range(steps):
        if i % 4 == 1:
            env.episode_length_buf[: n // 2] = env.max_episode_length - 1
        for timers in env.event_manager._time_left.values():
            timers[i % n] = 0.0
        for term in env.command_manager.terms.values():
            term.time_left[(i + 1) % n] = 0.0
        env.step(2.0 * torch.randn(n, env.num_actions, generator=gen))


@pytest.mark.parametrize("task", task_names())
def test_every_tasks_step_is_free_of_host_waits(task):
    env = make_env(task, num_envs=8, engine="cpu", overrides=local_robot_overrides(task))
    _drive(env, 6)  # first uses fill caches (name lookups, event ranges) once
    waits: list[str] = []
    with forbid_host_syncs(waits):
        _drive(env, 12)
    assert waits == []
    assert int(env.termination_manager.last_episode_dones.sum()) > 0  # episodes ended


def test_the_warp_engines_step_is_free_of_host_waits():
    env = make_env("humanoid_walk", num_envs=4, engine="warp-cpu")
    _drive(env, 4)
    waits: list[str] = []
    with forbid_host_syncs(waits):
        _drive(env, 6)
    assert waits == []


def _counting_event(env, env_mask) -> None:
    """A user's reset event written the index way: it works, and waits for the GPU."""
    env.scene.engine.qvel[env_mask.nonzero().flatten(), 0] = 0.0


def test_a_users_term_that_waits_is_named_by_the_guard():
    env = make_env("cartpole_balance", num_envs=4, engine="cpu")
    env.cfg.events["slow"] = EventTermCfg(func=_counting_event, mode="reset")
    env.event_manager._terms["slow"] = _counting_event
    env.episode_length_buf[0] = env.max_episode_length - 1  # an episode ends: resets run
    with forbid_host_syncs(), pytest.raises(HostSyncError, match="_counting_event"):
        env.step(torch.zeros(4, env.num_actions))
