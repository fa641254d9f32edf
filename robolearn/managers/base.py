"""What every manager shares: term configs, term resolution, class-based terms.

:class:`ManagerBase` is the shape of every manager, as in Isaac Lab: it holds the env and
its config (a dict of named term configs), builds each term once, resets the terms that keep
state for the envs that reset, and hands out the live term configs. A manager adds only
what its part of the step does with the terms.
"""

from __future__ import annotations

import abc
import dataclasses
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, NoReturn, TypeVar

import torch

from robolearn.errors import RobolearnError
from robolearn.managers.markers import Marker
from robolearn.managers.protocol import ManagedEnv
from robolearn.scene.patterns import NoMatchError
from robolearn.sim.host_sync import host_syncs_allowed


@dataclass
class TermCfg:
    """A term: a function (or a :class:`ManagerTerm` class) and the keyword arguments it gets."""

    func: Callable[..., Any] | None = None
    """``func(env, **params)`` (``func(env, env_mask, **params)`` for events and curricula,
    ``env_mask`` an (N,) bool tensor of the envs concerned), or a :class:`ManagerTerm`
    subclass, instantiated once with ``(cfg, env)``."""
    params: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments passed to ``func`` on every call."""


class ManagerTerm(abc.ABC):
    """A term with state across steps (e.g. air time per foot).

    Subclass it and name the class as a term's ``func``: the manager builds one instance
    with ``(cfg, env)``, calls it like a function, and calls :meth:`reset` with the mask of
    the envs that reset.
    """

    def __init__(self, cfg: TermCfg, env: ManagedEnv) -> None:
        self.cfg = cfg
        self.env = env

    def reset(self, env_mask: torch.Tensor) -> None:  # noqa: B027 - an optional hook
        """Forget the state of the envs where ``env_mask`` ((N,) bool) is true; the default
        keeps none. Write with ``masked_fill_`` or ``torch.where``, not ``x[env_mask] = v``
        (boolean indexing makes the host wait for the GPU), or through :class:`EnvRows`
        (``EnvRows.of(env, env_mask).fill_(x, 0.0)``), which writes the reset envs' rows
        alone on the cpu engine."""

    @abc.abstractmethod
    def __call__(self, env: ManagedEnv, *args: Any, **params: Any) -> torch.Tensor:
        """The term's value this step, as the function form of the term returns it."""

    def debug_markers(self, env_id: int) -> list[Marker]:
        """What viewers and videos draw for env ``env_id`` (:class:`Marker` shapes in the
        world frame, e.g. the points a scan reads); nothing by default. Called per shown
        env per frame, on the thread that steps the env, never during training."""
        return []


def resolve_term(
    cfg: TermCfg, env: ManagedEnv, where: str, positional: Sequence[str] = ("env",)
) -> Callable[..., Any]:
    """The callable a term config names, with its params checked against its signature.

    Raises RobolearnError when ``func`` is missing or not callable, a param is unknown, or a
    required param is missing; the message names the term (``where``) and the valid params.
    """
    func = cfg.func
    if func is None or not callable(func):
        raise RobolearnError(f"{where}: func must be a function or ManagerTerm class, got {func!r}")
    target = func.__call__ if isinstance(func, type) else func
    sig = inspect.signature(target)
    args = [
        p
        for p in sig.parameters.values()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "self"
    ]
    takes_kwargs = any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())
    named = [p.name for p in args[len(positional) :]]
    unknown = [k for k in cfg.params if k not in named and not takes_kwargs]
    if unknown:
        raise RobolearnError(
            f"{where}: unknown param(s) {', '.join(unknown)} for "
            f"{getattr(func, '__name__', func)}; it takes: {', '.join(named) or 'none'}"
        )
    missing = [
        p.name
        for p in args[len(positional) :]
        if p.default is inspect.Parameter.empty and p.name not in cfg.params
    ]
    if missing:
        raise RobolearnError(
            f"{where}: missing param(s) {', '.join(missing)} for {getattr(func, '__name__', func)}"
        )
    if isinstance(func, type):
        if not issubclass(func, ManagerTerm):
            raise RobolearnError(f"{where}: class {func.__name__} is not a ManagerTerm")
        return func(cfg, env)
    return func


def term_error(exc: RobolearnError, where: str, cfg: Any) -> RobolearnError:
    """``exc``, raised while building or running the term ``where`` (``rewards.name``), as
    an error that names the term; a pattern that matched no name (a :class:`NoMatchError`)
    is named with the field of ``cfg`` that holds it: ``events.friction: params.geoms
    '.*_foot' matches no geom; geoms: ...``. ``exc`` itself where it names the term already,
    or is an error of its own kind (a host sync where none is allowed), which callers catch
    by its type."""
    text = str(exc)
    if text.startswith(where) or type(exc) not in (RobolearnError, NoMatchError):
        return exc
    if isinstance(exc, NoMatchError):
        holder = _field_holding(cfg, exc)
        if holder is not None:
            return RobolearnError(
                f"{where}: {holder} {exc.pattern!r} matches no {exc.what}; {exc.listing()}"
            )
    return RobolearnError(f"{where}: {text}")


def raise_named(exc: RobolearnError, where: str, cfg: Any) -> NoReturn:
    """Raise :func:`term_error` of ``exc`` (``exc`` itself where that is ``exc``), from
    ``exc``: for a manager's ``except`` around the calls of its terms."""
    named = term_error(exc, where, cfg)
    if named is exc:
        raise exc
    raise named from exc


def _field_holding(cfg: Any, exc: NoMatchError) -> str | None:
    """The path in a term config (``params.joints``, ``actuators``) of the value that holds
    the pattern that matched nothing: the value given as the lookup's patterns if one is,
    else one that holds the pattern among others; None if no field holds it (it came from
    elsewhere, such as the scene's config)."""
    params = getattr(cfg, "params", None)
    fields: list[tuple[str, Any]] = []
    if isinstance(params, Mapping):
        fields += [(f"params.{k}", v) for k, v in params.items()]
    if dataclasses.is_dataclass(cfg) and not isinstance(cfg, type):
        fields += [
            (f.name, getattr(cfg, f.name, None))
            for f in dataclasses.fields(cfg)
            if f.name not in ("params", "func")
        ]
    for wanted in (exc.patterns, exc.pattern):
        for path, value in fields:
            found = _path_to(value, wanted, path, depth=2)
            if found is not None:
                return found
    return None


def _path_to(value: Any, wanted: Any, path: str, depth: int) -> str | None:
    """``path`` if ``value`` is ``wanted`` or holds it (in a list, as a key of a dict), the
    path inside it for a selector (a :class:`SceneEntityCfg`'s ``joints``); None if not."""
    if _same(value, wanted):
        return path
    if isinstance(value, list | tuple) and any(_same(v, wanted) for v in value):
        return path
    if isinstance(value, Mapping) and any(_same(k, wanted) for k in value):
        return path
    if depth > 0 and dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            found = _path_to(getattr(value, f.name, None), wanted, f"{path}.{f.name}", depth - 1)
            if found is not None:
                return found
    return None


def _same(value: Any, wanted: Any) -> bool:
    """Equal patterns: the same string, or sequences of the same strings."""
    if isinstance(wanted, str) or isinstance(value, str):
        return isinstance(value, str) and value == wanted
    if isinstance(wanted, list | tuple) and isinstance(value, list | tuple):
        return all(isinstance(v, str) for v in value) and list(value) == list(wanted)
    return False


def as_env_mask(env: ManagedEnv, envs: torch.Tensor | Sequence[int]) -> torch.Tensor:
    """An (N,) bool mask on the env's device from a mask (returned as it is) or env indices
    (for calls made by hand, as Isaac Lab's terms take ``env_ids``). The env itself always
    passes masks; a mask made from indices on the device costs no host wait."""
    if isinstance(envs, torch.Tensor) and envs.dtype == torch.bool:
        return envs
    ids = torch.as_tensor(envs, dtype=torch.long, device=env.device)
    mask = torch.zeros(env.num_envs, dtype=torch.bool, device=env.device)
    mask[ids] = True
    return mask


def _host_side(env: ManagedEnv) -> bool:
    # an env built by hand for a test may lack the attribute: its engine decides then
    return getattr(env, "host_masks", env.scene.engine.host_side)


def none_selected(env: ManagedEnv, env_mask: torch.Tensor) -> bool:
    """Whether ``env_mask`` is known to select no env without waiting for the device.

    On an engine whose tensors live in host memory (the cpu engine) reading the mask costs
    nothing, and masked work that would change no row (a resample when no timer ran out, a
    push due nowhere) can be skipped; elsewhere this is False and the work runs on the
    masked rows, as the step must not wait for the GPU to count them.
    """
    if not _host_side(env):
        return False
    with host_syncs_allowed():
        return not bool(env_mask.any())


class EnvRows:
    """The envs an (N,) bool mask selects, in the form that reads and writes them cheapest.

    On the device: the mask itself, every op running over all envs, so that the step
    never waits for the GPU to learn which envs, or how many. On an engine whose tensors
    live in host memory (the cpu engine), finding the envs' indices costs nothing, and
    index ops on them cost a fraction of masked ops over every env (a reset concerns a
    few envs of thousands): :attr:`ids` holds them. Values computed per selected env have
    :attr:`n` rows: one per env on the device, one per selected env on the host.
    """

    def __init__(self, env: ManagedEnv, env_mask: torch.Tensor) -> None:
        self.mask = env_mask
        self.ids: torch.Tensor | None = None
        """The selected envs' indices (host-side engines), or None (the mask form)."""
        self.n: int = env.num_envs
        if _host_side(env):
            with host_syncs_allowed():
                self.ids = env_mask.nonzero().flatten()
            self.n = self.ids.numel()

    @classmethod
    def of(cls, env: ManagedEnv, env_mask: torch.Tensor) -> EnvRows:
        """``EnvRows(env, env_mask)``, or, for a mask of the reset under way, the env's own
        (:attr:`ManagerBasedRLEnv.reset_rows`: every manager's reset is handed the same
        mask, and its envs are found once)."""
        for rows in getattr(env, "reset_rows", ()):
            if rows.mask is env_mask:
                return rows
        return cls(env, env_mask)

    def _mask_like(self, x: torch.Tensor) -> torch.Tensor:
        return self.mask.view(-1, *([1] * (x.dim() - 1)))

    def take(self, x: torch.Tensor) -> torch.Tensor:
        """The :attr:`n` rows of ``x`` ((N, ...), a row per env) to compute with."""
        return x if self.ids is None else x.index_select(0, self.ids)

    def put(self, dst: torch.Tensor, value: torch.Tensor) -> None:
        """``dst[selected] = value`` in place, ``value`` having :attr:`n` rows."""
        if self.ids is None:
            _where_into(dst, self._mask_like(dst), value)
        else:
            dst.index_copy_(0, self.ids, value.to(dst.dtype))

    def put_columns(
        self, dst: torch.Tensor, cols: slice | torch.Tensor, value: torch.Tensor
    ) -> None:
        """``dst[selected, cols] = value`` in place, ``value`` having :attr:`n` rows; ``cols``
        a slice or an index tensor. ``dst`` may be a view of an engine's memory (a joint's
        qpos columns, one component of a model field): the write lands there."""
        if isinstance(cols, slice):
            self.put(dst[:, cols], value)  # a view: the write lands in dst's memory
        elif self.ids is None:
            self._where_columns(dst, cols, value)
        else:
            dst[self.ids.unsqueeze(-1), cols] = value.to(dst.dtype)

    def copy_columns(
        self, dst: torch.Tensor, cols: slice | torch.Tensor, src: torch.Tensor
    ) -> None:
        """``dst[selected, cols] = src[selected]`` in place, ``src`` having a row per env:
        a term that draws for every env (as the device path must, not to wait for the count)
        writes the selected rows of its draw; on the host only they are copied."""
        if self.ids is None:
            self._where_columns(dst, cols, src)
        else:
            self.put_columns(dst, cols, self.take(src))

    def _where_columns(
        self, dst: torch.Tensor, cols: slice | torch.Tensor, src: torch.Tensor
    ) -> None:
        """The mask form of the column writes: every env's row, the unselected ones kept."""
        old = dst[:, cols]
        dst[:, cols] = torch.where(self._mask_like(old), src.to(dst.dtype), old)

    def copy_(self, dst: torch.Tensor, src: torch.Tensor) -> None:
        """``dst[selected] = src[selected]`` in place; ``src`` broadcasts to ``dst``."""
        if self.ids is None:
            _where_into(dst, self._mask_like(dst), src)
        else:
            self.put(dst, src.expand_as(dst).index_select(0, self.ids))

    def fill_(self, dst: torch.Tensor, value: float | bool) -> None:
        """``dst[selected] = value`` in place."""
        if self.ids is None:
            dst.masked_fill_(self._mask_like(dst), value)
        else:
            dst.index_fill_(0, self.ids, value)

    def sum(self, x: torch.Tensor) -> torch.Tensor:
        """The sum of the selected rows of ``x`` ((N, ...)) over the envs."""
        if self.ids is None:
            return torch.where(self._mask_like(x), x, 0).sum(0)
        return x.index_select(0, self.ids).sum(0)

    def count(self) -> torch.Tensor | int:
        """How many envs are selected: a 0-d tensor on the device (no wait), an int on
        the host."""
        return self.mask.sum() if self.ids is None else self.n


def reset_term(term: Callable[..., Any], env_mask: torch.Tensor) -> None:
    """Call a class term's reset; plain functions keep no state."""
    if isinstance(term, ManagerTerm):
        term.reset(env_mask)


def _where_into(dst: torch.Tensor, mask: torch.Tensor, value: torch.Tensor) -> None:
    """``dst = where(mask, value, dst)`` in place: straight into ``dst`` (no temporary),
    or, compiled (the fused step: torch.compile takes no ``out=`` of a strided view, and
    fuses the copy anyway), through a copy."""
    if torch.compiler.is_compiling():
        dst.copy_(torch.where(mask, value, dst))
    else:
        torch.where(mask, value, dst, out=dst)


def check_term_output(value: torch.Tensor, num_envs: int, where: str) -> torch.Tensor:
    """A term's output must be (num_envs,) or (num_envs, k); say so clearly otherwise."""
    if (
        not isinstance(value, torch.Tensor)
        or value.dim() not in (1, 2)
        or value.shape[0] != num_envs
    ):
        shape = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
        raise RobolearnError(
            f"{where} returned {shape}; a term returns (num_envs,) or (num_envs, k)"
        )
    return value


class ManagerBase:
    """A manager of named terms: ``cfg`` maps each name to its term config.

    By default a term is a function or a :class:`ManagerTerm` class (:func:`resolve_term`),
    called with :attr:`term_args` first; :class:`ClassTermManager` builds objects from a
    config's ``class_type`` instead. Subclasses set :attr:`section` and :attr:`term_kind`.
    """

    section: ClassVar[str] = ""
    """The env config's field for this manager (``rewards``), named in error messages."""
    term_kind: ClassVar[str] = "term"
    """What one of its terms is called in messages (``reward term``)."""
    term_args: ClassVar[tuple[str, ...]] = ("env",)
    """What a function term takes before its params: ``env`` (and ``env_mask`` for terms
    run on some envs)."""
    replaceable: ClassVar[bool] = True
    """Whether :meth:`set_term_cfg` may replace a term's config; False where terms are
    objects built once from their configs (their fields are still read live)."""

    def __init__(self, cfg: dict[str, Any], env: ManagedEnv) -> None:
        self.env = env
        self.cfg = cfg
        self._terms: dict[str, Any] = {
            name: self._build_named(name, term_cfg) for name, term_cfg in cfg.items()
        }

    def _build_named(self, name: str, cfg: Any) -> Any:
        """:meth:`_build_term`, whose errors name the term's config path (a selector deep in
        a term that matches nothing says which term's it is)."""
        where = f"{self.section}.{name}"
        try:
            return self._build_term(name, cfg)
        except RobolearnError as exc:
            raise_named(exc, where, cfg)

    def debug_markers(self, env_id: int) -> list[Marker]:
        """What the terms draw for env ``env_id``: each term's ``debug_markers(env_id)``
        (class terms have one; function terms draw nothing), in config order, leaving out
        terms whose config has ``debug_vis`` off."""
        markers: list[Marker] = []
        for term in self._terms.values():
            draw = getattr(term, "debug_markers", None)
            if draw is not None and getattr(getattr(term, "cfg", None), "debug_vis", True):
                markers += draw(env_id)
        return markers

    @property
    def active_terms(self) -> list[str]:
        """The names of the terms, in config order."""
        return list(self._terms)

    def reset(self, env_mask: torch.Tensor) -> dict[str, float | torch.Tensor]:
        """Forget the terms' state for the envs where ``env_mask`` ((N,) bool) is true;
        returns what to log (nothing here)."""
        for term in self._terms.values():
            self._reset_term(term, env_mask)
        return {}

    def get_term_cfg(self, name: str) -> Any:
        """The config of term ``name``: the live object, read by the term as the env runs."""
        self._check_name(name)
        return self.cfg[name]

    def set_term_cfg(self, name: str, cfg: Any) -> None:
        """Replace the config of term ``name``; it applies from the next step.

        A new ``func`` (or a new set of params) is resolved and its params checked as when
        the env was built. Terms cannot be added or removed once the env is built.
        """
        self._check_name(name)
        if not self.replaceable:
            raise RobolearnError(
                f"{self.section}.{name}: {self.term_kind}s are built once from their configs; "
                "change the fields of get_term_cfg(name) instead"
            )
        self._check_replacement(name, cfg)
        old = self.cfg[name]
        if cfg.func is not old.func or cfg.params.keys() != old.params.keys():
            self._terms[name] = self._build_named(name, cfg)
        self.cfg[name] = cfg

    # ---- for subclasses -----------------------------------------------------------------

    def _build_term(self, name: str, cfg: Any) -> Any:
        """The term a config names; raises RobolearnError naming ``section.name``."""
        return resolve_term(cfg, self.env, f"{self.section}.{name}", self.term_args)

    def _reset_term(self, term: Any, env_mask: torch.Tensor) -> None:
        reset_term(term, env_mask)

    def _check_replacement(self, name: str, cfg: Any) -> None:
        """Raise RobolearnError if ``cfg`` may not replace term ``name``'s config (it changes
        what the manager fixed when it was built); the default allows any."""

    def _check_name(self, name: str) -> None:
        if name not in self.cfg:
            raise RobolearnError(
                f"no {self.term_kind} {name!r}; {self.section}: {', '.join(self.cfg) or 'none'}"
            )


TermT = TypeVar("TermT")


class ClassTermManager(ManagerBase, Generic[TermT]):
    """A manager whose terms are objects of the class a config names in ``class_type``.

    A term class takes ``(cfg, env, name)`` and has ``reset(env_mask)``. The terms are in
    :attr:`terms`; their configs are read live through ``term.cfg``, so a curriculum changes
    a field of :meth:`get_term_cfg`'s object; a whole new config would need a new term.
    """

    replaceable = False

    term_type: ClassVar[type]
    """The base class every term class must subclass."""
    examples: ClassVar[str] = ""
    """Term classes named in the error message when a config names none."""

    @property
    def terms(self) -> dict[str, TermT]:
        """The term objects by name, in config order."""
        return self._terms

    def _term_class(self, cfg: Any) -> Any:
        return getattr(cfg, "class_type", None)

    def _build_term(self, name: str, cfg: Any) -> TermT:
        term_cls = self._term_class(cfg)
        if not (isinstance(term_cls, type) and issubclass(term_cls, self.term_type)):
            kind = self.term_type.__name__
            article = "an" if kind[0] in "AEIOU" else "a"
            raise RobolearnError(
                f"{self.section}.{name}: {type(cfg).__name__}.class_type must be {article} "
                f"{kind} subclass (e.g. {self.examples}), got {term_cls!r}"
            )
        return term_cls(cfg, self.env, name)

    def _reset_term(self, term: Any, env_mask: torch.Tensor) -> None:
        term.reset(env_mask)
