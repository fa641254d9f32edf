"""Actuation delay of MuJoCo's own position loops, run by MuJoCo itself.

MuJoCo (and MuJoCo Warp) can delay an actuator's control: each actuator with a ``delay``
keeps a history of its last ``nsample`` controls, stamped with the time they were given,
and reads the one of ``delay`` seconds ago. For a position loop that is exactly the delay
the real robot has: the target arrives late, the loop runs on the current state. Run by the
engine, a delay costs nothing at the decimation level (the whole decimation stays one
engine call); delayed in robolearn's own ring (:mod:`robolearn.actuators.drive`, which the
explicit motor models still use, where the target and not the torque must lag), every
physics step became an engine call of its own, 10-12% of the env step (BENCHMARKS.md
section 15).

Each env draws its own lag at every reset: the lag is written as the per-env model field
``actuator_delay`` (``(lag - 1/2)`` physics steps, so that MuJoCo's zero-order hold picks
the command of exactly ``lag`` steps ago whatever the rounding of the time stamps; 0 for
no lag), and the history of the reset envs is filled with the reset's command (MuJoCo's
reset fills it with zeros), which they hold until the lag has passed.
"""

from __future__ import annotations

from collections.abc import Sequence

import mujoco
import numpy as np
import torch

from robolearn.actuators.apply import DrivenJoint


def model_delays(driven: Sequence[DrivenJoint]) -> list[DrivenJoint]:
    """The joints whose delay MuJoCo runs: MuJoCo's loops (not explicit) with a delay."""
    return [d for d in driven if not d.explicit and d.delay[1] > 0]


def add_model_delays(spec: mujoco.MjSpec, driven: Sequence[DrivenJoint]) -> None:
    """Give each delayed MuJoCo loop a history deep enough for its longest lag (after the
    timestep is set: the delay is in seconds)."""
    dt = spec.option.timestep
    for d in model_delays(driven):
        actuator = spec.actuator(d.actuator)
        actuator.delay = d.delay[1] * dt
        actuator.nsample = d.delay[1] + 2
        actuator.interp = 0  # zero-order hold: a command holds until the next one


class ModelDelay:
    """Each env's lag of each delayed MuJoCo loop, drawn at its reset and written into the
    engine's model and history (see the module docstring)."""

    def __init__(self, driven: Sequence[DrivenJoint], model: mujoco.MjModel, engine) -> None:
        delayed = model_delays(driven)
        dev = engine.device
        ids = [model.actuator(d.actuator).id for d in delayed]
        self._ids = torch.tensor(ids, dtype=torch.long, device=dev)
        low = torch.tensor([d.delay[0] for d in delayed], dtype=torch.long, device=dev)
        self._low, self._span = (
            low,
            torch.tensor(
                [d.delay[1] - d.delay[0] + 1 for d in delayed], dtype=torch.long, device=dev
            ),
        )
        self._dt = float(model.opt.timestep)
        self._delay = engine.model_field("actuator_delay")
        self._history = engine.history
        slots = _value_slots(model, ids)
        # every stored command's slot in the history, and the delayed loop it belongs to
        self._slots = torch.tensor([i for s in slots for i in s], dtype=torch.long, device=dev)
        self._slot_owner = torch.tensor(
            [ids[k] for k, s in enumerate(slots) for _ in s], dtype=torch.long, device=dev
        )
        self.lag = low.expand(engine.num_envs, -1).clone()
        """(N, k) each env's lag of each delayed loop, physics steps."""

    def reset(self, env_mask: torch.Tensor, default: torch.Tensor) -> None:
        """New lags for the envs where ``env_mask`` is true; their history holds
        ``default`` ((nu,), the reset command)."""
        n, k = env_mask.shape[0], self._ids.numel()
        draw = torch.rand(n, k, device=env_mask.device)
        lag = self._low + (draw * self._span).long().clamp(max=self._span - 1)
        mask = env_mask.unsqueeze(-1)
        self.lag = torch.where(mask, lag, self.lag)
        seconds = torch.where(self.lag > 0, (self.lag - 0.5) * self._dt, 0.0)
        old = self._delay[:, self._ids]
        self._delay[:, self._ids] = torch.where(mask, seconds.to(old.dtype), old)
        held = default.to(self._history.dtype)[self._slot_owner]
        old = self._history[:, self._slots]  # a copy (N, slots), filled in place: one copy
        self._history[:, self._slots] = torch.where(mask, held, old, out=old)


def _value_slots(model: mujoco.MjModel, ids: Sequence[int]) -> list[list[int]]:
    """Where in MuJoCo's history buffer each actuator's stored commands lie, found by
    writing known values with MuJoCo's own ``mj_initCtrlHistory`` (the buffer's layout is
    MuJoCo's to choose; MuJoCo Warp copies it)."""
    data = mujoco.MjData(model)
    slots = []
    for a in ids:
        n = int(model.actuator_history[a, 0])
        marks = 1e6 + np.arange(n, dtype=float) + 1000.0 * a
        data.history[:] = 0.0
        times = np.arange(n, dtype=float).reshape(n, 1) - n  # any increasing stamps
        mujoco.mj_initCtrlHistory(model, data, a, times, marks.reshape(n, 1))
        found = [int(np.flatnonzero(data.history == v)[0]) for v in marks]
        slots.append(found)
    return slots
