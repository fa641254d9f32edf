"""Where saved names live now: the functions and classes a run folder's params/ names by
``module:qualname``, and the config fields that moved down their tree.

Code moves between modules as the project grows; the run folders users keep do not. A
saved import path whose module no longer defines the name is looked for where it lives
now (:data:`MOVED`), and a saved mapping's field that moved (a class's ``MOVED_FIELDS``) is
read at its place now, so that ``--from``, ``play`` and ``--resume`` of an old run keep
working. :mod:`robolearn.config` reads and writes the configs; this module only knows the
moves.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Mapping
from typing import Any

from robolearn.errors import RobolearnError


def _family_moves(family: str, modules: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """``robolearn.tasks.<old>`` -> the modules of ``robolearn.tasks.<family>`` its names
    live in now, for each old module and the new module names listed in ``modules``."""
    return {
        f"robolearn.tasks.{old}": tuple(f"robolearn.tasks.{family}.{new}" for new in homes)
        for old, homes in modules.items()
    }


MOVED: dict[str, tuple[str, ...]] = {
    "robolearn.managers.action": ("robolearn.mdp.actions",),
    "robolearn.managers.command": ("robolearn.mdp.commands",),
    "robolearn.mdp.events": ("robolearn.mdp.motor_events",),
    # the engines' settings (SimCfg, NewtonCfg) moved beside the engines
    "robolearn.scene.config": ("robolearn.sim.config",),
    # the actuator models moved to a package of their own (docs/design-decisions.md,
    # "Actuators in a package of their own")
    "robolearn.scene.actuators": ("robolearn.actuators.config", "robolearn.actuators.apply"),
    "robolearn.scene.actuator_net": ("robolearn.actuators.network",),
    "robolearn.scene.drive": ("robolearn.actuators.drive",),
    "robolearn.scene.delay": ("robolearn.actuators.delay",),
    # tasks grouped by family (docs/design-decisions.md, "Tasks grouped by family")
    **_family_moves(
        "velocity",
        {
            "velocity": ("recipe", "rough"),
            "humanoid_walk": ("humanoid_walk", "biped"),
            "humanoid_walk_rough": ("humanoid_walk_rough", "biped"),
            "g1_walk": ("g1_walk",),
            "g1_walk_rough": ("g1_walk_rough",),
            "quadruped_walk": ("quadruped_walk", "quadruped"),
            "quadruped_walk_motors": ("quadruped_walk_motors",),
            "quadruped_walk_rough": ("quadruped_walk_rough", "quadruped"),
            "quadruped_walk_rough_blind": ("quadruped_walk_rough_blind",),
            "quadruped_walk_rough_obstacles": ("quadruped_walk_rough_obstacles",),
            "go2_walk": ("go2_walk",),
            "go2_walk_rough": ("go2_walk_rough",),
        },
    ),
    **_family_moves(
        "tracking",
        {
            "tracking": ("recipe",),
            "motions": ("motions",),
            "g1_track": ("g1_track",),
            "humanoid_track": ("humanoid_track",),
        },
    ),
    **_family_moves(
        "manipulation",
        {
            "manipulation": ("recipe",),
            "panda_reach": ("panda_reach",),
            "panda_lift": ("panda_lift",),
            "panda_open_drawer": ("panda_open_drawer",),
        },
    ),
    **_family_moves(
        "classic",
        {
            "cartpole_balance": ("cartpole_balance",),
            "cartpole_balance_depth": ("cartpole_balance_depth",),
        },
    ),
    # a function that moved under a new name: its one new home, module:qualname
    "robolearn.tasks.humanoid_walk_rough:terrain": (
        "robolearn.tasks.velocity.biped:biped_terrain",
    ),
}
"""Modules some saved names lived in, and where those names live now, searched in order;
the run folders written before keep loading (``params/``, ``--from``, ``play``). The
concrete action and command terms moved to the term library, the motor randomizations to
their own module, the engines' settings (``SimCfg``, ``NewtonCfg``) into ``robolearn.sim``,
the actuator models (configs, drives, delays, nets) into ``robolearn.actuators``, and the
tasks into a package per family: ``robolearn.tasks.humanoid_walk`` no longer exists (its
task is ``robolearn.tasks.velocity.humanoid_walk``, what g1_walk shared with it
``robolearn.tasks.velocity.biped``), and ``robolearn.tasks.velocity`` is a package whose
recipe is in ``.recipe``. A ``module:qualname`` key is one name that moved
under another name."""


def import_saved(path: Any, where: str) -> Any:
    """The function or class a saved import path (``module:qualname``) names, looked for
    where it lives now (:data:`MOVED`); a RobolearnError naming ``where``."""
    if not isinstance(path, str) or ":" not in path:
        raise RobolearnError(f"{where}: {path!r} is not an import path (module:qualname)")
    module_name, _, qualname = path.partition(":")
    module_name, qualname = _new_home(module_name, qualname)
    if "<" in qualname:  # <lambda>, <locals>: Python cannot import them by name
        raise RobolearnError(
            f"{where}: {path!r} is a lambda or a function defined inside another, which "
            "cannot be imported by name"
        )
    try:
        obj = importlib.import_module(module_name)
    except Exception as exc:
        raise RobolearnError(f"{where}: cannot import {path!r} ({one_line(exc)})") from exc
    for part in qualname.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise RobolearnError(
                f"{where}: {path!r} does not exist (module {module_name} has no {qualname})"
            ) from None
    if not callable(obj):
        raise RobolearnError(f"{where}: {path!r} is not a function or class")
    return obj


def _new_home(module_name: str, qualname: str) -> tuple[str, str]:
    """Where a saved ``module:qualname`` lives now (:data:`MOVED`): the module itself while
    it still defines the name, else the first of its new homes that does. A name found
    nowhere keeps its module (the first new home, where the old one is gone), so that the
    error names the module it was looked for in."""
    renamed = MOVED.get(f"{module_name}:{qualname}")
    if renamed:
        new_module, _, new_qualname = renamed[0].partition(":")
        return new_module, new_qualname
    homes = MOVED.get(module_name)
    if not homes or _has_name(module_name, qualname):
        return module_name, qualname
    for home in homes:
        if _has_name(home, qualname):
            return home, qualname
    return (module_name if _exists(module_name) else homes[0]), qualname


def _exists(module_name: str) -> bool:
    """Whether ``module_name`` can be found, without running it (its packages above are
    imported); False where it or a package above it is gone."""
    try:
        return importlib.util.find_spec(module_name) is not None
    except (ImportError, ValueError):
        return False


def _has_name(module_name: str, qualname: str) -> bool:
    """Whether ``module_name`` exists and defines the top of ``qualname``."""
    if not _exists(module_name):
        return False
    return hasattr(importlib.import_module(module_name), qualname.split(".")[0])


def one_line(exc: BaseException) -> str:
    """An exception as one line: its type and the first line of its message."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0][:200]}" if lines else type(exc).__name__


MOVED_FIELDS = "MOVED_FIELDS"
"""A config class's ``ClassVar`` of the fields it had and moved down its tree, old name ->
dotted path now (``SceneCfg``'s ``model`` -> ``entities.robot.model``): a saved file's old
key is read at its new place, and an override naming the old path sets the new one."""


def moved_fields(data: dict[str, Any], moved: Mapping[str, str]) -> dict[str, Any]:
    """``data`` (a saved dataclass's mapping) with each key of ``moved`` it holds put at its
    path now; a mapping the path makes is put first in its parent (``robot`` first among
    the entities, as the tasks write them)."""
    if not any(key in data for key in moved):
        return data
    out = {k: v for k, v in data.items() if k not in moved}
    for old, new in moved.items():
        if old not in data:
            continue
        *path, last = new.split(".")
        node = out
        for key in path:
            child = node.get(key)
            if isinstance(child, dict):
                node[key] = child = dict(child)
            else:
                rest = {k: v for k, v in node.items() if k != key}
                node.clear()
                node[key] = child = {}
                node.update(rest)
            node = child
        node[last] = data[old]
    return out
