"""Finding host synchronisations without a GPU.

On CUDA the CPU waits for the GPU at every op that needs a device value on the host: a
tensor read as a Python number or bool, ``nonzero()`` and boolean-mask indexing (the host
must know how many elements come out), ``.cpu()``/``.numpy()``/``.tolist()``, and a tensor
made from Python data (a copy from pageable memory that torch waits for). The env step is
meant to have none. :func:`forbid_host_syncs` makes each such op raise
:class:`HostSyncError` while it runs, on any device: on the cpu engine those ops cost
nothing, but the same code would wait on CUDA, so a test on the CPU finds every wait a GPU
run would have. ``torch.cuda.set_sync_debug_mode("error")`` does the same on CUDA.

The cpu engine itself talks to MuJoCo through host memory by design; its calls are marked
with :func:`host_syncs_allowed`, as is code that runs once per iteration by choice.
"""

from __future__ import annotations

import contextlib
import threading
import traceback
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from robolearn.errors import RobolearnError


class HostSyncError(RobolearnError):
    """An op that would make the host wait for the GPU ran where none may."""


_state = threading.local()


@contextlib.contextmanager
def host_syncs_allowed() -> Iterator[None]:
    """Inside this block :func:`forbid_host_syncs` lets every op through (the cpu
    engine's host-side calls; work done once per iteration on purpose)."""
    depth = getattr(_state, "allowed", 0)
    _state.allowed = depth + 1
    try:
        yield
    finally:
        _state.allowed = depth


def _allowed() -> bool:
    return getattr(_state, "allowed", 0) > 0


T = torch.Tensor
# Ops that return host values, or whose output size depends on device values.
_ALWAYS = {
    T.item: "Tensor.item",
    T.tolist: "Tensor.tolist",
    T.__bool__: "bool(tensor)",
    T.__int__: "int(tensor)",
    T.__float__: "float(tensor)",
    T.__index__: "a tensor used as a Python index",
    T.cpu: "Tensor.cpu",
    T.numpy: "Tensor.numpy",
    T.nonzero: "Tensor.nonzero",
    torch.nonzero: "torch.nonzero",
    T.masked_select: "Tensor.masked_select",
    torch.masked_select: "torch.masked_select",
    torch.unique: "torch.unique",
    T.unique: "Tensor.unique",
    torch.equal: "torch.equal",
    torch.allclose: "torch.allclose",
    T.__repr__: "printing a tensor",
    T.__format__: "formatting a tensor",
}
_FROM_DATA = {torch.tensor: "torch.tensor", torch.as_tensor: "torch.as_tensor"}


def _has_bool_mask(index: Any) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    return any(
        (isinstance(i, torch.Tensor) and i.dtype == torch.bool) or isinstance(i, list | tuple)
        for i in items
    )


def sync_reason(func: Callable, args: tuple, kwargs: dict) -> str | None:
    """Why ``func(*args, **kwargs)`` would wait for the GPU, or None if it would not."""
    if func in _ALWAYS:
        return _ALWAYS[func]
    if func in _FROM_DATA:
        data = args[0] if args else kwargs.get("data")
        if not isinstance(data, torch.Tensor):
            return f"{_FROM_DATA[func]} of Python data"
        return None
    if func is torch.where and len(args) + len(kwargs) == 1:
        return "torch.where(mask) (nonzero)"
    if func in (T.__getitem__, T.__setitem__) and len(args) > 1 and _has_bool_mask(args[1]):
        return "indexing with a boolean mask or a Python list"
    if func is torch.repeat_interleave or func is T.repeat_interleave:
        repeats = args[1] if len(args) > 1 else kwargs.get("repeats")
        if isinstance(repeats, torch.Tensor):
            return "repeat_interleave with tensor repeats"
    return None


class _Guard(TorchFunctionMode):
    def __init__(self, record: list[str] | None) -> None:
        super().__init__()
        self.record = record

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if not _allowed():
            reason = sync_reason(func, args, kwargs)
            if reason is not None:
                where = _caller()
                if self.record is None:
                    raise HostSyncError(f"host synchronisation: {reason} at {where}")
                self.record.append(f"{reason} at {where}")
        return func(*args, **kwargs)


def _caller() -> str:
    """The innermost frame outside torch and this module: the line that made the op."""
    for frame in reversed(traceback.extract_stack()[:-2]):
        name = frame.filename
        if "/torch/" not in name and name != __file__:
            return f"{name}:{frame.lineno} ({frame.name})"
    return "?"


@contextlib.contextmanager
def forbid_host_syncs(record: list[str] | None = None) -> Iterator[None]:
    """Raise :class:`HostSyncError` at each op inside the block that would make the host
    wait for the GPU on CUDA (see the module docstring); with ``record`` (a list), append
    a line per op instead and go on."""
    with _Guard(record):
        yield
