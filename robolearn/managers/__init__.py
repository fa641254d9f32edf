"""Managers: each turns a dict of term configs into one part of the env step.

Term vocabulary follows Isaac Lab (``RewardTermCfg(func, weight, params)``, observation
groups, event modes startup/reset/interval, ``time_out`` terminations), so tasks port over.
Every manager is a :class:`ManagerBase`: it builds its terms once, resets their state for
the envs that reset, and hands out their live configs (``get_term_cfg``/``set_term_cfg``).
"""

from robolearn.managers.action import (
    ActionManager,
    ActionTerm,
    ActionTermCfg,
    JointEffortAction,
    JointEffortActionCfg,
    JointPositionAction,
    JointPositionActionCfg,
)
from robolearn.managers.base import (
    ClassTermManager,
    EnvRows,
    ManagerBase,
    ManagerTerm,
    TermCfg,
    as_env_mask,
)
from robolearn.managers.command import (
    CommandManager,
    CommandTerm,
    CommandTermCfg,
    GaitPhaseCommand,
    GaitPhaseCommandCfg,
    UniformVelocityCommand,
    UniformVelocityCommandCfg,
    VelocityRanges,
    register_command,
)
from robolearn.managers.curriculum import CurriculumManager, CurriculumTermCfg
from robolearn.managers.event import EventManager, EventTermCfg
from robolearn.managers.markers import (
    Marker,
    collect_markers,
    contact_force_markers,
    root_frame_markers,
)
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
    "GaitPhaseCommand",
    "GaitPhaseCommandCfg",
    "JointEffortAction",
    "JointEffortActionCfg",
    "JointPositionAction",
    "JointPositionActionCfg",
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
    "UniformVelocityCommand",
    "UniformVelocityCommandCfg",
    "VelocityRanges",
    "as_env_mask",
    "collect_markers",
    "contact_force_markers",
    "gaussian_noise",
    "register_command",
    "root_frame_markers",
    "uniform_noise",
]
