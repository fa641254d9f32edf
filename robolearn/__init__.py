"""robolearn: robot learning over thousands of parallel MuJoCo simulations.

Physics runs vectorized (MuJoCo's batch engine on the CPU, MuJoCo Warp on the GPU) and
state reaches torch as views of the engine's memory. See README.md for the layout.
"""

import os as _os

# MuJoCo picks its OpenGL backend when it is imported. Without a display, offscreen frames
# (videos, the web viewer) need EGL; choose it unless the user chose otherwise.
if "MUJOCO_GL" not in _os.environ and not _os.environ.get("DISPLAY"):
    _os.environ["MUJOCO_GL"] = "egl"

from robolearn.errors import RobolearnError

__version__ = "0.1.0"

__all__ = ["RobolearnError", "__version__"]
