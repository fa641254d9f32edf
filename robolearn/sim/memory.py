"""How much memory an env count needs, and how much there is, before anything is allocated.

An env count too large for the machine used to grow until the kernel killed the process
(exit 137, no message). The estimates here are made from the model's sizes before the
engine allocates: on the cpu engine the state rows and bound fields of every simulation
(float64), on the Warp engines the size of one world of MuJoCo Warp's data (float32,
contacts and constraint rows included), measured by putting one and two worlds on the
device. The scene adds what it allocates per env beside the engine, each consumer by name
(its sensors' readings, its delay rings, the env's own buffers), so that a refusal names
the largest and the setting that sizes it. :func:`require` turns an estimate that does not
fit into a one-line error.

What is available: on the host, the kernel's ``MemAvailable`` and the room left under the
process's cgroup limit, whichever is smaller; on a GPU, the free memory CUDA reports.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import mujoco
import numpy as np
import torch

from robolearn.errors import RobolearnError

_GIB = 2**30
_CGROUP = Path("/sys/fs/cgroup")


def available_bytes(device: torch.device | str) -> int | None:
    """Bytes that can still be allocated on ``device``, or None when unknown."""
    device = torch.device(device)
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return int(free)
    found = [n for n in (_meminfo_available(), _cgroup_room()) if n is not None]
    return min(found) if found else None


def _meminfo_available() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cgroup_room() -> int | None:
    """Room under the cgroup v2 limit of this process (a container's or a job's)."""
    try:
        limit = (_CGROUP / "memory.max").read_text().strip()
        if limit == "max":
            return None
        used = int((_CGROUP / "memory.current").read_text().strip())
        return max(int(limit) - used, 0)
    except (OSError, ValueError):
        return None


def field_bytes_per_env(model: mujoco.MjModel, itemsize: int = 8) -> int:
    """Bytes of one env's state and bound fields (robolearn.sim.engine.FIELDS) at
    ``itemsize`` bytes a value: what the cpu engine holds per simulation, and about what
    the env's own buffers take beside it."""
    from robolearn.sim.engine import FIELDS

    data = mujoco.MjData(model)
    values = sum(np.size(getattr(data, name)) for name in FIELDS)
    values += mujoco.mj_stateSize(model, mujoco.mjtState.mjSTATE_INTEGRATION)
    return values * itemsize


def model_field_bytes_per_env(model: mujoco.MjModel, per_env_fields: Sequence[str]) -> int:
    """Bytes of one env's copy of the per-env model fields (domain randomization)."""
    return sum(getattr(model, name).nbytes for name in per_env_fields if hasattr(model, name))


Reserve = int | Mapping[str, int]
"""Bytes per env a caller allocates beside an engine: a number (the env's buffers), or each
consumer's bytes by what it is, named with the setting that sizes it
(``"scene.sensors.scan's 187 rays"``), so that a refusal can name the largest."""

SIMULATION = "the simulation's state"
"""The engine's own part of an env's memory, as a refusal names it."""
HISTORIES = "MuJoCo's histories of the delayed actuators, each as long as its delay's max"
"""What MuJoCo's histories of delayed actuators (and sensors) take per env: the engine's
own, and the copies the caller makes of them (a reset's)."""


def reserve_parts(reserve: Reserve) -> dict[str, int]:
    """A :data:`Reserve` by consumer (a bare number is the env's buffers), zeros left out."""
    parts = reserve if isinstance(reserve, Mapping) else {"the env's buffers": reserve}
    return {name: int(n) for name, n in parts.items() if n}


def require_envs(
    num_envs: int,
    device: torch.device | str,
    model: mujoco.MjModel,
    engine_bytes: int,
    itemsize: int,
    reserve: Reserve,
) -> None:
    """Refuse ``num_envs`` envs of ``engine_bytes`` each in the engine (values of
    ``itemsize`` bytes) and ``reserve`` beside it, when they do not fit on ``device``,
    naming the largest part: MuJoCo's histories of delayed actuators (:data:`HISTORIES`,
    to which the reserve may add its own copies of them) apart from the rest."""
    history = model.nhistory * itemsize
    parts = {SIMULATION: engine_bytes - history, HISTORIES: history}
    for name, n in reserve_parts(reserve).items():  # the reserve's own share of a part adds
        parts[name] = parts.get(name, 0) + n
    parts = reserve_parts(parts)
    require(sum(parts.values()) * num_envs, device, f"{num_envs:,} envs", num_envs, parts=parts)


def require(
    need: int,
    device: torch.device | str,
    what: str,
    per: int | None = None,
    advice: str = "use fewer envs (--num_envs)",
    parts: Mapping[str, int] | None = None,
) -> None:
    """Refuse ``need`` bytes on ``device`` when they are beyond what is available.

    Args:
        need: the estimate, in bytes.
        device: where the memory is (host memory for ``cpu``).
        what: what needs it, for the message (``"1,000,000 envs"``).
        per: the count ``need`` is for, to say the bytes per item (``what`` names it).
        advice: what to change, ending the message.
        parts: what ``need / per`` is made of, bytes by consumer: the message names the
            largest, and where that is not :data:`SIMULATION`, advises making it smaller.

    Raises:
        RobolearnError: one line saying how much is needed and how much there is.
    """
    available = available_bytes(device)
    if available is None or need <= available:
        return
    where = "GPU memory" if torch.device(device).type == "cuda" else "memory"
    each = f"{_size(need // per)} each" if per else ""
    if parts:
        largest = max(parts, key=lambda name: parts[name])
        each += f", {_size(parts[largest])} of it {largest}"
        if largest != SIMULATION:
            advice = f"make that smaller, or {advice}"
    each = f" ({each})" if each else ""
    raise RobolearnError(
        f"{what} need about {_size(need)} of {where}{each}, and this machine has "
        f"{_size(available)} available; {advice}"
    )


def _size(n: int) -> str:
    """Bytes in TiB, GiB, MiB or KiB, whichever reads best."""
    for unit, scale in (("TiB", 2**40), ("GiB", _GIB), ("MiB", 2**20)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n / 1024:,.1f} KiB"
