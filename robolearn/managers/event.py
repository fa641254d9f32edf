"""Events: changes to the world at startup, at every reset, or at random intervals.

``startup`` terms run once when the env is built (e.g. per-env friction and mass),
``reset`` terms for the envs that reset (e.g. a random root pose), ``interval`` terms for
each env whenever its own timer, drawn from ``interval_range_s``, runs out (e.g. pushes).
Every term is ``func(env, env_mask, **params)``, ``env_mask`` an (N,) bool tensor of the
envs concerned: all of them at startup, the resetting ones, the ones whose timer ran out
(an interval term runs at every step, with a mask that may be empty, so that the step never
waits for the GPU to count them; on the cpu engine, whose masks are in host memory, it is
skipped in a step where no timer ran out). A term reads the scene (``env.scene``) as the
engine holds it when the term runs, what earlier terms wrote included: the scene's
per-step state follows every in-place write through torch (:mod:`robolearn.scene.cache`).
Derived fields (body positions, contact forces) are those of
the last forward pass: a reset term sees the reset state's joint positions, not yet its body
positions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from robolearn.errors import RobolearnError
from robolearn.managers.base import ManagerBase, TermCfg, none_selected, raise_named
from robolearn.managers.protocol import ManagedEnv

MODES = ("startup", "reset", "interval")


@dataclass
class EventTermCfg(TermCfg):
    """An event: ``func(env, env_mask, **params)``, applied in ``mode``."""

    mode: str = "reset"
    """``startup``, ``reset`` or ``interval``."""
    interval_range_s: tuple[float, float] | None = None
    """For ``interval`` events: seconds between applications, drawn uniformly per env."""


class EventManager(ManagerBase):
    """Applies the event terms of a mode: at startup, for resetting envs, or on timers."""

    section = "events"
    term_kind = "event term"
    term_args = ("env", "env_mask")

    def __init__(self, cfg: dict[str, EventTermCfg], env: ManagedEnv) -> None:
        self._time_left: dict[str, torch.Tensor] = {}
        """Per interval term, (N,) seconds until each env's next application."""
        super().__init__(cfg, env)

    def _build_term(self, name: str, cfg: EventTermCfg) -> Any:
        self._check_mode(name, cfg)
        if cfg.mode == "interval" and name not in self._time_left:
            self._time_left[name] = self._draw_interval(name, self.env.num_envs)
        return super()._build_term(name, cfg)

    def _check_mode(self, name: str, cfg: EventTermCfg) -> None:
        if cfg.mode not in MODES:
            raise RobolearnError(f"events.{name}.mode is {cfg.mode!r}; valid: {', '.join(MODES)}")
        lo_hi = cfg.interval_range_s
        if cfg.mode == "interval" and (
            lo_hi is None or len(lo_hi) != 2 or not 0 < lo_hi[0] <= lo_hi[1]
        ):
            raise RobolearnError(
                f"events.{name}: interval events need interval_range_s=(low, high) "
                f"with 0 < low <= high, got {lo_hi}"
            )

    def _check_replacement(self, name: str, cfg: EventTermCfg) -> None:
        if cfg.mode != self.cfg[name].mode:
            raise RobolearnError(
                f"events.{name}: the mode of an event cannot change once the env is built"
            )
        self._check_mode(name, cfg)

    def _draw_interval(self, name: str, n: int) -> torch.Tensor:
        lo, hi = self.cfg[name].interval_range_s
        return lo + (hi - lo) * torch.rand(n, device=self.env.device)

    def apply(self, mode: str, env_mask: torch.Tensor | None = None, dt: float = 0.0) -> None:
        """Run the terms of ``mode``: for the envs where ``env_mask`` ((N,) bool; None for
        all) is true (startup, reset), or for those whose timers expire (interval)."""
        name = ""
        try:
            for name, fn in self._terms.items():
                term = self.cfg[name]
                if term.mode != mode:
                    continue
                if mode == "interval":
                    mask = self._due(name, dt)
                    if mask is None:
                        continue
                elif env_mask is None:
                    mask = torch.ones(self.env.num_envs, dtype=torch.bool, device=self.env.device)
                else:
                    mask = env_mask
                fn(self.env, mask, **term.params)
        except RobolearnError as exc:
            # a term finds its names at its first call: say whose they were
            raise_named(exc, f"events.{name}", self.cfg.get(name))

    def _due(self, name: str, dt: float) -> torch.Tensor | None:
        """Advance interval term ``name``'s timers by ``dt``; the (N,) mask of the envs
        whose timer ran out, with new timers drawn for them, or None where the engine
        knows for free that none did (the term is then not called)."""
        time_left = self._time_left[name]
        time_left -= dt
        due = time_left <= 1e-6  # tolerate float rounding
        if none_selected(self.env, due):
            return None
        fresh = self._draw_interval(name, self.env.num_envs)
        torch.where(due, fresh, time_left, out=time_left)
        return due

    def has_mode(self, mode: str) -> bool:
        """Whether any term runs in ``mode``."""
        return any(t.mode == mode for t in self.cfg.values())
