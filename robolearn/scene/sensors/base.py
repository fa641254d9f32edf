"""What every scene sensor shares: its config's update period, its reset, its step.

A sensor is declared in ``SceneCfg.sensors`` by name and built with the scene. The scene
tells each sensor when the physics stepped (:meth:`Sensor.step`) and when envs reset
(:meth:`Sensor.reset`, :meth:`Sensor.invalidate`); observation and reward terms read its
data by name (``env.scene.sensors["scan"]``). A sensor whose reading is costly (a ray
cast, an image) computes it when first read after the state changed, at most once per
``update_period`` env steps, so that a sensor nobody reads costs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import mujoco
import torch

from robolearn.errors import RobolearnError
from robolearn.sim import Engine


class SensorHost(Protocol):
    """What a sensor reads of the scene that carries it (:class:`robolearn.scene.Scene` is
    one): sensors depend on this, not on the scene's module, which builds them."""

    num_envs: int
    device: torch.device
    model: mujoco.MjModel
    engine: Engine
    body_names: list[str]
    env_origins: torch.Tensor
    ray_groups: Any
    """The spare geom groups ray casters skip (a
    :class:`~robolearn.scene.sensors.ray_groups.RayGroups`)."""
    terrain: Any
    """The generated terrain (its ``height_map`` and ``geom_id``), or None."""

    def entity(self, name: str) -> Any: ...

    def index(self, kind: str, selector: Any) -> torch.Tensor: ...

    def contact_force_of(self, body_ids: torch.Tensor) -> torch.Tensor: ...

    @property
    def root_pos_w(self) -> torch.Tensor: ...

    @property
    def root_quat_w(self) -> torch.Tensor: ...


@dataclass(frozen=True)
class SensorCfg:
    """What every sensor's config states."""

    update_period: int = 1
    """Env steps between readings (1: every step). Between them the last reading holds,
    except in envs that reset, which read afresh."""
    debug_vis: bool = False
    """Draw the sensor's readings in the viewers and videos."""

    def build(self, name: str, scene: SensorHost) -> Sensor:
        """The sensor this config describes, in ``scene`` (each kind of sensor's config
        says which; this base config names none)."""
        raise RobolearnError(
            f"scene.sensors.{name}: {type(self).__name__} is no kind of sensor; use "
            "RayCasterCfg, BodyContactSensorCfg or CameraCfg (or a config that builds one)"
        )

    def memory_per_env(self) -> tuple[int, str]:
        """Bytes one env's readings and buffers of this sensor take, and what sizes them
        (``"187 rays"``), counted in the memory check made before the scene's engine is
        built (call :meth:`check` first); (0, "") for a sensor whose buffers are small."""
        return 0, ""

    def check(self, name: str) -> None:
        """Raise a RobolearnError naming ``sensors.<name>`` for a field out of range."""
        period = self.update_period
        if isinstance(period, bool) or not isinstance(period, int) or period < 1:
            raise RobolearnError(
                f"scene.sensors.{name}.update_period must be an integer >= 1, got {period!r}"
            )


class Sensor:
    """A sensor in a running scene; see the module docstring. Subclasses compute their
    reading in :meth:`_update` (when read) or in :meth:`step` (every step)."""

    def __init__(self, cfg: SensorCfg, name: str, scene: SensorHost) -> None:
        cfg.check(name)
        self.cfg = cfg
        self.name = name
        self.scene = scene
        self.num_envs = scene.num_envs
        self.device = scene.device
        self._steps = 0
        self._stale = torch.ones(self.num_envs, dtype=torch.bool, device=self.device)
        """(N,) envs whose reading must be computed afresh when next read."""
        self._any_stale = True

    def step(self, dt: float) -> None:
        """The physics advanced one env step of ``dt`` seconds."""
        self._steps += 1
        if self._steps % self.cfg.update_period == 0:
            self._stale.fill_(True)
            self._any_stale = True

    def reset(self, env_mask: torch.Tensor) -> None:
        """Envs where ``env_mask`` is true start new episodes (their state is the default
        one now; reset events may change it before :meth:`invalidate`)."""

    def invalidate(self, env_mask: torch.Tensor) -> None:
        """The state of the envs where ``env_mask`` is true changed between steps (a reset,
        a forward pass): their next read computes afresh."""
        self._stale |= env_mask
        self._any_stale = True

    def _refresh(self) -> None:
        """Compute the reading where it is stale (a no-op while none is)."""
        if not self._any_stale:
            return
        self._update(self._stale)
        self._stale.fill_(False)
        self._any_stale = False

    def _update(self, env_mask: torch.Tensor) -> None:
        """Compute the reading of (at least) the envs where ``env_mask`` is true; a sensor
        that computes in :meth:`step` has nothing to do here."""


def find_body(scene: SensorHost, entity_name: str, body: str, sensor: str) -> int:
    """The id of ``entity_name``'s body ``body`` (the entity's own name for it); a one-line
    error naming sensor ``sensor`` and the entity's bodies where it has none such."""
    entity = scene.entity(entity_name)
    full = f"{entity.prefix}{body}"
    ids = [b for b in entity.body_ids if scene.body_names[b] == full]
    if not ids:
        owned = ", ".join(entity.local_name(scene.body_names[b]) for b in entity.body_ids if b)
        raise RobolearnError(
            f"scene.sensors.{sensor}: entity {entity_name!r} has no body {body!r}; its "
            f"bodies: {owned or 'none'}"
        )
    return ids[0]
