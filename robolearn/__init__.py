"""robolearn: robot learning over thousands of parallel MuJoCo simulations.

Physics runs vectorized (MuJoCo's batch engine on the CPU, MuJoCo Warp on the GPU) and
state reaches torch as views of the engine's memory. See README.md for the layout.
"""

from robolearn.errors import RobolearnError

__version__ = "0.1.0"

__all__ = ["RobolearnError", "__version__"]
