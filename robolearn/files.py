"""Files robolearn writes: never half-written, always strict JSON.

Every output (checkpoints, configs, exported policies, videos) is written to a temp file
beside its target and renamed over it, so a crash, a kill or a full disk leaves either the
old file or the new one, never a torn one. The temp file is ``.<name>.<pid>.<random>.tmp``:
a process killed while writing (``kill -9``) leaves it behind, and the pid tells a later
process that its writer is gone: the next write of the same file deletes it, and so does
``robolearn train --resume`` in its run folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from robolearn.errors import RobolearnError

CHECKPOINT_RE = re.compile(r"^model_(\d+)\.pt$")
"""The name of a run's checkpoint, ``model_<iterations>.pt``."""


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = ".tmp") -> Iterator[Path]:
    """A temp path beside ``path`` for a writer that wants a file name (a video encoder, an
    ONNX exporter); renamed to ``path`` when the block ends without an error, deleted
    otherwise. ``suffix`` lets the writer recognise the format (``.mp4``). The temp files
    of earlier writes of ``path`` whose process is gone are deleted first."""
    path = Path(path)
    require_file_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(path, suffix)
    fd, name = tempfile.mkstemp(
        dir=path.parent, prefix=f".{path.name}.{os.getpid()}.", suffix=suffix
    )
    os.close(fd)
    tmp = Path(name)
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the file the usual mode
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def require_file_path(path: str | os.PathLike) -> None:
    """Refuse a target that is there as something other than a file: renaming a finished
    temp file over it would replace a folder's name, or a device such as ``/dev/null``
    (for root), with a plain file.

    Raises:
        RobolearnError: naming the path and what it is.
    """
    path = Path(path)
    if path.is_symlink() or not path.exists() or path.is_file():
        return
    kind = "a folder" if path.is_dir() else "a device, FIFO or socket"
    raise RobolearnError(f"{path} is {kind}, not a file: give the path of a file to write")


def remove_stale_temps(path: str | os.PathLike, suffix: str = ".tmp") -> list[Path]:
    """Delete the temp files that :func:`atomic_path` made for ``path`` (with ``suffix``) in
    processes that are gone, killed mid-write; a live writer's are left alone. Returns what
    was deleted."""
    path = Path(path)
    pattern = re.compile(rf"^\.{re.escape(path.name)}\.(\d+)\.[^.]+{re.escape(suffix)}$")
    return remove_orphans(path.parent, pattern)


def remove_orphans(folder: Path, pattern: re.Pattern[str]) -> list[Path]:
    """Delete the temp files and folders in ``folder`` whose names ``pattern`` matches (its
    first group the writer's pid) and whose writer is gone; a live writer's are left alone.
    Returns what was deleted."""
    removed: list[Path] = []
    try:
        names = os.listdir(folder)
    except OSError:  # a folder that can be written but not listed: nothing to clean
        return removed
    for name in names:
        m = pattern.match(name)
        if m is None or process_alive(int(m.group(1))):
            continue
        temp = folder / name
        if temp.is_dir() and not temp.is_symlink():
            shutil.rmtree(temp, ignore_errors=True)
        else:
            temp.unlink(missing_ok=True)
        removed.append(temp)
    return removed


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this machine (the writer of a temp file named by it)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def write_atomic(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temp file, fsync and a rename."""
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def sha256_of(path: str | os.PathLike) -> str:
    """The sha256 of the file at ``path``, in hex: what ``policy.json`` records of the files
    exported with it, and what a reader compares."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def json_safe(value: Any) -> Any:
    """``value`` with every NaN or infinite float made None (nested dicts and lists too), so
    that it encodes as strict JSON, which browsers' ``JSON.parse`` and most parsers need."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
