"""Vectorized physics engines; the only package that touches ``mujoco.batch``, warp or newton.

>>> from robolearn.sim import make_engine
>>> engine = make_engine("humanoid/humanoid.xml", num_envs=1024)   # doctest: +SKIP
>>> engine.ctrl[:] = targets; engine.step(4); engine.qpos   # views of engine memory

Engines: ``cpu`` (MuJoCo's batch engine on a thread pool, float64), ``cuda`` (MuJoCo Warp
on a GPU in a CUDA graph, float32), ``warp-cpu`` (MuJoCo Warp on warp's CPU device, for
testing the GPU code path anywhere), ``newton`` and ``newton-cpu`` (the same MJCF through
Newton's importer, stepped by one of Newton's solvers), and ``auto``: ``cuda`` when CUDA is
available, else ``cpu``.

``engine.diverged()`` names the envs whose physics went wrong in the last step;
``with engine.timed() as timer:`` measures the seconds spent in each engine call.

MuJoCo's warnings (a diverged simulation, a full contact buffer) are rate-limited once an
engine is made: see :mod:`robolearn.sim.messages`.
"""

from __future__ import annotations

from collections.abc import Sequence

import mujoco
import torch

from robolearn.errors import RobolearnError, did_you_mean
from robolearn.sim import messages
from robolearn.sim.engine import DEFAULT_PER_ENV_FIELDS, Engine
from robolearn.sim.model import CONTACT_FORCE_SENSOR, ModelSource, compile_model, load_spec
from robolearn.sim.timer import EngineTimer

ENGINES = ("auto", "cpu", "cuda", "warp-cpu", "newton", "newton-cpu")

__all__ = [
    "CONTACT_FORCE_SENSOR",
    "DEFAULT_PER_ENV_FIELDS",
    "ENGINES",
    "Engine",
    "EngineTimer",
    "compile_model",
    "load_spec",
    "make_engine",
    "resolve_engine",
]


def resolve_engine(engine: str) -> str:
    """The concrete engine for a name: ``auto`` becomes ``cuda`` or ``cpu``.

    ``cuda:N`` names a GPU; it resolves to itself.
    """
    if not isinstance(engine, str):
        raise RobolearnError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    base, _, index = engine.partition(":")
    if base not in ENGINES or (":" in engine and (base != "cuda" or not index.isdigit())):
        raise RobolearnError(
            f"unknown engine {engine!r}{did_you_mean(engine, ENGINES)}; "
            f"valid: {', '.join(ENGINES)} (or cuda:N)"
        )
    if base == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if base in ("cuda", "newton") and not torch.cuda.is_available():
        fallback = (
            "'newton-cpu'"
            if base == "newton"
            else "'cpu' (or 'warp-cpu' to test the Warp code path)"
        )
        raise RobolearnError(
            f"engine {engine!r} needs a CUDA GPU and torch with CUDA, and this machine has "
            f"none; use engine {fallback}"
        )
    return engine


def make_engine(
    model: ModelSource | mujoco.MjModel,
    num_envs: int,
    engine: str = "auto",
    *,
    nthread: int | None = None,
    newton_solver: str = "mujoco",
    newton_substeps: int | None = None,
    newton_differentiable: bool = False,
    spec: mujoco.MjSpec | None = None,
    per_env_fields: Sequence[str] = DEFAULT_PER_ENV_FIELDS,
    nconmax: int | None = None,
    njmax: int | None = None,
    cuda_graph: bool = True,
    reserve_per_env: int = 0,
) -> Engine:
    """Build ``num_envs`` simulations of a model on an engine.

    Args:
        model: an MJCF file path, an MJCF string, a ``mujoco.MjSpec``, or a model that
            :func:`compile_model` compiled.
        num_envs: number of parallel simulations (>= 1).
        engine: ``auto``, ``cpu``, ``cuda`` (or ``cuda:N``), ``warp-cpu``, ``newton`` or
            ``newton-cpu``.
        nthread: threads of the ``cpu`` engine; default all cores this process may use.
        newton_solver, newton_substeps: the Newton engines' solver
            (:data:`robolearn.sim.newton_engine.SOLVERS`) and solver steps per physics
            step (None: the solver's default); ``newton_differentiable`` builds the
            engine for gradients (:meth:`NewtonEngine.differentiate_next_step`).
        spec: the spec a compiled ``model`` came from, which the Newton engines import
            (Newton reads MJCF); not needed when ``model`` is a source.
        per_env_fields: model fields that get per-env values (domain randomization).
        nconmax, njmax: contact and constraint capacity per env on the Warp engines;
            default measured on the model (:mod:`robolearn.sim.capacity`).
        cuda_graph: on the Warp engines, replay ``step(n)``, ``forward`` and the reset
            from captured graphs (CUDA graphs on ``cuda``, Warp's CPU graphs on
            ``warp-cpu``); False launches their kernels one by one.
        reserve_per_env: bytes the caller will allocate per env beside the engine (an
            env's buffers), counted in the memory check made before anything is allocated.

    Raises:
        RobolearnError: unknown engine, num_envs < 1, an MJCF that does not compile, a
            model feature the chosen engine lacks, or more envs than the memory holds
            (:mod:`robolearn.sim.memory`).
    """
    name = resolve_engine(engine)
    if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
        raise RobolearnError(f"num_envs must be an integer >= 1, got {num_envs!r}")
    # Before anything steps: a diverging task would otherwise print a line per env per step.
    messages.install()
    warp_options = dict(
        per_env_fields=per_env_fields,
        nconmax=nconmax,
        njmax=njmax,
        cuda_graph=cuda_graph,
        reserve_per_env=reserve_per_env,
    )
    if name.startswith("newton"):
        solver = (newton_solver, newton_substeps, newton_differentiable)
        return _newton_engine(name, model, num_envs, spec, *solver, **warp_options)
    mj_model = model if isinstance(model, mujoco.MjModel) else compile_model(model)
    if name == "cpu":
        from robolearn.sim.cpu import CpuEngine

        return CpuEngine(
            mj_model,
            num_envs,
            nthread=nthread,
            per_env_fields=per_env_fields,
            reserve_per_env=reserve_per_env,
        )
    from robolearn.sim.mjwarp import WarpEngine

    device = "cpu" if name == "warp-cpu" else (name if ":" in name else "cuda:0")
    return WarpEngine(mj_model, num_envs, device=device, **warp_options)


def _newton_engine(
    name: str,
    model: ModelSource | mujoco.MjModel,
    num_envs: int,
    spec: mujoco.MjSpec | None,
    solver: str,
    substeps: int | None,
    differentiable: bool,
    **options,
) -> Engine:
    """:func:`make_engine` of ``newton`` or ``newton-cpu``: Newton imports the MJCF."""
    from robolearn.sim.newton_engine import NewtonEngine, check_solver

    check_solver(solver, substeps)
    if spec is None and isinstance(model, mujoco.MjModel):
        raise RobolearnError(
            "the newton engines import the model's MJCF: pass the spec it was compiled "
            "from (spec=...), or the MJCF itself"
        )
    if spec is None:
        spec = load_spec(model)
    mj_model = model if isinstance(model, mujoco.MjModel) else compile_model(model)
    device = "cpu" if name == "newton-cpu" else "cuda:0"
    return NewtonEngine(
        mj_model,
        num_envs,
        spec,
        device=device,
        solver=solver,
        substeps=substeps,
        differentiable=differentiable,
        **options,
    )
