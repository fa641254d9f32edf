"""Scene entities: every body of the scene, the robot's included, each one config.

One :class:`EntityCfg` describes any body, as mjlab's ``EntityCfg`` does: an MJCF (a
robot, with its default state, joints, feet, mirror and actuators) or a box made here. A
scene (``SceneCfg.entities``) holds them by name. The entity named ``robot`` is the scene's
base model: its MJCF is loaded as it is, its names unprefixed. Each other entity is
attached into the world under the name prefix ``<name>/`` (MuJoCo's ``MjSpec`` attach),
so that the same MJCF twice, or a robot and its props, never clash: its worldbody's
bodies, with their joints, actuators (its own actuator configs applied first, on its own
names), sensors, default classes and meshes. Each entity of a compiled scene knows its own
bodies, joints, geoms, actuators and sites, and, if it floats, its free joint's addresses
in qpos and qvel.

Terms pick what they act on with a :class:`SceneEntityCfg` (an entity's name and regexes
of its joints, bodies, geoms, actuators, sites), or with plain regexes, which select on the
robot. Names in a selector are the entity's own, without the prefix.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import mujoco

from robolearn.actuators import ImplicitPDCfg
from robolearn.scene.init_state import INIT_KEY, InitStateCfg
from robolearn.scene.mirror import JointMirrorCfg

ROBOT = "robot"
"""The name of the entity that is the scene's base model (its names unprefixed)."""


@dataclass
class EntityCfg:
    """One body of the scene: a robot or object from an MJCF, or a box made here."""

    model: str | None = None
    """MJCF file: a robolearn asset path (``humanoid/scene.xml``), ``menagerie:<robot>`` or
    any path; its worldbody's bodies are the entity. None makes the object below (its body
    is named ``box`` whatever its shape), which the ``robot`` entity cannot be. A made
    object collides with every geom that collides at all (its contype and conaffinity are
    1, whatever the MJCF's defaults)."""
    keyframe: str | None = None
    """A keyframe of ``model`` giving the entity's default state (root pose, joint positions,
    ctrl); None: the model's qpos0. Unused where ``init_state`` is set."""
    init_state: InitStateCfg | None = None
    """The default state stated by the config, written into the model as the keyframe
    ``init_state`` (see :mod:`robolearn.scene.init_state`); None: ``keyframe``. An attached
    entity's root pose in it is in the entity's own frame (moved by ``pos``)."""
    floating_base: bool = False
    """Give the model's root body a free joint when it has none: a URDF states no floating
    base (MuJoCo fixes its root link to the world), a legged robot needs one."""
    joints: tuple[str, ...] = ()
    """The joint names a robot config was written for: a model lacking any of them is
    refused, naming them; empty checks nothing."""
    root_body: str | None = None
    """Body of the floating base (a free joint) for the robot's base-frame quantities; None
    if fixed. Read on the ``robot`` only: another entity's root is its free joint's body,
    found in the model (a robot config placed as a second robot keeps it, unused)."""
    feet: tuple[str, ...] = ()
    """Bodies (or geoms) that are feet, for the robot's gait terms (air time, slip,
    contact). Read on the ``robot`` only."""
    mirror: JointMirrorCfg | None = None
    """The left-right joint map for the robot's symmetry augmentation; None finds it in the
    model's geometry (:mod:`robolearn.scene.mirror`). Read on the ``robot`` only."""
    gravity_compensation: tuple[str, ...] = ()
    """Regexes of the entity's bodies whose weight its own controller cancels (MuJoCo's
    ``gravcomp="1"``): a Franka arm's controller adds each link's gravity torque to what it
    is commanded, so its position loops do not sag. Empty: none."""
    edit: Callable[[mujoco.MjSpec], None] | None = None
    """The config's own change to the entity's MJCF, run on its spec before the actuator
    configs apply (e.g. a gripper actuator's gains from the vendor's grasp force, which no
    field states); None: none."""
    actuators: dict[str, ImplicitPDCfg] = field(default_factory=dict)
    """How the entity's joints are driven, by name: each config selects joints by regex (of
    the entity's own joint names, without its prefix) and replaces or adds their actuators
    (see :mod:`robolearn.actuators`); empty keeps the MJCF's actuators."""
    box: tuple[float, float, float] = (0.05, 0.05, 0.05)
    """Half-sizes (m) of the made object: a box's (x, y, z); a cylinder's radius is x and
    its half-height z; a sphere's radius is x."""
    mass: float = 0.5
    """The made object's mass (kg)."""
    rgba: tuple[float, float, float, float] = (0.85, 0.45, 0.15, 1.0)
    """The made object's color."""
    shapes: tuple[str, ...] = ("box",)
    """The shapes the made object can take, the first its default: ``box``, ``cylinder``,
    ``sphere``. With more than one, each is a geom of the object's body and an event
    (:func:`robolearn.mdp.randomize_object`) picks one per env, sizing the others to
    nothing: no engine varies a geom's type per env (see docs/manipulation.md)."""
    friction: tuple[float, float, float] = (1.0, 0.005, 0.0001)
    """The made object's friction (sliding, torsional, rolling), MuJoCo's defaults."""
    free: bool = True
    """The box floats (has a free joint); False fixes it in the world, at one place for
    every env, which a scene with a generated terrain refuses (each env has its own tile
    there)."""
    mocap: bool = False
    """The made object is a mocap body: it moves only where events put it (per env,
    ``engine.mocap_pos``), pushed by nothing. The robot collides with it; the terrain and
    other bodies fixed to the world do not (MuJoCo skips contacts between bodies that do
    not move under physics), so an obstacle costs no contacts with the ground it stands
    on. Set ``free`` to False with it."""
    pos: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """Where an attached entity's frame is placed, relative to each env's origin (m); the
    ``robot``'s MJCF places itself (this is unused there)."""

    @property
    def default_keyframe(self) -> str | None:
        """The keyframe the entity resets to: ``init_state``'s, else ``keyframe``."""
        return INIT_KEY if self.init_state is not None else self.keyframe


SHAPES = ("box", "cylinder", "sphere")
"""The shapes a made object can take (:attr:`EntityCfg.shapes`)."""


@dataclass(frozen=True)
class SceneEntityCfg:
    """What a term acts on: an entity by name, and regexes of its own element names (without
    the entity's prefix). The fields a term does not read are ignored."""

    name: str = ROBOT
    joints: str | tuple[str, ...] = ".*"
    bodies: str | tuple[str, ...] = ".*"
    geoms: str | tuple[str, ...] = ".*"
    actuators: str | tuple[str, ...] = ".*"
    sites: str | tuple[str, ...] = ".*"


@dataclass(frozen=True)
class FrameCfg:
    """A frame fixed to a site or body: ``name`` in ``entity`` (without its prefix; a site
    is looked for first, then a body), moved by ``offset`` (m) and turned by ``rot`` (w x y
    z), both in that element's frame: ``FrameCfg("hand", offset=(0, 0, 0.1034))`` is a
    Franka's tool centre point. Terms resolve it with :func:`robolearn.mdp.frames.frame`."""

    name: str
    entity: str = ROBOT
    offset: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rot: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0)


class Entity:
    """One entity of a compiled scene: its element ids and its free joint, if it floats."""

    def __init__(self, name: str, model: mujoco.MjModel, bodies: set[int], actuators: list[int]):
        self.name = name
        self.prefix = "" if name == ROBOT else f"{name}/"
        self.body_ids = sorted(bodies)
        """MuJoCo ids of the entity's bodies (the world body belongs to the robot)."""
        self.joint_ids = [j for j in range(model.njnt) if int(model.jnt_bodyid[j]) in bodies]
        """MuJoCo ids of the entity's joints (its free joint included)."""
        self.geom_ids = [g for g in range(model.ngeom) if int(model.geom_bodyid[g]) in bodies]
        self.site_ids = [s for s in range(model.nsite) if int(model.site_bodyid[s]) in bodies]
        self.actuator_ids = actuators
        """MuJoCo ids of the entity's actuators: those driving its joints, and those on
        tendons or sites whose name carries its prefix (the robot's: no entity's prefix)."""
        free = [
            j for j in self.joint_ids if int(model.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_FREE)
        ]
        self.root_body_id = int(model.jnt_bodyid[free[0]]) if free else None
        """The body of the entity's (first) free joint, or None if it does not float."""
        self.root_qpos_adr = int(model.jnt_qposadr[free[0]]) if free else 0
        self.root_dof_adr = int(model.jnt_dofadr[free[0]]) if free else 0
        mocap = [b for b in self.body_ids if int(model.body_mocapid[b]) >= 0]
        self.mocap_id = int(model.body_mocapid[mocap[0]]) if mocap else None
        """The index into ``engine.mocap_pos`` of the entity's (first) mocap body, or None."""

    def local_name(self, name: str) -> str:
        """An element's name without the entity's prefix."""
        return name[len(self.prefix) :] if self.prefix and name.startswith(self.prefix) else name


def find_entities(model: mujoco.MjModel, names: list[str]) -> dict[str, Entity]:
    """The robot and the named entities of a compiled scene: an entity owns the bodies under
    the top-level bodies whose name has its prefix, and what hangs on them."""

    def owner(element: str) -> str:
        return next((n for n in names if element.startswith(f"{n}/")), ROBOT)

    body_owner = [ROBOT] * model.nbody
    for b in range(1, model.nbody):
        root = int(model.body_rootid[b])
        body_owner[b] = owner(model.body(root).name)
    actuators: dict[str, list[int]] = {n: [] for n in (ROBOT, *names)}
    for a in range(model.nu):
        if int(model.actuator_trntype[a]) == int(mujoco.mjtTrn.mjTRN_JOINT):
            joint = int(model.actuator_trnid[a, 0])
            actuators[body_owner[int(model.jnt_bodyid[joint])]].append(a)
        else:
            actuators[owner(model.actuator(a).name)].append(a)
    return {
        name: Entity(
            name, model, {b for b in range(model.nbody) if body_owner[b] == name}, actuators[name]
        )
        for name in (ROBOT, *names)
    }
