"""Events: changes to the world at startup, at every reset, or at random intervals.

``startup`` terms run once when the env is built (e.g. per-env friction and mass),
``reset`` terms for the envs that reset (e.g. a random root pose), ``interval`` terms for
each env whenever its own timer, drawn from ``interval_range_s``, runs out (e.g. pushes).
Every term is ``func(env, env_ids, **params)``. A term reads the scene (``env.scene``) as the
engine holds it when the term runs: the scene's per-step cache is dropped before reset
events and after each term. Derived fields (body positions, contact forces) are those of
the last forward pass: a reset term sees the reset state's joint positions, not yet its body
positions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from robolearn.errors import RobolearnError
from robolearn.managers.base import TermCfg, reset_term, resolve_term

if TYPE_CHECKING:
    from robolearn.env import ManagerBasedRLEnv

MODES = ("startup", "reset", "interval")


@dataclass
class EventTermCfg(TermCfg):
    """An event: ``func(env, env_ids, **params)``, applied in ``mode``."""

    mode: str = "reset"
    """``startup``, ``reset`` or ``interval``."""
    interval_range_s: tuple[float, float] | None = None
    """For ``interval`` events: seconds between applications, drawn uniformly per env."""


class EventManager:
    def __init__(self, cfg: dict[str, EventTermCfg], env: ManagerBasedRLEnv) -> None:
        self.env = env
        self.cfg = cfg
        self._terms = {}
        self._time_left: dict[str, torch.Tensor] = {}
        for name, term in cfg.items():
            if term.mode not in MODES:
                raise RobolearnError(
                    f"events.{name}.mode is {term.mode!r}; valid: {', '.join(MODES)}"
                )
            if term.mode == "interval":
                lo_hi = term.interval_range_s
                if lo_hi is None or len(lo_hi) != 2 or not 0 < lo_hi[0] <= lo_hi[1]:
                    raise RobolearnError(
                        f"events.{name}: interval events need interval_range_s=(low, high) "
                        f"with 0 < low <= high, got {lo_hi}"
                    )
                self._time_left[name] = self._draw_interval(name, env.num_envs)
            self._terms[name] = resolve_term(term, env, f"events.{name}", ("env", "env_ids"))

    def _draw_interval(self, name: str, n: int) -> torch.Tensor:
        lo, hi = self.cfg[name].interval_range_s
        return lo + (hi - lo) * torch.rand(n, device=self.env.device)

    def apply(self, mode: str, env_ids: torch.Tensor | None = None, dt: float = 0.0) -> None:
        """Run the terms of ``mode``: for ``env_ids`` (startup, reset) or as timers expire."""
        for name, fn in self._terms.items():
            term = self.cfg[name]
            if term.mode != mode:
                continue
            if mode == "interval":
                time_left = self._time_left[name]
                time_left -= dt
                due = (time_left <= 1e-6).nonzero().flatten()  # tolerate float rounding
                if due.numel() == 0:
                    continue
                time_left[due] = self._draw_interval(name, due.numel())
                fn(self.env, due, **term.params)
            else:
                ids = env_ids if env_ids is not None else self.env.all_env_ids
                fn(self.env, ids, **term.params)
            # A term may have written state that the next one reads through the scene.
            self.env.scene.invalidate()

    def reset(self, env_ids: torch.Tensor) -> dict[str, float]:
        for fn in self._terms.values():
            reset_term(fn, env_ids)
        return {}

    def has_mode(self, mode: str) -> bool:
        return any(t.mode == mode for t in self.cfg.values())
