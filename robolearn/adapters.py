"""Deprecated: the wrappers moved to :mod:`robolearn.wrappers`; this module re-exports them.

Kept because user code and gymnasium specs saved before the move name it (``from
robolearn.adapters import make_env``, ``entry_point="robolearn.adapters:make_gym_env"``).
Import from :mod:`robolearn.wrappers` (``make_env``), :mod:`robolearn.wrappers.rsl_rl`,
:mod:`robolearn.wrappers.gymnasium` and :mod:`robolearn.wrappers.spaces` instead.
"""

from __future__ import annotations

import warnings

from robolearn.wrappers.env_view import (
    RENDER_MODES,
    EnvView,
    available_render_modes,
    check_render_mode,
    has_display,
)
from robolearn.wrappers.episode_log import ended_episode_log
from robolearn.wrappers.gymnasium import GymEnv, GymVectorEnv, make_gym_env, make_gym_vector_env
from robolearn.wrappers.make import make_env
from robolearn.wrappers.rsl_rl import RslRlVecEnv
from robolearn.wrappers.spaces import ActionScaling, action_space, observation_space

__all__ = [
    "RENDER_MODES",
    "ActionScaling",
    "EnvView",
    "GymEnv",
    "GymVectorEnv",
    "RslRlVecEnv",
    "action_space",
    "available_render_modes",
    "check_render_mode",
    "ended_episode_log",
    "has_display",
    "make_env",
    "make_gym_env",
    "make_gym_vector_env",
    "observation_space",
]

warnings.warn(
    "robolearn.adapters is deprecated; import from robolearn.wrappers "
    "(make_env, and its modules rsl_rl, gymnasium, spaces)",
    DeprecationWarning,
    stacklevel=2,
)
