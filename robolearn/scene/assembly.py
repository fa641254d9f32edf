"""From a scene config to a running engine: find the MJCF, attach the entities, apply the
sim settings, build."""

from __future__ import annotations

from dataclasses import replace

import mujoco
import numpy as np

from robolearn.actuators.apply import DrivenJoint, apply_actuators
from robolearn.actuators.delay import add_model_delays, model_delays
from robolearn.errors import RobolearnError
from robolearn.scene.config import SceneCfg
from robolearn.scene.contact_sensors import add_contact_sensors
from robolearn.scene.entities import ROBOT, EntityCfg
from robolearn.scene.feet import separate_foot_geoms
from robolearn.scene.init_state import add_init_keyframe
from robolearn.scene.models import resolve_model_path
from robolearn.scene.patterns import match_names
from robolearn.scene.sensors import SensorCfg
from robolearn.scene.sensors.camera import add_model_cameras
from robolearn.sim import Engine, SimCfg, compile_model, load_spec, make_engine
from robolearn.sim.memory import HISTORIES, field_bytes_per_env
from robolearn.sim.options import apply_sim_options
from robolearn.sim.stability import check_timestep
from robolearn.terrain import TerrainGrid, add_terrain


def build_engine(
    cfg: SceneCfg, sim: SimCfg, terrain: TerrainGrid | None = None
) -> tuple[Engine, list[DrivenJoint]]:
    """``cfg.num_envs`` copies of the scene: the robot's MJCF, its actuators as its config
    says, and the other entities attached (each with its own actuators), with ``sim``'s
    settings, on its engine; ``terrain`` (generated from ``cfg.terrain``) replaces the
    MJCF's ground planes. Also returns how each joint that an actuator config selected is
    driven (another entity's joint by its prefixed name)."""
    robot = cfg.robot
    spec, driven = robot_spec(robot, cfg.ground and terrain is None)
    apply_sim_options(spec.option, sim)  # before compiling: the timestep is checked below
    add_model_delays(spec, driven)
    separate_foot_geoms(spec, robot.feet)
    floats = any(j.type == mujoco.mjtJoint.mjJNT_FREE for j in spec.joints)
    others = cfg.attached()
    if others:
        attached = attach_entities(spec, others)
        add_model_delays(spec, attached)
        driven = driven + attached
    add_contact_sensors(spec, cfg.contact_sensors)
    add_model_cameras(spec, cfg.sensors)
    if terrain is not None:
        add_terrain(spec, terrain)
    model = compile_model(spec)
    if floats and terrain is None:
        check_ground(model, robot.model)
    check_gains(model, driven, robot.default_keyframe)
    # each env's lags of MuJoCo's delayed loops are its own
    delays = ("actuator_delay",) if model_delays(driven) else ()
    engine = make_engine(
        model,
        cfg.num_envs,
        replace(sim, per_env_fields=tuple(sim.per_env_fields) + delays),
        spec=spec,
        reserve_per_env=memory_per_env(cfg, model, driven),
    )
    return engine, driven


def memory_per_env(
    cfg: SceneCfg, model: mujoco.MjModel, driven: list[DrivenJoint]
) -> dict[str, int]:
    """What the scene will allocate per env beside its engine, bytes by consumer, each
    named with the setting that sizes it: the memory check made before the engine is
    built counts them, and a refusal names the largest. The sensors' configs are checked
    here (a bad one is refused before its size is counted)."""
    itemsize = 8  # float64 on cpu, the largest of the engines' values
    history = model.nhistory * itemsize  # the delayed loops' (counted by the engine)
    # the env's own buffers (observations, commands, the scene's state in float32...):
    # about half the cpu engine's fields for our tasks (measured 0.3-0.5x)
    parts = {"the env's buffers": (field_bytes_per_env(model) - history) // 2}
    delayed = [d for d in driven if d.explicit and d.delay[1] > 0]
    if delayed:  # the drive's ring of commands, max + 1 deep, a value per actuator
        longest = max(delayed, key=lambda d: d.delay[1])
        steps = longest.delay[1]
        what = f"{longest.config}.delay's ring of {steps + 1:,} commands"
        parts[what] = (steps + 1) * model.nu * itemsize
    # a reset copies the stored commands of MuJoCo's delayed loops (nsample each)
    parts[HISTORIES] = sum(d.delay[1] + 2 for d in model_delays(driven)) * itemsize
    for name, sensor in cfg.sensors.items():
        if isinstance(sensor, SensorCfg):  # another value is refused when sensors are built
            sensor.check(name)
            nbytes, what = sensor.memory_per_env()
            parts[f"scene.sensors.{name}'s {what}"] = nbytes
    return parts


def robot_spec(robot: EntityCfg, ground: bool) -> tuple[mujoco.MjSpec, list[DrivenJoint]]:
    """The scene's base model: the ``robot`` entity's MJCF with its default state, a ground
    plane if ``ground``, and its actuators; how each driven joint is driven."""
    where = f"scene.entities.{ROBOT}"
    if robot.model is None:
        raise RobolearnError(f"{where}.model is None: the robot is an MJCF, not a made object")
    spec = load_spec(resolve_model_path(robot.model))
    if robot.floating_base:
        add_floating_base(spec, f"{where}.floating_base")
    check_joints(spec, tuple(robot.joints), robot.model)
    check_keyframe(spec, robot, "scene")
    if robot.init_state is not None:
        # before the actuators: the ones they add hold the pose the key states
        add_init_keyframe(spec, robot.init_state, "scene.init_state")
    if ground:
        add_ground(spec)
    return spec, drive_entity(spec, robot, "scene")


def drive_entity(spec: mujoco.MjSpec, cfg: EntityCfg, where: str) -> list[DrivenJoint]:
    """An entity's own changes to its spec, in its own names: gravity compensation, its
    config's edit, then its actuator configs; how each driven joint is driven."""
    compensate_gravity(spec, tuple(cfg.gravity_compensation), where)
    if cfg.edit is not None:
        cfg.edit(spec)
    return apply_actuators(spec, cfg.actuators, f"{where}.actuators")


def check_gains(model: mujoco.MjModel, driven: list[DrivenJoint], keyframe: str | None) -> None:
    """Before the engine allocates anything: a timestep the gains cannot follow is refused
    up front, not found out as a blow-up in training."""
    explicit = np.zeros(model.nv)
    for d in driven:
        if d.explicit:
            explicit[model.joint(d.joint).dofadr[0]] += d.stiffness
    check_timestep(model, model.key(keyframe).qpos if keyframe else None, explicit)


_QPOS_SIZE = {
    mujoco.mjtJoint.mjJNT_FREE: 7,
    mujoco.mjtJoint.mjJNT_BALL: 4,
    mujoco.mjtJoint.mjJNT_SLIDE: 1,
    mujoco.mjtJoint.mjJNT_HINGE: 1,
}


def check_keyframe(spec: mujoco.MjSpec, cfg: EntityCfg, where: str) -> None:
    """The keyframe an entity's config names is its model's, it gives every qpos (and
    ctrl) value or none, and no keyframe of the model has too many; ``where``: the config's
    path in messages (``scene`` for the robot).

    Checked on the spec as loaded, before anything compiles it: compiling fills a short
    keyframe from qpos0 in the spec itself, without a word (for a default pose that is a
    mistake: a keyframe written for another version of the model), and refuses a long
    one in MuJoCo's words, from wherever it first compiles (an actuator config's or an
    init_state's compile, as a traceback). A keyframe set beside an ``init_state`` is
    refused too: the init_state's pose would be used, and the keyframe silently not.
    """
    keyframe = cfg.keyframe
    names = [key.name for key in spec.keys]
    if keyframe is not None and keyframe not in names:
        hint = (
            f"env.{where}.keyframe=null keeps the config's init_state"
            if cfg.init_state is not None
            else f"env.{where}.keyframe=null starts from its qpos0"
        )
        raise RobolearnError(
            f"{where}.keyframe {keyframe!r} is not in {cfg.model}; keyframes: "
            f"{', '.join(names) or 'none'} ({hint})"
        )
    if keyframe is not None and cfg.init_state is not None:
        raise RobolearnError(
            f"{where}.keyframe {keyframe!r} would be unused: {where}.init_state states the "
            f"pose; give one (env.{where}.keyframe=null keeps the init_state, "
            f"env.{where}.init_state=null starts from the keyframe)"
        )
    nq = sum(_QPOS_SIZE[joint.type] for joint in spec.joints)
    sizes = (("qpos", nq, "nq"), ("ctrl", len(spec.actuators), "nu"))
    for key in spec.keys:
        for what, size, symbol in sizes:
            count = len(key.qpos if what == "qpos" else key.ctrl)
            # a short keyframe that is not the default pose is MuJoCo's to fill: unused
            if count > size or (key.name == keyframe and 0 < count != size):
                raise RobolearnError(
                    f"keyframe {key.name!r} has {count} {what} values; the model has "
                    f"{size} ({symbol})"
                )


def check_entity_names(entities: dict[str, EntityCfg]) -> None:
    """Attached entities' names are not empty and hold no ``/``."""
    for name in entities:
        if not name or "/" in name:
            raise RobolearnError(f"scene.entities: {name!r} is not an entity name (no '/')")


def attach_entities(spec: mujoco.MjSpec, entities: dict[str, EntityCfg]) -> list[DrivenJoint]:
    """Attach each entity's bodies into ``spec``'s world under the prefix ``<name>/``, its
    own actuator configs applied first; how each joint they drive is driven, by its
    prefixed name."""
    check_entity_names(entities)
    driven: list[DrivenJoint] = []
    for name, cfg in entities.items():
        prefix = f"{name}/"
        pos = [float(p) for p in cfg.pos]
        if cfg.model is None:
            make_object(spec, name, cfg, pos)
            continue
        if cfg.mocap:
            raise RobolearnError(
                f"scene.entities.{name}: mocap applies to made objects (no model); an "
                'MJCF\'s own bodies become mocap bodies by its mocap="true"'
            )
        child = entity_spec(name, cfg)
        own = drive_entity(child, cfg, f"scene.entities.{name}")
        frame = spec.worldbody.add_frame(pos=pos)
        body = child.worldbody.first_body()
        if body is None:
            raise RobolearnError(f"scene.entities.{name}: {cfg.model} has no body to attach")
        while body is not None:
            frame.attach_body(body, prefix, "")
            body = child.worldbody.next_body(body)
        driven += [replace(d, joint=prefix + d.joint, actuator=prefix + d.actuator) for d in own]
    return driven


def entity_spec(name: str, cfg: EntityCfg) -> mujoco.MjSpec:
    """An attached entity's MJCF with its default state (its ``init_state`` becomes the
    keyframe ``init_state``, attached as ``<name>/init_state``)."""
    assert cfg.model is not None
    child = load_spec(resolve_model_path(cfg.model))
    check_joints(child, tuple(cfg.joints), cfg.model)
    check_keyframe(child, cfg, f"scene.entities.{name}")
    if cfg.init_state is not None:
        add_init_keyframe(child, cfg.init_state, f"scene.entities.{name}.init_state")
    return child


def compensate_gravity(spec: mujoco.MjSpec, patterns: tuple[str, ...], where: str) -> None:
    """Cancel the weight of the bodies matching ``patterns`` (MuJoCo's body ``gravcomp``);
    a pattern that matches no body is a RobolearnError naming the bodies."""
    if not patterns:
        return
    bodies = [b for b in spec.bodies if b.name]
    names = [b.name for b in bodies]
    for i in match_names(names, patterns, f"{where}.gravity_compensation body"):
        bodies[i].gravcomp = 1.0


_GEOM_TYPES = {
    "box": mujoco.mjtGeom.mjGEOM_BOX,
    "cylinder": mujoco.mjtGeom.mjGEOM_CYLINDER,
    "sphere": mujoco.mjtGeom.mjGEOM_SPHERE,
}


def object_geom_size(shape: str, half: tuple[float, float, float]) -> list[float]:
    """MuJoCo's ``size`` of a made object's geom of ``shape`` from its half-sizes."""
    x, y, z = (float(h) for h in half)
    return {"box": [x, y, z], "cylinder": [x, z, 0.0], "sphere": [x, 0.0, 0.0]}[shape]


def object_inertia(shape: str, mass: float, half: tuple[float, float, float]) -> list[float]:
    """Principal moments of inertia (kg m^2) of a solid made object about its centre."""
    x, y, z = (float(h) for h in half)
    if shape == "box":
        return [mass / 3 * (y * y + z * z), mass / 3 * (x * x + z * z), mass / 3 * (x * x + y * y)]
    if shape == "cylinder":
        side = mass * (3 * x * x + 4 * z * z) / 12
        return [side, side, mass * x * x / 2]
    return [0.4 * mass * x * x] * 3


def make_object(spec: mujoco.MjSpec, name: str, cfg: EntityCfg, pos: list[float]) -> None:
    """A made object: a body ``<name>/box`` with a geom per shape of ``cfg.shapes`` (named
    ``<name>/<shape>``), the first at its size and the others sized to nothing until an
    event picks them, and the inertia of the first given explicitly (so that the unused
    geoms weigh nothing)."""
    prefix = f"{name}/"
    if any(not float(s) > 0 for s in cfg.box) or not float(cfg.mass) > 0:
        raise RobolearnError(
            f"scene.entities.{name}: box half-sizes and mass must be > 0, got "
            f"{cfg.box} and {cfg.mass}"
        )
    shapes = tuple(cfg.shapes)
    bad = [s for s in shapes if s not in _GEOM_TYPES]
    if not shapes or bad or len(set(shapes)) != len(shapes):
        raise RobolearnError(
            f"scene.entities.{name}.shapes: {list(shapes)} is not a list of distinct shapes "
            f"of {', '.join(_GEOM_TYPES)} (a mesh or a model's own geoms cannot vary per "
            "env on any engine: neither MuJoCo's batch nor MuJoCo Warp varies a geom's type "
            "or mesh per env, only its size, pose, color and contact parameters)"
        )
    if cfg.mocap and cfg.free:
        raise RobolearnError(
            f"scene.entities.{name}: a mocap object has no free joint; set free=False with "
            "mocap=True"
        )
    body = spec.worldbody.add_body(name=f"{prefix}box", pos=pos, mocap=bool(cfg.mocap))
    if cfg.free:
        body.add_freejoint(name=f"{prefix}root")
    body.mass = float(cfg.mass)
    body.inertia = object_inertia(shapes[0], float(cfg.mass), cfg.box)
    body.ipos, body.iquat = [0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]
    body.explicitinertial = True
    for k, shape in enumerate(shapes):
        size = object_geom_size(shape, cfg.box) if k == 0 else [NO_SIZE] * 3
        rgba = [float(c) for c in cfg.rgba]
        body.add_geom(
            name=f"{prefix}{shape}",
            type=_GEOM_TYPES[shape],
            size=size,
            rgba=rgba if k == 0 else [*rgba[:3], 0.0],
            friction=[float(f) for f in cfg.friction],
            # whatever the robot's MJCF defaults (the quadruped's geoms have conaffinity
            # 0: they touch only what has it), an object touches everything
            contype=1,
            conaffinity=1,
        )


NO_SIZE = 1e-4
"""m: the size of a made object's unused shapes: a speck at its centre that never touches
anything, as no engine can leave a geom out of one env."""


def add_ground(spec: mujoco.MjSpec) -> bool:
    """Add a ground plane at z = 0 and a light over it when the model's world has no plane
    (a robot's own MJCF, such as a vendor's ``go2.xml``, usually has neither); whether it
    added them."""
    if any(g.type == mujoco.mjtGeom.mjGEOM_PLANE for g in spec.worldbody.geoms):
        return False
    spec.worldbody.add_geom(
        name="ground",
        type=mujoco.mjtGeom.mjGEOM_PLANE,
        size=[0.0, 0.0, 0.05],
        rgba=[0.35, 0.4, 0.45, 1.0],
        # stated, not the model's default class's: a model whose geoms collide only in
        # contact pairs (Menagerie's Apollo) defaults to contype and conaffinity 0
        contype=1,
        conaffinity=1,
    )
    spec.worldbody.add_light(
        pos=[0.0, 0.0, 3.0], dir=[0.0, 0.0, -1.0], type=int(mujoco.mjtLightType.mjLIGHT_DIRECTIONAL)
    )
    return True


def add_floating_base(spec: mujoco.MjSpec, where: str) -> None:
    """Give the model's one root body a free joint, unless it has one: a URDF cannot state
    a floating base, so MuJoCo fixes its root link to the world."""
    if any(j.type == mujoco.mjtJoint.mjJNT_FREE for j in spec.joints):
        return
    roots = [b for b in spec.worldbody.bodies]
    if len(roots) != 1:
        raise RobolearnError(
            f"{where}: the model's world holds {len(roots)} bodies "
            f"({', '.join(b.name for b in roots) or 'none'}); a floating base needs one root"
        )
    roots[0].add_freejoint()


def check_ground(model: mujoco.MjModel, model_name: object) -> None:
    """A floating robot under gravity has something to stand on: a geom fixed to the world
    (a plane, a height field, a box) that a moving geom can touch. Without one every
    episode falls forever and ends on its base contact, and training runs to the end
    learning nothing, without a word. In no gravity, nothing falls: no floor is needed."""
    if not np.any(model.opt.gravity):
        return
    static = model.body_weldid[model.geom_bodyid] == 0
    contype, conaffinity = model.geom_contype, model.geom_conaffinity
    moving_type = np.bitwise_or.reduce(contype[~static], initial=0)
    moving_affinity = np.bitwise_or.reduce(conaffinity[~static], initial=0)
    touches = (contype & moving_affinity) | (conaffinity & moving_type)
    if (static & (touches != 0)).any():
        return
    # a model whose geoms collide only in explicit pairs (Menagerie's Apollo)
    paired = np.concatenate([model.pair_geom1, model.pair_geom2])
    if static[paired].any():
        return
    raise RobolearnError(
        f"the robot floats (a free joint) but the world of {model_name} has nothing to stand "
        "on (no plane, height field or box fixed to the world that it collides with): set "
        "env.scene.ground=true (SceneCfg.ground lays a plane where the world has none)"
    )


def check_joints(spec: mujoco.MjSpec, expected: tuple[str, ...], model_name: str) -> None:
    """RobolearnError naming the joints of ``expected`` that ``spec`` lacks: the robot
    config was written for another model."""
    have = {j.name for j in spec.joints}
    missing = [j for j in expected if j not in have]
    if missing:
        raise RobolearnError(
            f"{model_name} lacks {len(missing)} of the robot config's {len(expected)} joints: "
            f"{', '.join(missing)} (it has {', '.join(sorted(n for n in have if n)) or 'none'})"
        )
