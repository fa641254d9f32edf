"""Multi-process training under torchrun: NCCL on GPUs, gloo on CPUs.

One process per GPU (``cuda:LOCAL_RANK``) or per CPU worker (the machine's cores split
between the local ranks). Every rank simulates ``--num_envs`` envs with its own seed
(``seed + rank``); rsl-rl's PPO all-reduces gradients, the normalizer statistics and the
adaptive learning rate, so parameters stay identical on every rank; rank 0 alone logs,
saves checkpoints and records video.

Faults end the job instead of hanging it: collectives time out after ``--dist_timeout``
seconds, and every iteration starts at a monitored barrier (gloo) that names the ranks that
did not arrive. torchrun stops the whole job when a worker exits, and names it.
"""

from __future__ import annotations

import datetime as _dt
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

from robolearn.errors import RobolearnError
from robolearn.threads import available_cores


@dataclass(frozen=True)
class DistInfo:
    """Where this process stands in the job."""

    rank: int = 0
    local_rank: int = 0
    world_size: int = 1
    local_world_size: int = 1
    backend: str = ""

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0


SINGLE = DistInfo()


def from_environment() -> DistInfo:
    """The rank layout torchrun set in the environment (RANK, LOCAL_RANK, WORLD_SIZE...)."""
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        raise RobolearnError(
            "--distributed needs torchrun's environment (RANK, WORLD_SIZE); launch with "
            "torchrun --nproc_per_node K -m robolearn train ... --distributed, or use --nproc K"
        )
    return DistInfo(
        rank=int(os.environ["RANK"]),
        local_rank=int(os.environ.get("LOCAL_RANK", 0)),
        world_size=int(os.environ["WORLD_SIZE"]),
        local_world_size=int(os.environ.get("LOCAL_WORLD_SIZE", os.environ["WORLD_SIZE"])),
    )


def initialize(info: DistInfo, engine: str, timeout_s: float) -> tuple[DistInfo, str, int | None]:
    """Start the process group; returns (info with backend, the engine this rank runs, the
    CPU threads this rank may use or None on a GPU).

    GPUs: NCCL, one GPU per local rank (``cuda:LOCAL_RANK``). CPUs: gloo, with this rank's
    share of the cores for MuJoCo's threads and torch's.
    """
    on_gpu = engine.startswith("cuda") or (engine == "auto" and torch.cuda.is_available())
    if on_gpu:
        if info.local_rank >= torch.cuda.device_count():
            raise RobolearnError(
                f"local rank {info.local_rank} has no GPU: {torch.cuda.device_count()} visible"
            )
        torch.cuda.set_device(info.local_rank)
        engine, backend, threads = f"cuda:{info.local_rank}", "nccl", None
        # NCCL otherwise waits forever on a dead peer; this makes its timeout real.
        os.environ.setdefault("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")
    else:
        backend = "gloo"
        engine = "cpu" if engine == "auto" else engine
        threads = max(1, available_cores() // info.local_world_size)
        torch.set_num_threads(threads)
    timeout = _dt.timedelta(seconds=timeout_s)
    dist.init_process_group(
        backend=backend, rank=info.rank, world_size=info.world_size, timeout=timeout
    )
    info = DistInfo(info.rank, info.local_rank, info.world_size, info.local_world_size, backend)
    return info, engine, threads


class Monitor:
    """A gloo side group for liveness checks that name the missing ranks."""

    def __init__(self, info: DistInfo, timeout_s: float) -> None:
        self.info = info
        self.timeout = _dt.timedelta(seconds=timeout_s)
        # Its own gloo group: when a collective of training fails, its connections close,
        # and this group can still ask every rank whether it is alive. Its collectives
        # (stop requests, the health check's any_true) time out like the job's: a rank that
        # hangs between two of them must end the job, not stall it for gloo's default 30 min.
        self.group = dist.new_group(backend="gloo", timeout=self.timeout)
        # A third group, used only to find the missing ranks after a collective failed: a
        # timed-out collective closes its group's connections, whichever group it ran on.
        self._probe = dist.new_group(backend="gloo", timeout=self.timeout)

    def barrier(self, where: str) -> None:
        try:
            dist.monitored_barrier(group=self.group, timeout=self.timeout, wait_all_ranks=True)
        except RuntimeError as exc:
            raise RankError(f"{where}: {str(exc).strip().splitlines()[0]}") from exc

    def explain(self, exc: BaseException) -> RankError:
        """After a collective failed on this rank: find out which ranks stopped answering."""
        first = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        try:
            dist.monitored_barrier(
                group=self._probe, timeout=_dt.timedelta(seconds=10), wait_all_ranks=True
            )
        except RuntimeError as probe:
            missing = str(probe).strip().splitlines()[0]
            return RankError(f"{missing} (after a collective failed: {first[:200]})")
        return RankError(f"a collective failed while every rank was alive: {first[:200]}")

    def any_true(self, flag: bool) -> bool:
        """True on every rank if ``flag`` is true on any (e.g. a stop request)."""
        value = torch.tensor([1.0 if flag else 0.0])
        dist.all_reduce(value, op=dist.ReduceOp.MAX, group=self.group)
        return bool(value.item())

    def same_on_all_ranks(self, tensor: torch.Tensor) -> bool:
        gathered = [torch.empty_like(tensor) for _ in range(self.info.world_size)]
        dist.all_gather(gathered, tensor, group=self.group)
        return all(torch.equal(gathered[0], g) for g in gathered[1:])

    def broadcast_object(self, obj):
        box = [obj]
        dist.broadcast_object_list(box, src=0, group=self.group)
        return box[0]


class RankError(RuntimeError):
    """A rank died, hung or diverged; the job must stop."""


def shutdown() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
