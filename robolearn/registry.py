"""The task registry: tasks by name, each an env config and a PPO agent config.

Tasks register when ``robolearn.tasks`` is imported (each module there calls
:func:`register_task`). Every task is also registered with gymnasium as
``robolearn/<name>-v0``: ``gymnasium.make_vec("robolearn.tasks:robolearn/<name>-v0",
num_envs=...)`` (the prefix makes gymnasium import the tasks first), or ``gymnasium.make``
for one env.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

from robolearn.errors import RobolearnError, did_you_mean


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

    def make_env_cfg(self, play: bool = False):
        return (self.play_env_cfg if play and self.play_env_cfg else self.env_cfg)()


_TASKS: dict[str, TaskSpec] = {}


def register_task(spec: TaskSpec) -> TaskSpec:
    """Add a task (a later registration of the same name replaces the earlier one)."""
    _TASKS[spec.name] = spec
    _register_with_gymnasium(spec.name)
    return spec


BUILTIN_TASKS = "robolearn.tasks"
"""The package whose modules register the shipped tasks when it is imported."""


def _load_builtin_tasks() -> None:
    # Loaded by name, as a plugin: the tasks sit above the registry (they call
    # register_task), so the registry does not import them the usual way.
    importlib.import_module(BUILTIN_TASKS)


def task_names() -> list[str]:
    _load_builtin_tasks()
    return sorted(_TASKS)


def get_task(name: str) -> TaskSpec:
    """The task called ``name``; an unknown name is a RobolearnError suggesting close ones."""
    _load_builtin_tasks()
    if name not in _TASKS:
        raise RobolearnError(
            f"unknown task {name!r}{did_you_mean(name, _TASKS)}; tasks: {', '.join(sorted(_TASKS))}"
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
        entry_point="robolearn.adapters:make_gym_env",
        vector_entry_point="robolearn.adapters:make_gym_vector_env",
        kwargs={"task": name},
        disable_env_checker=True,
    )
