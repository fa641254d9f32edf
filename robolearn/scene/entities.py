"""Scene entities: the robot, and the other robots and objects placed beside it.

The scene's MJCF (``SceneCfg.model``) is the entity ``robot``. Each entry of
``SceneCfg.entities`` adds one more, attached into the world under the name prefix
``<name>/`` (MuJoCo's ``MjSpec`` attach), so that the same MJCF twice, or a robot and its
props, never clash: an MJCF of the user's (its worldbody's bodies, with their joints,
actuators, sensors, default classes and meshes) or a box made here. Each entity knows its
own bodies, joints, geoms, actuators and sites, and, if it floats, its free joint's
addresses in qpos and qvel.

Terms pick what they act on with a :class:`SceneEntityCfg` (an entity's name and regexes
of its joints, bodies, geoms, actuators, sites), or with plain regexes, which select on the
robot. Names in a selector are the entity's own, without the prefix.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco

ROBOT = "robot"
"""The name of the entity that ``SceneCfg.model`` holds."""


@dataclass
class EntityCfg:
    """One more robot or object in the scene."""

    model: str | None = None
    """MJCF file (a robolearn asset path or any path) whose worldbody's bodies are attached;
    None makes the object below (its body is named ``box`` whatever its shape). A made
    object collides with every geom that collides at all (its contype and conaffinity
    are 1, whatever the MJCF's defaults)."""
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
    """Where the entity's frame is placed, relative to each env's origin (m)."""
    keyframe: str | None = None
    """A keyframe of ``model`` giving the entity's default state (its joint positions and
    controls); None: the model's qpos0."""


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
