"""Curricula: adjust the task as the policy improves, evaluated when envs reset.

A term is ``func(env, env_mask, **params)``, ``env_mask`` the (N,) bool mask of the envs
whose episodes ended by a termination or time-out in this step (a reset the user asks for,
``env.reset()``, is not judged). It runs before their reset, at every env step (the mask
may be empty: the step does not wait for the GPU to find out), and once for every env when
the env is built. It returns a value describing its state, logged as ``Curriculum/<term>``
(``None`` logs nothing; a dict logs each entry as ``Curriculum/<term>/<key>``): a 0-d tensor
keeps the step free of host waits, a Python number read from the device does not. It may
change config values that terms read each time they run; when the change counts depends
on when that is:

* reward weights and params: read at every step, so from the next step on. Change a field
  of ``env.reward_manager.get_term_cfg(name)`` (the live config) or replace the config
  with ``set_term_cfg(name, cfg)``. Termination params are read every step the same way.
* event params (and an interval event's ``interval_range_s``): read each time the event
  runs, so the reset events of the reset that ran the curriculum already use them, and an
  interval event uses them the next time it falls due. ``env.event_manager.get_term_cfg``
  / ``set_term_cfg`` as above; an event's ``mode`` cannot change.
* command settings, such as a velocity command's ``ranges``: read when a command is
  resampled, so the resetting envs draw from the new ranges in this reset and the other
  envs at their next resample; commands already drawn stay, except that a heading env's
  yaw rate is clipped to the current ``ang_vel_z`` range at every step. Command terms are
  objects built once from their configs: change a field of
  ``env.command_manager.get_term_cfg(name)`` (the same object as the term's ``cfg``);
  their ``set_term_cfg`` refuses a new config. A decision made from device values (a mean
  episode reward) is best applied on the device too: a velocity command's
  :meth:`~robolearn.mdp.UniformVelocityCommand.widen` widens its ranges where a 0-d
  bool tensor holds, with no wait (``live_ranges()`` reads them back).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from robolearn.errors import RobolearnError
from robolearn.managers.base import ManagerBase, TermCfg, raise_named


@dataclass
class CurriculumTermCfg(TermCfg):
    """A curriculum term: ``func(env, env_mask, **params)`` -> a value to log."""


class CurriculumManager(ManagerBase):
    """Runs the curriculum terms for the envs about to reset."""

    section = "curriculum"
    term_kind = "curriculum term"
    term_args = ("env", "env_mask")

    def compute(self, env_mask: torch.Tensor) -> dict[str, float | torch.Tensor]:
        """Run every term for the envs where ``env_mask`` is true; returns
        ``Curriculum/<term>`` of those that return a value."""
        log: dict[str, float | torch.Tensor] = {}
        name = ""
        try:
            for name, fn in self._terms.items():
                value = fn(self.env, env_mask, **self.cfg[name].params)
                if isinstance(value, dict):
                    log |= {f"Curriculum/{name}/{key}": v for key, v in value.items()}
                elif value is not None:
                    log[f"Curriculum/{name}"] = value
        except RobolearnError as exc:
            raise_named(exc, f"curriculum.{name}", self.cfg.get(name))
        return log
