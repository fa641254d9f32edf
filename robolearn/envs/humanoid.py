"""The former name of :mod:`robolearn.robots.humanoid`, kept for imports written before."""

from robolearn.robots.humanoid import *  # noqa: F403
