"""From a scene config to a running engine: find the MJCF, apply the sim settings, build."""

from __future__ import annotations

from pathlib import Path

import mujoco

from robolearn.errors import RobolearnError
from robolearn.scene.config import SceneCfg, SimCfg
from robolearn.sim import Engine, compile_model, load_spec, make_engine


def resolve_model_path(model: str) -> Path:
    """An MJCF path from a SceneCfg: robolearn's assets first, then the filesystem."""
    from robolearn.assets import ASSETS_DIR

    if not model:
        raise RobolearnError("scene.model is empty: name an MJCF file")
    shipped = ASSETS_DIR / model
    if shipped.is_file():
        return shipped
    path = Path(model).expanduser()
    if path.is_file():
        return path.resolve()
    choices = sorted(str(p.relative_to(ASSETS_DIR)) for p in ASSETS_DIR.rglob("scene.xml"))
    raise RobolearnError(
        f"scene.model {model!r} is neither a robolearn asset nor a file; "
        f"robolearn assets: {', '.join(choices)}"
    )


def build_engine(cfg: SceneCfg, sim: SimCfg) -> Engine:
    """``cfg.num_envs`` copies of the scene's MJCF, with ``sim``'s settings, on its engine."""
    spec = load_spec(resolve_model_path(cfg.model))
    apply_sim_options(spec, sim)
    return make_engine(
        compile_model(spec),
        cfg.num_envs,
        sim.engine,
        nthread=sim.nthread,
        per_env_fields=sim.per_env_fields,
        nconmax=sim.nconmax,
        njmax=sim.njmax,
    )


def apply_sim_options(spec: mujoco.MjSpec, sim: SimCfg) -> None:
    """Write ``sim``'s timestep and gravity, where set, over the MJCF's ``<option>``."""
    if sim.physics_dt is not None:
        if sim.physics_dt <= 0:
            raise RobolearnError(f"sim.physics_dt must be > 0, got {sim.physics_dt}")
        spec.option.timestep = sim.physics_dt
    if sim.gravity is not None:
        gravity = [float(g) for g in sim.gravity]
        if len(gravity) != 3:
            raise RobolearnError(f"sim.gravity must be 3 numbers (x, y, z), got {sim.gravity}")
        spec.option.gravity = gravity
