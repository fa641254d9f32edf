"""What a term of the library reads of its env: :class:`TaskEnv`, the managers' protocol
(:class:`~robolearn.managers.protocol.ManagedEnv`) with the managers themselves, which
terms read (a command, the last action, a reward term's live config)."""

from __future__ import annotations

from typing import Protocol

from robolearn.managers import (
    ActionManager,
    CommandManager,
    CurriculumManager,
    EventManager,
    ObservationManager,
    RewardManager,
    TerminationManager,
)
from robolearn.managers.protocol import ManagedEnv


class TaskEnv(ManagedEnv, Protocol):
    """The env as the term library's terms read it."""

    action_manager: ActionManager
    command_manager: CommandManager
    curriculum_manager: CurriculumManager
    event_manager: EventManager
    observation_manager: ObservationManager
    reward_manager: RewardManager
    termination_manager: TerminationManager
