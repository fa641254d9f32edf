"""Motion clips on disk: robolearn's ``.npz`` schema, and the CSV of retargeted clips.

The ``.npz`` schema (``format`` 1), every array named:

| key | shape | what |
|---|---|---|
| ``format`` | () int | 1 |
| ``fps`` | () float | frames per second |
| ``joint_names`` | (J,) str | the joints, as the robot's MJCF names them |
| ``root_pos`` | (T, 3) float | the root body's position in the world (m) |
| ``root_quat`` | (T, 4) float | its orientation, **w x y z**, unit |
| ``joint_pos`` | (T, J) float | joint positions (rad, or m for slides), ``joint_names``' order |

The CSV layout is the one retargeted LAFAN1 clips for the Unitree G1 are commonly shipped
in: one row per frame, no header, the root position (3), the root quaternion (4), then the
joint angles in the model's joint order (29 for the G1). Those files write the quaternion
**x y z w**; :func:`read_csv` reads that by default and takes ``quat_order="wxyz"`` for
files that put w first. A file read in the wrong order is caught where it shows: a walking
or standing robot's root stays near upright, and the wrong order tilts it over.
"""

from __future__ import annotations

import os
import zipfile
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from robolearn.errors import RobolearnError
from robolearn.files import atomic_path
from robolearn.motion.clip import MotionClip

FORMAT = 1
QUAT_ORDERS = ("xyzw", "wxyz")
ZIP_MAGIC = b"PK\x03\x04"
"""The first bytes of a zip archive, which an npz is."""
FRAME_RATES = (1.0, 10_000.0)
"""The frame rates (Hz) a CSV may be converted at: motion capture records at 30-480 Hz
and retargeted clips are shipped at 30-120 Hz. A rate far below sets a duration far too
long (at 1e-9 Hz, 20 frames last 600 years, which training would resample to its control
rate)."""


def save_clip(clip: MotionClip, path: str | os.PathLike) -> Path:
    """Write ``clip`` to ``path`` (an ``.npz``) atomically: a crash leaves the old file."""
    path = Path(path)
    if path.suffix != ".npz":
        raise RobolearnError(f"{path}: a motion clip is saved as .npz")
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        np.savez(
            f,
            format=np.int64(FORMAT),
            fps=np.float64(clip.fps),
            joint_names=np.array(clip.joint_names, dtype=str),
            root_pos=clip.root_pos,
            root_quat=clip.root_quat,
            joint_pos=clip.joint_pos,
        )
    return path


def load_clip(path: str | os.PathLike) -> MotionClip:
    """The clip in ``path``: robolearn's ``.npz`` schema (see the module docstring).

    Raises:
        RobolearnError: naming the file: it is missing, a CSV, not an npz (or a truncated
            or damaged one), not of the schema, or its arrays do not make a clip (shapes,
            finite values, unit quaternions, a positive rate).
    """
    path = Path(path)
    if not path.is_file():
        raise RobolearnError(f"motion clip {path} does not exist")
    if path.suffix == ".csv":
        raise RobolearnError(
            f"{path} is a CSV: convert it first with `robolearn motion convert {path} "
            f"OUT.npz --task TASK`"
        )
    arrays = _read_npz(path)
    needed = ("format", "fps", "joint_names", "root_pos", "root_quat", "joint_pos")
    missing = [key for key in needed if key not in arrays]
    if missing:
        raise RobolearnError(f"{path} is not a robolearn motion clip: it has no {missing}")
    fmt, fps, names = arrays["format"], arrays["fps"], arrays["joint_names"]
    if not all(x.shape == () and x.dtype.kind in "iuf" for x in (fmt, fps)):
        raise RobolearnError(
            f"{path} is not a robolearn motion clip: its format or fps is not a number"
        )
    if int(fmt) != FORMAT:
        raise RobolearnError(
            f"{path} is of motion format {int(fmt)}; this robolearn reads {FORMAT}"
        )
    if names.ndim != 1 or names.dtype.kind != "U":
        raise RobolearnError(
            f"{path} is not a robolearn motion clip: its joint_names are not a list of names"
        )
    try:
        return MotionClip(
            fps=float(fps),
            joint_names=tuple(str(n) for n in names.tolist()),
            root_pos=arrays["root_pos"],
            root_quat=arrays["root_quat"],
            joint_pos=arrays["joint_pos"],
            name=path.stem,
        )
    except RobolearnError as e:
        raise RobolearnError(f"{path}: {e}") from None


def _read_npz(path: Path) -> dict[str, np.ndarray]:
    """Every array of the npz at ``path``; an error naming the file where it is not an npz
    or is damaged (numpy's own messages would speak of zip files and pickles)."""
    with open(path, "rb") as f:
        magic = f.read(len(ZIP_MAGIC))
    if magic == ZIP_MAGIC and not zipfile.is_zipfile(path):
        raise RobolearnError(
            f"{path} is a truncated npz (its end is missing, as when a copy or a write is cut "
            "short): copy or write it again"
        )
    if magic != ZIP_MAGIC:
        raise RobolearnError(
            f"{path} is not an npz file: a motion clip is robolearn's npz (a zip of arrays), as "
            "`robolearn motion convert` and `record` write it"
        )
    arrays: dict[str, np.ndarray] = {}
    key = ""  # the array being read, for the message
    try:
        with np.load(path, allow_pickle=False) as data:
            for key in data.files:
                arrays[key] = data[key]
    except ValueError as e:
        # numpy refuses object arrays with advice to unpickle them, which a clip never needs
        reason = "holds Python objects" if "allow_pickle" in str(e) else "cannot be read"
        raise RobolearnError(
            f"{path} is not a robolearn motion clip: its array {key!r} {reason}"
        ) from None
    except (OSError, EOFError, zipfile.BadZipFile, zlib.error):
        where = f"its array {key!r}" if key else "its list of arrays"
        raise RobolearnError(
            f"{path} is damaged: {where} cannot be read (the file was cut short or changed "
            "since it was written); write it again"
        ) from None
    bad = [k for k, v in arrays.items() if not isinstance(v, np.ndarray)]
    if bad:  # members that are not .npy files, which numpy hands back as bytes
        raise RobolearnError(f"{path} is not a robolearn motion clip: its {bad} are not arrays")
    return arrays


def read_csv(
    path: str | os.PathLike,
    joint_names: Sequence[str],
    fps: float,
    quat_order: str = "xyzw",
) -> MotionClip:
    """A clip from a CSV of the retargeted-LAFAN1 layout (see the module docstring), its
    joints named ``joint_names`` (the robot's, in the model's order).

    Raises:
        RobolearnError: a row with the wrong number of columns (saying what it takes), a
            value that is not a number, an unknown ``quat_order``, quaternions that are not
            unit, a root that the given order tilts over while the other keeps upright, an
            ``fps`` outside :data:`FRAME_RATES`, or a file of one frame.
    """
    path = Path(path)
    if quat_order not in QUAT_ORDERS:
        raise RobolearnError(f"quat_order {quat_order!r} is not one of {', '.join(QUAT_ORDERS)}")
    low, high = FRAME_RATES
    if not low <= fps <= high:
        raise RobolearnError(
            f"{path}: a frame rate (--fps) of {fps:g} Hz is outside the {low:g} to {high:,g} "
            "Hz clips are recorded at (motion capture: 30-480 Hz); give the rate the CSV "
            "was written at"
        )
    if not path.is_file():
        raise RobolearnError(f"{path} does not exist")
    raw = path.read_bytes()
    if raw.startswith(ZIP_MAGIC) or path.suffix == ".npz":
        raise RobolearnError(
            f"{path} is an npz, not a CSV: a robolearn npz clip needs no converting (see "
            f"`robolearn motion info {path}`)"
        )
    joint_names = tuple(joint_names)
    width = 7 + len(joint_names)
    rows: list[list[float]] = []
    for line_no, chunk in enumerate(raw.split(b"\n"), start=1):
        try:
            line = chunk.decode("utf-8")
        except UnicodeDecodeError as e:
            raise RobolearnError(
                f"{path}, line {line_no}: byte {chunk[e.start]:#04x} is not UTF-8 text; a "
                "clip's CSV holds numbers only: save it as UTF-8 (or ASCII) text"
            ) from None
        if not line.strip():
            continue
        cells = line.strip().split(",")
        if len(cells) != width:
            raise RobolearnError(
                f"{path}, line {line_no}: {len(cells)} columns; this robot's clips have "
                f"{width} (root position 3, root quaternion 4, {len(joint_names)} joints)"
            )
        try:
            rows.append([float(c) for c in cells])
        except ValueError:
            raise RobolearnError(f"{path}, line {line_no}: a value is not a number") from None
    if not rows:
        raise RobolearnError(f"{path} has no rows")
    if len(rows) == 1:
        raise RobolearnError(
            f"{path} has one row: a clip takes two frames at least (one frame is a pose, with "
            "no motion to track; a clip for training lasts longer than one control step)"
        )
    data = np.array(rows)
    quat = data[:, 3:7]
    if quat_order == "xyzw":
        quat = quat[:, [3, 0, 1, 2]]
    check_upright(quat, quat_order, str(path))
    return MotionClip(
        fps=fps,
        joint_names=joint_names,
        root_pos=data[:, 0:3],
        root_quat=quat,
        joint_pos=data[:, 7:],
        name=path.stem,
    )


def check_upright(quat_wxyz: np.ndarray, order: str, where: str) -> None:
    """Refuse root quaternions read in ``order`` that tilt the root over (mean tilt above
    60 degrees) where the other order keeps it near upright (below 30): a file written in
    the other order. A clip that truly lies down in both readings passes."""
    other = "wxyz" if order == "xyzw" else "xyzw"
    # as read, and re-read in the other order: the first column moved to the end or back
    swapped = quat_wxyz[:, [1, 2, 3, 0]] if order == "xyzw" else quat_wxyz[:, [3, 0, 1, 2]]
    tilt, tilt_other = _mean_tilt_deg(quat_wxyz), _mean_tilt_deg(swapped)
    if tilt > 60.0 and tilt_other < 30.0:
        raise RobolearnError(
            f"{where}: read as {order}, the root quaternions tilt the robot {tilt:.0f} degrees "
            f"from upright on average; read as {other}, {tilt_other:.0f}: the file writes "
            f"them {other} (pass --quat_order {other})"
        )


def _mean_tilt_deg(quat_wxyz: np.ndarray) -> float:
    """The mean angle between the root's z axis and the world's, in degrees."""
    norms = np.linalg.norm(quat_wxyz, axis=1, keepdims=True)
    _w, x, y, _z = (quat_wxyz / np.maximum(norms, 1e-12)).T
    up_z = 1.0 - 2.0 * (x * x + y * y)
    return float(np.degrees(np.arccos(np.clip(up_z, -1.0, 1.0))).mean())
