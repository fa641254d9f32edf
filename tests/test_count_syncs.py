"""benchmarks/gpu/count_syncs.py's rule for what a host wait is, on made-up profiler records
(the script itself needs CUDA: tests/test_cuda.py runs it on the GPU)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "gpu"))
from count_syncs import WINDOW, Call, _calls, host_waits


def records(*items: tuple[str, str], thread: int = 7) -> list[Call]:
    """(name, kind) records one after another inside the counted range."""
    calls = [Call(WINDOW, "user_annotation", 1, 0, 1000)]
    for i, (name, kind) in enumerate(items):
        calls.append(Call(name, kind, thread, 10 * (i + 1), 10 * (i + 1) + 5))
    return calls


def total(calls: list[Call]) -> int:
    return sum(host_waits(calls)[0].values())


def test_item_is_one_wait_not_a_copy_and_a_synchronisation():
    item = records(
        ("cudaMemcpyAsync", "cuda_runtime"),
        ("cudaStreamSynchronize", "cuda_runtime"),
        ("Stream Sync", "cuda_sync"),  # CUPTI's record of the same call
        ("Memcpy DtoH (Device -> Pinned)", "gpu_memcpy"),
    )
    waits, source = host_waits(item)
    assert dict(waits) == {"Stream Sync": 1} and source == "cuda_sync records"


def test_synchronisations_torch_does_not_make_are_counted_from_cupti_records():
    # Warp synchronises through the driver API, which the profiler does not list as calls
    warp = records(("cudaLaunchKernel", "cuda_runtime"), ("Context Sync", "cuda_sync"))
    assert total(warp) == 1


def test_without_cupti_records_the_runtime_calls_count():
    calls = records(
        ("cudaMemcpyAsync", "cuda_runtime"),
        ("cudaStreamSynchronize", "cuda_runtime"),
        ("cudaDeviceSynchronize", "cuda_runtime"),
        ("cudaEventSynchronize_v3020", "cuda_runtime"),
    )
    waits, source = host_waits(calls)
    assert sum(waits.values()) == 3 and source == "runtime API calls"


def test_a_synchronous_copy_waits_once_with_or_without_its_own_synchronisation():
    assert total(records(("cudaMemcpy", "cuda_runtime"), ("cudaLaunchKernel", "cuda_runtime"))) == 1
    assert total(records(("cudaMemcpy", "cuda_runtime"))) == 1
    followed = records(
        ("cudaMemcpy", "cuda_runtime"),
        ("cudaGetDevice", "cuda_runtime"),  # queues nothing
        ("cudaStreamSynchronize", "cuda_runtime"),
        ("Stream Sync", "cuda_sync"),
    )
    assert total(followed) == 1


def test_gpu_side_waits_launches_and_calls_outside_the_steps_do_not_count():
    calls = records(
        ("Stream Wait Event", "cuda_sync"),
        ("cudaStreamWaitEvent", "cuda_runtime"),
        ("cudaLaunchKernel", "cuda_runtime"),
        ("cudaGraphLaunch", "cuda_runtime"),
        ("cudaMemcpyAsync", "cuda_runtime"),
    )
    calls.append(Call("cudaDeviceSynchronize", "cuda_runtime", 7, 2000, 2100))  # after the range
    calls.append(Call("Context Sync", "cuda_sync", 7, 2000, 2100))
    assert total(calls) == 0


def test_without_the_range_the_steps_lie_between_the_bracketing_device_syncs():
    """torch 2.11's profiler on an H200 kept no user range; count_syncs synchronises the
    device just before and just after the steps, and what lies strictly between counts."""
    calls = [
        Call("cudaDeviceSynchronize", "cuda_runtime", 7, 0, 100),
        Call("Context Sync", "cuda_sync", 7, 10, 100),
        Call("cudaLaunchKernel", "cuda_runtime", 7, 200, 205),
        Call("cudaMemcpyAsync", "cuda_runtime", 7, 300, 305),
        Call("cudaStreamSynchronize", "cuda_runtime", 7, 310, 400),
        Call("Stream Sync", "cuda_sync", 7, 312, 400),  # the one wait in the steps
        Call("cudaDeviceSynchronize", "cuda_runtime", 7, 1000, 1100),
        Call("Context Sync", "cuda_sync", 7, 1010, 1100),
    ]
    waits, source = host_waits(calls)
    assert dict(waits) == {"Stream Sync": 1} and source == "cuda_sync records"
    with pytest.raises(RuntimeError, match="cannot tell the steps"):
        host_waits(calls[2:6])


def test_profiler_records_are_read_with_the_counted_range():
    from torch.profiler import ProfilerActivity, profile, record_function

    with profile(activities=[ProfilerActivity.CPU]) as prof, record_function(WINDOW):
        torch.ones(4).sum().item()
    calls = _calls(prof)
    assert any(c.kind == "user_annotation" and c.name == WINDOW for c in calls)
    assert any(c.name == "aten::item" for c in calls)
    assert total(calls) == 0  # no CUDA on this machine, so no wait
