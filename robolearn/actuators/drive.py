"""The actuators' commands turned into the engine's controls at every physics step.

Where every joint is driven by MuJoCo (the MJCF's actuators, or
:class:`~robolearn.actuators.ImplicitPDCfg`, delayed or not: MuJoCo delays its own
loops, :mod:`robolearn.actuators.delay`), an action term's command *is* the engine's ``ctrl``
and the scene steps the whole decimation in one engine call. A :class:`Drive` exists only
where robolearn must act between physics steps:

* explicit motor models (:class:`~robolearn.actuators.IdealPDCfg`,
  :class:`~robolearn.actuators.DCMotorCfg`): the torque is computed from each
  physics step's joint state and written as the motor's ``ctrl``;
* learned actuator nets (:class:`~robolearn.actuators.ActuatorNetCfg`): the
  torque is the net's, from the joints' recent errors and velocities;
* their actuation delay: each env's target reaches its motors a lag of physics steps late,
  read from a ring of the commands of the last steps, while the torque follows the
  current state (a delay of MuJoCo's would hold back the torque computed from the old
  state instead).

Everything runs in torch on the engine's device, for every env at once, with no read of a
device value on the host (the lags are drawn on the device, the ring's position is a
Python count of physics steps).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import mujoco
import torch

from robolearn.actuators.apply import DrivenJoint
from robolearn.actuators.network import NetworkMotor, load_actuator_net
from robolearn.math import columns_of, take_columns


def _network_motors(explicit: Sequence[DrivenJoint], n: int, dev, dtype) -> list[tuple]:
    """One :class:`NetworkMotor` per distinct net (file, history and scales), with its
    joints' columns among the explicit motors'; each file loaded (and checked) once."""
    groups: dict[tuple, list[int]] = {}
    for column, d in enumerate(explicit):
        if d.network is not None:
            groups.setdefault(d.network, []).append(column)
    motors = []
    for (file, history, pos, vel, out), cols in groups.items():
        net = load_actuator_net(file, history, dev, dtype)
        motor = NetworkMotor(net, n, len(cols), history, dev, dtype, pos, vel, out)
        motors.append((columns_of(cols, dev), motor))
    return motors


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

        def column(values: list[float]) -> torch.Tensor:
            return torch.tensor(values, dtype=dtype, device=dev)

        dc = [math.isfinite(d.saturation_effort) for d in explicit]
        self.nominal = {
            "stiffness": column([d.stiffness for d in explicit]),
            "damping": column([d.damping for d in explicit]),
            "effort_limit": column([d.effort_limit for d in explicit]),
        }
        """The config's (k,) kp, kd and effort limit of the explicit motors, around which
        randomization draws each env's."""
        self.stiffness = self.nominal["stiffness"].expand(n, -1).clone()
        """(N, k) each env's kp of each explicit motor (columns: :attr:`explicit_ids`)."""
        self.damping = self.nominal["damping"].expand(n, -1).clone()
        """(N, k) each env's kd."""
        self.effort_limit = self.nominal["effort_limit"].expand(n, -1).clone()
        """(N, k) each env's effort limit (inf: none)."""
        self.explicit_ids = ids
        """The actuator ids of the explicit motors, in the order of their columns."""
        inf = math.inf
        self._saturation = column([d.saturation_effort for d in explicit])
        line = [d.velocity_limit if k else inf for d, k in zip(explicit, dc, strict=True)]
        self._speed = column(line)
        self._dc = any(dc)
        top = [inf if k else d.velocity_limit for d, k in zip(explicit, dc, strict=True)]
        self._top_speed = column(top)
        self._governed = any(math.isfinite(v) for v in top)
        self._nets = _network_motors(explicit, n, dev, dtype)
        """(columns among the explicit ones, NetworkMotor) of each learned actuator net."""
        self.net_actuators = frozenset(d.actuator for d in explicit if d.network is not None)
        """Names of the actuators a learned net drives (no gains to randomize)."""
        self._init_delay(driven, model, n, nu, dev, dtype)

    @staticmethod
    def needed(driven: Sequence[DrivenJoint]) -> bool:
        """Whether any joint needs work between physics steps: an explicit model (MuJoCo
        itself delays its own loops, :mod:`robolearn.actuators.delay`)."""
        return any(d.explicit for d in driven)

    # ---- one physics step ------------------------------------------------------------

    def apply(self, engine) -> None:
        """Write the controls of the coming physics step into ``engine.ctrl``."""
        command = self._delayed() if self._history is not None else self.command
        ctrl = engine.ctrl
        if self._others is not None:
            ctrl[:, self._others] = take_columns(command, self._others)
        if self.explicit_ids:
            ctrl[:, self._explicit] = self._torque(engine, command)

    def _torque(self, engine, command: torch.Tensor) -> torch.Tensor:
        """(N, k) the explicit motors' torques: the PD law, clipped by the effort limit,
        by the torque-speed line of DC motors, and by the speed governor of PD loops with a
        top speed, at each joint's speed."""
        q = take_columns(engine.qpos, self._qpos_cols)
        qd = take_columns(engine.qvel, self._dof_cols)
        target = take_columns(command, self._explicit)
        torque = self.stiffness * (target - q) - self.damping * qd
        for cols, motor in self._nets:
            # the net's torque in place of the PD law's, limited as any motor's below
            net = motor.torque(take_columns(target, cols), take_columns(q, cols),
                               take_columns(qd, cols))  # fmt: skip
            torque[:, cols] = net
        high, low = self.effort_limit, -self.effort_limit
        if self._dc:
            # inf - v/inf: the motors without a line keep +-effort
            slope = qd / self._speed
            high = torch.minimum(self._saturation * (1.0 - slope), high).clamp(min=0.0)
            low = torch.maximum(self._saturation * (-1.0 - slope), low).clamp(max=0.0)
        if self._governed:
            # at its top speed a joint gets no torque that would turn it faster
            high = torch.where(qd >= self._top_speed, 0.0, high)
            low = torch.where(qd <= -self._top_speed, 0.0, low)
        return torch.maximum(torch.minimum(torch.nan_to_num(torque), high), low)

    # ---- delay -----------------------------------------------------------------------

    def _init_delay(self, driven, model, n: int, nu: int, dev, dtype) -> None:
        # the lags' bounds per actuator, known on the host: no device read to size the ring
        low, high = [0] * nu, [0] * nu
        for d in driven:
            if d.explicit:  # MuJoCo delays its own loops
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
        ``default`` ((nu,), the reset command): until the lag passes they hold it; the
        learned actuators forget their history."""
        for _, motor in self._nets:
            motor.reset(env_mask)
        if self._history is None:
            return
        draw = torch.rand(env_mask.shape[0], 1, device=env_mask.device)
        lag = self._lag_low + (draw * self._lag_span).long().clamp(max=self._lag_span - 1)
        mask = env_mask.unsqueeze(-1)
        self.lag = torch.where(mask, lag, self.lag)
        # in place: a ring of thousands of steps would otherwise be copied whole at a reset
        torch.where(
            mask.unsqueeze(0), default.to(self._history.dtype), self._history, out=self._history
        )
