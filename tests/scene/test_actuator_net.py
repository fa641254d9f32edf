"""Learned actuator nets: a net fitted to a known synthetic motor recovers its torques
through the saved file, the run-time ring feeds the net its history newest first without a
host sync, and bad files, nets and logs are refused in one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from robolearn.actuators.network import NetworkMotor, load_actuator_net, save_actuator_net
from robolearn.errors import RobolearnError
from robolearn.sim.host_sync import forbid_host_syncs

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "fit_actuator_net.py"
# the offline fit is a tool beside its script, not part of the package; scripts/ is no package
if str(SCRIPT.parent) not in sys.path:
    sys.path.append(str(SCRIPT.parent))
from actuator_net_fit import fit_actuator_net  # noqa: E402

# torch's notice that TorchScript is deprecated, at the tests' own torch.jit calls
pytestmark = pytest.mark.filterwarnings(
    r"ignore:`torch\.jit\.\w+` is deprecated:DeprecationWarning"
)

# A DC-motor-like drive with a one-step lag: the PD law on the previous step's error and
# velocity, clipped by the torque-speed line. Nonlinear (the clip) and history-dependent.
KP, KD, SATURATION, SPEED, DT = 40.0, 1.0, 15.0, 12.0, 0.005


def smooth(rng: np.random.Generator, rows: int, cols: int, amp: float, fmax: float) -> np.ndarray:
    """(rows, cols) random smooth trajectories: sums of sines up to ``fmax`` Hz."""
    t = np.arange(rows)[:, None] * DT
    out = np.zeros((rows, cols))
    for _ in range(6):
        f, phase = rng.uniform(0.2, fmax, cols), rng.uniform(0, 2 * np.pi, cols)
        out += rng.uniform(0.2, 1.0, cols) * np.sin(2 * np.pi * f * t + phase)
    return amp * out / 3.0


def motor_log(seed: int, rows: int, joints: int):
    """A log of the synthetic motor: command, position, velocity, torque, each (rows, J)."""
    rng = np.random.default_rng(seed)
    q = smooth(rng, rows, joints, 1.0, 3.0)
    qd = np.gradient(q, DT, axis=0)
    command = q + smooth(rng, rows, joints, 0.5, 6.0)
    e_prev = np.vstack([np.zeros((1, joints)), (command - q)[:-1]])
    v_prev = np.vstack([np.zeros((1, joints)), qd[:-1]])
    torque = np.clip(
        KP * e_prev - KD * v_prev,
        SATURATION * (-1.0 - v_prev / SPEED),
        SATURATION * (1.0 - v_prev / SPEED),
    )
    return command, q, qd, torque


def scripted_linear(weights: list[float]) -> torch.jit.ScriptModule:
    """A scripted Linear(len(weights), 1) without bias: out = sum w_i x_i."""
    layer = torch.nn.Linear(len(weights), 1, bias=False)
    with torch.no_grad():
        layer.weight.copy_(torch.tensor([weights]))
    return torch.jit.script(layer)


@pytest.mark.slow  # trains a net for half a minute; the loading and stepping tests stay
def test_a_learned_net_fits_a_known_synthetic_motor_and_recovers_its_torques(tmp_path):
    """~20k samples (4 joints x 5000 steps) fit with history 3 to within 5% of the torque
    std; through save and load, the motor's torques on a fresh trajectory match the law's."""
    command, q, qd, torque = motor_log(seed=0, rows=5000, joints=4)
    module, report = fit_actuator_net(command, q, qd, torque, history=3)
    std = report["torque_std"]
    assert report["validation_rmse"] < 0.05 * std, report
    assert report["train_rmse"] < 0.05 * std, report
    assert report["train_samples"] + report["validation_samples"] == 4 * (5000 - 2)

    # the same log without the history the lag needs fits much worse: the ring matters
    _, flat = fit_actuator_net(command, q, qd, torque, history=1)
    assert flat["validation_rmse"] > 3 * report["validation_rmse"], (flat, report)

    path = tmp_path / "motor.pt"
    save_actuator_net(module, path, history=3)
    net = load_actuator_net(path, history=3, device="cpu", dtype=torch.float64)
    # a fresh trajectory: 2 envs x 3 joints, stepped through the run-time ring in float64
    rows, n, k = 600, 2, 3
    c2, q2, qd2, tau2 = motor_log(seed=123, rows=rows, joints=n * k)
    motor = NetworkMotor(net, n, k, history=3, device="cpu", dtype=torch.float64)
    as_envs = [torch.from_numpy(a).reshape(rows, n, k) for a in (c2, q2, qd2)]
    got = torch.stack([motor.torque(*(a[t] for a in as_envs)) for t in range(rows)])
    assert got.dtype == torch.float64 and got.shape == (rows, n, k)
    want = torch.from_numpy(tau2).reshape(rows, n, k)
    # the first history-1 steps read zeros for the steps before the start
    rmse = torch.sqrt(torch.mean((got[2:] - want[2:]) ** 2)).item()
    assert rmse < 0.05 * std, (rmse, std)


def test_the_ring_feeds_the_net_its_history_newest_first_and_reset_clears_masked_envs():
    """A net out = e_t + 10 e_{t-1} + 100 e_{t-2} + 1000 v_t + ...: its output spells out
    exactly what the ring held at each call, per env and joint."""
    h, n, k = 3, 2, 2
    net = scripted_linear([1.0, 10.0, 100.0, 1e3, 1e4, 1e5])
    motor = NetworkMotor(net, n, k, history=h, device="cpu", dtype=torch.float64)
    zero = torch.zeros(n, k, dtype=torch.float64)

    def step(err: list, vel: list) -> torch.Tensor:
        target = torch.tensor(err, dtype=torch.float64) + 0.5  # error = target - q
        return motor.torque(target, torch.full((n, k), 0.5, dtype=torch.float64),
                            torch.tensor(vel, dtype=torch.float64))  # fmt: skip

    out = step([[1, 2], [3, 4]], [[0, 0], [0, 1]])
    torch.testing.assert_close(out, torch.tensor([[1.0, 2], [3, 1004]], dtype=torch.float64))
    out = step([[5, 6], [7, 8]], [[1, 0], [0, 0]])
    torch.testing.assert_close(out, torch.tensor([[1015.0, 26], [37, 10048]], dtype=torch.float64))
    out = step([[9, 1], [2, 3]], [[0, 2], [0, 0]])
    torch.testing.assert_close(
        out, torch.tensor([[10159.0, 2261], [372, 100483]], dtype=torch.float64)
    )
    # a fourth call: the first step leaves the ring
    out = motor.torque(zero, zero, zero)
    torch.testing.assert_close(
        out, torch.tensor([[100590.0, 20610], [720, 830]], dtype=torch.float64)
    )

    # reset env 0 only: its next torque sees this step alone, env 1 keeps its history
    motor.reset(torch.tensor([True, False]))
    out = step([[1, 1], [1, 1]], [[0, 0], [0, 0]])
    torch.testing.assert_close(out, torch.tensor([[1.0, 1], [201, 301]], dtype=torch.float64))

    # scales: inputs times pos_scale / vel_scale, the output times torque_scale
    scaled = NetworkMotor(net, 1, 1, history=h, pos_scale=2.0, vel_scale=0.5, torque_scale=3.0)
    one = torch.ones(1, 1)
    out = scaled.torque(one * 4, one, one * 2)  # e = 3, v = 2
    torch.testing.assert_close(out, 3.0 * (3.0 * 2 + 1e3 * 2 * 0.5) * one)
    assert out.dtype == torch.float32


def test_torque_and_reset_make_no_host_sync():
    """The physics-step path on the cpu engine would not wait for a GPU."""
    n, k, h = 4, 3, 3
    net = scripted_linear([0.1 * i for i in range(2 * h)])
    motor = NetworkMotor(net, n, k, history=h, device="cpu", dtype=torch.float64)
    inputs = [torch.randn(3, n, k, dtype=torch.float64) for _ in range(5)]
    mask = torch.tensor([True, False, True, False])
    waits: list[str] = []
    with forbid_host_syncs(waits):
        for target, q, qd in inputs:
            motor.torque(target, q, qd)
        motor.reset(mask)
        out = motor.torque(*inputs[0])
    assert waits == []
    assert out.shape == (n, k)


def test_bad_files_and_nets_are_refused(tmp_path):
    missing = tmp_path / "none.pt"
    with pytest.raises(RobolearnError, match=r"no such file.*TorchScript"):
        load_actuator_net(missing, history=3)

    junk = tmp_path / "junk.pt"
    junk.write_bytes(np.random.default_rng(0).bytes(2048))
    with pytest.raises(RobolearnError, match=r"does not load .*torch\.jit\.save") as info:
        load_actuator_net(junk, history=3)
    assert "\n" not in str(info.value)

    # input size: Linear(5, 1) for history 3 (which takes 6)
    narrow = tmp_path / "narrow.pt"
    torch.jit.save(torch.jit.script(torch.nn.Linear(5, 1)), str(narrow))
    with pytest.raises(RobolearnError, match=r"\(B, 6\) inputs.*raised") as info:
        load_actuator_net(narrow, history=3)
    assert "\n" not in str(info.value)

    # output shape: two numbers per joint
    wide = tmp_path / "wide.pt"
    torch.jit.save(torch.jit.script(torch.nn.Linear(6, 2)), str(wide))
    with pytest.raises(RobolearnError, match=r"gave \(2, 2\)"):
        load_actuator_net(wide, history=3)

    # the history the file records against the config's
    fitted = tmp_path / "h3.pt"
    save_actuator_net(torch.nn.Linear(6, 1), fitted, history=3)
    assert load_actuator_net(fitted, history=3)(torch.zeros(4, 6)).shape == (4, 1)
    with pytest.raises(RobolearnError, match=r"fitted for history 3.*says 2"):
        load_actuator_net(fitted, history=2)
    # no temporary file left behind
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "h3.pt",
        "junk.pt",
        "narrow.pt",
        "wide.pt",
    ]

    with pytest.raises(RobolearnError, match="history must be"):
        NetworkMotor(torch.nn.Linear(2, 1), 1, 1, history=0)


def test_bad_logs_are_refused():
    command, q, qd, torque = motor_log(seed=1, rows=200, joints=2)
    with pytest.raises(RobolearnError, match="one shape"):
        fit_actuator_net(command, q, qd, torque[:, :1], history=3)
    with pytest.raises(RobolearnError, match="too short"):
        fit_actuator_net(command[:40], q[:40], qd[:40], torque[:40], history=3)
    bad = qd.copy()
    bad[7, 1] = np.nan
    with pytest.raises(RobolearnError, match="velocity holds NaN"):
        fit_actuator_net(command, q, bad, torque, history=3)
    with pytest.raises(RobolearnError, match="history must be"):
        fit_actuator_net(command, q, qd, torque, history=0)
    with pytest.raises(RobolearnError, match="torque never changes"):
        fit_actuator_net(command, q, qd, np.full_like(torque, 1.5), history=3)


def test_the_script_fits_and_refuses_a_log_without_an_array(tmp_path):
    command, q, qd, torque = motor_log(seed=2, rows=300, joints=2)
    log = tmp_path / "log.npz"
    np.savez(log, command=command, position=q, velocity=qd, torque=torque)
    out = tmp_path / "motor.pt"
    run = subprocess.run(
        [sys.executable, str(SCRIPT), str(log), str(out), "--history", "2", "--steps", "50"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "validation" in run.stdout and len(run.stdout.strip().splitlines()) <= 2
    assert load_actuator_net(out, history=2)(torch.zeros(3, 4)).shape == (3, 1)

    partial = tmp_path / "partial.npz"
    np.savez(partial, command=command, position=q, velocity=qd)
    out2 = tmp_path / "never.pt"
    run = subprocess.run(
        [sys.executable, str(SCRIPT), str(partial), str(out2)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 2
    assert run.stderr.startswith("error: ") and "torque" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1
    assert not out2.exists()

    # a torque that never changes: refused before anything is written (it used to end in
    # a ZeroDivisionError after the net was saved)
    flat = tmp_path / "flat.npz"
    np.savez(flat, command=command, position=q, velocity=qd, torque=np.zeros_like(torque))
    out3 = tmp_path / "flat.pt"
    run = subprocess.run(
        [sys.executable, str(SCRIPT), str(flat), str(out3), "--steps", "5"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 2, run.stderr
    assert run.stderr.startswith("error: ") and "torque never changes" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1
    assert not out3.exists()
