"""``agent.policy.compile``: training with the MLPs compiled by ``torch.compile``.

Compiled training must learn what eager training learns (the same seed gives the same
parameters up to float rounding: Inductor fuses the activations), write checkpoints that a
plain runner loads, and stop with one line where the CPU has no C++ compiler to build its
kernels.
"""

from __future__ import annotations

import pytest
import torch
from cli_helpers import one_line_error, robolearn_in_process

from robolearn.app.configs import build_setup
from robolearn.env import ManagerBasedRLEnv
from robolearn.rl.checkpoint import load_checkpoint
from robolearn.rl.config import compile_problem
from robolearn.rl.runner import Runner
from robolearn.wrappers.rsl_rl import RslRlVecEnv

pytestmark = pytest.mark.skipif(
    compile_problem("cpu") is not None, reason="no C++ compiler for torch.compile"
)


def trained_runner(overrides: list[str]) -> Runner:
    setup = build_setup("cartpole_balance", overrides, num_envs=32, engine="cpu", seed=3)
    env = ManagerBasedRLEnv(setup.env_cfg)
    torch.manual_seed(3)
    agent = setup.agent_cfg.to_rsl_rl("cpu")
    runner = Runner(RslRlVecEnv(env), agent, device="cpu", meta={"agent": agent})
    runner.learn(3, log=lambda _line: None)
    return runner


# slow: a whole run end to end (the default suite keeps under 10 minutes)
@pytest.mark.slow
def test_compiled_training_learns_what_eager_training_learns(tmp_path):
    eager = trained_runner([])
    torch._dynamo.reset()
    compiled = trained_runner(["agent.policy.compile=true"])
    # compiled indeed: the MLPs run through Dynamo
    assert compiled.alg.actor.mlp._compiled_call_impl is not None
    assert eager.alg.actor.mlp._compiled_call_impl is None
    for role in ("actor", "critic"):
        mine = dict(getattr(compiled.alg, role).state_dict())
        theirs = dict(getattr(eager.alg, role).state_dict())
        assert mine.keys() == theirs.keys()
        for key, value in mine.items():
            torch.testing.assert_close(value, theirs[key], rtol=1e-4, atol=1e-4, msg=key)
    # the checkpoint is the eager runner's format: a plain runner loads it strictly
    path = tmp_path / "model_3.pt"
    compiled.save(path)
    eager.restore(load_checkpoint(path), training_state=True)
    assert eager.iterations == 3


def test_compile_without_a_cxx_compiler_stops_with_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("CXX", raising=False)
    result = robolearn_in_process(
        capsys, "train", "--task", "cartpole_balance", "--num_envs", "4",
        "--max_iterations", "1", "--log_root", tmp_path / "logs", "agent.policy.compile=true",
    )  # fmt: skip
    one_line_error(result, "needs a C++ compiler")
    assert not (tmp_path / "logs").exists()  # the run folder it made is gone
