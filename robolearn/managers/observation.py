"""Observations: groups of terms (e.g. ``policy`` and ``critic``), each a float32 tensor:
flat (num_envs, dim), or images (num_envs, channels, height, width) for a group with an
``image_shape``, which CNN encoders read.

Per term, in this order: compute, delay (``latency``), add noise (if the group enables
corruption), clip, scale, then keep a history of ``history_length`` steps (oldest first,
flattened). A group concatenates its terms along the last dimension in config order. The
noise of a group's terms is one draw per step (per kind of noise), not one per term.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import torch

from robolearn.config import step_range
from robolearn.errors import RobolearnError
from robolearn.managers.base import (
    ManagerBase,
    ManagerTerm,
    TermCfg,
    check_term_output,
    raise_named,
    reset_term,
    resolve_term,
)
from robolearn.managers.protocol import ManagedEnv


@dataclass
class NoiseCfg:
    """Additive noise on an observation term."""

    kind: str = "uniform"
    """``uniform`` (in [low, high)) or ``gaussian`` (mean 0, std ``std``)."""
    low: float = -0.0
    """Lower bound of uniform noise."""
    high: float = 0.0
    """Upper bound of uniform noise."""
    std: float = 0.0
    """Standard deviation of gaussian noise."""


def uniform_noise(low: float, high: float) -> NoiseCfg:
    """Uniform additive noise in [low, high)."""
    return NoiseCfg(kind="uniform", low=low, high=high)


def gaussian_noise(std: float) -> NoiseCfg:
    """Zero-mean gaussian additive noise."""
    return NoiseCfg(kind="gaussian", std=std)


@dataclass
class ObservationTermCfg(TermCfg):
    """One observation: ``func(env, **params)`` -> (num_envs, k) or (num_envs,)."""

    noise: NoiseCfg | None = None
    """Noise added when the group's ``enable_corruption`` is on (training), not at play."""
    clip: tuple[float, float] | None = None
    """Clip to (low, high) after noise."""
    scale: float | None = None
    """Multiply by this after clipping."""
    history_length: int = 0
    """Keep the last N values (flattened, oldest first); 0 for the current value only."""
    latency: tuple[int, int] = (0, 0)
    """Observation latency, (min, max) env steps: each env reads the value this many steps
    old, a lag drawn per env at every reset (a real robot's sensor bus and estimator
    deliver state late); (0, 0) for none. Applied to the term's value before noise."""
    mirror: str | Callable[..., Any] | None = None
    """How the term's columns mirror left-right, for symmetry augmentation: a rule's name
    (``vector``, ``axial``, ``joints``...) or a function; None for a built-in term's own
    (:mod:`robolearn.mdp.mirror`)."""


@dataclass
class ObservationGroupCfg:
    """A named group of observation terms, delivered as one tensor."""

    terms: dict[str, ObservationTermCfg] = field(default_factory=dict)
    """Terms in the order they are concatenated."""
    enable_corruption: bool = False
    """Apply each term's noise (typically on for the policy group while training)."""
    history_length: int | None = None
    """If set, overrides every term's ``history_length`` in this group."""
    image_shape: tuple[int, int] | None = None
    """(height, width), pixels: deliver the group as images (num_envs, channels, height,
    width) for a CNN encoder instead of a flat vector. Each term's width (with its history)
    must be a multiple of height x width, laid out channels first (``camera_image`` is);
    a term's history stacks its frames as channels, oldest first. None: a flat group."""


class _History:
    """A ring of the last ``length`` values of one term, per env."""

    def __init__(self, length: int, num_envs: int, dim: int, device) -> None:
        self.length = length
        self.buffer = torch.zeros(num_envs, length, dim, device=device)
        self.fresh = torch.ones(num_envs, dtype=torch.bool, device=device)

    def push(self, value: torch.Tensor) -> torch.Tensor:
        self.buffer = torch.roll(self.buffer, shifts=-1, dims=1)
        self.buffer[:, -1] = value
        # After a reset the whole history is the first new value, not the old episode's.
        self.buffer = torch.where(self.fresh[:, None, None], value[:, None, :], self.buffer)
        self.fresh.zero_()
        return self.buffer.flatten(1)

    def reset(self, env_mask: torch.Tensor) -> None:
        self.fresh |= env_mask


class _Latency:
    """The last ``max + 1`` values of one term, per env, and each env's lag into them."""

    def __init__(self, bounds: tuple[int, int], value: torch.Tensor) -> None:
        self.low, high = bounds
        self.span = high - self.low + 1
        self.buffer = value.unsqueeze(0).repeat(high + 1, 1, 1)
        n = value.shape[0]
        self.lag = torch.full((n,), self.low, dtype=torch.long, device=value.device)
        """(N,) each env's lag, env steps."""
        self.fresh = torch.ones(n, dtype=torch.bool, device=value.device)
        self.step = 0

    def push(self, value: torch.Tensor) -> torch.Tensor:
        """Keep ``value`` (N, k); each env's value of ``lag`` steps ago (the first value
        after a reset until the lag has passed: an episode never reads the one before)."""
        depth = self.buffer.shape[0]
        slot = self.step % depth
        self.buffer[slot] = value
        self.buffer = torch.where(self.fresh[None, :, None], value.unsqueeze(0), self.buffer)
        self.fresh.zero_()
        index = ((self.step - self.lag) % depth).view(1, -1, 1).expand(1, *value.shape)
        self.step += 1
        return self.buffer.gather(0, index).squeeze(0)

    def peek(self, value: torch.Tensor) -> torch.Tensor:
        """What :meth:`push` would return for ``value``, keeping nothing."""
        depth = self.buffer.shape[0]
        index = ((self.step - self.lag) % depth).view(1, -1, 1).expand(1, *value.shape)
        old = self.buffer.gather(0, index).squeeze(0)
        return torch.where(((self.lag == 0) | self.fresh).unsqueeze(-1), value, old)

    def reset(self, env_mask: torch.Tensor) -> None:
        draw = torch.rand(env_mask.shape[0], device=env_mask.device)
        lag = self.low + (draw * self.span).long().clamp(max=self.span - 1)
        self.lag = torch.where(env_mask, lag, self.lag)
        self.fresh |= env_mask


def _resolve_named(cfg: ObservationTermCfg, env: ManagedEnv, where: str) -> Any:
    """:func:`resolve_term`, whose errors (a class term's names that match nothing, found
    when it is built) name the term."""
    try:
        return resolve_term(cfg, env, where)
    except RobolearnError as exc:
        raise_named(exc, where, cfg)


class _Group:
    """One observation group: its terms in order, their histories and widths."""

    def __init__(self, name: str, cfg: ObservationGroupCfg, env: ManagedEnv) -> None:
        if not cfg.terms:
            raise RobolearnError(f"observations.{name} has no terms")
        self.name, self.cfg, self.env = name, cfg, env
        self.terms: list[tuple[str, ObservationTermCfg, Any]] = [
            (term, tcfg, _resolve_named(tcfg, env, f"observations.{name}.{term}"))
            for term, tcfg in cfg.terms.items()
        ]
        self.histories: dict[str, _History] = {}
        self.dims: dict[str, int] = {}
        """Each term's width in the group's tensor, known once the group was computed."""
        self._slices: list[slice] = []
        """Each term's columns before histories (the terms' own widths are fixed)."""
        self._noise: _GroupNoise | None = None
        self.latencies: dict[str, _Latency] = {}
        """The delayed terms' rings, made at their first value."""
        self._lags: dict[str, tuple[int, int]] = {}
        """(min, max) env steps of each delayed term's latency."""
        for term, tcfg, _ in self.terms:
            where = f"observations.{name}.{term}.latency"
            lag = step_range(tcfg.latency, where, "env steps")
            if lag[1] > 0:
                self._lags[term] = lag
        shape = cfg.image_shape
        if shape is not None and (
            not isinstance(shape, tuple | list)
            or len(shape) != 2
            or any(not isinstance(v, int) or v < 1 for v in shape)
        ):
            raise RobolearnError(
                f"observations.{name}.image_shape must be (height, width) in pixels >= 1, "
                f"got {shape!r}"
            )
        self._image: tuple[int, int, int] | None = None
        """An image group's (channels, height, width), checked at its first value."""

    def compute(self, raw: dict[tuple, torch.Tensor], update_history: bool) -> torch.Tensor:
        """The group's (num_envs, dim) float32 tensor; ``raw`` holds the terms' outputs
        that groups computed earlier in the same call, to be shared."""
        values = [self._raw(name, tcfg, fn, raw) for name, tcfg, fn in self.terms]
        if self._lags:
            values = [
                self._delayed(name, value, update_history) if name in self._lags else value
                for (name, _, _), value in zip(self.terms, values, strict=True)
            ]
        if not self._slices:
            start = 0
            for value in values:
                self._slices.append(slice(start, start + value.shape[-1]))
                start += value.shape[-1]
        # The terms' values side by side first, then noise, clip and scale on the columns
        # of the one tensor: a noise draw per group, not per term, and no clone. cat makes
        # a new tensor, so the group never aliases a term's output (a view of the engine's
        # state, the action buffer, a command: memory that changes later in the step,
        # while the learner keeps this tensor and final_obs must outlive the reset).
        x = torch.cat(values, dim=-1)
        if self.cfg.enable_corruption:
            self._noise_tables().add_to(x)
        for (_, tcfg, _), cols in zip(self.terms, self._slices, strict=True):
            if tcfg.clip is not None:
                x[:, cols].clamp_(*tcfg.clip)
            if tcfg.scale is not None:
                x[:, cols].mul_(tcfg.scale)
        override = self.cfg.history_length
        lengths = [
            tcfg.history_length if override is None else override for _, tcfg, _ in self.terms
        ]
        if any(lengths):
            parts = []
            for (name, _, _), cols, length in zip(self.terms, self._slices, lengths, strict=True):
                part = x[:, cols]
                parts.append(self._history(name, part, length, update_history) if length else part)
            x = torch.cat(parts, dim=-1)
        for (name, _, _), cols, length in zip(self.terms, self._slices, lengths, strict=True):
            self.dims[name] = (cols.stop - cols.start) * max(length, 1)
        if self.cfg.image_shape is not None:
            return self._as_images(x)
        return x

    def _as_images(self, x: torch.Tensor) -> torch.Tensor:
        """The flat group as (num_envs, channels, height, width): a view, no copy."""
        if self._image is None:  # the terms' widths are fixed: check them once
            height, width = self.cfg.image_shape
            pixels = height * width
            odd = []
            for (name, _, _), cols in zip(self.terms, self._slices, strict=True):
                dim, frame = self.dims[name], cols.stop - cols.start
                if dim % pixels:
                    frames = f" ({dim // frame} frames of {frame:,})" if dim != frame else ""
                    odd.append(f"{name} gives {dim:,} values{frames}")
            if odd:
                raise RobolearnError(
                    f"observations.{self.name}: image_shape {(height, width)} reads each "
                    f"term as images of {height} x {width} = {pixels:,} values a channel, and "
                    f"{', '.join(odd)}, not a whole number of them: set image_shape to the "
                    "(height, width) of the terms' images (their camera's)"
                )
            self._image = (x.shape[-1] // pixels, height, width)
        return x.view(x.shape[0], *self._image)

    def _raw(self, name: str, tcfg: ObservationTermCfg, fn: Any, raw: dict) -> torch.Tensor:
        """The term's output, (num_envs, k) float32, computed once per call per key."""
        key = _term_key(fn, tcfg.params)
        value = raw.get(key) if key is not None else None
        if value is None:
            where = f"observations.{self.name}.{name}"
            try:
                value = check_term_output(fn(self.env, **tcfg.params), self.env.num_envs, where)
            except RobolearnError as exc:
                # a term finds its names at its first call: say whose they were
                raise_named(exc, where, tcfg)
            if value.dtype != torch.float32:
                value = value.float()
            if key is not None:
                raw[key] = value
        return value.unsqueeze(-1) if value.dim() == 1 else value

    def _noise_tables(self) -> _GroupNoise:
        """The group's noise, rebuilt when a term's noise config changed (read live)."""
        key = tuple(
            # fields one by one: astuple's deep copy costs more, at every step
            None if (n := tcfg.noise) is None else (n.kind, n.low, n.high, n.std)
            for _, tcfg, _ in self.terms
        )
        if self._noise is None or self._noise.key != key:
            configs = [tcfg.noise for _, tcfg, _ in self.terms]
            self._noise = _GroupNoise(key, configs, self._slices, self.env.device)
        return self._noise

    def _history(
        self, name: str, value: torch.Tensor, length: int, update_history: bool
    ) -> torch.Tensor:
        history = self.histories.get(name)
        if history is None:
            n, dim = self.env.num_envs, value.shape[-1]
            history = self.histories[name] = _History(length, n, dim, value.device)
        return history.push(value) if update_history else value.repeat(1, length)

    def _delayed(self, name: str, value: torch.Tensor, update: bool) -> torch.Tensor:
        """The term's value as each env reads it, ``lag`` steps late; ``update`` false (an
        extra read, such as the final observation before a reset) reads without keeping."""
        latency = self.latencies.get(name)
        if latency is None:  # at the manager's first compute, before any reset
            latency = self.latencies[name] = _Latency(self._lags[name], value)
        return latency.push(value) if update else latency.peek(value)

    def reset(self, env_mask: torch.Tensor) -> None:
        """Start the histories of the envs where ``env_mask`` is true afresh and reset
        their class terms."""
        for history in self.histories.values():
            history.reset(env_mask)
        for latency in self.latencies.values():
            latency.reset(env_mask)
        for _, _, fn in self.terms:
            reset_term(fn, env_mask)


class _GroupNoise:
    """The noise of one group's terms as one draw per kind over their columns: ``low +
    width x uniform`` for uniform noise, ``std x normal`` for gaussian, added to each run
    of consecutive noisy columns (a few ops per group instead of four per term)."""

    def __init__(
        self, key: tuple, configs: list[NoiseCfg | None], slices: list[slice], device
    ) -> None:
        self.key = key
        columns: dict[str, list[tuple[slice, NoiseCfg]]] = {"uniform": [], "gaussian": []}
        for cfg, cols in zip(configs, slices, strict=True):
            if cfg is None:
                continue
            if cfg.kind not in columns:
                raise RobolearnError(f"noise kind {cfg.kind!r} is not one of: uniform, gaussian")
            columns[cfg.kind].append((cols, cfg))
        self.draws: list[tuple[str, int, torch.Tensor, torch.Tensor | None, list]] = []
        """Per kind: (kind, width, scale, offset or None, [(columns of the group, columns
        of the draw)] of each run)."""
        for kind, terms in columns.items():
            if not terms:
                continue
            scale, offset, runs, drawn = [], [], [], 0
            for cols, cfg in terms:
                width = cols.stop - cols.start
                a, b = (cfg.high - cfg.low, cfg.low) if kind == "uniform" else (cfg.std, 0.0)
                scale += [a] * width
                offset += [b] * width
                if runs and runs[-1][0].stop == cols.start:  # extends the run before it
                    last, src = runs[-1]
                    runs[-1] = (slice(last.start, cols.stop), slice(src.start, src.stop + width))
                else:
                    runs.append((cols, slice(drawn, drawn + width)))
                drawn += width
            self.draws.append(
                (
                    kind,
                    drawn,
                    torch.tensor(scale, device=device),
                    torch.tensor(offset, device=device) if kind == "uniform" else None,
                    runs,
                )
            )

    def add_to(self, x: torch.Tensor) -> None:
        """Add a fresh draw of the noise to the group's tensor ``x``, in place."""
        n = x.shape[0]
        for kind, width, scale, offset, runs in self.draws:
            if kind == "uniform":
                noise = torch.addcmul(offset, scale, torch.rand(n, width, device=x.device))
            else:
                noise = torch.randn(n, width, device=x.device).mul_(scale)
            if len(runs) == 1 and runs[0][0].stop - runs[0][0].start == x.shape[1]:
                x.add_(noise)
                continue
            for cols, src in runs:
                x[:, cols].add_(noise[:, src])


class ObservationManager(ManagerBase):
    """Computes every observation group; ``group_dims`` gives each group's width.

    Its terms, as :class:`ManagerBase` sees them, are the groups: a group's terms and
    widths are fixed once the env is built, while each term's config is read live.
    """

    section = "observations"
    term_kind = "observation group"
    replaceable = False

    def __init__(self, cfg: dict[str, ObservationGroupCfg], env: ManagedEnv) -> None:
        if not cfg:
            raise RobolearnError("a task needs at least one observation group (e.g. 'policy')")
        super().__init__(cfg, env)
        self._terms: dict[str, _Group]
        self.term_dims: dict[str, dict[str, int]] = {
            name: group.dims for name, group in self._terms.items()
        }
        """Per group, each term's width."""
        sample = self.compute(update_history=False)
        self.group_shapes: dict[str, tuple[int, ...]] = {
            name: tuple(value.shape[1:]) for name, value in sample.items()
        }
        """Each group's shape per env: (width,), or (channels, height, width) for images."""
        self.group_dims: dict[str, int] = {
            name: math.prod(shape) for name, shape in self.group_shapes.items()
        }
        """Each group's width (an image group's values per env)."""

    def _build_term(self, name: str, cfg: ObservationGroupCfg) -> _Group:
        return _Group(name, cfg, self.env)

    def _reset_term(self, term: _Group, env_mask: torch.Tensor) -> None:
        term.reset(env_mask)

    def compute(self, update_history: bool = True) -> dict[str, torch.Tensor]:
        """Every group as a (num_envs, dim) float32 tensor, or (num_envs, channels, height,
        width) for an image group."""
        # Groups often share terms (a critic sees what the policy sees, without noise):
        # each distinct (function, params) is evaluated once per call.
        raw: dict[tuple, torch.Tensor] = {}
        return {name: group.compute(raw, update_history) for name, group in self._terms.items()}

    def debug_markers(self, env_id: int) -> list:
        """What the class-based terms that draw (they have ``debug_markers(env_id)``, as a
        height scan does) draw for env ``env_id``, from their latest compute."""
        markers: list = []
        for group in self._terms.values():
            for _, _, fn in group.terms:
                draw = getattr(fn, "debug_markers", None)
                if draw is not None:
                    markers += draw(env_id)
        return markers

    def group_bounds(self, group: str) -> tuple[torch.Tensor, torch.Tensor]:
        """(low, high), each (group width,) float64 on the CPU: the range each column of
        ``group`` keeps to, from its term's ``clip`` (and ``scale``, applied after it);
        -inf/inf for a term with no clip."""
        lows, highs = [], []
        terms = {name: tcfg for name, tcfg, _ in self._terms[group].terms}
        for name, width in self.term_dims[group].items():
            tcfg = terms[name]
            low, high = -math.inf, math.inf
            if tcfg.clip is not None:
                low, high = (float(c) for c in tcfg.clip)
                if tcfg.scale is not None:
                    low, high = sorted((low * tcfg.scale, high * tcfg.scale))
            lows.append(torch.full((width,), low, dtype=torch.float64))
            highs.append(torch.full((width,), high, dtype=torch.float64))
        return torch.cat(lows), torch.cat(highs)

    def group_terms(self, group: str) -> list[tuple[str, ObservationTermCfg, Any]]:
        """``(name, config, term)`` of each term of ``group`` in order; ``term`` is the
        function or the :class:`ManagerTerm` instance that computes it."""
        return list(self._terms[group].terms)

    def term_slices(self, group: str) -> dict[str, slice]:
        """The columns of each term in group ``group``'s tensor, in order."""
        slices, start = {}, 0
        for name, width in self.term_dims[group].items():
            slices[name] = slice(start, start + width)
            start += width
        return slices

    def terms_at(self, group: str, columns: Iterable[int]) -> list[str]:
        """Names of the terms of ``group`` that fill any of ``columns``, in group order."""
        cols = set(columns)
        return [
            name
            for name, sl in self.term_slices(group).items()
            if any(c in cols for c in range(sl.start, sl.stop))
        ]


def _term_key(fn: object, params: dict) -> tuple | None:
    """A key identifying a stateless term's output, or None if it cannot be shared."""
    if isinstance(fn, ManagerTerm):
        return None  # stateful: its state advances once per call
    try:
        return (fn, *sorted((k, _hashable(v)) for k, v in params.items()))
    except TypeError:
        return None


def _hashable(value: object) -> object:
    if isinstance(value, list | tuple):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    hash(value)
    return value
