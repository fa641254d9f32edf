"""Checkpoints: written atomically, loaded without running code from the file.

A checkpoint is a dict of tensors and plain data (``torch.save``) holding rsl-rl's actor,
critic and optimizer state (the observation normalizer is in the actor's state), the number
of iterations done, torch's random state, and what is needed to rebuild the run: the task,
the config overrides and the agent config. It is loaded with ``weights_only=True``, so a
checkpoint from elsewhere cannot execute anything.
"""

from __future__ import annotations

import io
import os
import pickle
import zipfile
from pathlib import Path
from typing import Any

import torch

from robolearn.config import write_atomic
from robolearn.errors import RobolearnError

FORMAT = "robolearn-checkpoint-1"


def save_checkpoint(path: str | os.PathLike, data: dict[str, Any]) -> None:
    """Save ``data`` to ``path`` via a temp file and a rename: a crash leaves the old file."""
    buffer = io.BytesIO()
    torch.save({"format": FORMAT, **data}, buffer)
    write_atomic(path, buffer.getvalue())


def load_checkpoint(path: str | os.PathLike, map_location: str | torch.device = "cpu") -> dict:
    """Load a checkpoint safely; a missing, truncated or foreign file is a RobolearnError."""
    path = Path(path)
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
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise RobolearnError(
            f"checkpoint {path} is corrupted or not a robolearn checkpoint ({first[:160]})"
        ) from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise RobolearnError(f"{path} is not a robolearn checkpoint (no {FORMAT!r} marker)")
    return data
