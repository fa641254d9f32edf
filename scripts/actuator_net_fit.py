"""The offline fit of a learned actuator net: a small MLP fitted to a log of a real drive.

A tool, not run-time code: ``scripts/fit_actuator_net.py`` runs it on a log and saves the
net with :func:`robolearn.actuators.network.save_actuator_net`; the simulation only loads
the file (:mod:`robolearn.actuators.network` states the input convention both follow).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from robolearn.actuators.network import check_history, quiet_jit
from robolearn.errors import RobolearnError
from robolearn.threads import single_threaded

_MIN_SAMPLES = 50
"""The fewest samples per joint a fit takes: 40 to train on, 10 to validate."""


class _ActuatorMLP(nn.Module):
    """An MLP with softsign activations between normalised inputs and outputs: the saved
    net takes raw position errors (rad) and velocities (rad/s), gives torques (N m)."""

    def __init__(self, inputs: int, hidden: Sequence[int]) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width = inputs
        for size in hidden:
            layers += [nn.Linear(width, size), nn.Softsign()]
            width = size
        layers.append(nn.Linear(width, 1))
        self.mlp = nn.Sequential(*layers)
        self.register_buffer("in_mean", torch.zeros(inputs))
        self.register_buffer("in_std", torch.ones(inputs))
        self.register_buffer("out_mean", torch.zeros(1))
        self.register_buffer("out_std", torch.ones(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.mlp((x - self.in_mean) / self.in_std) * self.out_std + self.out_mean


def fit_actuator_net(
    command: np.ndarray,
    position: np.ndarray,
    velocity: np.ndarray,
    torque: np.ndarray,
    history: int,
    hidden: Sequence[int] = (32, 32, 32),
    steps: int = 3000,
    lr: float = 3e-3,
    seed: int = 0,
) -> tuple[torch.jit.ScriptModule, dict[str, float]]:
    """Fit an actuator net to a log of one motor type at the physics rate.

    The four arrays are (T, J) (or (T,) for one joint): each column one joint's position
    command, measured position, velocity and torque, row t one physics step. Samples are
    every row t >= history - 1 of every joint (the module docstring's input convention);
    the first 80 % of the rows train, the last 20 % validate (a stretch of time the fit
    never saw, as the simulation will be). Inputs and torques are normalised by the
    training samples' mean and std, and that normalisation is baked into the returned
    (TorchScript, eval mode) module, so it takes raw errors and velocities and gives N m.
    The MLP (``hidden`` widths, softsign activations, the ANYmal recipe) trains with Adam on
    minibatches, ``lr`` decaying to zero along a cosine over ``steps``.

    The report: ``train_rmse`` and ``validation_rmse`` (N m), ``torque_std`` (N m, of all
    samples, for scale), the sample counts and the history. RobolearnError for arrays of
    different shapes, NaN or inf, a torque that never changes, fewer than history + 49 rows,
    history < 1, or bad hidden widths, steps or lr.
    """
    history = check_history(history, "fit_actuator_net")
    arrays = _log_arrays(command, position, velocity, torque, history)
    hidden = _fit_settings(hidden, steps, lr)
    x, y = _samples(*arrays, history)  # (R, J, 2h), (R, J)
    split = round(0.8 * x.shape[0])
    x_train, y_train = x[:split].reshape(-1, 2 * history), y[:split].reshape(-1, 1)
    x_val, y_val = x[split:].reshape(-1, 2 * history), y[split:].reshape(-1, 1)

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = _ActuatorMLP(2 * history, hidden)
    xt, yt = torch.from_numpy(x_train).float(), torch.from_numpy(y_train).float()
    model.in_mean.copy_(xt.mean(0))
    model.in_std.copy_(_std(xt))
    model.out_mean.copy_(yt.mean(0))
    model.out_std.copy_(_std(yt))
    xn = (xt - model.in_mean) / model.in_std
    yn = (yt - model.out_mean) / model.out_std
    _train(model.mlp, xn, yn, steps, float(lr), seed)
    model.eval()

    with quiet_jit():
        module = torch.jit.script(model)
    module.eval()
    report = {
        "train_rmse": _rmse(module, x_train, y_train),
        "validation_rmse": _rmse(module, x_val, y_val),
        "torque_std": float(np.std(y)),
        "train_samples": int(x_train.shape[0]),
        "validation_samples": int(x_val.shape[0]),
        "history": history,
    }
    return module, report


def _fit_settings(hidden: Sequence[int], steps: int, lr: float) -> tuple[int, ...]:
    """The hidden widths as a tuple; RobolearnError for bad widths, steps or lr."""
    widths = tuple(hidden)
    if not widths or not all(
        isinstance(w, int) and not isinstance(w, bool) and w > 0 for w in widths
    ):
        raise RobolearnError(f"fit_actuator_net: hidden must be layer widths >= 1, got {hidden!r}")
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
        raise RobolearnError(f"fit_actuator_net: steps must be a whole number >= 1, got {steps!r}")
    if not isinstance(lr, int | float) or not 0 < lr < math.inf:
        raise RobolearnError(f"fit_actuator_net: lr must be a number > 0, got {lr!r}")
    return widths


def _train(
    mlp: nn.Module, x: torch.Tensor, y: torch.Tensor, steps: int, lr: float, seed: int
) -> None:
    """Adam on minibatches of 1024 (normalised) samples, ``lr`` decaying to zero along a
    cosine over ``steps``."""
    generator = torch.Generator().manual_seed(seed)
    batch = min(1024, x.shape[0])
    optimizer = torch.optim.Adam(mlp.parameters(), lr=lr)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps)
    mlp.train()
    # one thread: layers this small lose more to the threads' waits than they gain, and far
    # more beside other busy processes (robolearn.threads)
    with single_threaded():
        for _ in range(steps):
            pick = torch.randint(0, x.shape[0], (batch,), generator=generator)
            loss = torch.mean((mlp(x[pick]) - y[pick]) ** 2)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            schedule.step()
    mlp.eval()


def _log_arrays(
    command, position, velocity, torque, history: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The log's four arrays as (T, J) float64, checked."""
    names = ("command", "position", "velocity", "torque")
    out = []
    for name, value in zip(names, (command, position, velocity, torque), strict=True):
        try:
            a = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise RobolearnError(f"fit_actuator_net: {name} is not an array of numbers") from None
        if a.ndim == 1:
            a = a[:, None]
        if a.ndim != 2 or a.shape[1] < 1:
            raise RobolearnError(
                f"fit_actuator_net: {name} must be (T, J) (rows the physics steps, a column "
                f"per joint) or (T,), got shape {np.shape(value)}"
            )
        if not np.isfinite(a).all():
            raise RobolearnError(f"fit_actuator_net: {name} holds NaN or inf")
        out.append(a)
    shapes = {name: a.shape for name, a in zip(names, out, strict=True)}
    if len(set(shapes.values())) > 1:
        listed = ", ".join(f"{n} {s}" for n, s in shapes.items())
        raise RobolearnError(f"fit_actuator_net: the four arrays must have one shape, got {listed}")
    rows = out[0].shape[0]
    if rows < history - 1 + _MIN_SAMPLES:
        raise RobolearnError(
            f"fit_actuator_net: a log of {rows} rows is too short for history {history}; it "
            f"needs at least {history - 1 + _MIN_SAMPLES} (history + {_MIN_SAMPLES - 1})"
        )
    if np.ptp(out[3][history - 1 :]) == 0:  # the samples' torques (rows t >= history - 1)
        # nothing to learn, and the report's error relative to the torque's spread would
        # divide by zero
        raise RobolearnError(
            f"fit_actuator_net: torque never changes in this log (every sample is "
            f"{out[3][history - 1 :].flat[0]:.6g} N m): log the motor while it tracks changing "
            "commands"
        )
    return out[0], out[1], out[2], out[3]


def _samples(
    command: np.ndarray, position: np.ndarray, velocity: np.ndarray, torque: np.ndarray, h: int
) -> tuple[np.ndarray, np.ndarray]:
    """(R, J, 2h) inputs (the module docstring's convention) and (R, J) torques, R = T-h+1:
    row r is physics step t = r + h - 1."""
    error = command - position
    rows = error.shape[0] - h + 1
    # the value i steps before t, for every t >= h-1
    errors = [error[h - 1 - i : h - 1 - i + rows] for i in range(h)]
    velocities = [velocity[h - 1 - i : h - 1 - i + rows] for i in range(h)]
    x = np.stack(errors + velocities, axis=-1)
    return x, torque[h - 1 :]


def _std(t: torch.Tensor) -> torch.Tensor:
    """Per-column std, 1 where a column is constant (a joint that never moved)."""
    std = t.std(0)
    return torch.where(std > 1e-8, std, torch.ones_like(std))


def _rmse(module, x: np.ndarray, y: np.ndarray) -> float:
    with torch.no_grad():
        pred = module(torch.from_numpy(x).float()).double().numpy()
    return float(np.sqrt(np.mean((pred - y) ** 2)))
