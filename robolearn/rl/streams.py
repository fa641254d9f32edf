"""CUDA streams for the threads that collect env steps beside the learner's updates
(pipelined PPO, :mod:`robolearn.rl.pipelined`; the off-policy learners' ``overlap``,
:mod:`robolearn.rl.offpolicy.collector`).

Kernels queued by two threads on one CUDA stream run one after the other on the GPU, so a
collector thread that shares the learner's stream overlaps nothing there. The collector
thread therefore queues on a :class:`SideStream` of its own: its networks' inference, the
MuJoCo Warp physics (the engine launches on torch's current stream) and its writes into
the rollout storage or the replay buffer. Two streams run in no order of their own, so
every hand-over between them is ordered on the GPU, never by a host synchronisation:

* **Phases** (pipelined PPO): the side stream waits for the main stream's work queued
  before a collection starts (:meth:`SideStream.wait_for_main`: the snapshot of the
  networks, the update that last read the storage being refilled), and the main stream
  for the side's once the thread is joined (:meth:`SideStream.main_waits`), before the
  update reads the rollout. Tensors the side stream made and the main stream reads go
  through :meth:`SideStream.hand_over` (``record_stream``), so that the caching allocator
  does not give their memory to the side stream again before the main stream's reads of
  them have run.
* **Turns** (the off-policy collector thread, which runs beside the updates for good):
  tensors both threads use (the replay buffer, the collector's copy of the actor, its
  episode statistics) are used under a lock, each use's stream first waiting for an event
  recorded after the other thread's latest use (:class:`Handoff`): reads wait for the
  latest write and writes for the latest read, so neither stream reads half-written data
  nor overwrites data the other's queued kernels still read.

Off CUDA (the cpu engine, ``warp-cpu``, a learner on the CPU) nothing here touches
``torch.cuda``: kernels run as they are called, in host order, which the threads' joins
and locks already order; each call returns at once.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Iterator
from typing import Any

import torch


def cuda_devices(devices: Iterable[torch.device | str]) -> list[torch.device]:
    """The distinct CUDA devices among ``devices``, each with its index (``cuda`` is the
    current device), in the order given."""
    found: list[torch.device] = []
    for device in devices:
        device = torch.device(device)
        if device.type != "cuda":
            continue
        if device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        if device not in found:
            found.append(device)
    return found


class SideStream:
    """A CUDA stream of its own on each CUDA device among ``devices``, for a collector
    thread; with none of them CUDA, every method returns at once.

    ``with side:`` makes them the current streams of the thread that enters (torch's current
    stream is per thread, so the learner's thread keeps its own); the other methods are
    called from the learner's thread, whose current streams are "main" here.
    """

    def __init__(self, *devices: torch.device | str) -> None:
        self.streams = {device: torch.cuda.Stream(device) for device in cuda_devices(devices)}
        self._entered = threading.local()

    @property
    def active(self) -> bool:
        """Whether there is a side stream at all (some device is CUDA)."""
        return bool(self.streams)

    def __enter__(self) -> SideStream:
        if self.streams:
            stack = contextlib.ExitStack()
            for stream in reversed(self.streams.values()):  # the first device ends current
                stack.enter_context(torch.cuda.stream(stream))
            self._entered.stack = stack
        return self

    def __exit__(self, *exc: object) -> None:
        stack = getattr(self._entered, "stack", None)
        if stack is not None:
            self._entered.stack = None
            stack.close()

    def wait_for_main(self) -> None:
        """The side streams wait for the work queued so far on the calling thread's
        current streams (before the collector thread starts on what that work wrote)."""
        for device, stream in self.streams.items():
            stream.wait_stream(torch.cuda.current_stream(device))

    def main_waits(self) -> None:
        """The calling thread's current streams wait for the work queued so far on the
        side streams (before it reads what the collector wrote)."""
        for device, stream in self.streams.items():
            torch.cuda.current_stream(device).wait_stream(stream)

    def hand_over(self, value: Any) -> Any:
        """``value`` (a tensor, or a TensorDict, mapping, list or tuple of them), made on
        the side streams, as used from here on by the calling thread's current streams:
        their memory is not reused before the work these streams have queued when it is
        freed has run. Returns ``value``."""
        if self.streams and value is not None:
            for tensor in _tensors(value):
                if tensor.is_cuda:
                    tensor.record_stream(torch.cuda.current_stream(tensor.device))
        return value


def _tensors(value: Any) -> Iterator[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item)
    elif hasattr(value, "values"):  # a mapping or a TensorDict (nested ones recursed)
        for item in value.values():
            yield from _tensors(item)


class StreamEvent:
    """An event after the work queued on ``device``'s current stream, for another
    stream to wait for; nothing off CUDA.

    Callers order :meth:`record` and :meth:`wait` on the host (a lock): a wait is for
    the latest record before it.
    """

    def __init__(self, device: torch.device | str) -> None:
        device = torch.device(device)
        self.device = device
        self._event = torch.cuda.Event() if device.type == "cuda" else None
        self._stream: Any = None
        """The stream of the latest record (None before the first)."""

    def record(self) -> None:
        """Mark the work queued so far on the calling thread's current stream."""
        if self._event is None:
            return
        stream = torch.cuda.current_stream(self.device)
        self._event.record(stream)
        self._stream = stream

    def wait(self) -> None:
        """The calling thread's current stream waits (on the GPU) for the latest record;
        nothing before the first record, or where it was on this same stream (a stream
        runs its own work in order)."""
        if self._stream is None:
            return
        stream = torch.cuda.current_stream(self.device)
        if stream != self._stream:
            stream.wait_event(self._event)


class Handoff:
    """Tensors on ``device`` that two threads, each on its own stream, take turns at: one
    writes them (:meth:`writing`), the other reads them (:meth:`reading`; a read may
    change them too, e.g. the statistics it takes and zeroes).

    Each turn holds ``lock``; its stream first waits for an event recorded after the other
    party's latest turn, and records its own after it. A read thus sees every write that
    came before it on the host, and a write does not overwrite what a queued read has yet
    to read. Off CUDA, just the lock.
    """

    def __init__(self, device: torch.device | str, lock: threading.Lock | None = None) -> None:
        self.lock = lock or threading.Lock()
        self._written = StreamEvent(device)
        self._read = StreamEvent(device)

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """A write's turn: after the latest read's work."""
        with self.lock:
            self._read.wait()
            try:
                yield
            finally:
                self._written.record()

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """A read's turn: after the latest write's work."""
        with self.lock:
            self._written.wait()
            try:
                yield
            finally:
                self._read.record()
