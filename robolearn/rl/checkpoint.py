"""Checkpoints: written atomically, loaded without running code from the file.

A checkpoint is a dict of tensors and plain data (``torch.save``) holding rsl-rl's actor,
critic and optimizer state (the observation normalizer is in the actor's state), the number
of iterations done, torch's random state, and what is needed to rebuild the run: the task,
the config overrides and the agent config. It is loaded with ``weights_only=True``, so a
checkpoint from elsewhere cannot execute anything, and refused when its learned state holds
NaN or an infinity (a run that diverged), so that nothing resumes, plays or exports it.
"""

from __future__ import annotations

import errno
import io
import os
import pickle
import re
import zipfile
from pathlib import Path
from typing import Any

import torch

from robolearn.assets import pretrained_path
from robolearn.errors import RobolearnError
from robolearn.files import CHECKPOINT_RE, write_atomic

FORMAT = "robolearn-checkpoint-1"
REQUIRED_KEYS = ("model", "agent", "iterations")
"""What every robolearn checkpoint holds: the policy's state, the agent config that shapes
it, and the iterations it was trained for."""

_FULL_DISK = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS)

PRETRAINED = "pretrained:"
"""Prefix of a checkpoint setting (``agent.distillation.teacher``, ``agent.init_from``)
that names a checkpoint shipped with robolearn: ``pretrained:<task>``."""


def checkpoint_path(spec: str) -> Path:
    """The checkpoint a setting names: ``pretrained:<task>`` or a path."""
    if spec.startswith(PRETRAINED):
        return pretrained_path(spec[len(PRETRAINED) :])
    return Path(spec).expanduser()


def save_checkpoint(path: str | os.PathLike, data: dict[str, Any]) -> None:
    """Save ``data`` to ``path`` via a temp file and a rename: a crash leaves the old file.

    A full or read-only disk is a RobolearnError naming the file; what was saved before
    stays intact, as the failed write never replaced it.
    """
    buffer = io.BytesIO()
    torch.save({"format": FORMAT, **data}, buffer)
    try:
        write_atomic(path, buffer.getvalue())
    except OSError as exc:
        if exc.errno not in _FULL_DISK:
            raise
        raise RobolearnError(
            f"cannot save checkpoint {path}: {exc.strerror or exc}; "
            "the checkpoints saved before it are intact"
        ) from exc


def load_checkpoint(path: str | os.PathLike, map_location: str | torch.device = "cpu") -> dict:
    """Load a checkpoint safely; a missing, truncated or foreign file is a RobolearnError, and
    so is one whose learned state is not finite (naming the last finite one before it)."""
    path = Path(path)
    data = _read(path, map_location)
    bad = _nonfinite_entry(data["model"])
    if bad is not None:
        raise RobolearnError(
            f"checkpoint {path} holds {bad}: training diverged before it was saved; "
            f"{_last_finite(path)}"
        )
    return data


def _nonfinite_entry(state: Any, where: str = "model") -> str | None:
    """The first tensor of a checkpoint's learned state that holds NaN or an infinity, as
    ``NaN in model.actor_state_dict.mlp.0.weight``; None when every tensor is finite."""
    if isinstance(state, dict):
        entries = state.items()
    elif isinstance(state, list | tuple):
        entries = enumerate(state)
    else:
        if torch.is_tensor(state) and state.is_floating_point():
            if torch.isnan(state).any():
                return f"NaN in {where}"
            if torch.isinf(state).any():
                return f"an infinity in {where}"
        return None
    for key, value in entries:
        found = _nonfinite_entry(value, f"{where}.{key}")
        if found is not None:
            return found
    return None


def _last_finite(path: Path) -> str:
    """Where a run can go back to from its non-finite checkpoint ``path``: the newest
    checkpoint before it in its folder that loads and is finite."""
    m = CHECKPOINT_RE.match(path.name)
    if m is None:
        return "use a checkpoint saved before the training diverged"
    earlier = [
        (int(e.group(1)), p)
        for p in path.parent.glob("model_*.pt")
        if (e := CHECKPOINT_RE.match(p.name)) and int(e.group(1)) < int(m.group(1))
    ]
    for _, candidate in sorted(earlier, reverse=True):
        try:
            data = _read(candidate, "cpu")
        except RobolearnError:
            continue
        if _nonfinite_entry(data["model"]) is None:
            return f"the last finite checkpoint before it is {candidate}"
    return "no checkpoint of its run before it is finite: start a new run"


def _read(path: Path, map_location: str | torch.device) -> dict:
    """A checkpoint's data as saved; a missing, truncated or foreign file is a
    RobolearnError."""
    if path.is_dir():
        raise RobolearnError(
            f"checkpoint {path} is a folder; a checkpoint is a file (model_<iteration>.pt)"
        )
    if not path.is_file():
        raise RobolearnError(f"checkpoint {path} does not exist")
    try:
        data = torch.load(path, map_location=map_location, weights_only=True)
    except (
        OSError,
        RuntimeError,
        EOFError,
        pickle.UnpicklingError,
        zipfile.BadZipFile,
        ValueError,
        KeyError,
        AttributeError,
        TypeError,
    ) as exc:
        # A file that exists but does not load is truncated, damaged or not ours; torch
        # reports each kind of damage with a different exception.
        raise RobolearnError(
            f"checkpoint {path} is corrupted or not a robolearn checkpoint ({_reason(path, exc)})"
        ) from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise RobolearnError(f"{path} is not a robolearn checkpoint (no {FORMAT!r} marker)")
    missing = [k for k in REQUIRED_KEYS if k not in data]
    if missing:
        raise RobolearnError(
            f"checkpoint {path} is incomplete: it lacks {', '.join(map(repr, missing))}"
        )
    return data


def _reason(path: Path, exc: BaseException) -> str:
    """Why the file does not load, in a few words a user can act on: what the file is when
    it is plainly something else, else torch's reason without its internals; never torch's
    advice to load it with ``weights_only=False``, which would run whatever code it holds."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(512)
    if not zipfile.is_zipfile(path):
        if not head:
            return "the file is empty"
        if _is_text(head):
            first = head.decode("utf-8", "replace").strip().splitlines()[0][:40]
            return f"it is a text file ({first!r}...), not a checkpoint"
        if head.startswith(b"PK"):
            return f"a zip archive cut short ({size:,} bytes): a truncated copy?"
        return f"it is not a zip archive, which torch.save writes ({size:,} bytes of other data)"
    if isinstance(exc, pickle.UnpicklingError) and "weights" in str(exc).lower():
        return "it holds objects other than tensors and plain data; loading those could run code"
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    if "weights_only" in first:
        return type(exc).__name__
    # torch's reasons go on about its internals after the first sentence
    first = re.split(r"(?<=[.!?])\s", first, maxsplit=1)[0].rstrip(".")
    return f"a zip archive torch cannot read: {first[:120]}"


def _is_text(head: bytes) -> bool:
    """Whether the first bytes of a file read as text."""
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return all(c.isprintable() or c in "\n\r\t" for c in text)
