"""The task registry: tasks by name, each an env config and a PPO agent config.

Tasks come from three places, loaded in this order (a later one of the same name replaces
an earlier one, with a warning naming both):

1. robolearn's own, which ``robolearn.tasks`` registers by name (:class:`Deferred`: a task's
   module is imported when the task is used, so that ``robolearn list`` and a mistyped task
   name answer without importing torch or MuJoCo);
2. installed packages that declare an entry point in the group ``robolearn.tasks``, the
   plugin convention of Python packaging: in the package's ``pyproject.toml``,
   ``[project.entry-points."robolearn.tasks"] my_robot = "my_pkg.tasks"``; the module is
   imported (its import registers its tasks) or, if the entry point names a function, the
   function is called;
3. modules named on the command line with ``--import my_pkg.my_tasks`` or
   ``--import path/to/my_tasks.py`` (any subcommand).

A package that fails to import is reported by name with its error, and the other tasks
still work. Every task is also registered with gymnasium as ``robolearn/<name>-v0``:
``gymnasium.make_vec("robolearn.tasks:robolearn/<name>-v0", num_envs=...)`` (the prefix
makes gymnasium import the tasks first; for a task of your own, your module's name), or
``gymnasium.make`` for one env.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import os
import sys
import types
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from robolearn.errors import RobolearnError, did_you_mean

BUILTIN_TASKS = "robolearn.tasks"
"""The package whose modules register the shipped tasks when it is imported."""
ENTRY_POINT_GROUP = "robolearn.tasks"
"""The entry-point group through which installed packages declare tasks."""
HOW_TO_ADD = (
    "a task comes from robolearn, from an installed package with an entry point in the "
    f"group {ENTRY_POINT_GROUP!r}, or from --import <module>"
)


class Deferred:
    """A task's config function named ``"package.module:function"``, imported on its first
    call: a :class:`TaskSpec` of these registers without importing the task's module (and
    torch and MuJoCo with it). Pass it wherever a TaskSpec takes a function."""

    def __init__(self, target: str) -> None:
        module, _, name = target.partition(":")
        if not module or not name.isidentifier():
            raise ValueError(f"Deferred({target!r}): expected 'package.module:function'")
        self.target = target
        self.__module__ = module  # where the task comes from, as a function's would say

    def __call__(self, *args, **kwargs):
        module, _, name = self.target.partition(":")
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Deferred({self.target!r})"


@dataclass(frozen=True)
class TaskSpec:
    """A registered task."""

    name: str
    """The name users type: ``robolearn train --task <name>``."""
    description: str
    """One line for ``robolearn list``."""
    env_cfg: Callable
    """Returns a fresh ManagerBasedRLEnvCfg for training."""
    agent_cfg: Callable
    """Returns a fresh AgentCfg (PPO settings) for training."""
    play_env_cfg: Callable | None = None
    """Returns the env config for play and evaluation (no noise, no pushes); default:
    ``env_cfg``."""
    source: str = ""
    """Where the task came from (``robolearn``, ``entry point <dist>: <name>``,
    ``--import <module>``, or the module that registered it); set on registration."""

    def make_env_cfg(self, play: bool = False):
        return (self.play_env_cfg if play and self.play_env_cfg else self.env_cfg)()


_TASKS: dict[str, TaskSpec] = {}
_loading: list[str] = []  # the source being loaded, innermost last
_failures: dict[str, str] = {}  # source -> its error, for sources that did not load
_plugins_loaded = False


def register_task(spec: TaskSpec) -> TaskSpec:
    """Add a task. A later registration of the same name replaces the earlier one; when the
    two come from different places, a warning names both."""
    module = getattr(spec.env_cfg, "__module__", "?")
    if _loading:
        source = _loading[-1]
    else:  # registered by an import outside load_tasks: name the module
        source = "robolearn" if module.startswith(BUILTIN_TASKS + ".") else f"module {module}"
    spec = dataclasses.replace(spec, source=source)
    earlier = _TASKS.get(spec.name)
    if earlier is not None and earlier.source != spec.source:
        print(
            f"robolearn: warning: task {spec.name!r} from {spec.source} replaces the one from "
            f"{earlier.source}",
            file=sys.stderr,
        )
    _TASKS[spec.name] = spec
    _register_with_gymnasium(spec.name)
    return spec


@contextlib.contextmanager
def _source(name: str) -> Iterator[None]:
    _loading.append(name)
    try:
        yield
    finally:
        _loading.pop()


def load_tasks() -> None:
    """robolearn's tasks, then the entry points' (once per process)."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    with _source("robolearn"):
        # Loaded by name, as a plugin: the tasks sit above the registry (they call
        # register_task), so the registry does not import them the usual way.
        importlib.import_module(BUILTIN_TASKS)
    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = entry.dist.name if entry.dist is not None else "?"
        where = f"entry point {dist}: {entry.name} = {entry.value}"
        try:
            with _source(where):
                loaded = entry.load()
                if callable(loaded) and not isinstance(loaded, types.ModuleType):
                    loaded()
        except Exception as exc:  # a broken plugin must not take the other tasks down
            _failures[where] = _one_line(exc)


IMPORT_FORMS = (
    "--import takes a module name (my_tasks, my_pkg.tasks: on the import path or in the "
    "working folder), the path of a .py file (my_tasks.py, ../tasks/my_tasks.py) or of a "
    "package's folder (../my_robots)"
)

_import_roots: list[Path] = []


def import_tasks(modules: Iterable[str], search: Iterable[str | Path] = ()) -> None:
    """Import modules that register tasks (``--import``): a dotted module name, or the path
    of a ``.py`` file (its folder goes on the import path, so it may import its siblings).

    A module name is looked for on the import path, then in ``search`` (the folders a run
    recorded), then in the working folder, as ``python -m`` would; a folder it was found in
    is put on the import path and kept in :func:`import_roots`, for the run's record. One
    that cannot be imported is a RobolearnError naming it, its error, and the forms that
    --import takes."""
    load_tasks()
    folders = [Path(f) for f in search] + [Path.cwd()]
    for module in modules:
        try:
            with _source(f"--import {module}"):
                if module.endswith(".py") or os.sep in module:
                    _import_file(Path(module))
                else:
                    _import_module(module, folders)
        except RobolearnError as exc:
            raise RobolearnError(f"--import {module}: {exc}") from exc
        except Exception as exc:
            raise RobolearnError(f"--import {module}: {_one_line(exc)}") from exc


def import_roots() -> list[Path]:
    """The folders :func:`import_tasks` put on the import path to find module names (the
    working folder, for ``--import my_tasks`` run beside my_tasks.py), absolute."""
    return list(_import_roots)


def _import_file(path: Path) -> None:
    """Import a module's file, or a package by its folder or its ``__init__.py`` (by its
    package name, so that its modules' absolute imports of each other work)."""
    if path.is_dir() and (path / "__init__.py").is_file():
        path = path / "__init__.py"
    if not path.is_file() or path.suffix != ".py":
        raise RobolearnError(f"no such file; {IMPORT_FORMS}")
    path = path.resolve()
    package = path.name == "__init__.py"
    folder = str(path.parent.parent if package else path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    importlib.invalidate_caches()
    importlib.import_module(path.parent.name if package else path.stem)


def _import_module(name: str, folders: list[Path]) -> None:
    """Import ``name``; when it is not on the import path, from the first of ``folders``
    that holds it."""
    top = name.split(".")[0]
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if not _is_the_module(exc, name):
            raise  # the module was found, and something it imports was not
    else:
        # found through the working folder (``python -m robolearn`` puts it on the path):
        # recorded, as when this function puts it there
        root = _root_folder(top)
        if root is not None and root == Path.cwd().resolve() and root not in _import_roots:
            _import_roots.append(root)
        return
    for folder in folders:
        folder = folder.resolve()
        if (folder / f"{top}.py").is_file() or (folder / top).is_dir():
            if str(folder) not in sys.path:
                sys.path.insert(0, str(folder))
            importlib.invalidate_caches()
            importlib.import_module(name)
            if folder not in _import_roots:
                _import_roots.append(folder)
            return
    where = ", ".join(str(f) for f in dict.fromkeys(f.resolve() for f in folders))
    raise RobolearnError(
        f"no module named {name!r} on the import path or in {where}; {IMPORT_FORMS}"
    )


def _root_folder(top: str) -> Path | None:
    """The folder the top-level module or package ``top`` was imported from."""
    module = sys.modules.get(top)
    file = getattr(module, "__file__", None)
    if file is None:
        return None
    path = Path(file).resolve()
    return path.parent.parent if path.name == "__init__.py" else path.parent


def _is_the_module(exc: ModuleNotFoundError, name: str) -> bool:
    """Whether the module missing is ``name`` (or a package above it), not one it imports."""
    missing = exc.name or ""
    return name == missing or name.startswith(f"{missing}.")


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200]}" if text else type(exc).__name__


def load_failures() -> dict[str, str]:
    """Entry points that failed to load, and why."""
    load_tasks()
    return dict(_failures)


def task_names() -> list[str]:
    load_tasks()
    return sorted(_TASKS)


def get_task(name: str) -> TaskSpec:
    """The task called ``name``; an unknown name is a RobolearnError suggesting close ones
    and saying how a task becomes visible."""
    load_tasks()
    if name not in _TASKS:
        broken = "".join(f"; {src} failed to load ({err})" for src, err in _failures.items())
        raise RobolearnError(
            f"unknown task {name!r}{did_you_mean(name, _TASKS)}; tasks: "
            f"{', '.join(sorted(_TASKS))} ({HOW_TO_ADD}){broken}"
        )
    return _TASKS[name]


def gym_id(name: str) -> str:
    return f"robolearn/{name}-v0"


def _register_with_gymnasium(name: str) -> None:
    try:
        import gymnasium as gym
    except ImportError:  # gymnasium is a dependency; tolerate its absence in slim installs
        return
    env_id = gym_id(name)
    if env_id in gym.registry:
        del gym.registry[env_id]
    gym.register(
        id=env_id,
        entry_point="robolearn.wrappers.gymnasium:make_gym_env",
        vector_entry_point="robolearn.wrappers.gymnasium:make_gym_vector_env",
        kwargs={"task": name},
        disable_env_checker=True,
    )
