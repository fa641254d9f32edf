"""The former name of :mod:`robolearn.robots.quadruped`, kept for imports written before."""

from robolearn.robots.quadruped import *  # noqa: F403
