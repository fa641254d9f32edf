"""Fit a learned actuator net to a motor's log and save it as TorchScript.

    python scripts/fit_actuator_net.py LOG.npz OUT.pt --history 3 [--steps N]

LOG.npz holds four arrays of one motor type logged at the physics rate, ``command``
(position targets, rad), ``position`` (rad), ``velocity`` (rad/s) and ``torque`` (N m),
each (T, J), a column per joint (they share one net), or (T,) for one joint. The net reads
the last ``history`` steps' position errors then velocities, newest first (see
robolearn.actuators.network); OUT.pt is what an actuator config's net file points at, with
the same history. The fit itself is ``actuator_net_fit.py`` beside this script: an offline
tool, not part of the robolearn package. Bad input: one line on stderr starting "error: ",
exit status 2, and nothing written.
"""

from __future__ import annotations

import argparse
import sys
import zipfile
from pathlib import Path

import numpy as np

from robolearn.errors import RobolearnError

ARRAYS = ("command", "position", "velocity", "torque")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="fit_actuator_net.py",
        description="Fit an actuator net (position errors then velocities, newest first, to "
        "torque) to a motor log and save it as TorchScript.",
    )
    parser.add_argument("log", help="an .npz with arrays command, position, velocity, torque")
    parser.add_argument("out", help="the TorchScript file to write (e.g. motor.pt)")
    parser.add_argument(
        "--history", type=int, default=3, help="physics steps the net reads (default 3)"
    )
    parser.add_argument("--steps", type=int, default=3000, help="Adam steps (default 3000)")
    parser.add_argument("--lr", type=float, default=3e-3, help="learning rate (default 3e-3)")
    parser.add_argument("--hidden", default="32,32,32", help="hidden layer widths, comma-separated")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        arrays = _read_log(Path(args.log))
        hidden = _widths(args.hidden)
        # torch imports only once the log is known good: a bad path fails at once
        from actuator_net_fit import fit_actuator_net  # beside this script

        from robolearn.actuators.network import save_actuator_net

        out = Path(args.out)
        if not out.parent.is_dir():
            raise RobolearnError(f"the folder of {str(out)!r} does not exist")
        module, report = fit_actuator_net(
            *arrays, history=args.history, hidden=hidden, steps=args.steps, lr=args.lr,
            seed=args.seed,
        )  # fmt: skip
        save_actuator_net(module, out, args.history)
    except RobolearnError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    std = report["torque_std"]
    print(
        f"rmse: train {report['train_rmse']:.4g} N m, validation {report['validation_rmse']:.4g} "
        f"N m ({100 * report['validation_rmse'] / std:.2f}% of the torque std {std:.4g} N m)"
    )
    print(
        f"wrote {out} (history {args.history}; {report['train_samples']} training and "
        f"{report['validation_samples']} validation samples)"
    )
    return 0


def _read_log(path: Path) -> list[np.ndarray]:
    """The log's four arrays, (T, J) or (T,) each, all of one shape."""
    if not path.is_file():
        raise RobolearnError(f"no such log file {str(path)!r}")
    try:
        with np.load(path, allow_pickle=False) as data:
            missing = [name for name in ARRAYS if name not in data.files]
            if missing:
                raise RobolearnError(
                    f"{str(path)!r} lacks array(s) {', '.join(missing)}; it must hold "
                    f"{', '.join(ARRAYS)} (has {', '.join(data.files) or 'none'})"
                )
            arrays = [np.asarray(data[name]) for name in ARRAYS]
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        raise RobolearnError(f"{str(path)!r} is not a readable .npz ({exc})") from None
    for name, a in zip(ARRAYS, arrays, strict=True):
        if a.ndim not in (1, 2) or not np.issubdtype(a.dtype, np.number):
            raise RobolearnError(
                f"{str(path)!r}: {name} must be numbers of shape (T, J) or (T,), got "
                f"{a.dtype} {a.shape}"
            )
    shapes = {a.shape for a in arrays}
    if len(shapes) > 1:
        listed = ", ".join(f"{n} {a.shape}" for n, a in zip(ARRAYS, arrays, strict=True))
        raise RobolearnError(f"{str(path)!r}: the four arrays must have one shape, got {listed}")
    return arrays


def _widths(text: str) -> tuple[int, ...]:
    try:
        widths = tuple(int(w) for w in text.split(","))
    except ValueError:
        widths = ()
    if not widths or min(widths) < 1:
        raise RobolearnError(f"--hidden must be widths >= 1, comma-separated, got {text!r}")
    return widths


if __name__ == "__main__":
    sys.exit(main())
