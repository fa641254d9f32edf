"""Files robolearn writes: never half-written, always strict JSON.

Every output (checkpoints, configs, exported policies, videos) is written to a temp file
beside its target and renamed over it, so a crash, a kill or a full disk leaves either the
old file or the new one, never a torn one. The temp file is ``.<name>.<pid>.<random>.tmp``:
a process killed while writing leaves it behind, and the pid tells a later process
(``robolearn train --resume``) that its writer is gone.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = ".tmp") -> Iterator[Path]:
    """A temp path beside ``path`` for a writer that wants a file name (a video encoder, an
    ONNX exporter); renamed to ``path`` when the block ends without an error, deleted
    otherwise. ``suffix`` lets the writer recognise the format (``.mp4``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
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
