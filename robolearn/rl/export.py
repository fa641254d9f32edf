"""Exporting a policy for a robot's own computer: ONNX and TorchScript, normalizer included.

Both files map one flat observation (the actor's observation groups concatenated, in the
order ``policy.json`` lists) to the deterministic action, with rsl-rl's running observation
normalization folded into the graph. ``policy.json`` says what the observation and action
vectors hold, so a robot-side program can build them without robolearn.
"""

from __future__ import annotations

import copy
import io
import json
import statistics
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

from robolearn.errors import RobolearnError
from robolearn.files import atomic_path, write_atomic


class _ExportPolicy(torch.nn.Module):
    """normalize -> MLP -> deterministic action, on one flat observation vector."""

    def __init__(self, model) -> None:
        super().__init__()
        self.normalizer = copy.deepcopy(model.obs_normalizer).cpu().eval()
        self.mlp = copy.deepcopy(model.mlp).cpu().eval()

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.mlp(self.normalizer(obs))


def describe(env, obs_groups: list[str]) -> dict[str, Any]:
    """What the exported policy's input and output vectors hold."""
    om = env.observation_manager
    terms = []
    for group in obs_groups:
        for name, dim in om.term_dims[group].items():
            terms.append({"group": group, "term": name, "dim": dim})
    actions = []
    for name, term in env.action_manager.terms.items():
        entry = {
            "term": name,
            "type": type(term).__name__,
            "actuators": [env.scene.actuator_names[i] for i in term.actuator_ids.tolist()],
            "scale": term.cfg.scale,
        }
        if hasattr(term, "joint_ids"):
            entry["default_joint_pos"] = env.scene.default_joint_pos[0, term.joint_ids].tolist()
        actions.append(entry)
    return {
        "observation": {"dim": sum(t["dim"] for t in terms), "terms": terms},
        "action": {"dim": env.num_actions, "terms": actions},
        "control_dt_s": env.step_dt,
        "quaternion_order": "wxyz",
    }


def export_policy(runner, env, out_dir: Path, check_samples: int = 256) -> dict[str, Any]:
    """Write ``policy.onnx``, ``policy.pt`` and ``policy.json`` to ``out_dir``; check that
    ONNX agrees with torch and time one-observation inference with onnxruntime."""
    model = runner.alg.get_policy()
    if (
        model.distribution is not None
        and type(model.distribution).__name__ != "GaussianDistribution"
    ):
        raise RobolearnError(f"cannot export a {type(model.distribution).__name__} policy")
    net, dim = _ExportPolicy(model), model.obs_dim
    out_dir.mkdir(parents=True, exist_ok=True)
    scripted = _write_torchscript(net, out_dir / "policy.pt")
    _write_onnx(net, dim, out_dir / "policy.onnx")
    description = describe(env, list(model.obs_groups))
    write_atomic(out_dir / "policy.json", json.dumps(description, indent=2).encode())

    session = _onnx_session(out_dir / "policy.onnx")
    gen = torch.Generator().manual_seed(0)
    obs = 2.0 * torch.randn(check_samples, dim, generator=gen)
    with torch.no_grad():
        reference = net(obs).numpy()
        scripted_out = scripted(obs).numpy()
    onnx_out = session.run(None, {"obs": obs.numpy()})[0]
    max_diff = float(np.abs(onnx_out - reference).max())
    jit_diff = float(np.abs(scripted_out - reference).max())
    if max_diff > 1e-4 or jit_diff > 1e-5:
        raise RuntimeError(f"exported policy disagrees with torch: onnx {max_diff}, jit {jit_diff}")
    times = _latencies(session, obs[:1].numpy())
    return {
        "onnx": str(out_dir / "policy.onnx"),
        "torchscript": str(out_dir / "policy.pt"),
        "description": str(out_dir / "policy.json"),
        "obs_dim": dim,
        "action_dim": env.num_actions,
        "onnx_max_abs_diff": max_diff,
        "torchscript_max_abs_diff": jit_diff,
        "onnx_latency_us_median": statistics.median(times) * 1e6,
        "onnx_latency_us_p99": sorted(times)[int(0.99 * len(times))] * 1e6,
    }


def _write_torchscript(net: torch.nn.Module, path: Path):
    scripted = torch.jit.script(net)
    buffer = io.BytesIO()
    torch.jit.save(scripted, buffer)
    write_atomic(path, buffer.getvalue())
    return scripted


def _write_onnx(net: torch.nn.Module, dim: int, path: Path) -> None:
    with atomic_path(path) as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript-based exporter announces its age
        torch.onnx.export(
            net,
            (torch.zeros(1, dim),),
            str(tmp),
            input_names=["obs"],
            output_names=["actions"],
            dynamic_axes={"obs": {0: "batch"}, "actions": {0: "batch"}},
            opset_version=17,
            dynamo=False,
        )


def _onnx_session(path: Path):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1  # a robot's computer runs other things too
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _latencies(session, one: np.ndarray, warmup: int = 50, calls: int = 1000) -> list[float]:
    """Seconds per single-observation call, after ``warmup`` calls."""
    for _ in range(warmup):
        session.run(None, {"obs": one})
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        session.run(None, {"obs": one})
        times.append(time.perf_counter() - t)
    return times
