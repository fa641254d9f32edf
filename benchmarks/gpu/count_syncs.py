"""Count the host's waits for the GPU per env step on CUDA, with torch's profiler.

Steps a task's env on the cuda engine (zero actions) and counts the CUDA calls, in the
profiled steps, at which the CPU waited for the GPU; prints one JSON object.

    python benchmarks/gpu/count_syncs.py --task humanoid_walk --num_envs 4096 --steps 50

What counts as one wait (``syncs_per_step``):

* a synchronisation: stream, device (context) or event synchronise. They are taken from
  the synchronisation records CUPTI keeps (the profiler's ``cuda_sync`` activity), which
  see every library's, Warp's driver-API calls included; where the profiler records none,
  from the runtime API calls (``cudaStreamSynchronize``, ...), which see torch's only.
  A stream waiting on an event (``cudaStreamWaitEvent``) is the GPU's wait, not the host's:
  not counted;
* a synchronous copy (``cudaMemcpy``, ``cudaMemcpy2D``, ...: a runtime copy call without
  ``Async``) not followed, on its thread, by a synchronisation: the copy itself blocks.

A ``.item()``, ``nonzero()`` or ``tensor.cpu()`` is a ``cudaMemcpyAsync`` followed by a
``cudaStreamSynchronize``: one wait, the synchronisation; the asynchronous copy is not
counted (torch follows every copy it must wait for with a synchronisation). The profiler
drops driver-API calls other than kernel launches, so a synchronous driver copy
(``cuMemcpyDtoH``) would not be seen; Warp's copies to the host are asynchronous, then
synchronised, and the synchronisation is seen.

Cross-check: over the same steps, ``torch.cuda.set_sync_debug_mode("warn")`` makes torch
warn at every operation of its own that synchronises (``torch_sync_warnings_per_step``);
torch's waits are then counted twice, independently. Device-to-host copies are reported
beside (``dtoh_copies_per_step``), not counted as waits.
"""

from __future__ import annotations

import argparse
import json
import re
import warnings
from collections import Counter
from dataclasses import dataclass

import torch

WINDOW = "count_syncs.steps"
"""The profiler range around the counted steps: the calls outside it are not counted."""

SYNC_CALL = re.compile(r"cu(da)?(Stream|Device|Ctx|Event|Thread)Synchronize")
COPY_CALL = re.compile(r"cu(da)?Memcpy")
# calls that only query or set the host's state and queue no work: they may come between a
# copy and its synchronisation
QUERY_CALL = re.compile(
    r"cu(da)?(GetDevice|SetDevice|GetLastError|PeekAtLastError|StreamIsCapturing|"
    r"StreamGetCaptureInfo|CtxGetCurrent|CtxSetCurrent|PointerGetAttribute)"
)
API_KINDS = ("cuda_runtime", "cuda_driver")


@dataclass(frozen=True)
class Call:
    """One profiler record: its name, kind (the profiler's activity type: ``cuda_runtime``,
    ``cuda_driver``, ``cuda_sync``, ``gpu_memcpy``, ``user_annotation``, ...), host thread
    and start and end (ns)."""

    name: str
    kind: str
    thread: int
    start: int
    end: int


def host_waits(calls: list[Call]) -> tuple[Counter, str]:
    """The waits among ``calls`` (see the module docstring), by call name, counting only
    calls that start inside the :data:`WINDOW` range; and which records the
    synchronisations were taken from."""
    window = [c for c in calls if c.kind == "user_annotation" and c.name == WINDOW]
    if window:
        lo, hi = window[0].start, window[0].end
        calls = [c for c in calls if lo <= c.start <= hi and c.name != WINDOW]
    else:
        # a profiler that kept no user range (torch 2.11 with CUDA on an H200 recorded
        # none): the steps are what lies strictly between the device synchronisations that
        # bracket them (count_syncs makes one before and one after)
        lo, hi = _bracket(calls)
        calls = [c for c in calls if lo < c.start and c.end < hi]
    calls = sorted(calls, key=lambda c: c.start)
    api = [c for c in calls if c.kind in API_KINDS]
    recorded = [c for c in calls if c.kind == "cuda_sync" and "wait" not in c.name.lower()]
    called = [c for c in api if SYNC_CALL.match(c.name)]
    waits: Counter = Counter()
    # the synchronisation records see every library's; the calls only torch's
    if recorded and len(recorded) >= len(called):
        waits.update(c.name for c in recorded)
        source = "cuda_sync records"
    else:
        waits.update(c.name for c in called)
        source = "runtime API calls"
    for i, c in enumerate(api):
        if not COPY_CALL.match(c.name) or "Async" in c.name:
            continue
        later = (d for d in api[i + 1 :] if d.thread == c.thread and not QUERY_CALL.match(d.name))
        following = next(later, None)
        if following is None or not SYNC_CALL.match(following.name):
            waits[c.name] += 1
    return waits, source


def _bracket(calls: list[Call]) -> tuple[int, int]:
    """The end of the first and the start of the last ``cudaDeviceSynchronize``."""
    syncs = sorted(
        (c for c in calls if c.kind in API_KINDS and c.name.startswith("cudaDeviceSynchronize")),
        key=lambda c: c.start,
    )
    if len(syncs) < 2:
        raise RuntimeError(
            f"the profiler recorded no {WINDOW!r} range and no device synchronisations around "
            "the steps: cannot tell the steps"
        )
    return syncs[0].end, syncs[-1].start


def _calls(prof) -> list[Call]:
    """The profiler's records as :class:`Call` (its raw event list: the function-event list
    leaves user ranges out)."""
    out = []
    for e in prof.profiler.kineto_results.events():
        kind = e.activity_type() if hasattr(e, "activity_type") else ""
        out.append(Call(e.name(), str(kind), e.start_thread_id(), e.start_ns(), e.end_ns()))
    return out


def _profiler_config():
    """CUPTI's synchronisation records on, where this torch can ask for them."""
    try:
        from torch._C._profiler import _ExperimentalConfig

        return _ExperimentalConfig(enable_cuda_sync_events=True)
    except (ImportError, TypeError):
        return None


def count_syncs(env, steps: int, actions=None) -> dict:
    """The host's waits per env step over ``steps`` env steps (after 5 to warm up), by
    the profiler and by torch's sync debug mode (module docstring)."""
    from torch.profiler import ProfilerActivity, profile, record_function

    act = (
        actions
        if actions is not None
        else torch.zeros(env.num_envs, env.num_actions, device=env.device)
    )
    for _ in range(5):  # warm up: graph capture and first-use allocations are not the step
        env.step(act)
    torch.cuda.synchronize()
    debug_mode = torch.cuda.get_sync_debug_mode()
    activities = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    with profile(activities=activities, experimental_config=_profiler_config()) as prof:
        torch.cuda.synchronize()  # the window's start, where the profiler keeps no range
        with warnings.catch_warnings(record=True) as caught, record_function(WINDOW):
            warnings.simplefilter("always")
            torch.cuda.set_sync_debug_mode("warn")
            try:
                for _ in range(steps):
                    env.step(act)
            finally:
                torch.cuda.set_sync_debug_mode(debug_mode)
        torch.cuda.synchronize()  # outside the range: not counted
    calls = _calls(prof)
    waits, source = host_waits(calls)
    torch_waits = sum("synchronizing CUDA operation" in str(w.message) for w in caught)
    dtoh = sum(c.kind == "gpu_memcpy" and "DtoH" in c.name for c in calls)
    return {
        "steps": steps,
        "syncs_per_step": sum(waits.values()) / steps,
        "by_call": dict(waits),
        "sync_source": source,
        "window": (
            "profiler range"
            if any(c.kind == "user_annotation" and c.name == WINDOW for c in calls)
            else "device synchronisations"
        ),
        "torch_sync_warnings_per_step": torch_waits / steps,
        "dtoh_copies_per_step": dtoh / steps,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="humanoid_walk")
    parser.add_argument("--num_envs", type=int, default=4096)
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    from robolearn.wrappers import make_env

    env = make_env(args.task, num_envs=args.num_envs, engine="cuda")
    result = count_syncs(env, args.steps)
    print(json.dumps({"task": args.task, "num_envs": args.num_envs, **result}), flush=True)


if __name__ == "__main__":
    main()
