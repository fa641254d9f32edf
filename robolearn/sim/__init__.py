"""Vectorized physics engines; the only package that touches ``mujoco.batch``, warp or newton.

>>> from robolearn.sim import SimCfg, make_engine
>>> engine = make_engine("humanoid/humanoid.xml", num_envs=1024)   # doctest: +SKIP
>>> cpu = make_engine("humanoid/humanoid.xml", 64, SimCfg(engine="cpu"))   # doctest: +SKIP
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

import mujoco
import torch

from robolearn.errors import RobolearnError, did_you_mean
from robolearn.sim import messages
from robolearn.sim.config import NewtonCfg, SimCfg
from robolearn.sim.engine import DEFAULT_PER_ENV_FIELDS, Engine
from robolearn.sim.memory import Reserve
from robolearn.sim.model import CONTACT_FORCE_SENSOR, ModelSource, compile_model, load_spec
from robolearn.sim.options import apply_sim_options
from robolearn.sim.timer import EngineTimer

ENGINES = ("auto", "cpu", "cuda", "warp-cpu", "newton", "newton-cpu")

__all__ = [
    "CONTACT_FORCE_SENSOR",
    "DEFAULT_PER_ENV_FIELDS",
    "ENGINES",
    "Engine",
    "EngineTimer",
    "NewtonCfg",
    "SimCfg",
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
    sim_cfg: SimCfg | None = None,
    *,
    spec: mujoco.MjSpec | None = None,
    reserve_per_env: Reserve = 0,
) -> Engine:
    """Build ``num_envs`` simulations of a model on the engine ``sim_cfg`` names.

    One config, :class:`SimCfg`, carries every engine option, so that a bare engine and a
    scene's engine (``env.sim``) are built from the same list, and a new option is added
    in one place.

    Args:
        model: an MJCF file path, an MJCF string, a ``mujoco.MjSpec``, or a model that
            :func:`compile_model` compiled.
        num_envs: number of parallel simulations (>= 1).
        sim_cfg: the engine and its settings; None for ``SimCfg()`` (engine ``auto``:
            ``cuda`` where available, else ``cpu``). Its physics options (``physics_dt``,
            ``gravity``, ``integrator``, ...), where set, are written over the model's
            own: into the compiled model (and ``spec``) in place when a compiled model is
            given.
        spec: the spec a compiled ``model`` came from, which the Newton engines import
            (Newton reads MJCF); not needed when ``model`` is a source.
        reserve_per_env: bytes the caller will allocate per env beside the engine (an
            env's buffers; or each consumer's by name, :data:`robolearn.sim.memory.Reserve`),
            counted in the memory check made before anything is allocated.

    Raises:
        RobolearnError: unknown engine, num_envs < 1, an MJCF that does not compile, a
            bad setting, a model feature the chosen engine lacks, or more envs than the
            memory holds (:mod:`robolearn.sim.memory`).
    """
    sim_cfg = SimCfg() if sim_cfg is None else sim_cfg
    if not isinstance(sim_cfg, SimCfg):
        raise RobolearnError(
            f"make_engine's third argument is a SimCfg, got {sim_cfg!r} (the engine's name "
            "goes in it: make_engine(model, num_envs, SimCfg(engine='cpu')))"
        )
    name = resolve_engine(sim_cfg.engine)
    if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
        raise RobolearnError(f"num_envs must be an integer >= 1, got {num_envs!r}")
    if sim_cfg.newton.friction_stiffness is not None and not name.startswith("newton"):
        raise RobolearnError(
            "env.sim.newton.friction_stiffness is a setting of the newton engines' own "
            f"solvers; this scene runs on {name}"
        )
    # Before anything steps: a diverging task would otherwise print a line per env per step.
    messages.install()
    if name.startswith("newton"):
        engine = _newton_engine(name, model, num_envs, spec, sim_cfg, reserve_per_env)
    else:
        engine = _mujoco_engine(name, _compiled(model, sim_cfg), num_envs, sim_cfg, reserve_per_env)
    engine.max_speed = float(sim_cfg.max_speed)
    return engine


def _compiled(model: ModelSource | mujoco.MjModel, sim_cfg: SimCfg) -> mujoco.MjModel:
    """The compiled model with ``sim_cfg``'s physics options over the MJCF's: written into
    ``model.opt``, which MuJoCo reads at every step (a scene wrote them into its spec
    before compiling, to check the timestep; here they are written again, unchanged)."""
    mj_model = model if isinstance(model, mujoco.MjModel) else compile_model(model)
    apply_sim_options(mj_model.opt, sim_cfg)
    return mj_model


def _mujoco_engine(
    name: str, model: mujoco.MjModel, num_envs: int, sim_cfg: SimCfg, reserve_per_env: Reserve
) -> Engine:
    """:func:`make_engine` of ``cpu`` (MuJoCo's batch) or the MuJoCo Warp engines."""
    if name == "cpu":
        from robolearn.sim.cpu import CpuEngine

        return CpuEngine(model, num_envs, sim_cfg, reserve_per_env=reserve_per_env)
    from robolearn.sim.mjwarp import WarpEngine

    device = "cpu" if name == "warp-cpu" else (name if ":" in name else "cuda:0")
    return WarpEngine(model, num_envs, sim_cfg, device=device, reserve_per_env=reserve_per_env)


def _newton_engine(
    name: str,
    model: ModelSource | mujoco.MjModel,
    num_envs: int,
    spec: mujoco.MjSpec | None,
    sim_cfg: SimCfg,
    reserve_per_env: Reserve,
) -> Engine:
    """:func:`make_engine` of ``newton`` or ``newton-cpu``: Newton imports the MJCF."""
    from robolearn.sim.newton_engine import NewtonEngine, check_solver

    check_solver(sim_cfg.newton.solver, sim_cfg.newton.substeps)
    if spec is None and isinstance(model, mujoco.MjModel):
        raise RobolearnError(
            "the newton engines import the model's MJCF: pass the spec it was compiled "
            "from (spec=...), or the MJCF itself"
        )
    if spec is None:
        spec = load_spec(model)
    apply_sim_options(spec.option, sim_cfg)  # Newton reads the MJCF's <option> too
    mj_model = _compiled(model, sim_cfg)
    device = "cpu" if name == "newton-cpu" else "cuda:0"
    return NewtonEngine(
        mj_model, num_envs, spec, sim_cfg, device=device, reserve_per_env=reserve_per_env
    )
