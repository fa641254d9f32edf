"""Typed configs: plain dataclasses, saved as YAML and overridden by dotted path.

A task is a tree of dataclasses whose leaves are numbers, strings, tuples, dicts of term
configs and term functions. ``to_dict`` turns a tree into YAML-safe data (a function becomes
``"module:qualname"``); ``apply_override`` sets one leaf from a command-line string such as
``env.rewards.track_lin_vel.weight=2.0``, checking that the path exists and the value fits.
"""

from __future__ import annotations

import dataclasses
import math
import os
import types
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from robolearn.errors import RobolearnError, did_you_mean
from robolearn.files import write_atomic

__all__ = ["apply_override", "parse_overrides", "save_yaml", "to_dict", "write_atomic"]


def callable_name(fn: Callable) -> str:
    """``module:qualname`` of a function or class, the form saved in YAML."""
    return f"{fn.__module__}:{fn.__qualname__}"


def to_dict(obj: Any) -> Any:
    """A dataclass tree as plain YAML-safe data (dicts, lists, numbers, strings)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, Mapping):
        return {str(k): to_dict(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_dict(v) for v in obj]
    if isinstance(obj, type) or callable(obj):
        return callable_name(obj)
    if isinstance(obj, Path):
        return str(obj)
    if obj is None or isinstance(obj, bool | int | float | str):
        return obj
    return repr(obj)


def save_yaml(obj: Any, path: str | os.PathLike) -> None:
    """Save a config tree (or plain data) as YAML, atomically."""
    text = yaml.safe_dump(to_dict(obj), sort_keys=False, default_flow_style=None, width=100)
    write_atomic(path, text.encode())


def _children(node: Any) -> list[str]:
    if dataclasses.is_dataclass(node):
        return [f.name for f in dataclasses.fields(node)]
    if isinstance(node, Mapping):
        return [str(k) for k in node]
    return []


def _number(text: str) -> int | float | None:
    """A number as Python reads it (``3e-4``, ``1e4``, ``.5``, ``-2``, ``inf``), or None.

    YAML 1.1 reads ``3e-4`` and ``1e4`` as strings (its floats need a dot), so a number
    field also tries Python's own reading of the text.
    """
    text = text.strip().replace("_", "")
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return None


def _coerce(value: Any, current: Any, path: str) -> Any:
    """``value`` (parsed YAML) converted to the type of ``current``, or an error."""
    if current is None or value is None:
        return value
    numeric = isinstance(current, int | float) and not isinstance(current, bool)
    if numeric and isinstance(value, str) and _number(value) is not None:
        value = _number(value)
    if isinstance(value, float) and math.isnan(value):
        raise RobolearnError(f"{path} cannot be NaN")
    if isinstance(current, bool):
        if isinstance(value, bool):
            return value
    elif isinstance(current, int | float) and isinstance(value, int | float):
        if isinstance(current, int) and isinstance(value, float) and not math.isfinite(value):
            raise RobolearnError(f"{path} is an integer, got {value}")
        if isinstance(current, int) and isinstance(value, float) and not value.is_integer():
            raise RobolearnError(f"{path} is an integer, got {value}")
        return type(current)(value)
    elif isinstance(current, str):
        return str(value)
    elif isinstance(current, tuple | list) and isinstance(value, list | tuple):
        if current and len(value) != len(current) and isinstance(current, tuple):
            raise RobolearnError(f"{path} needs {len(current)} values, got {len(value)}")
        items = [
            _coerce(v, current[i] if i < len(current) else None, path) for i, v in enumerate(value)
        ]
        return type(current)(items)
    elif isinstance(current, dict) and isinstance(value, dict):
        return value
    kind = type(current).__name__
    article = "an" if kind[0] in "aeiou" else "a"
    raise RobolearnError(
        f"{path} is {article} {kind} (now {current!r}); cannot set it to {value!r}"
    )


def _field_hint(owner: Any, key: str) -> Any:
    """The annotation of dataclass ``owner``'s field ``key``; None if it does not resolve."""
    try:
        return typing.get_type_hints(type(owner)).get(key)
    except Exception:  # e.g. a name imported only for type checking
        return None


def _allows_none(owner: Any, key: str) -> bool:
    """Whether dataclass ``owner``'s field ``key`` is annotated as optional (``X | None``);
    an annotation that does not resolve does not refuse on a guess."""
    hint = _field_hint(owner, key)
    return hint is None or type(None) in typing.get_args(hint) or hint is Any


def _coerce_to_hint(value: Any, owner: Any, key: str, path: str) -> Any:
    """``value`` for a dataclass field that holds None now, checked against its annotation
    (``int | None`` and the like); annotations we cannot check let the value through."""
    hint = _field_hint(owner, key)
    if typing.get_origin(hint) not in (typing.Union, types.UnionType):
        return value
    options = [a for a in typing.get_args(hint) if a is not type(None)]
    if value is None:
        return value
    if isinstance(value, str) and (int in options or float in options):
        value = _number(value) if _number(value) is not None else value
    if isinstance(value, float) and math.isnan(value):
        raise RobolearnError(f"{path} cannot be NaN")
    number = isinstance(value, int | float) and not isinstance(value, bool)
    checkable = True
    for option in options:
        if option is bool and isinstance(value, bool):
            return value
        if option is int and number and float(value).is_integer():
            return int(value)
        if option is float and number:
            return float(value)
        if option is str and isinstance(value, str):
            return value
        if typing.get_origin(option) is tuple and isinstance(value, list | tuple):
            return tuple(value)
        if dataclasses.is_dataclass(option):
            if isinstance(value, dict):
                try:
                    return option(**value)
                except TypeError as exc:
                    fields = ", ".join(f.name for f in dataclasses.fields(option))
                    raise RobolearnError(
                        f"{path}: {exc}; a {option.__name__} has fields {fields}"
                    ) from exc
            continue
        checkable = checkable and option in (bool, int, float, str)
    if checkable:
        names = " | ".join(getattr(o, "__name__", str(o)) for o in options)
        raise RobolearnError(f"{path} is {names} or null; cannot set it to {value!r}")
    return value


def _parse_value(text: str, current: Any, path: str) -> Any:
    """The command-line text of an override as data: YAML (``2.0``, ``true``, ``[0, 1.5]``,
    ``null``), except that a string field takes the text as written (YAML would turn
    ``on`` into True and ``1e4`` into a number)."""
    if isinstance(current, str) and text.strip() not in ("null", "~", ""):
        stripped = text.strip()
        if len(stripped) >= 2 and stripped[0] == stripped[-1] and stripped[0] in "'\"":
            return stripped[1:-1]
        return stripped
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        reason = str(exc).splitlines()[0]
        raise RobolearnError(f"{path}: cannot parse {text!r} ({reason})") from exc


def apply_override(root: Any, path: str, text: str, root_name: str = "") -> None:
    """Set the leaf at dotted ``path`` under ``root`` from the string ``text``.

    ``text`` is parsed as YAML (``2.0``, ``true``, ``[0.0, 1.5]``, ``null``) and converted to
    the type of the value it replaces. ``null`` for an entry of a dict (a reward, event or
    observation term, a params key) removes it, as setting a term to None does in Isaac Lab.
    Raises RobolearnError for an unknown path (naming the valid keys at the point it fails)
    or a value of the wrong kind.
    """
    parts = path.split(".")
    node = root
    walked = root_name
    for i, key in enumerate(parts):
        walked = f"{walked}.{key}" if walked else key
        children = _children(node)
        if key not in children:
            hint = did_you_mean(key, children)
            valid = f"; valid: {', '.join(children)}" if children else ""
            raise RobolearnError(f"unknown config path {walked!r}{hint}{valid}")
        if i == len(parts) - 1:
            current = node[key] if isinstance(node, Mapping) else getattr(node, key)
            parsed = _parse_value(text, current, walked)
            if parsed is None and isinstance(node, Mapping):
                # Isaac Lab's convention: a term (or a params key) set to None is removed
                del node[key]
                return
            if parsed is None and current is not None and not _allows_none(node, key):
                now = type(current).__name__ if dataclasses.is_dataclass(current) else current
                raise RobolearnError(f"{walked} cannot be null; it is now {now!r}")
            if current is None and dataclasses.is_dataclass(node):
                value = _coerce_to_hint(parsed, node, key, walked)
            else:
                value = _coerce(parsed, current, walked)
            if isinstance(node, Mapping):
                node[key] = value
            else:
                setattr(node, key, value)
            return
        node = node[key] if isinstance(node, Mapping) else getattr(node, key)


def parse_overrides(items: list[str]) -> list[tuple[str, str]]:
    """``["a.b=1", ...]`` as ``[("a.b", "1"), ...]``; an item without ``=`` is an error."""
    pairs = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise RobolearnError(f"override {item!r} is not of the form path.to.field=value")
        pairs.append((key.strip(), value.strip()))
    return pairs
