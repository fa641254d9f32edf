"""Typed configs: plain dataclasses, saved as YAML and overridden by dotted path.

A task is a tree of dataclasses whose leaves are numbers, strings, tuples, dicts of term
configs and term functions. ``to_dict`` turns a tree into YAML-safe data (a function becomes
``"module:qualname"``); ``apply_override`` sets one leaf from a command-line string such as
``env.rewards.track_lin_vel.weight=2.0``, checking that the path exists and the value fits.

``save_config`` and ``load_config`` write and read a tree so that it comes back equal to
what was saved (a run folder's ``params/``). The YAML stays plain (any YAML reader opens
it); what the data alone would lose is written as reserved keys:

* every dataclass holds ``__type__: module:qualname``, its class (a term config, an action
  or command config of a subclass, a user's own config class);
* where a field's annotation does not say which (a term's ``params``, ``Any``), a tuple is
  a plain list, and a list is ``{__list__: [...]}``; where the annotation says ``list``,
  the tuple is the one marked, ``{__tuple__: [...]}``;
* a function or class where the annotation does not expect one is ``{__import__: m:q}``
  (a term's ``func`` and a config's ``class_type`` are annotated, so they are plain).
"""

from __future__ import annotations

import collections.abc
import contextlib
import dataclasses
import functools
import inspect
import math
import os
import sys
import types
import typing
from collections.abc import Callable, Mapping
from pathlib import Path, PurePath
from typing import Any

import yaml

from robolearn.errors import RobolearnError, did_you_mean
from robolearn.files import write_atomic
from robolearn.saved_names import MOVED_FIELDS, import_saved, moved_fields, one_line

__all__ = [
    "apply_override",
    "config_from_data",
    "config_to_data",
    "load_config",
    "load_yaml",
    "parse_overrides",
    "save_config",
    "save_yaml",
    "to_dict",
    "write_atomic",
]


def check_range(
    bounds: Any, where: str, floor: float | None = 0.0, what: str = "values"
) -> tuple[float, float]:
    """``bounds`` as a (low, high) tuple of finite floats with ``low <= high`` and, unless
    ``floor`` is None, ``floor <= low``; a RobolearnError naming ``where`` and what is
    valid otherwise."""
    try:
        low, high = (float(b) for b in bounds)
    except (TypeError, ValueError):
        low = high = math.nan
    above = floor is None or floor <= low
    if not (math.isfinite(low) and math.isfinite(high) and low <= high and above):
        rule = "" if floor is None else f" and {what} >= {floor:g}"
        raise RobolearnError(
            f"{where} must be [low, high] of finite numbers with low <= high{rule}, got {bounds!r}"
        )
    return low, high


MAX_LAG_STEPS = 10_000
"""The longest delay or latency a config may ask for, in its steps: each env keeps every
value of the lag (a ring of ``max + 1`` values per env), and real latencies are a few to a
few hundred steps (10,000 physics steps are 10 s at a 1 ms step)."""


def step_range(value: Any, where: str, unit: str) -> tuple[int, int]:
    """A config's ``(min, max)`` count of steps (a delay, a latency) as whole numbers with
    ``0 <= min <= max <=`` :data:`MAX_LAG_STEPS`; a RobolearnError naming ``where``
    otherwise."""
    values = tuple(value) if isinstance(value, tuple | list) else ()
    if (
        len(values) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in values)
        or not 0 <= values[0] <= values[1]
    ):
        raise RobolearnError(
            f"{where} must be [min, max] {unit}, whole numbers with 0 <= min <= max, got {value!r}"
        )
    if values[1] > MAX_LAG_STEPS:
        raise RobolearnError(
            f"{where}'s max of {values[1]:,} {unit} is beyond the {MAX_LAG_STEPS:,} a lag may "
            "have (each env keeps every value it lags by); real latencies are a few to a few "
            "hundred steps"
        )
    return int(values[0]), int(values[1])


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


def load_yaml(path: str | os.PathLike) -> Any:
    """The plain data of a YAML file; a file that is not YAML is a RobolearnError naming
    it and where the parser stopped (one line)."""
    path = Path(path)
    try:
        text = path.read_text()
    except UnicodeDecodeError as exc:
        raise RobolearnError(f"{path} is not a text file ({exc.reason})") from exc
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise RobolearnError(f"{path} is not valid YAML: {problem}{where}") from exc


# ---- typed YAML: configs that load back equal -------------------------------------------

TYPE_KEY = "__type__"
"""Key of a dataclass's mapping that names its class, ``module:qualname``."""
LIST_KEY = "__list__"
"""A list where an untyped position would read a plain sequence as a tuple."""
TUPLE_KEY = "__tuple__"
"""A tuple where the annotation says list."""
IMPORT_KEY = "__import__"
"""A function or class where the annotation does not say one is expected."""


def save_config(obj: Any, path: str | os.PathLike) -> None:
    """Save a config tree as YAML that :func:`load_config` turns back into an equal tree."""
    text = yaml.safe_dump(config_to_data(obj), sort_keys=False, default_flow_style=None, width=100)
    write_atomic(path, text.encode())


def load_config(path: str | os.PathLike, expect: type | None = None, root: str = "") -> Any:
    """The config tree saved by :func:`save_config` in ``path``.

    ``expect``: the class (or a base class) the tree's root must be; ``root`` names the
    root in messages (``env``). Any problem (not YAML, not a saved config, an import path
    that no longer exists, a field the class no longer has) is a RobolearnError naming the
    file and the path inside it.
    """
    path = Path(path)
    data = load_yaml(path)
    if not isinstance(data, dict) or TYPE_KEY not in data:
        raise RobolearnError(
            f"{path} holds no saved config (no {TYPE_KEY} at its top; robolearn versions "
            "before typed params/ did not write one)"
        )
    try:
        obj = config_from_data(data, Any, root)
    except RobolearnError as exc:
        raise RobolearnError(f"{path}: {exc}") from exc
    if expect is not None and not isinstance(obj, expect):
        raise RobolearnError(f"{path} holds a {type(obj).__name__}, not a {expect.__name__} config")
    return obj


def config_to_data(obj: Any, hint: Any = Any) -> Any:
    """A config tree as YAML-safe data that :func:`config_from_data` reads back equal.

    ``hint`` is the annotation of the position ``obj`` sits in; it decides which of two
    readings (tuple or list, text or import path) needs a marker (see the module doc).
    """
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        hints = _field_hints(type(obj))
        out: dict[str, Any] = {TYPE_KEY: callable_name(type(obj))}
        for f in dataclasses.fields(obj):
            out[f.name] = config_to_data(getattr(obj, f.name), hints.get(f.name, Any))
        return out
    if isinstance(obj, Mapping):
        value_hint = _mapping_value_hint(hint)
        return {str(k): config_to_data(v, value_hint) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        items = [config_to_data(v, _item_hint(hint, i)) for i, v in enumerate(obj)]
        kind = list if isinstance(obj, list) else tuple
        if kind is _sequence_kind(hint):
            return items
        return {LIST_KEY if kind is list else TUPLE_KEY: items}
    if isinstance(obj, type) or callable(obj):
        name = _import_name(obj)
        return name if _expects_code(hint) else {IMPORT_KEY: name}
    if isinstance(obj, PurePath):
        return str(obj)
    if obj is None or isinstance(obj, bool | int | float | str):
        return obj
    return repr(obj)  # not reloadable; load_config reads it back as text


def config_from_data(data: Any, hint: Any = Any, where: str = "") -> Any:
    """The config tree that :func:`config_to_data` turned into ``data``.

    ``hint`` is the annotation of the position (``Any`` at the root, whose mapping names
    its class); ``where`` is the dotted path named in errors.
    """
    if isinstance(data, dict):
        if TYPE_KEY in data:
            cls = import_saved(data[TYPE_KEY], _join(where, TYPE_KEY))
            if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
                raise RobolearnError(
                    f"{_join(where, TYPE_KEY)}: {data[TYPE_KEY]!r} is not a config class "
                    "(a dataclass)"
                )
            return _build(cls, data, where)
        if len(data) == 1 and (LIST_KEY in data or TUPLE_KEY in data):
            key, items = next(iter(data.items()))
            if not isinstance(items, list):
                raise RobolearnError(f"{_join(where, key)} must be a list, got {items!r}")
            kind = list if key == LIST_KEY else tuple
            return kind(
                config_from_data(v, _item_hint(hint, i), f"{where}[{i}]")
                for i, v in enumerate(items)
            )
        if len(data) == 1 and IMPORT_KEY in data:
            return import_saved(data[IMPORT_KEY], _join(where, IMPORT_KEY))
        owner = _dataclass_option(hint)
        if owner is not None:  # written by hand without __type__: the annotation's class
            return _build(owner, data, where)
        value_hint = _mapping_value_hint(hint)
        return {k: config_from_data(v, value_hint, _join(where, str(k))) for k, v in data.items()}
    if isinstance(data, list):
        kind = _sequence_kind(hint)
        return kind(
            config_from_data(v, _item_hint(hint, i), f"{where}[{i}]") for i, v in enumerate(data)
        )
    if isinstance(data, str):
        if _expects_code(hint):
            return import_saved(data, where)
        if any(isinstance(o, type) and issubclass(o, PurePath) for o in _options(hint)):
            return Path(data)
    return _coerce_leaf(data, where, hint=hint, from_file=True)


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _import_name(obj: Any) -> str:
    """``module:qualname`` of a function or class; what has none (a partial) as its repr,
    which loading then refuses by name."""
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    return f"{module}:{qualname}" if module and qualname else repr(obj)


def _moved_path(root: Any, parts: list[str]) -> list[str]:
    """``parts`` (an override's dotted path) with each field that a dataclass on the way
    has moved (:data:`MOVED_FIELDS`) spelled as its path now: ``scene.model`` is
    ``scene.entities.robot.model``."""
    parts = list(parts)
    node, i = root, 0
    while i < len(parts):
        key = parts[i]
        moved = getattr(type(node), MOVED_FIELDS, None) if dataclasses.is_dataclass(node) else None
        if moved and key in moved and key not in _children(node):
            parts[i : i + 1] = moved[key].split(".")
            continue
        try:
            node = node[key] if isinstance(node, Mapping) else getattr(node, key)
        except (KeyError, AttributeError, TypeError):
            return parts
        i += 1
    return parts


def _build(cls: type, data: dict[str, Any], where: str) -> Any:
    """An instance of dataclass ``cls`` from its saved fields; fields the data lacks (added
    to the class since) keep their defaults."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    data = moved_fields(data, getattr(cls, MOVED_FIELDS, None) or {})
    for key in data:
        if key != TYPE_KEY and key not in fields:
            raise RobolearnError(
                f"{_join(where, str(key))}: {cls.__name__} has no field {key!r}"
                f"{did_you_mean(str(key), fields)}; its fields: {', '.join(fields)}"
            )
    hints = _field_hints(cls)
    values = {
        k: config_from_data(v, hints.get(k, Any), _join(where, k))
        for k, v in data.items()
        if k != TYPE_KEY
    }
    try:
        obj = cls(**{k: v for k, v in values.items() if fields[k].init})
    except RobolearnError as exc:
        raise RobolearnError(f"{where or cls.__name__}: {exc}") from exc
    except Exception as exc:  # a __post_init__ or a missing required field
        raise RobolearnError(f"{where or cls.__name__}: {one_line(exc)}") from exc
    for k, v in values.items():
        if not fields[k].init:
            object.__setattr__(obj, k, v)  # frozen dataclasses too
    return obj


@functools.cache
def _field_hints(cls: type) -> dict[str, Any]:
    """Resolved annotations of a dataclass's fields; a field whose annotation does not
    resolve (a name imported only for type checking) is ``Any``, as if unannotated."""
    try:
        return typing.get_type_hints(cls)
    except Exception:
        pass
    hints: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        hints[f.name] = Any
        if not isinstance(f.type, str):
            hints[f.name] = f.type
            continue
        for owner in cls.__mro__:
            if f.name in inspect.get_annotations(owner):
                module = sys.modules.get(owner.__module__)
                namespace = dict(vars(module)) if module is not None else {}
                with contextlib.suppress(Exception):
                    hints[f.name] = eval(f.type, namespace, dict(vars(owner)))
                break
    return hints


def _options(hint: Any) -> tuple[Any, ...]:
    """The types a position accepts, ``None`` left out; () when it says nothing."""
    if hint is Any or hint is None:
        return ()
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return tuple(a for a in typing.get_args(hint) if a is not type(None))
    return (hint,)


def _base(option: Any) -> Any:
    return typing.get_origin(option) or option


def _sequence_kind(hint: Any) -> type:
    """What a plain YAML sequence is read as here: a list where the annotation says list
    (and not tuple), else a tuple (what configs hold)."""
    bases = [_base(o) for o in _options(hint)]
    return list if list in bases and tuple not in bases else tuple


def _item_hint(hint: Any, index: int) -> Any:
    """The annotation of item ``index`` of the sequence annotated ``hint``."""
    for option in _options(hint):
        base = _base(option)
        if base in (tuple, list, collections.abc.Sequence):
            args = typing.get_args(option)
            if not args:
                return Any
            if base is tuple:
                if len(args) == 2 and args[1] is Ellipsis:
                    return args[0]
                return args[index] if index < len(args) else Any
            return args[0]
    return Any


def _mapping_value_hint(hint: Any) -> Any:
    for option in _options(hint):
        if _base(option) in (dict, Mapping, collections.abc.MutableMapping):
            args = typing.get_args(option)
            return args[1] if len(args) == 2 else Any
    return Any


def _dataclass_option(hint: Any) -> type | None:
    """The dataclass a position holds, when its annotation names one and no mapping."""
    options = _options(hint)
    if any(_base(o) in (dict, Mapping, collections.abc.MutableMapping) for o in options):
        return None
    found = [o for o in options if isinstance(o, type) and dataclasses.is_dataclass(o)]
    return found[0] if len(found) == 1 else None


def _expects_code(hint: Any) -> bool:
    """Whether text at this position is an import path: the annotation takes functions or
    classes, and not text."""
    bases = [_base(o) for o in _options(hint)]
    code = any(b in (collections.abc.Callable, type) for b in bases)
    return code and str not in bases


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


def _coerce_leaf(
    value: Any, where: str, *, hint: Any = Any, current: Any = None, from_file: bool = False
) -> Any:
    """``value`` (a parsed YAML scalar or sequence) as the type its position holds, or a
    RobolearnError naming ``where``: the one conversion of a leaf, for overrides and for
    files, so that a value means the same wherever it is written.

    The type is that of ``current``, the value an override replaces (a term's ``params``
    have no annotations to go by), else the position's annotation ``hint``; a position
    typed by neither takes any value. The rules: a number written as text (``3e-4``, which
    YAML 1.1 reads as a string) is a number where one is expected, and a number is its
    text where text is; NaN is refused; an int becomes a float where a float is expected,
    and an integral float an int where an int is; a bool is not a number; a sequence is
    checked item by item, and its length where the type fixes it; a mapping builds a
    config (a dataclass) only where the field holds none (one that holds a config is
    changed field by field, not replaced). ``from_file`` words the error for a file (``is
    int, got 'lots'``) rather than for a command line (``cannot set it to 'lots'``).
    """
    kinds = (_kind_of(current),) if current is not None else _options(hint)
    if current is not None and kinds[0] in (tuple, list):
        # the annotation, where it has one, says what the items are and whether the
        # length is fixed
        kinds = tuple(o for o in _options(hint) if _base(o) is kinds[0]) or kinds
    elif current is not None and kinds[0] in (*_MAPPINGS, int, float):
        # a field annotated as one value for every joint or a mapping of joint patterns
        # (``stiffness``) takes either, whichever the config holds now
        kinds += tuple(o for o in _options(hint) if o in (int, float) or _base(o) in _MAPPINGS)
    optional = current is None and (
        not kinds or hint is type(None) or type(None) in typing.get_args(hint)
    )
    if value is None and optional:
        return value
    if value is not None and not kinds:
        return value
    if isinstance(value, str) and (int in kinds or float in kinds) and _number(value) is not None:
        value = _number(value)
    if isinstance(value, float) and math.isnan(value):
        raise RobolearnError(f"{where} cannot be NaN")
    if type(value) in kinds and type(value) in (bool, int, float, str):
        return value
    for kind in kinds if value is not None else ():
        found = _as_kind(value, kind, where, current, from_file)
        if found is not _NO_MATCH:
            return found
    if value is not None and current is None and not all(_checkable(k) for k in kinds):
        return value  # an annotation we cannot check (a function, a path) lets it through
    if current is not None:
        expected = f"{_KIND_NAMES.get(kinds[0]) or _a(kinds[0].__name__)} (now {current!r})"
    else:
        expected = " or ".join(k.__name__ if _base(k) is k else str(k) for k in kinds)
        expected += " or null" if optional else ""
    if from_file:
        raise RobolearnError(f"{where} is {expected}, got {value!r}")
    raise RobolearnError(f"{where} is {expected}; cannot set it to {value!r}")


_NO_MATCH = object()
_KIND_NAMES = {bool: "a bool", int: "an integer", float: "a float", str: "a str"}


def _a(noun: str) -> str:
    return f"{'an' if noun[0] in 'aeiou' else 'a'} {noun}"


def _kind_of(current: Any) -> type:
    """The type a value replacing ``current`` must have: its plain kind (a subclass of int
    is an int)."""
    for kind in (bool, int, float, str, tuple, list, dict):
        if isinstance(current, kind):
            return kind
    return type(current)


def _as_kind(value: Any, kind: Any, where: str, current: Any, from_file: bool) -> Any:
    """``value`` as ``kind`` (one option of the position's type), or ``_NO_MATCH``."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if kind is str and number:
        return str(value)  # a name that YAML read as a number: a joint named 1
    if kind is float and number:
        return float(value)
    if kind is int and number:
        integral = isinstance(value, int) or (math.isfinite(value) and value.is_integer())
        return int(value) if integral else _NO_MATCH
    if _base(kind) in (tuple, list) and isinstance(value, list | tuple):
        return _as_sequence(value, kind, where, current, from_file)
    if _base(kind) in _MAPPINGS and isinstance(value, dict):
        return value
    if dataclasses.is_dataclass(kind) and isinstance(value, dict) and current is None:
        try:
            return kind(**value)
        except TypeError as exc:
            fields = ", ".join(f.name for f in dataclasses.fields(kind))
            raise RobolearnError(f"{where}: {exc}; a {kind.__name__} has fields {fields}") from exc
    return _NO_MATCH


_MAPPINGS = (dict, Mapping, collections.abc.MutableMapping)


def _as_sequence(
    value: list | tuple, kind: Any, where: str, current: Any, from_file: bool
) -> list | tuple:
    """``value`` as the tuple or list ``kind``, its items typed as ``current``'s (an
    override) or as the annotation says, its length checked where either fixes it."""
    args = typing.get_args(kind)
    variable = _base(kind) is list or (len(args) == 2 and args[1] is Ellipsis)
    if current is not None:
        # an annotation of any length (hidden layer widths) takes another length; the
        # items beyond the current ones are typed as its last
        fixed = isinstance(current, tuple) and current and not variable
        length = len(current) if fixed else None
        items = [current[min(i, len(current) - 1)] if current else None for i in range(len(value))]
        hints = [_item_hint(kind, i) if args else Any for i in range(len(value))]
        make = type(current)
    else:
        fixed = _base(kind) is tuple and args and not variable
        length = len(args) if fixed else None
        items = [None] * len(value)
        hints = [_item_hint(kind, i) for i in range(len(value))]
        make = _base(kind)
    if length is not None and len(value) != length:
        raise RobolearnError(f"{where} needs {length} values, got {len(value)}")
    return make(
        # a null item replacing one is let through: an item's own annotation is not known
        v
        if v is None and current is not None
        else _coerce_leaf(v, f"{where}[{i}]", hint=h, current=c, from_file=from_file)
        for i, (v, h, c) in enumerate(zip(value, hints, items, strict=True))
    )


def _checkable(kind: Any) -> bool:
    """Whether YAML data can be told to fit ``kind`` or not: a number, text, a sequence, a
    mapping or a config can; a function, a class or a path cannot."""
    return (
        kind in (bool, int, float, str)
        or _base(kind) in (tuple, list, *_MAPPINGS)
        or dataclasses.is_dataclass(kind)
    )


def _field_hint(owner: Any, key: str) -> Any:
    """The annotation of dataclass ``owner``'s field ``key``; None if it does not resolve."""
    hint = _field_hints(type(owner)).get(key)
    return None if hint is Any else hint


def _allows_none(owner: Any, key: str) -> bool:
    """Whether dataclass ``owner``'s field ``key`` is annotated as optional (``X | None``);
    an annotation that does not resolve does not refuse on a guess."""
    hint = _field_hint(owner, key)
    return hint is None or type(None) in typing.get_args(hint) or hint is Any


def _bool_or_text(text: str) -> bool | str:
    """``text`` as YAML's boolean if it is one (true, false, yes, no...), else as written."""
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        value = None
    return value if isinstance(value, bool) else text.strip()


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


def apply_override(
    root: Any, path: str, text: str, root_name: str = "", absent_removal_ok: bool = False
) -> None:
    """Set the leaf at dotted ``path`` under ``root`` from the string ``text``.

    ``text`` is parsed as YAML (``2.0``, ``true``, ``[0.0, 1.5]``, ``null``) and converted to
    the type of the value it replaces. ``null`` for an entry of a dict (a reward, event or
    observation term, a params key) removes it, as setting a term to None does in Isaac Lab.
    A field its dataclass has moved is found at its place now (:data:`MOVED_FIELDS`:
    ``scene.model`` sets ``scene.entities.robot.model``).
    Raises RobolearnError for an unknown path (naming the valid keys at the point it fails)
    or a value of the wrong kind. With ``absent_removal_ok``, removing a dict entry that is
    not there is no change instead (a run's overrides replayed on its task's play variant,
    which drops some terms itself: a run trained without pushes plays without them).
    """
    parts = _moved_path(root, path.split("."))
    node = root
    walked = root_name
    trail: list[tuple[Any, str]] = []  # (container, key) of each node above ``node``
    for i, key in enumerate(parts):
        walked = f"{walked}.{key}" if walked else key
        children = _children(node)
        if (
            absent_removal_ok
            and key not in children
            and i == len(parts) - 1
            and isinstance(node, Mapping)
            and yaml.safe_load(text) is None
        ):
            return
        if key not in children:
            moved = getattr(type(node), MOVED_FIELDS, None) or {}
            hint = did_you_mean(key, [*children, *moved])
            valid = f"; valid: {', '.join(children)}" if children else ""
            raise RobolearnError(f"unknown config path {walked!r}{hint}{valid}")
        if i == len(parts) - 1:
            current = node[key] if isinstance(node, Mapping) else getattr(node, key)
            if dataclasses.is_dataclass(node) and {bool, str} <= set(
                _options(_field_hint(node, key))
            ):
                # a switch with a word besides (true, false or "auto"): YAML's booleans are
                # the switch, any other text is the word
                _store(trail, node, key, _bool_or_text(text))
                return
            parsed = _parse_value(text, current, walked)
            if parsed is None and isinstance(node, Mapping):
                # Isaac Lab's convention: a term (or a params key) set to None is removed
                del node[key]
                return
            if parsed is None and current is not None and not _allows_none(node, key):
                now = type(current).__name__ if dataclasses.is_dataclass(current) else current
                raise RobolearnError(f"{walked} cannot be null; it is now {now!r}")
            if parsed is not None:
                hint = _field_hint(node, key) if dataclasses.is_dataclass(node) else Any
                parsed = _coerce_leaf(parsed, walked, hint=hint, current=current)
            _store(trail, node, key, parsed)
            return
        trail.append((node, key))
        node = node[key] if isinstance(node, Mapping) else getattr(node, key)


def _store(trail: list[tuple[Any, str]], node: Any, key: str, value: Any) -> None:
    """Set ``node``'s ``key`` to ``value``. A frozen dataclass (a sensor's config) is not
    changed in place: a copy with the new value replaces it in its container, and so on up
    ``trail`` while the containers are frozen too."""
    while True:
        if isinstance(node, Mapping):
            node[key] = value
            return
        params = getattr(node, "__dataclass_params__", None)
        if params is None or not params.frozen or not trail:
            setattr(node, key, value)
            return
        value = dataclasses.replace(node, **{key: value})
        node, key = trail.pop()


def parse_overrides(items: list[str]) -> list[tuple[str, str]]:
    """``["a.b=1", ...]`` as ``[("a.b", "1"), ...]``; an item without ``=`` is an error."""
    pairs = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise RobolearnError(f"override {item!r} is not of the form path.to.field=value")
        pairs.append((key.strip(), value.strip()))
    return pairs
