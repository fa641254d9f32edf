"""What every manager shares: term configs, term resolution, class-based terms."""

from __future__ import annotations

import abc
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from robolearn.errors import RobolearnError

if TYPE_CHECKING:
    from robolearn.env import ManagerBasedRLEnv


@dataclass
class TermCfg:
    """A term: a function (or a :class:`ManagerTerm` class) and the keyword arguments it gets."""

    func: Callable[..., Any] | None = None
    """``func(env, **params)`` (``func(env, env_ids, **params)`` for events and curricula),
    or a :class:`ManagerTerm` subclass, instantiated once with ``(cfg, env)``."""
    params: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments passed to ``func`` on every call."""


class ManagerTerm(abc.ABC):
    """A term with state across steps (e.g. air time per foot).

    Subclass it and name the class as a term's ``func``: the manager builds one instance
    with ``(cfg, env)``, calls it like a function, and calls :meth:`reset` for the envs that
    reset.
    """

    def __init__(self, cfg: TermCfg, env: ManagerBasedRLEnv) -> None:
        self.cfg = cfg
        self.env = env

    def reset(self, env_ids: torch.Tensor) -> None:  # noqa: B027 - an optional hook
        """Forget the state of ``env_ids``; the default keeps none."""

    @abc.abstractmethod
    def __call__(self, env: ManagerBasedRLEnv, *args: Any, **params: Any) -> torch.Tensor:
        """The term's value this step, as the function form of the term returns it."""


def resolve_term(
    cfg: TermCfg, env: ManagerBasedRLEnv, where: str, positional: Sequence[str] = ("env",)
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


def reset_term(term: Callable[..., Any], env_ids: torch.Tensor) -> None:
    """Call a class term's reset; plain functions keep no state."""
    if isinstance(term, ManagerTerm):
        term.reset(env_ids)


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
