"""Actions: the policy's output turned into actuator controls.

``process_action`` runs once per env step (clip, scale, offset); ``apply_action`` writes the
result into the scene's controls (:meth:`~robolearn.scene.Scene.write_ctrl`). Position and
effort targets are constant over the decimation substeps, so the env writes ctrl once and
steps the scene ``decimation`` substeps in one call.

A config names the class that implements it in ``class_type``: the built-in configs name
theirs, a subclass of one inherits it, and a config of your own names your
:class:`ActionTerm` subclass.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from robolearn.config import check_range
from robolearn.errors import RobolearnError
from robolearn.managers.base import ClassTermManager, EnvRows
from robolearn.managers.markers import Marker
from robolearn.managers.protocol import ManagedEnv
from robolearn.math import columns


class ActionTerm:
    """One group of actuators driven by a slice of the action vector.

    Subclass it for a new kind of action and name the subclass in the config's
    ``class_type``; override :meth:`_offset`, :meth:`process_actions` or
    :meth:`apply_actions` as needed (and :meth:`action_bounds` for a map of its own).
    ``action_dim`` is the width of its slice.
    """

    def __init__(self, cfg: ActionTermCfg, env: ManagedEnv, name: str) -> None:
        self.cfg = cfg
        self.name = name
        self.env = env
        scene = env.scene
        self.actuator_ids = torch.as_tensor(
            scene.actuator_ids(cfg.actuators), device=env.device, dtype=torch.long
        )
        self.action_dim = len(self.actuator_ids)
        clip = cfg.clip
        if clip is not None and not (
            isinstance(clip, tuple | list)
            and len(clip) == 2
            and all(isinstance(c, int | float) and math.isfinite(c) for c in clip)
            and clip[0] < clip[1]
        ):
            raise RobolearnError(
                f"actions.{name}.clip must be [low, high] with finite low < high, got {clip!r}"
            )
        self._ctrl_cols = columns(self.actuator_ids)
        self.raw_actions = torch.zeros(env.num_envs, self.action_dim, device=env.device)
        self.processed_actions = torch.zeros_like(self.raw_actions)
        self.noise_std: torch.Tensor | None = None
        """(N, 1) each env's action noise, drawn at its reset (``cfg.noise_std``), or None."""
        if cfg.noise_std is not None:
            self._noise_bounds = check_range(
                cfg.noise_std, f"actions.{name}.noise_std", what="standard deviations"
            )
            self.noise_std = torch.zeros(env.num_envs, 1, device=env.device)

    def process_actions(self, actions: torch.Tensor) -> None:
        """Turn this term's slice of the policy's action (already clipped to the config's
        ``clip``, by the manager) into ``processed_actions``."""
        self.raw_actions[:] = actions
        self.processed_actions[:] = self._offset() + self.cfg.scale * actions

    def command_of(self, actions: torch.Tensor) -> torch.Tensor:
        """``offset + scale x actions`` as a new tensor (autograd history kept): the linear
        map of :meth:`process_actions`, for a learner that differentiates through it."""
        return self._offset() + self.cfg.scale * actions

    def action_bounds(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(low, high), each (action_dim,) float64 on the CPU: the range of this term's slice
        of the action outside which nothing changes; -inf/inf where the term cannot say.

        The config's ``clip`` if it has one (the manager clips to it, whatever the term
        does). Otherwise, for a term that keeps the linear map ``offset + scale x action``
        (it does not override :meth:`process_actions` or :meth:`apply_actions`), the actions
        that reach the actuators' command range (``ctrlrange``, which MuJoCo clamps the
        controls to; an explicit motor model's joint range,
        :meth:`~robolearn.scene.Scene.command_range`); with
        per-env offsets (default joint positions), the widest over the envs. A term with a
        map of its own overrides this, or its config declares a ``clip``.
        """
        inf = torch.full((self.action_dim,), math.inf, dtype=torch.float64)
        if self.cfg.clip is not None:
            low, high = self.cfg.clip
            return torch.full_like(inf, float(low)), torch.full_like(inf, float(high))
        cls = type(self)
        linear = (
            cls.process_actions is ActionTerm.process_actions
            and cls.apply_actions is ActionTerm.apply_actions
        )
        scale = float(self.cfg.scale)
        if not linear or scale == 0.0 or not math.isfinite(scale):
            return -inf, inf
        ranges, limits = self.env.scene.command_range(self.actuator_ids.tolist())
        ctrl_range = torch.as_tensor(ranges, dtype=torch.float64)
        limited = torch.as_tensor(limits)
        offset = torch.as_tensor(self._offset(), dtype=torch.float64).cpu()
        offset = offset.reshape(-1, self.action_dim) if offset.dim() else offset
        ends = torch.stack(
            [(ctrl_range[:, 0] - offset) / scale, (ctrl_range[:, 1] - offset) / scale]
        )
        if ends.dim() == 3:  # (2, envs, dim): each env's default pose is its own offset
            low, high = ends.amin(dim=(0, 1)), ends.amax(dim=(0, 1))
        else:
            low, high = ends.amin(dim=0), ends.amax(dim=0)
        return torch.where(limited, low, -inf), torch.where(limited, high, inf)

    def _offset(self) -> torch.Tensor | float:
        """Added to ``scale x action``; 0 by default."""
        return 0.0

    def apply_actions(self) -> None:
        """Write ``processed_actions`` into the scene's controls of this term's actuators."""
        self.env.scene.write_ctrl(self._ctrl_cols, self.processed_actions)

    def add_noise(self) -> None:
        """Add each env's gaussian noise to ``processed_actions`` (called by the manager
        after :meth:`process_actions`, where ``cfg.noise_std`` is set)."""
        noise = torch.randn_like(self.processed_actions).mul_(self.noise_std)
        self.processed_actions.add_(noise)

    def reset(self, env_mask: torch.Tensor) -> None:
        """Forget the last action of the envs where ``env_mask`` ((N,) bool) is true, and
        draw their action noise."""
        EnvRows.of(self.env, env_mask).fill_(self.raw_actions, 0.0)
        if self.noise_std is not None:
            low, high = self._noise_bounds
            draw = torch.rand_like(self.noise_std).mul_(high - low).add_(low)
            self.noise_std.copy_(torch.where(env_mask.unsqueeze(-1), draw, self.noise_std))

    def debug_markers(self, env_id: int) -> list[Marker]:
        """What viewers and videos draw for env ``env_id`` (e.g. a target pose as a
        frame); nothing by default."""
        return []

    def describe(self) -> dict[str, Any]:
        """What an exported ``policy.json`` adds about this term, for a program that maps
        actions to controls without robolearn: nothing for the affine map ``ctrl = offset
        + scale x action``; a term with a map of its own says it (a ``mapping`` key and
        the numbers the map needs)."""
        return {}


@dataclass
class ActionTermCfg:
    """Which actuators an action term drives; subclasses say how."""

    actuators: str | Sequence[str] = ".*"
    """Regexes over actuator names; matching actuators are driven in model order."""
    scale: float = 1.0
    """Multiplies the policy's action before the offset is added."""
    clip: tuple[float, float] | None = None
    """Clip the policy's raw action to (low, high) before the term sees it (so before
    scaling); it is then the term's action bound (gymnasium's action space). None: no
    clip, and the bound comes from the actuators' ``ctrlrange``."""
    noise_std: tuple[float, float] | None = None
    """Action noise: gaussian noise added to the processed action (in the actuators'
    units: rad of position target), its std drawn per env at every reset from [low, high]:
    a real robot's motors never do exactly what they are told. None for none; a play
    variant turns it off."""
    class_type: type[ActionTerm] | None = None
    """The :class:`ActionTerm` subclass built from this config; the built-in configs set
    theirs, and a subclass of one inherits it."""


class ActionManager(ClassTermManager[ActionTerm]):
    """Splits the policy's action vector among the action terms, in config order."""

    section = "actions"
    term_kind = "action term"
    term_type = ActionTerm
    examples = "mdp.JointPositionAction, mdp.JointEffortAction"

    def __init__(self, cfg: dict[str, ActionTermCfg], env: ManagedEnv) -> None:
        if not cfg:
            raise RobolearnError("a task needs at least one action term")
        super().__init__(cfg, env)
        self.total_action_dim = sum(t.action_dim for t in self.terms.values())
        self.action = torch.zeros(env.num_envs, self.total_action_dim, device=env.device)
        """(N, total_action_dim) the latest raw action from the policy (this tensor and
        :attr:`prev_action`'s trade places at every step: read the attribute, do not keep
        the tensor)."""
        self.prev_action = torch.zeros_like(self.action)
        """(N, total_action_dim) the raw action one env step earlier."""

    def process_action(self, action: torch.Tensor) -> None:
        """Keep ``action`` (and the previous one) and give each term its slice."""
        if action.shape != self.action.shape:
            raise RobolearnError(
                f"action must have shape {tuple(self.action.shape)}, got {tuple(action.shape)}"
            )
        # The new action lands in the other buffer and the two trade names: no copy of the
        # previous action, and none of the in-place copies in a row that Inductor (torch
        # 2.13) fused into writing the new action into both, in the fused step.
        self.prev_action, self.action = self.action, self.prev_action
        self.action.copy_(action)
        start = 0
        for term in self.terms.values():
            part = self.action[:, start : start + term.action_dim]
            if term.cfg.clip is not None:
                # here rather than in the term, so that the bound holds for any term class
                part = part.clamp(*term.cfg.clip)
            term.process_actions(part)
            if term.noise_std is not None:
                term.add_noise()
            start += term.action_dim

    def action_bounds(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(low, high), each (total_action_dim,) float64 on the CPU: every term's
        :meth:`ActionTerm.action_bounds`, in action order.

        Raises RobolearnError naming the terms with no finite range (no ``ctrlrange`` on
        their actuators, or a map of their own, and no ``clip``).
        """
        bounds = {name: term.action_bounds() for name, term in self.terms.items()}
        unbounded = [
            name
            for name, (low, high) in bounds.items()
            if not (torch.isfinite(low).all() and torch.isfinite(high).all())
        ]
        if unbounded:
            names = ", ".join(f"actions.{name}" for name in unbounded)
            raise RobolearnError(
                f"{names}: no finite action range (no ctrlrange on its actuators, or a map of "
                f"its own) for an action space; add a clip, e.g. "
                f"env.actions.{unbounded[0]}.clip=[-1,1]"
            )
        low = torch.cat([low for low, _ in bounds.values()])
        high = torch.cat([high for _, high in bounds.values()])
        return low, high

    def apply_action(self) -> None:
        """Write every term's processed action into the scene's controls."""
        for term in self.terms.values():
            term.apply_actions()

    def reset(self, env_mask: torch.Tensor) -> dict[str, float | torch.Tensor]:
        """Forget the last actions of the envs where ``env_mask`` is true."""
        rows = EnvRows.of(self.env, env_mask)
        rows.fill_(self.action, 0.0)
        rows.fill_(self.prev_action, 0.0)
        return super().reset(env_mask)
