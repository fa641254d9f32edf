"""A learned actuator: a small network that maps a joint's recent position errors and
velocities to the torque its motor gives (the ANYmal actuator-net recipe, Hwangbo et al.
2019, as Isaac Lab's ``ActuatorNetMLP``).

A real series-elastic or geared drive is not the PD law its datasheet states: its current
loop, friction, backlash and communication lag shape the torque in ways no closed form
fits. A net fitted to a log of the real drive gives the simulation that torque, and a
policy trained against it transfers without learning around an ideal motor.

The input convention, the same here at run time (:class:`NetworkMotor`) and in the fit
(:func:`fit_actuator_net`): at physics step t one sample per joint is the row::

    [e_t, e_{t-1}, ..., e_{t-h+1},  v_t, v_{t-1}, ..., v_{t-h+1}]      (2 h values)

position errors ``e = target - q`` then velocities ``v = qdot``, each newest first, over
``h = history`` physics steps; the net's output is the joint's torque at t (N m). In a log,
row t holds the command in force, the joint's measured position and velocity and the
torque measured at that same step; the net maps rows t, t-1, ... to the torque of row t.
Every joint of a motor type shares one net: a log's columns are its joints' logs.

A net fitted here carries its input and output normalisation inside it, so the saved
file is self-contained and the run-time scales (``pos_scale``, ``vel_scale``,
``torque_scale``) stay 1; they are for a net trained elsewhere on scaled units. The file
is TorchScript (:func:`save_actuator_net`, ``torch.jit.save``) with the history it was
fitted for recorded beside the weights, which :func:`load_actuator_net` checks against
the config's. ``scripts/fit_actuator_net.py`` fits and saves one from a log.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import torch
from torch import nn

from robolearn.errors import RobolearnError
from robolearn.threads import single_threaded

INPUTS = "position errors then velocities, newest first"
"""The input convention (see the module docstring), as the saved file records it."""

_META = "robolearn.json"
_MIN_SAMPLES = 50
"""The fewest samples per joint a fit takes: 40 to train on, 10 to validate."""


# ---- the file ----------------------------------------------------------------------------


def load_actuator_net(
    path: str | os.PathLike,
    history: int,
    device: torch.device | str = "cpu",
    dtype: torch.dtype = torch.float32,
) -> torch.jit.ScriptModule:
    """The TorchScript actuator net at ``path`` on ``device``, in eval mode, checked.

    ``history`` is the config's (physics steps the net reads); ``dtype`` the engine's: the
    net runs in its own dtype (float32 for a net fitted here) and the probe feeds it zeros
    cast from the engine's, as :class:`NetworkMotor` does. RobolearnError naming the path
    for a missing file, one that is not TorchScript, a history that differs from the one
    the file records, or a net that does not map (B, 2 history) inputs to (B, 1) or (B,).
    """
    history = _history(history, f"actuator net {path}")
    file = Path(path)
    if not file.is_file():
        raise RobolearnError(
            f"actuator net {str(path)!r}: no such file; it must be a TorchScript file saved "
            "by torch.jit.save (scripts/fit_actuator_net.py writes one)"
        )
    extra = {_META: ""}
    try:
        with _quiet_jit():
            net = torch.jit.load(str(file), map_location=device, _extra_files=extra)
    except Exception as exc:  # torch raises RuntimeError, ValueError, ... for a bad file
        reason = _reason(exc)
        raise RobolearnError(
            f"actuator net {str(path)!r} does not load ({reason}); it must be a TorchScript "
            "file saved by torch.jit.save (scripts/fit_actuator_net.py writes one)"
        ) from None
    _check_meta(extra[_META], history, path)
    net.eval()
    _probe(net, history, torch.device(device), dtype, f"actuator net {str(path)!r}")
    return net


def save_actuator_net(module: nn.Module, path: str | os.PathLike, history: int) -> None:
    """Write ``module`` (scripted here if it is not TorchScript yet) to ``path`` with the
    history it reads and the input convention recorded beside it (read back by
    :func:`load_actuator_net`). Written to a temporary file in the same folder and moved
    into place, so a crash never leaves a half-written net where the config points."""
    history = _history(history, f"save_actuator_net {path}")
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise RobolearnError(f"save_actuator_net: folder {str(folder)!r} does not exist")
    with _quiet_jit():
        scripted = (
            module if isinstance(module, torch.jit.ScriptModule) else torch.jit.script(module)
        )
    meta = json.dumps({"history": history, "inputs": INPUTS})
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    try:
        with _quiet_jit():
            torch.jit.save(scripted, tmp, _extra_files={_META: meta})
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _check_meta(raw: bytes | str, history: int, path: str | os.PathLike) -> None:
    """Refuse a file whose recorded history is not the config's (a file without the record,
    saved by other tools, is taken as it is)."""
    if not raw:
        return
    try:
        meta = json.loads(raw)
        saved = meta.get("history") if isinstance(meta, dict) else None
    except (ValueError, UnicodeDecodeError):
        raise RobolearnError(
            f"actuator net {str(path)!r}: its {_META} record is not JSON; save the net with "
            "robolearn.scene.actuator_net.save_actuator_net"
        ) from None
    if saved is not None and saved != history:
        raise RobolearnError(
            f"actuator net {str(path)!r} was fitted for history {saved} (physics steps it "
            f"reads), the config says {history}: set history to {saved} or refit the net"
        )


def _probe(net, history: int, device: torch.device, dtype: torch.dtype, where: str) -> None:
    """Run ``net`` once on zeros as the motor will; RobolearnError for a wrong input size,
    output shape or a non-finite output."""
    expected = f"(B, {2 * history}) inputs: {history} position errors then {history} velocities"
    x = torch.zeros(2, 2 * history, dtype=dtype, device=device)
    try:
        with torch.no_grad():
            out = net(x.to(_net_dtype(net)))
    except Exception as exc:
        reason = _reason(exc)
        raise RobolearnError(
            f"{where}: the net must take {expected}; it raised: {reason}"
        ) from None
    if not isinstance(out, torch.Tensor) or tuple(out.shape) not in ((2, 1), (2,)):
        got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise RobolearnError(
            f"{where}: the net must map {expected} to (B, 1) or (B,) torques; for (2, "
            f"{2 * history}) it gave {got}"
        )
    if not bool(torch.isfinite(out.to(dtype)).all()):
        raise RobolearnError(f"{where}: the net gives non-finite torques for zero inputs")


# ---- run time ------------------------------------------------------------------------------


class NetworkMotor:
    """The torques of k joints of one motor type in N envs from a learned actuator net.

    Keeps the last ``history`` physics steps' position errors and velocities of every
    joint in a ring (in the net's dtype), pushes the current ones at each :meth:`torque`
    call (one call per physics step) and evaluates the net on all N k joints at once. No
    device value is read on the host: the ring's position is a Python count of calls, the
    newest-first order a gather by an index tensor built at construction.

    ``net``: a TorchScript (or any) module on ``device`` mapping (B, 2 history) to (B, 1) or
    (B,), as :func:`load_actuator_net` returns; ``dtype``: the engine's, of the inputs
    and of the torques returned; the scales multiply the inputs and the output (1 for a
    net fitted by :func:`fit_actuator_net`). The caller clips to the effort limit.
    """

    def __init__(
        self,
        net: nn.Module,
        num_envs: int,
        num_joints: int,
        history: int,
        device: torch.device | str = "cpu",
        dtype: torch.dtype = torch.float32,
        pos_scale: float = 1.0,
        vel_scale: float = 1.0,
        torque_scale: float = 1.0,
    ) -> None:
        self.history = _history(history, "NetworkMotor")
        for name, value in (("num_envs", num_envs), ("num_joints", num_joints)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise RobolearnError(
                    f"NetworkMotor: {name} must be a whole number >= 1, got {value!r}"
                )
        for name, value in (
            ("pos_scale", pos_scale), ("vel_scale", vel_scale), ("torque_scale", torque_scale)
        ):  # fmt: skip
            if not isinstance(value, int | float) or not math.isfinite(value):
                raise RobolearnError(f"NetworkMotor: {name} must be a finite number, got {value!r}")
        self.net = net.eval()
        self.num_envs, self.num_joints = num_envs, num_joints
        self.device, self.dtype = torch.device(device), dtype
        self.net_dtype = _net_dtype(net)
        """The dtype the net computes in; inputs are cast to it, its torques back."""
        h, dev = self.history, self.device
        self._ring = torch.zeros(2, h, num_envs, num_joints, dtype=self.net_dtype, device=dev)
        """(2, history, N, k): [0] position errors, [1] velocities, slot ``step % history``
        the newest."""
        # order[p]: the ring's slots newest first when p is the newest
        self._order = torch.tensor(
            [[(p - i) % h for i in range(h)] for p in range(h)], dtype=torch.long, device=dev
        )
        self._scale = torch.tensor(
            [float(pos_scale)] * h + [float(vel_scale)] * h, dtype=self.net_dtype, device=dev
        )
        self._torque_scale = float(torque_scale)
        self._step = 0

    def torque(self, target: torch.Tensor, q: torch.Tensor, qd: torch.Tensor) -> torch.Tensor:
        """(N, k) the joints' torques at this physics step from the (N, k) position targets,
        positions and velocities: this step's error and velocity join the history, and the
        net reads the last ``history`` of them (unclipped)."""
        n, k, h = self.num_envs, self.num_joints, self.history
        slot = self._step % h
        self._step += 1
        with torch.no_grad():
            self._ring[0, slot] = target - q
            self._ring[1, slot] = qd
            ordered = self._ring.index_select(1, self._order[slot])  # (2, h, N, k), newest first
            x = ordered.permute(2, 3, 0, 1).reshape(n * k, 2 * h) * self._scale
            out = self.net(x)
        return (out.reshape(n, k) * self._torque_scale).to(self.dtype)

    def reset(self, env_mask: torch.Tensor) -> None:
        """Forget the history of the envs where ``env_mask`` ((N,) bool) is true: their next
        torques read zeros for the steps before the reset, as at the start."""
        mask = env_mask.reshape(1, 1, self.num_envs, 1)
        self._ring.copy_(torch.where(mask, 0.0, self._ring))


# ---- the fit -------------------------------------------------------------------------------


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
    different shapes, NaN or inf, fewer than history + 49 rows, history < 1, or bad
    hidden widths, steps or lr.
    """
    history = _history(history, "fit_actuator_net")
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

    with _quiet_jit():
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


# ---- helpers -------------------------------------------------------------------------------


def _history(history: object, where: str) -> int:
    if not isinstance(history, int) or isinstance(history, bool) or history < 1:
        raise RobolearnError(
            f"{where}: history must be a whole number of physics steps >= 1, got {history!r}"
        )
    return history


def _reason(exc: BaseException) -> str:
    """An exception's message as one short line: a TorchScript interpreter error's last line
    (its cause; the first only says the interpreter failed), else its first sentence."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    line = lines[-1] if "TorchScript interpreter" in lines[0] else lines[0]
    sentence = line.split(". ")[0].rstrip(".")
    return sentence if len(sentence) <= 200 else sentence[:197] + "..."


def _net_dtype(net: nn.Module) -> torch.dtype:
    """The dtype of the net's first floating parameter or buffer; float32 for none."""
    for tensor in (*net.parameters(), *net.buffers()):
        if tensor.is_floating_point():
            return tensor.dtype
    return torch.float32


@contextlib.contextmanager
def _quiet_jit() -> Iterator[None]:
    """TorchScript is deprecated in newer torch (in favour of torch.export), which says so
    at every call; the file format is still the one both ends here read and write."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message=r".*torch\.jit.*deprecated", category=DeprecationWarning
        )
        yield
