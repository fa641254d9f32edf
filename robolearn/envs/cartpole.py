"""The former name of :mod:`robolearn.robots.cartpole`, kept for imports written before."""

from robolearn.robots.cartpole import *  # noqa: F403
