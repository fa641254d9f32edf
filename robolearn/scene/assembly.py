"""From a scene config to a running engine: find the MJCF, apply the sim settings, build."""

from __future__ import annotations

from pathlib import Path

import mujoco

from robolearn.errors import RobolearnError
from robolearn.scene.config import SceneCfg, SimCfg
from robolearn.scene.entities import attach_entities
from robolearn.scene.feet import separate_foot_geoms
from robolearn.sim import Engine, compile_model, load_spec, make_engine
from robolearn.sim.memory import field_bytes_per_env
from robolearn.sim.stability import check_timestep
from robolearn.terrain import TerrainGrid, add_terrain


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


def build_engine(cfg: SceneCfg, sim: SimCfg, terrain: TerrainGrid | None = None) -> Engine:
    """``cfg.num_envs`` copies of the scene's MJCF, with ``sim``'s settings, on its engine;
    ``terrain`` (generated from ``cfg.terrain``) replaces the MJCF's ground planes."""
    spec = load_spec(resolve_model_path(cfg.model))
    apply_sim_options(spec, sim)
    separate_foot_geoms(spec, cfg.feet)
    if cfg.entities:
        # The keyframe is the robot's: check it against the robot alone (MuJoCo pads it
        # with the attached entities' qpos0).
        check_keyframe(spec, compile_model(spec), cfg.keyframe)
        attach_entities(spec, cfg.entities)
    if terrain is not None:
        add_terrain(spec, terrain)
    model = compile_model(spec)
    if not cfg.entities:
        check_keyframe(spec, model, cfg.keyframe)
    # before the engine allocates anything: a timestep the gains cannot follow is refused
    # up front, not found out as a blow-up in training
    check_timestep(model, model.key(cfg.keyframe).qpos if cfg.keyframe else None)
    engine = make_engine(
        model,
        cfg.num_envs,
        sim.engine,
        nthread=sim.nthread,
        per_env_fields=sim.per_env_fields,
        nconmax=sim.nconmax,
        njmax=sim.njmax,
        # the env's own buffers (observations, commands, the scene's state in float32...):
        # about half the cpu engine's fields for our tasks (measured 0.3-0.5x)
        reserve_per_env=field_bytes_per_env(model) // 2,
    )
    engine.max_speed = float(sim.max_speed)
    return engine


def apply_sim_options(spec: mujoco.MjSpec, sim: SimCfg) -> None:
    """Write ``sim``'s timestep and gravity, where set, over the MJCF's ``<option>``."""
    if sim.physics_dt is not None:
        if sim.physics_dt <= 0:
            raise RobolearnError(f"sim.physics_dt must be > 0, got {sim.physics_dt}")
        spec.option.timestep = sim.physics_dt
    if not sim.max_speed > 0:  # NaN fails too
        raise RobolearnError(
            f"sim.max_speed must be > 0 (m/s, rad/s; inf for none), got {sim.max_speed}"
        )
    if sim.gravity is not None:
        gravity = [float(g) for g in sim.gravity]
        if len(gravity) != 3:
            raise RobolearnError(f"sim.gravity must be 3 numbers (x, y, z), got {sim.gravity}")
        spec.option.gravity = gravity


def check_keyframe(spec: mujoco.MjSpec, model: mujoco.MjModel, keyframe: str | None) -> None:
    """The keyframe the scene resets to gives every qpos (and ctrl) value, or none.

    MuJoCo fills the missing values of a short keyframe from qpos0 without a word; for a
    robot's default pose that is a mistake (written for another version of the model),
    so a keyframe of the wrong length is an error naming both lengths.
    """
    if keyframe is None:
        return
    for key in spec.keys:
        if key.name != keyframe:
            continue
        for what, values, size in (("qpos", key.qpos, model.nq), ("ctrl", key.ctrl, model.nu)):
            if 0 < len(values) != size:
                raise RobolearnError(
                    f"keyframe {keyframe!r} has {len(values)} {what} values; the model has "
                    f"{size} (n{'q' if what == 'qpos' else 'u'})"
                )
