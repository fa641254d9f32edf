"""The engines' settings: which engine runs the physics, and how.

They live beside the engines (not with the scene) because :func:`robolearn.sim.make_engine`
reads them: a bare engine and a scene's engine are built from the same list of options.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from robolearn.sim.engine import DEFAULT_PER_ENV_FIELDS

__all__ = ["NewtonCfg", "SimCfg"]


@dataclass
class NewtonCfg:
    """The Newton engines' settings (``env.sim.engine=newton`` or ``newton-cpu``)."""

    solver: str = "mujoco"
    """Newton's solver: ``mujoco`` (MuJoCo Warp, MuJoCo's actuators), ``featherstone``,
    ``xpbd`` or ``semi_implicit`` (Newton's own, with its collision pipeline)."""
    substeps: int | None = None
    """Solver steps per physics step; None for the solver's default (1 on ``mujoco``;
    enough for steps of 1 ms on featherstone and xpbd, 50 us on semi_implicit)."""
    friction_stiffness: float | None = None
    """Newton's friction coefficient ``kf`` of every shape on Newton's own solvers (N s/m:
    the slope of the regularized Coulomb friction below its cap); None keeps Newton's
    (1000). A differentiable run of a legged task wants about 100: at 1000 a foot's
    friction multiplies the state's gradient by up to 290,000 per env step (the quadruped,
    docs/differentiable.md), at 100 by at most 3.2; the feet slip more before friction
    holds them."""
    differentiable: bool = False
    """Build Newton's model for gradients through the step (``featherstone`` or
    ``semi_implicit`` only); the differentiable learner (``--algo shac``) sets it."""


@dataclass
class SimCfg:
    """Which engine runs the physics, and how."""

    engine: str = "auto"
    """``auto`` (cuda if available, else cpu), ``cpu``, ``cuda``, ``cuda:N``, ``warp-cpu``,
    ``newton`` or ``newton-cpu`` (Newton's solvers: :class:`NewtonCfg`)."""
    newton: NewtonCfg = field(default_factory=NewtonCfg)
    """The Newton engines' solver and substeps; unused by the other engines."""
    physics_dt: float | None = None
    """Physics timestep in seconds; None keeps the MJCF's ``<option timestep>``."""
    gravity: tuple[float, float, float] | None = None
    """Gravity (x, y, z) in m/s^2; None keeps the MJCF's ``<option gravity>`` (e.g.
    ``env.sim.gravity=[0,0,-1.62]`` for the Moon)."""
    nthread: int | None = None
    """Threads of the cpu engine; None for every core this process may use."""
    per_env_fields: tuple[str, ...] = DEFAULT_PER_ENV_FIELDS
    """Model fields with one value per env (domain randomization writes these)."""
    max_speed: float = 1e4
    """Speed in m/s or rad/s (any entry of qvel) beyond which an env's physics counts as
    diverged: the env is reset and counted as ``nonfinite``, as for NaN. No robot moves at
    10 km/s or 95,000 rpm, but a simulation blowing up does, long before MuJoCo's own bound
    (1e10) and with rewards of 1e20 meanwhile; ``inf`` keeps MuJoCo's bound alone."""
    integrator: str | None = None
    """``euler``, ``implicitfast``, ``implicit`` or ``rk4``; None keeps the MJCF's
    ``<option integrator>``. Menagerie's G1 ships ``implicitfast``, Unitree's files Euler,
    which steps a position actuator's damping explicitly (see
    :func:`robolearn.sim.stability.check_actuator_damping`)."""
    cone: str | None = None
    """Friction cone, ``pyramidal`` or ``elliptic``; None keeps the MJCF's ``<option cone>``.
    An elliptic cone with a high ``impratio`` (Menagerie's and Unitree's Go2 files ship
    ``elliptic`` at 100) resists slip better and costs the solver more."""
    impratio: float | None = None
    """Ratio of frictional to normal constraint impedance; None keeps the MJCF's."""
    iterations: int | None = None
    """Most solver iterations per physics step; None keeps the MJCF's (MuJoCo's default 100).
    A policy that learns on a capped solver (mjlab: 10) is checked uncapped in sim2sim."""
    ls_iterations: int | None = None
    """Most line-search iterations per solver iteration; None keeps the MJCF's (50)."""
    nconmax: int | None = None
    """Contacts allocated per env on the Warp engines; None for MuJoCo Warp's estimate."""
    njmax: int | None = None
    """Constraint rows allocated per env on the Warp engines; None for the estimate."""
    cuda_graph: bool = True
    """On the Warp engines, replay ``step(n)``, ``forward`` and the reset from captured
    graphs (CUDA graphs on ``cuda``, Warp's CPU graphs on ``warp-cpu``); False launches
    their kernels one by one (slower; for debugging a kernel)."""


CAPPED_SOLVER = {"cone": "pyramidal", "impratio": 1.0, "iterations": 10, "ls_iterations": 20}
"""The solver settings for a real robot's model (``SimCfg(**CAPPED_SOLVER)``), mjlab's
budget: the elliptic cone at impratio 100 and the uncapped iterations that Menagerie's and
Unitree's Go2 files ship cost 2.2 times the physics step on a CPU (BENCHMARKS.md, section
17) for grip that a walking gait does not need. The sim-to-sim check runs a policy on the
vendor's own settings."""
