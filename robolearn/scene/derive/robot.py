"""A robot config derived from any MJCF or URDF: drives, default pose, feet, floor, mirror,
physics step; each choice with the line that explains it (``robolearn new robot`` writes
them into the generated file, ``robolearn doctor`` checks what they rest on)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import mujoco
import numpy as np

from robolearn.errors import RobolearnError
from robolearn.scene.assembly import robot_spec
from robolearn.scene.derive.arm import Arm, read_arm
from robolearn.scene.derive.drives import Drive, derive_drives, moving_joints, sagging_servos
from robolearn.scene.derive.legs import Legs, read_legs
from robolearn.scene.derive.stance import Stance, initial_pose, settle
from robolearn.scene.entities import EntityCfg
from robolearn.scene.feet import separate_foot_geoms
from robolearn.scene.init_state import INIT_KEY, InitStateCfg
from robolearn.scene.mirror import JointMirrorCfg, joint_mirror
from robolearn.scene.models import MENAGERIE, resolve_model_path
from robolearn.sim import load_spec
from robolearn.sim.config import CAPPED_SOLVER, SimCfg
from robolearn.sim.inspect import MODEL_SUFFIXES
from robolearn.sim.model import compile_model
from robolearn.sim.options import apply_sim_options, apply_solver_options
from robolearn.sim.stability import stiffest_joint

CONTROL_DT = 0.02
"""s: the policy's period, 50 Hz (the velocity family's)."""
PHYSICS_STEPS = {
    "biped": (0.01, 0.005, 0.004, 0.0025, 0.002, 0.001),
    "legged": (0.005, 0.004, 0.0025, 0.002, 0.001),
    "arm": (0.005, 0.004, 0.0025, 0.002, 0.001),
}
"""The physics steps tried, longest first (each divides 20 ms): 10 ms is what humanoid_walk
and g1_walk run at, 5 ms go2_walk's; a longer step is a cheaper env step on a CPU."""
STABILITY_MARGIN = 0.5
"""The step is at most this share of the longest step the gains can be stable at."""
INTEGRATOR = "implicitfast"
"""Damping stepped implicitly: a PD loop's kd is stable at any step."""
KINDS = ("auto", "legged", "arm")


@dataclass
class DerivedRobot:
    """Everything ``new robot`` derived from a model, and why."""

    model: str
    """The model as given (a path or ``menagerie:`` name)."""
    kind: str
    """``biped``, ``quadruped``, ``legged`` (another number of feet) or ``arm``."""
    drives: list[Drive]
    joint_pos: dict[str, float]
    base_pos: tuple[float, float, float]
    base_rot: tuple[float, float, float, float]
    root_body: str | None
    floating_base: bool
    """A free joint is added (a URDF, which cannot state one)."""
    has_floor: bool
    feet: list[str] = field(default_factory=list)
    stance: Stance | None = None
    legs: Legs | None = None
    mirror: JointMirrorCfg | None = None
    physics_dt: float = 0.005
    driven_joints: list[str] = field(default_factory=list)
    """The joints the policy drives (legs, and a biped's waist yaw); the rest hold the
    default pose."""
    driven_actuators: list[str] = field(default_factory=list)
    action_scale: float = 0.25
    """rad of target per unit of action: a quarter of the angle at which the drive's
    stiffness reaches its effort limit (mjlab's rule), the median over the driven joints:
    a unit action then asks a quarter of the torque the motor has, whatever its gains."""
    hips: list[str] = field(default_factory=list)
    ankles: list[str] = field(default_factory=list)
    waist: list[str] = field(default_factory=list)
    shin_bodies: list[str] = field(default_factory=list)
    contact_bodies: list[str] = field(default_factory=list)
    """Bodies whose touching anything ends an episode: the base and the waist's bodies."""
    arm: Arm | None = None
    """An arm's tool, joints and goals' box (None for a legged robot)."""
    base_body: str | None = None
    """An arm's body fixed to the world, the goals' frame (a legged robot's is its
    ``root_body``)."""
    tool_body: str | None = None
    floor_contact_group: int | None = None
    """The geom group made to touch the floor (contype 0, conaffinity 1: the floor and
    nothing else) when no geom of the model collides at all, as in a Menagerie robot's own
    file whose ``scene.xml`` adds contact pairs; None leaves the geoms as they are."""
    why: dict[str, str] = field(default_factory=dict)
    """Each derived choice's explanation, by topic (actuators, pose, feet, floor, mirror,
    physics, ...)."""

    @property
    def decimation(self) -> int:
        """Physics steps per 50 Hz policy step."""
        return max(1, round(CONTROL_DT / self.physics_dt))

    def entity(self) -> EntityCfg:
        """The robot config these choices make."""
        return EntityCfg(
            model=self.model,
            floating_base=self.floating_base,
            init_state=InitStateCfg(
                pos=self.base_pos,
                rot=self.base_rot,
                joint_pos={re.escape(k): v for k, v in self.joint_pos.items()},
            ),
            root_body=re.escape(self.root_body) if self.root_body else None,
            feet=tuple(self.feet),
            mirror=self.mirror,
            actuators={d.joint: d.cfg() for d in self.drives},
            edit=touch_floor if self.floor_contact_group is not None else None,
        )


COLLISION_GROUP = 3
"""Menagerie's group for collision geoms (visual ones are group 2, or 1)."""


def touch_floor(spec: mujoco.MjSpec, group: int = COLLISION_GROUP) -> None:
    """Make the geoms of ``group`` touch the floor and nothing else: conaffinity 1 meets the
    floor's contype 1, contype 0 meets no other robot geom's conaffinity, so the robot
    gains floor contacts and no self-collisions."""
    for geom in spec.geoms:
        if geom.group == group:
            geom.contype, geom.conaffinity = 0, 1


def sim_cfg(physics_dt: float) -> SimCfg:
    """The engine settings a derived robot runs on: our real robots' capped solver (mjlab's
    budget)."""
    return SimCfg(physics_dt=physics_dt, integrator=INTEGRATOR, **CAPPED_SOLVER)


def _has_free_joint(spec: mujoco.MjSpec) -> bool:
    return any(j.type == mujoco.mjtJoint.mjJNT_FREE for j in spec.joints)


def adds_floating_base(spec: mujoco.MjSpec, path: str | Path, kind: str) -> bool:
    """Whether the robot config gives the model a free joint: a URDF (which cannot state
    one) or ``--kind legged``, unless it has one or is to be an arm."""
    urdf = str(path).lower().endswith(".urdf")
    return not _has_free_joint(spec) and kind != "arm" and (urdf or kind == "legged")


def has_floor(spec: mujoco.MjSpec) -> bool:
    """The model's world holds a plane or a height field."""
    return any(
        g.type in (mujoco.mjtGeom.mjGEOM_PLANE, mujoco.mjtGeom.mjGEOM_HFIELD)
        for g in spec.worldbody.geoms
    )


def compile_scene(entity: EntityCfg, sim: float | SimCfg) -> mujoco.MjModel:
    """The robot on a floor (laid when its world has none), with its drives, feet made
    bodies, on ``sim``'s settings (a physics step: the derived robot's): what training
    will run, for one env."""
    spec, _ = robot_spec(entity, ground=True)
    separate_foot_geoms(spec, entity.feet)
    sim = sim if isinstance(sim, SimCfg) else sim_cfg(sim)
    apply_sim_options(spec.option, sim)
    apply_solver_options(spec.option, sim)
    return compile_model(spec)


def derive_robot(model: str, kind: str = "auto") -> DerivedRobot:
    """Read ``model`` (an MJCF or URDF path, or a ``menagerie:`` name) and derive its robot
    config (see :mod:`robolearn.scene.derive`). RobolearnError when the model does not load
    or is not a robot either kind can be made of."""
    if kind not in KINDS:
        raise RobolearnError(f"--kind must be one of {', '.join(KINDS)}, not {kind!r}")
    path = model_file(model)
    spec = load_spec(path)
    has_free = _has_free_joint(spec)
    floating_added = adds_floating_base(spec, path, kind)
    if has_free and kind == "arm":
        raise RobolearnError(f"{model} floats (it has a free joint): --kind arm is for a fixed arm")
    entity0 = EntityCfg(model=model, floating_base=floating_added)
    base_spec, _ = robot_spec(entity0, ground=False)
    floor = has_floor(base_spec)
    bare = compile_model(base_spec)
    for key in base_spec.keys:
        if len(key.qpos) not in (0, bare.nq):
            raise RobolearnError(
                f"{model}: keyframe {key.name!r} has {len(key.qpos)} qpos values, the model "
                f"{bare.nq} (MuJoCo would fill the rest from qpos0): give every value"
            )
    collides = [g for g in range(bare.ngeom) if bare.geom_contype[g] or bare.geom_conaffinity[g]]
    group = None
    if not collides and (bare.geom_group == COLLISION_GROUP).any():
        group = COLLISION_GROUP
    joints = moving_joints(bare)
    if not joints:
        raise RobolearnError(f"{model} has no hinge or slide joint: nothing to drive")
    qpos, pose_from = initial_pose(bare, joints)
    floats = has_free or floating_added
    root = None
    if floats:
        free = next(
            j for j in range(bare.njnt) if int(bare.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_FREE)
        )
        root = bare.body(int(bare.jnt_bodyid[free])).name
    drives = derive_drives(bare, qpos)
    adr = {bare.joint(j).name: int(bare.jnt_qposadr[j]) for j in joints}
    robot = DerivedRobot(
        model=model,
        kind="arm" if not floats else "legged",
        drives=drives,
        joint_pos={n: float(qpos[a]) for n, a in adr.items()},
        base_pos=(0.0, 0.0, float(qpos[2]) if floats else 0.0),
        base_rot=tuple(float(x) for x in qpos[3:7]) if floats else (1.0, 0.0, 0.0, 0.0),
        root_body=root,
        floating_base=floating_added,
        has_floor=floor,
        floor_contact_group=group,
    )
    _explain_drives(robot)
    if group is not None:
        robot.why["contacts"] = (
            f"no geom of the model collides (its contact pairs live elsewhere): the geoms of "
            f"group {group}, its collision geoms, are made to touch the floor"
        )
    robot.why["pose"] = pose_from
    robot.why["floor"] = (
        "the model has a floor" if floor else "the model has no floor: the task lays a plane"
    )
    if not floats:
        _read_arm(robot)
        return robot
    scene = _stand(robot)
    if scene is not None:
        soft = sagging_servos(scene, robot.stance.qpos, robot.drives)
        if soft:
            robot.drives = derive_drives(bare, qpos, soft=soft)
            _explain_drives(robot)
            _stand(robot)
    return robot


def model_file(model: str) -> Path:
    """The file of ``model`` (a path or a ``menagerie:`` name); a one-line RobolearnError
    naming it when there is none or it is not an MJCF or URDF."""
    if not model.startswith(MENAGERIE):
        path = Path(model).expanduser()
        if not path.exists():
            raise RobolearnError(
                f"{model} does not exist (give an MJCF or URDF file, or menagerie:<robot>)"
            )
        if path.is_dir() or path.suffix.lower() not in MODEL_SUFFIXES:
            raise RobolearnError(f"{model} is not an MJCF (.xml) or URDF (.urdf) file")
    return resolve_model_path(model)


def _read_arm(robot: DerivedRobot) -> None:
    """An arm's tool, arm joints, goals' box and physics step."""
    _choose_step(robot, "arm")
    scene = compile_scene(robot.entity(), robot.physics_dt)
    data = mujoco.MjData(scene)
    mujoco.mj_resetDataKeyframe(scene, data, scene.key(INIT_KEY).id)
    mujoco.mj_kinematics(scene, data)
    arm = read_arm(scene, data, moving_joints(scene))
    robot.arm = arm
    robot.base_body = scene.body(arm.base).name
    robot.tool_body = scene.body(arm.tool).name
    robot.driven_joints = [scene.joint(j).name for j in arm.joints]
    robot.driven_actuators = _actuator_names(robot, robot.driven_joints, scene)
    robot.action_scale = ARM_ACTION_SCALE
    robot.why["actions"] = (
        f"action scale {ARM_ACTION_SCALE:g} rad (panda_reach's): an arm's targets must span "
        "its workspace, whatever its gains"
    )
    robot.why["kind"] = "no floating base: an arm fixed to the world"
    robot.why["arm"] = (
        f"{len(arm.joints)} joints from {robot.base_body} to the tool {robot.tool_body}, "
        f"{arm.reach:.3f} m of reach; goals in a box centred on the tool's default position "
        f"{arm.centre}, half sizes {arm.half} m"
    )


def _explain_drives(robot: DerivedRobot) -> None:
    counts: dict[str, int] = {}
    for d in robot.drives:
        counts[d.source] = counts.get(d.source, 0) + 1
    robot.why["actuators"] = ", ".join(f"{n} joints: {s}" for s, n in counts.items())


def _stand(robot: DerivedRobot) -> mujoco.MjModel | None:
    """Stand the robot, at the longest physics step that holds it, and read feet, legs,
    base height and mirror from the stance; the scene it stood in (None if it stood at no
    step)."""
    stance, dt, why, accepted = None, None, [], None
    for candidate in PHYSICS_STEPS["biped"]:
        entity = robot.entity()
        scene = compile_scene(entity, candidate)
        past = _past_edge(scene, candidate)
        if past:
            why.append(past)
            continue
        root_id = scene.body(robot.root_body).id
        attempt = settle(scene, root_id)
        if not attempt.stands:
            why.append(f"{candidate * 1e3:g} ms: {attempt.reason}")
            stance = stance or attempt
            continue
        stance, dt, accepted = attempt, candidate, scene
        break
    if dt is None:
        robot.stance = stance
        robot.why["physics"] = "no physics step stood the robot: " + "; ".join(why)
        robot.physics_dt = PHYSICS_STEPS["legged"][-1]
        return None
    kind = {2: "biped", 4: "quadruped"}.get(len(stance.feet), "legged")
    if kind == "quadruped" and dt > PHYSICS_STEPS["legged"][0]:
        # a quadruped's small feet: go2_walk's 5 ms, which its contacts were measured at
        dt = PHYSICS_STEPS["legged"][0]
        accepted = compile_scene(robot.entity(), dt)
        stance = settle(accepted, accepted.body(robot.root_body).id)
    robot.kind = kind
    robot.stance = stance
    robot.physics_dt = dt
    robot.why["physics"] = (
        f"{dt * 1e3:g} ms physics ({robot.decimation} steps per 50 Hz policy step), the "
        "longest step that stands the robot with these gains"
        + (" (longer: " + "; ".join(why) + ")" if why else "")
    )
    # the stance's scene: its feet are not separated yet, which changes no joint or drive
    _read_stance(robot, accepted, stance)
    return accepted


def _past_edge(scene: mujoco.MjModel, dt: float) -> str | None:
    """Why ``dt`` is past :data:`STABILITY_MARGIN` of the step the gains of ``scene`` can
    be stable at (in its default pose); None when it is not."""
    stiff = stiffest_joint(scene, scene.key(INIT_KEY).qpos)
    if stiff is None or dt <= STABILITY_MARGIN * stiff.max_timestep:
        return None
    return (
        f"{dt * 1e3:g} ms: over half the {stiff.max_timestep * 1e3:.3g} ms that "
        f"{stiff.joint}'s gains can be stable at"
    )


def _read_stance(robot: DerivedRobot, scene: mujoco.MjModel, stance: Stance) -> None:
    root_id = scene.body(robot.root_body).id
    robot.feet = list(stance.feet)
    height = stance.base_height
    robot.base_pos = (0.0, 0.0, round(height + 0.005, 4))
    robot.why["feet"] = (
        f"{len(stance.feet)} bodies touch the floor standing: {', '.join(stance.feet)}"
        if stance.feet
        else "nothing but the base touches the floor standing: no feet found"
    )
    robot.why["height"] = f"the base stands at {height:.3f} m after {1.5:g} s on its drives"
    if not stance.feet or stance.foot_positions is None:
        return
    data = mujoco.MjData(scene)
    data.qpos[:] = stance.qpos
    mujoco.mj_kinematics(scene, data)
    moving = moving_joints(scene)
    legs = read_legs(scene, data, root_id, stance.foot_bodies, stance.foot_positions, moving)
    robot.legs = legs

    def names(ids: list[int]) -> list[str]:
        return [scene.joint(j).name for j in ids]

    robot.hips, robot.ankles, robot.waist = names(legs.hips), names(legs.ankles), names(legs.waist)
    leg_joints = [j for chain in legs.chains for j in chain]
    driven = sorted(set(leg_joints) | (set(legs.waist_yaw) if robot.kind == "biped" else set()))
    robot.driven_joints = names(driven)
    robot.driven_actuators = _actuator_names(robot, robot.driven_joints, scene)
    _scale_actions(robot)
    # a foot that is a body is no shin; the body a foot geom hangs on still is one (the
    # scene moves the geom into a body of its own, and the calf keeps its other geoms)
    foot_bodies = {
        b for b, f in zip(stance.foot_bodies, stance.feet, strict=True) if f == scene.body(b).name
    }
    robot.shin_bodies = sorted(
        {
            scene.body(b).name
            for path in legs.bodies
            for b in path
            if b not in foot_bodies and b != root_id
        }
    )
    waist_bodies = {scene.body(int(scene.jnt_bodyid[j])).name for j in legs.waist}
    robot.contact_bodies = [robot.root_body, *sorted(waist_bodies)]
    robot.why["legs"] = (
        f"{len(leg_joints)} leg joints over {len(legs.chains)} legs, {legs.length:.3f} m from "
        f"hip to foot, feet {legs.width:.3f} m apart; the policy drives "
        f"{len(robot.driven_joints)} joints"
        + (
            f" (the legs and the waist's {robot.waist[0] if legs.waist_yaw else ''})"
            if legs.waist_yaw and robot.kind == "biped"
            else ""
        )
    )
    _find_mirror(robot, scene, root_id, moving)


def _find_mirror(
    robot: DerivedRobot, scene: mujoco.MjModel, root_id: int, moving: list[int]
) -> None:
    names = [scene.joint(j).name for j in moving]
    try:
        found = joint_mirror(scene, root_id, moving, names)
    except RobolearnError as exc:
        robot.why["mirror"] = f"no mirror map, so no symmetry augmentation: {exc}"
        return
    rot = np.eye(3)
    data = mujoco.MjData(scene)
    mujoco.mj_kinematics(scene, data)
    rot = data.xmat[root_id].reshape(3, 3)
    side = (data.xanchor[moving] - data.xpos[root_id]) @ rot
    pairs, flip = {}, []
    for i, k in enumerate(found.perm):
        if k != i and side[i, 1] > 0:
            pairs[names[i]] = names[k]
        if found.sign[i] < 0:
            flip.append(re.escape(names[i]))
    robot.mirror = JointMirrorCfg(pairs=pairs, flip=tuple(flip))
    robot.why["mirror"] = (
        f"left-right symmetric to 2 mm: {len(pairs)} joint pairs, {len(flip)} joints change "
        "sign in the mirror; every sample and its mirror image train the policy"
    )


def _choose_step(robot: DerivedRobot, kind: str) -> None:
    for candidate in PHYSICS_STEPS[kind]:
        if _past_edge(compile_scene(robot.entity(), candidate), candidate) is None:
            robot.physics_dt = candidate
            robot.why["physics"] = f"{candidate * 1e3:g} ms physics, stable for these gains"
            return
    robot.physics_dt = PHYSICS_STEPS[kind][-1]
    robot.why["physics"] = "no listed step is stable for these gains: the shortest is used"


ACTION_SCALE_RANGE = (0.05, 0.5)
"""rad: the action scale's bounds, whatever the gains say."""


ARM_ACTION_SCALE = 0.5
"""rad of target per unit of an arm's action."""


def _scale_actions(robot: DerivedRobot) -> None:
    drives = {d.joint: d for d in robot.drives}
    ratios = [
        d.effort_limit / d.stiffness
        for j in robot.driven_joints
        if (d := drives.get(j)) is not None and d.effort_limit and d.stiffness > 0
    ]
    if not ratios:
        robot.why["actions"] = f"action scale {robot.action_scale:g} rad (no effort limits stated)"
        return
    low, high = ACTION_SCALE_RANGE
    robot.action_scale = round(float(np.clip(0.25 * np.median(ratios), low, high)), 4)
    robot.why["actions"] = (
        f"action scale {robot.action_scale:g} rad: a quarter of effort limit / kp "
        f"(median {np.median(ratios):.3g} rad over the driven joints), within {low:g}-{high:g}"
    )


def _actuator_names(
    robot: DerivedRobot, joints: list[str], scene: mujoco.MjModel | None = None
) -> list[str]:
    """The actuators that drive ``joints`` once the derived drives are applied (in
    ``scene``, the derived robot's compiled scene, when given)."""
    scene = scene if scene is not None else compile_scene(robot.entity(), robot.physics_dt)
    by_joint = {}
    for a in range(scene.nu):
        if int(scene.actuator_trntype[a]) == int(mujoco.mjtTrn.mjTRN_JOINT):
            by_joint[scene.joint(int(scene.actuator_trnid[a, 0])).name] = scene.actuator(a).name
    return [by_joint[j] for j in joints if j in by_joint]
