"""The cuda engine on a real GPU. Skipped where torch sees no CUDA device (CI, laptops); run
by benchmarks/gpu/h200_check.sh on the GPU machine."""

from __future__ import annotations

import pytest
import torch
from conftest import stand_state

from robolearn.sim import make_engine

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]


def stand(engine):
    qpos0, ctrl0 = stand_state(engine)
    engine.reset(qpos=qpos0)
    engine.ctrl[:] = ctrl0


def test_cuda_fields_are_views_of_warp_arrays(humanoid_scene):
    e = make_engine(humanoid_scene, 64, "cuda")
    assert e.name == "cuda" and e.device.type == "cuda"
    for name in ("qpos", "qvel", "ctrl", "xpos", "sensordata", "cfrc_ext"):
        assert getattr(e, name).data_ptr() == getattr(e.d, name).ptr, name
    stand(e)
    view = e.qpos
    e.ctrl[1, e.model.actuator("left_knee").id] = 2.0
    e.step(20)
    knee = e.model.jnt_qposadr[e.model.joint("left_knee").id]
    assert view[1, knee] > view[0, knee] + 0.3


def test_graph_replay_matches_plain_launches(humanoid_scene):
    graphed = make_engine(humanoid_scene, 32, "cuda", cuda_graph=True)
    plain = make_engine(humanoid_scene, 32, "cuda", cuda_graph=False)
    for e in (graphed, plain):
        stand(e)
        e.ctrl[:, 3] += 0.3
    for _ in range(25):
        graphed.step(4)
        plain.step(4)
    torch.cuda.synchronize()
    assert torch.allclose(graphed.qpos, plain.qpos, atol=1e-5)
    assert (graphed.qpos[:, 2] > 0.3).all()


def test_cuda_parity_with_the_cpu_engine(humanoid_scene):
    cpu = make_engine(humanoid_scene, 2, "cpu")
    gpu = make_engine(humanoid_scene, 2, "cuda")
    for e in (cpu, gpu):
        stand(e)
    for _ in range(50):
        cpu.step(1)
        gpu.step(1)
    a, b = cpu.qpos.float(), gpu.qpos.cpu()
    assert ((a - b).abs() / (a.abs() + 1)).max() < 5e-4


def test_task_trains_on_cuda_with_policy_and_physics_on_one_device():
    from robolearn.adapters import make_env

    env = make_env("humanoid_walk", num_envs=256, engine="cuda")
    assert env.device.type == "cuda"
    obs = env.obs_buf["policy"]
    assert obs.device.type == "cuda"
    for _ in range(20):
        obs_d, reward, *_ = env.step(torch.zeros(256, env.num_actions, device=env.device))
    assert torch.isfinite(obs_d["policy"]).all() and reward.device.type == "cuda"


def test_syncs_per_env_step_are_bounded():
    """Known: the env step synchronises at most 3 times on CUDA (the indices of resetting
    envs, of commands due for resampling, of envs due for an interval event)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "gpu"))
    from count_syncs import count_syncs

    from robolearn.adapters import make_env

    env = make_env("humanoid_walk", num_envs=1024, engine="cuda")
    result = count_syncs(env, 30)
    assert result["syncs_per_step"] <= 3.0, result
