"""The actuators' commands turned into the engine's controls at every physics step.

Where every joint is driven by MuJoCo (the MJCF's actuators, or
:class:`~robolearn.scene.actuators.ImplicitPDCfg` without a delay), an action term's
command *is* the engine's ``ctrl`` and the scene steps the whole decimation in one engine
call. A :class:`Drive` exists only where robolearn must act between physics steps:

* explicit motor models (:class:`~robolearn.scene.actuators.IdealPDCfg`,
  :class:`~robolearn.scene.actuators.DCMotorCfg`): the torque is computed from each
  physics step's joint state and written as the motor's ``ctrl``;
* actuation delay: each env's command reaches its actuators a lag of physics steps late,
  read from a ring of the commands of the last steps.

Everything runs in torch on the engine's device, for every env at once, with no read of a
device value on the host (the lags are drawn on the device, the ring's position is a
Python count of physics steps).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import mujoco
import torch

from robolearn.math import columns_of, take_columns
from robolearn.scene.actuators import DrivenJoint


class Drive:
    """Commands (what the action terms write, one column per actuator) to controls, one
    physics step at a time."""

    def __init__(self, driven: Sequence[DrivenJoint], model: mujoco.MjModel, engine) -> None:
        n, nu, dev, dtype = engine.num_envs, model.nu, engine.device, engine.dtype
        self.command = torch.zeros(n, nu, dtype=dtype, device=dev)
        """(N, nu) the latest command of every actuator: a position target for position
        loops (MuJoCo's or explicit), the control itself for the MJCF's other actuators."""
        explicit = [d for d in driven if d.explicit]
        ids = [model.actuator(d.actuator).id for d in explicit]
        joints = [model.joint(d.joint) for d in explicit]
        # slices where consecutive (a robot's joints and motors mostly are): views, not
        # gathers and scatters, at every physics step
        self._explicit = columns_of(ids, dev)
        self._qpos_cols = columns_of([int(j.qposadr[0]) for j in joints], dev)
        self._dof_cols = columns_of([int(j.dofadr[0]) for j in joints], dev)
        others = sorted(set(range(nu)) - set(ids))
        self._others = columns_of(others, dev) if others else None

        def column(field: str) -> torch.Tensor:
            return torch.tensor([getattr(d, field) for d in explicit], dtype=dtype, device=dev)

        self._kp, self._kd = column("stiffness"), column("damping")
        self._effort = column("effort_limit")
        self._saturation, self._speed = column("saturation_effort"), column("velocity_limit")
        self._dc = any(math.isfinite(d.velocity_limit) for d in explicit)
        self._init_delay(driven, model, n, nu, dev, dtype)

    @staticmethod
    def needed(driven: Sequence[DrivenJoint]) -> bool:
        """Whether any joint needs work between physics steps (an explicit model, a delay)."""
        return any(d.explicit or d.delay[1] > 0 for d in driven)

    # ---- one physics step ------------------------------------------------------------

    def apply(self, engine) -> None:
        """Write the controls of the coming physics step into ``engine.ctrl``."""
        command = self._delayed() if self._history is not None else self.command
        ctrl = engine.ctrl
        if self._others is not None:
            ctrl[:, self._others] = take_columns(command, self._others)
        if self._kp.numel():
            ctrl[:, self._explicit] = self._torque(engine, command)

    def _torque(self, engine, command: torch.Tensor) -> torch.Tensor:
        """(N, k) the explicit motors' torques: the PD law, clipped by the effort limit and,
        for DC motors, by the torque-speed line at each joint's speed."""
        q = take_columns(engine.qpos, self._qpos_cols)
        qd = take_columns(engine.qvel, self._dof_cols)
        target = take_columns(command, self._explicit)
        torque = self._kp * (target - q) - self._kd * qd
        high, low = self._effort, -self._effort
        if self._dc:
            # inf - v/inf: the motors without a line keep +-effort
            slope = qd / self._speed
            high = torch.minimum(self._saturation * (1.0 - slope), high).clamp(min=0.0)
            low = torch.maximum(self._saturation * (-1.0 - slope), low).clamp(max=0.0)
        return torch.maximum(torch.minimum(torch.nan_to_num(torque), high), low)

    # ---- delay -----------------------------------------------------------------------

    def _init_delay(self, driven, model, n: int, nu: int, dev, dtype) -> None:
        # the lags' bounds per actuator, known on the host: no device read to size the ring
        low, high = [0] * nu, [0] * nu
        for d in driven:
            low[model.actuator(d.actuator).id], high[model.actuator(d.actuator).id] = d.delay
        depth = max(high, default=0) + 1
        self._history = torch.zeros(depth, n, nu, dtype=dtype, device=dev) if depth > 1 else None
        self._lag_low = torch.tensor(low, dtype=torch.long, device=dev)
        self._lag_span = torch.tensor([h - lo + 1 for lo, h in zip(low, high, strict=True)],
                                      dtype=torch.long, device=dev)  # fmt: skip
        self.lag = torch.zeros(n, nu, dtype=torch.long, device=dev)
        """(N, nu) each env's delay of each actuator, physics steps, drawn at its reset."""
        self._step = 0

    def _delayed(self) -> torch.Tensor:
        """Push this step's command into the ring; each env's command of ``lag`` steps ago."""
        depth = self._history.shape[0]
        self._history[self._step % depth] = self.command
        slot = (self._step - self.lag) % depth
        self._step += 1
        return self._history.gather(0, slot.unsqueeze(0)).squeeze(0)

    def reset(self, env_mask: torch.Tensor, default: torch.Tensor) -> None:
        """New lags for the envs where ``env_mask`` is true, and their ring filled with
        ``default`` ((nu,), the reset command): until the lag passes they hold it."""
        if self._history is None:
            return
        draw = torch.rand(env_mask.shape[0], 1, device=env_mask.device)
        lag = self._lag_low + (draw * self._lag_span).long().clamp(max=self._lag_span - 1)
        mask = env_mask.unsqueeze(-1)
        self.lag = torch.where(mask, lag, self.lag)
        self._history.copy_(
            torch.where(mask.unsqueeze(0), default.to(self._history.dtype), self._history)
        )
