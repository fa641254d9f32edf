"""robolearn: robot learning over thousands of parallel MuJoCo simulations.

Physics runs vectorized (MuJoCo's batch engine on the CPU, MuJoCo Warp on the GPU) and
state reaches torch as views of the engine's memory. See README.md for the layout.
"""

import os as _os
import sys as _sys


def _egl_loads() -> bool:
    """Whether the EGL library loads (a dlopen: about 2 ms here)."""
    import ctypes

    for name in ("libEGL.so.1", "libEGL.so"):
        try:
            ctypes.CDLL(name)
        except OSError:
            continue
        return True
    return False


# MuJoCo picks its OpenGL backend when it is imported. Without a display, offscreen frames
# (videos, the web viewer) need EGL; choose it unless the user chose otherwise. Where no
# EGL library loads (a GPU server image without libglvnd), MUJOCO_GL=egl makes `import
# mujoco` itself fail (PyOpenGL finds no EGL), so rendering is switched off instead and
# says what to install when asked for.
if (
    _sys.platform.startswith("linux")
    and "MUJOCO_GL" not in _os.environ
    and not _os.environ.get("DISPLAY")
):
    _os.environ["MUJOCO_GL"] = "egl" if _egl_loads() else "disable"

# torch's OpenMP threads spin while they wait for each other at the end of a parallel op. On
# a machine shared with other processes, a spinning thread holds a core that the thread
# everyone waits for needs: on 2 cores beside 2 busy processes, humanoid_walk's PPO update
# took 4-10x its idle time across runs (the fair share is 2x). A short spin before sleeping
# keeps the idle speed and makes it ~2.6x (BENCHMARKS.md, "Training on a busy machine").
# libgomp (torch's OpenMP on Linux) reads this once, when torch loads it; a user's own
# OpenMP setting wins. See robolearn/threads.py for the rest of the thread policy.
if "torch" not in _sys.modules and not {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT"} & set(_os.environ):
    _os.environ["GOMP_SPINCOUNT"] = "10000"

from robolearn.errors import RobolearnError  # noqa: E402 - after the environment set above

__version__ = "0.1.0"

__all__ = ["RobolearnError", "__version__", "load_policy"]


def __getattr__(name: str):
    """``robolearn.load_policy``, imported on first use so that ``import robolearn`` stays
    light (no torch, rsl-rl or onnxruntime). The package's one upward import, allowed by
    name in tests/test_layers.py: the root re-exports the public policy API."""
    if name == "load_policy":
        from robolearn.app.load_policy import load_policy

        return load_policy
    raise AttributeError(f"module 'robolearn' has no attribute {name!r}")
