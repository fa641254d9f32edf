"""A learned actuator: a small network that maps a joint's recent position errors and
velocities to the torque its motor gives (the ANYmal actuator-net recipe, Hwangbo et al.
2019, as Isaac Lab's ``ActuatorNetMLP``).

A real series-elastic or geared drive is not the PD law its datasheet states: its current
loop, friction, backlash and communication lag shape the torque in ways no closed form
fits. A net fitted to a log of the real drive gives the simulation that torque, and a
policy trained against it transfers without learning around an ideal motor.

The input convention, the same here at run time (:class:`NetworkMotor`) and in the
offline fit (``scripts/actuator_net_fit.py``): at physics step t one sample per joint is
the row::

    [e_t, e_{t-1}, ..., e_{t-h+1},  v_t, v_{t-1}, ..., v_{t-h+1}]      (2 h values)

position errors ``e = target - q`` then velocities ``v = qdot``, each newest first, over
``h = history`` physics steps; the net's output is the joint's torque at t (N m). In a log,
row t holds the command in force, the joint's measured position and velocity and the
torque measured at that same step; the net maps rows t, t-1, ... to the torque of row t.
Every joint of a motor type shares one net: a log's columns are its joints' logs.

A net fitted by robolearn carries its input and output normalisation inside it, so the saved
file is self-contained and the run-time scales (``pos_scale``, ``vel_scale``,
``torque_scale``) stay 1; they are for a net trained elsewhere on scaled units. The file
is TorchScript (:func:`save_actuator_net`, ``torch.jit.save``) with the history it was
fitted for recorded beside the weights, which :func:`load_actuator_net` checks against
the config's. ``scripts/fit_actuator_net.py`` fits and saves one from a log; the fit is
an offline tool and stays out of the package.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

import torch
from torch import nn

from robolearn.errors import RobolearnError

INPUTS = "position errors then velocities, newest first"
"""The input convention (see the module docstring), as the saved file records it."""

_META = "robolearn.json"
"""The name of the record saved beside the weights (history, input convention)."""


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
    history = check_history(history, f"actuator net {path}")
    file = Path(path)
    if not file.is_file():
        raise RobolearnError(
            f"actuator net {str(path)!r}: no such file; it must be a TorchScript file saved "
            "by torch.jit.save (scripts/fit_actuator_net.py writes one)"
        )
    extra = {_META: ""}
    try:
        with quiet_jit():
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
    history = check_history(history, f"save_actuator_net {path}")
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise RobolearnError(f"save_actuator_net: folder {str(folder)!r} does not exist")
    with quiet_jit():
        scripted = (
            module if isinstance(module, torch.jit.ScriptModule) else torch.jit.script(module)
        )
    meta = json.dumps({"history": history, "inputs": INPUTS})
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    try:
        with quiet_jit():
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
            "robolearn.actuators.network.save_actuator_net"
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
    net fitted by scripts/fit_actuator_net.py). The caller clips to the effort limit.
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
        self.history = check_history(history, "NetworkMotor")
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


# ---- helpers -------------------------------------------------------------------------------


def check_history(history: object, where: str) -> int:
    """``history`` (physics steps a net reads) as it is; RobolearnError naming ``where``
    for what is not a whole number >= 1. The fit (scripts/actuator_net_fit.py) checks with
    it too, so a file and its config agree on what a history is."""
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
def quiet_jit() -> Iterator[None]:
    """TorchScript is deprecated in newer torch (in favour of torch.export), which says so
    at every call; the file format is still the one both ends here read and write."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message=r".*torch\.jit.*deprecated", category=DeprecationWarning
        )
        yield
