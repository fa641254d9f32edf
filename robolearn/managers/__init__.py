"""Managers: each turns a dict of term configs into one part of the env step.

This package is machinery only: the managers, the term base classes and configs, and the
marker type terms draw with. The terms the shipped tasks use (commands, actions, rewards,
observations...) are the term library, :mod:`robolearn.mdp`.

Term vocabulary follows Isaac Lab (``RewardTermCfg(func, weight, params)``, observation
groups, event modes startup/reset/interval, ``time_out`` terminations), so tasks port over.
Every manager is a :class:`ManagerBase`: it builds its terms once, resets their state for
the envs that reset, and hands out their live configs (``get_term_cfg``/``set_term_cfg``).
"""

from robolearn.managers.action import ActionManager, ActionTerm, ActionTermCfg
from robolearn.managers.base import (
    ClassTermManager,
    EnvRows,
    ManagerBase,
    ManagerTerm,
    TermCfg,
    as_env_mask,
)
from robolearn.managers.command import CommandManager, CommandTerm, CommandTermCfg
from robolearn.managers.curriculum import CurriculumManager, CurriculumTermCfg
from robolearn.managers.differentiable import differentiable, is_differentiable
from robolearn.managers.event import EventManager, EventTermCfg
from robolearn.managers.markers import Marker
from robolearn.managers.observation import (
    NoiseCfg,
    ObservationGroupCfg,
    ObservationManager,
    ObservationTermCfg,
    gaussian_noise,
    uniform_noise,
)
from robolearn.managers.reward import RewardManager, RewardTermCfg
from robolearn.managers.termination import TerminationManager, TerminationTermCfg

__all__ = [
    "ActionManager",
    "ActionTerm",
    "ActionTermCfg",
    "ClassTermManager",
    "CommandManager",
    "CommandTerm",
    "CommandTermCfg",
    "CurriculumManager",
    "CurriculumTermCfg",
    "EnvRows",
    "EventManager",
    "EventTermCfg",
    "ManagerBase",
    "ManagerTerm",
    "Marker",
    "NoiseCfg",
    "ObservationGroupCfg",
    "ObservationManager",
    "ObservationTermCfg",
    "RewardManager",
    "RewardTermCfg",
    "TermCfg",
    "TerminationManager",
    "TerminationTermCfg",
    "as_env_mask",
    "differentiable",
    "gaussian_noise",
    "is_differentiable",
    "uniform_noise",
]
