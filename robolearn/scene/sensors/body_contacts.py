"""A contact sensor on a set of bodies: the net contact force on each, whether it touches,
and how long it has been in the air or on the ground (Isaac Lab's ``ContactSensor``).

The force is MuJoCo's ``cfrc_ext`` (every external force on the body: the ground, other
bodies, other robots), on every engine, with the derived fields' timing (the state
before the last substep). The sensor integrates its clocks once per env step, so each
term that reads them sees the same values:

* ``current_air_time`` / ``current_contact_time``: seconds since the body last touched /
  left (0 while it touches / is in the air);
* ``last_air_time`` / ``last_contact_time``: how long the last flight / stance lasted;
* ``first_contact`` / ``first_air``: the body touched down / lifted off in this step;
* ``force_history``: the net force of the last ``history_length`` steps, newest first.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from robolearn.errors import RobolearnError
from robolearn.scene.entities import ROBOT, SceneEntityCfg
from robolearn.scene.sensors.base import Sensor, SensorCfg, SensorHost


@dataclass(frozen=True)
class BodyContactSensorCfg(SensorCfg):
    """Contacts of the bodies of ``entity`` that match ``bodies`` (regexes of its own body
    names), in the order the model lists them."""

    bodies: str | tuple[str, ...] = ".*"
    entity: str = ROBOT
    threshold: float = 1.0
    """A body touches when its net contact force exceeds this (N)."""
    history_length: int = 3
    """Steps of net force kept in ``force_history`` (>= 1)."""

    def build(self, name: str, scene: SensorHost) -> BodyContactSensor:
        return BodyContactSensor(self, name, scene)

    def check(self, name: str) -> None:
        super().check(name)
        if self.update_period != 1:
            raise RobolearnError(
                f"scene.sensors.{name}: a contact sensor's clocks tick every step "
                f"(update_period 1), got {self.update_period}"
            )
        length = self.history_length
        if isinstance(length, bool) or not isinstance(length, int) or length < 1:
            raise RobolearnError(
                f"scene.sensors.{name}.history_length must be an integer >= 1, got {length!r}"
            )
        if not self.threshold >= 0:
            raise RobolearnError(
                f"scene.sensors.{name}.threshold must be >= 0, got {self.threshold}"
            )


class BodyContactSensor(Sensor):
    """A running contact sensor; see the module docstring for what it holds."""

    cfg: BodyContactSensorCfg

    def __init__(self, cfg: BodyContactSensorCfg, name: str, scene: SensorHost) -> None:
        super().__init__(cfg, name, scene)
        try:
            self.body_ids = scene.index("body", SceneEntityCfg(cfg.entity, bodies=cfg.bodies))
        except RobolearnError as exc:
            raise RobolearnError(f"scene.sensors.{name}: {exc}") from None
        self.body_names = [scene.body_names[b] for b in self.body_ids.tolist()]
        shape = (self.num_envs, len(self.body_names))
        zeros = lambda: torch.zeros(shape, device=self.device)  # noqa: E731
        self.current_air_time, self.current_contact_time = zeros(), zeros()
        self.last_air_time, self.last_contact_time = zeros(), zeros()
        self.in_contact = torch.zeros(shape, dtype=torch.bool, device=self.device)
        self.first_contact = torch.zeros_like(self.in_contact)
        self.first_air = torch.zeros_like(self.in_contact)
        self.force_history = torch.zeros(
            self.num_envs, cfg.history_length, len(self.body_names), 3, device=self.device
        )

    @property
    def net_force_w(self) -> torch.Tensor:
        """(N, B) the net contact force on each body now, world frame (N)."""
        return self.scene.contact_force_of(self.body_ids)

    def step(self, dt: float) -> None:
        super().step(dt)
        force = self.net_force_w
        touching = force.norm(dim=-1) > self.cfg.threshold
        was_air = self.current_air_time > 0
        was_contact = self.current_contact_time > 0
        self.first_contact = touching & ~self.in_contact
        self.first_air = ~touching & self.in_contact
        # a flight's length is known when it ends: the time in the air plus this step
        self.last_air_time = torch.where(
            self.first_contact & was_air, self.current_air_time + dt, self.last_air_time
        )
        self.last_contact_time = torch.where(
            self.first_air & was_contact, self.current_contact_time + dt, self.last_contact_time
        )
        self.current_air_time = torch.where(touching, 0.0, self.current_air_time + dt)
        self.current_contact_time = torch.where(touching, self.current_contact_time + dt, 0.0)
        self.in_contact = touching
        self.force_history = torch.cat((force.unsqueeze(1), self.force_history[:, :-1]), dim=1)

    def reset(self, env_mask: torch.Tensor) -> None:
        rows = env_mask.unsqueeze(-1)
        for clock in (
            self.current_air_time,
            self.current_contact_time,
            self.last_air_time,
            self.last_contact_time,
        ):
            clock.masked_fill_(rows, 0.0)
        for flag in (self.in_contact, self.first_contact, self.first_air):
            flag.masked_fill_(rows, False)
        self.force_history.masked_fill_(rows.unsqueeze(-1).unsqueeze(-1), 0.0)
