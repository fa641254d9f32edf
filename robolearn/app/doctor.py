"""``robolearn doctor``: the checks behind ``new robot``, on any model or registered task.

Each check is one line, PASS, WARN or FAIL, with what to change. A model (an MJCF or URDF
file, or a ``menagerie:`` name) is checked as ``new robot`` would make it: its drives, its
stance, its physics step. A task is checked as it trains: its robot config, its floor, its
physics step. What each check measures:

* **floor**: something for a floating robot to stand on (a plane, a terrain);
* **collision**: the robot has colliding geoms, and each foot has one;
* **keyframes**: every keyframe gives every qpos value (MuJoCo fills a short one from
  ``qpos0`` without a word);
* **actuators**: every joint is driven (an undriven joint flops);
* **masses**: no moving body of zero mass, the total within 0.1-1000 kg;
* **self-collision**: no two of the robot's geoms overlap in the default pose;
* **gains**: the physics step is inside what the position gains can be stable at, and a
  drop onto the floor at that step does not diverge;
* **saturation**: holding the default pose standing takes under 90% of each joint's
  effort limit (60% warns);
* **stance**: feet under the hips, touching the floor, not sliding (5 mm in 0.5 s warns);
  whether the robot stands on its own for 1.5 s (a biped that does not needs its policy
  to balance: a warning, not a failure).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import mujoco
import numpy as np

from robolearn.errors import RobolearnError
from robolearn.scene.assembly import add_floating_base
from robolearn.scene.derive.drives import (
    SAG_WARN,
    effort_limit,
    joint_actuators,
    load_torques,
    moving_joints,
    tendon_driven_joints,
)
from robolearn.scene.derive.robot import adds_floating_base, compile_scene, has_floor, model_file
from robolearn.scene.derive.stance import colliding_geoms, settle
from robolearn.scene.entities import EntityCfg
from robolearn.scene.models import resolve_model_path
from robolearn.sim import load_spec
from robolearn.sim.model import compile_model
from robolearn.sim.stability import position_gains, stiffest_joint

PASS, WARN, FAIL = "PASS", "WARN", "FAIL"
SATURATION_FAIL, SATURATION_WARN = 0.9, 0.6
"""Shares of a joint's effort limit that holding the default pose may take."""
SLIP_WARN = 0.005
"""m a foot may slide in the last half second of standing."""
MASS_RANGE = (0.1, 1000.0)
"""kg: a robot's total mass outside this is a unit mistake (grams, tonnes)."""
LIGHT_BODY = 1e-5
"""A moving body under this share of the robot's mass: a placeholder mass, not a part."""
OVERLAP = 1e-3
"""m: geoms of the robot overlapping deeper than this in the default pose collide."""


@dataclass
class Check:
    """One line of the report."""

    status: str
    name: str
    text: str

    def line(self) -> str:
        return f"{self.status}  {self.name:<15} {self.text}"


def check_model(model: str, kind: str = "auto") -> list[Check]:
    """The checks on ``model`` as ``new robot`` would make it."""
    from robolearn.scene.derive import derive_robot

    try:
        checks = _file_checks(str(model_file(model)), kind)
    except RobolearnError as exc:
        return [Check(FAIL, "loads", str(exc))]
    try:
        robot = derive_robot(model, kind)
    except RobolearnError as exc:
        return [*checks, Check(FAIL, "derive", str(exc))]
    scene = compile_scene(robot.entity(), robot.physics_dt)
    if robot.kind == "arm":
        checks.append(Check(PASS, "kind", "no floating base: an arm, no stance to check"))
        return checks + _gain_checks(scene, None)
    checks.append(Check(PASS if robot.has_floor else WARN, "floor", _floor_text(robot.has_floor)))
    return checks + _scene_checks(scene, robot.entity())


def check_task(task: str, overrides: list[str] | None = None) -> list[Check]:
    """The checks on a registered task's robot, as the task trains it (with ``overrides``
    applied, as ``train`` takes them)."""
    from robolearn.app.configs import build_setup

    cfg = build_setup(task, list(overrides or [])).env_cfg
    entity = cfg.scene.robot
    spec = load_spec(resolve_model_path(entity.model))
    sim = cfg.sim
    if sim.physics_dt is None:
        sim = dataclasses.replace(sim, physics_dt=float(spec.option.timestep))
    checks = _file_checks(entity.model, "auto", entity)
    floats = entity.floating_base or any(j.type == mujoco.mjtJoint.mjJNT_FREE for j in spec.joints)
    if cfg.scene.terrain is not None or cfg.scene.ground or has_floor(spec):
        how = "a terrain" if cfg.scene.terrain is not None else "a floor"
        checks.append(Check(PASS, "floor", f"the task's scene has {how}"))
    elif floats:
        checks.append(
            Check(
                FAIL,
                "floor",
                "the robot floats and its world has nothing to stand on: "
                "set env.scene.ground=true (SceneCfg.ground lays a plane)",
            )
        )
        return checks
    scene = compile_scene(entity, sim)
    checks.append(_undriven(scene, "in the task's scene", WARN, ": they swing free"))
    if not floats:
        return checks + _gain_checks(scene, entity.default_keyframe)
    return checks + _scene_checks(scene, entity)


def _floor_text(has_floor: bool) -> str:
    if has_floor:
        return "the model has a floor"
    return "the model has no floor; new robot's tasks lay a plane (SceneCfg.ground)"


def _file_checks(model: str, kind: str, entity: EntityCfg | None = None) -> list[Check]:
    """What the file says by itself: keyframes, undriven joints, masses, collisions."""
    checks = []
    spec = load_spec(resolve_model_path(model))
    if adds_floating_base(spec, model, kind) or (entity is not None and entity.floating_base):
        add_floating_base(spec, "doctor")
    bare = compile_model(spec)
    short = [
        f"{k.name or '#' + str(i)} has {len(k.qpos)} qpos values, the model {bare.nq}"
        for i, k in enumerate(spec.keys)
        if len(k.qpos) not in (0, bare.nq)
    ]
    checks.append(
        Check(FAIL, "keyframes", "; ".join(short) + ": give every value")
        if short
        else Check(PASS, "keyframes", f"{bare.nkey} keyframe(s), each of the model's size")
    )
    if entity is None:  # a task's drives are checked on its scene, config applied
        checks.append(_undriven(bare, "in the file", WARN, ": new robot gives each a PD loop"))
    # a body on a joint moves, with whatever is welded to it (a foot body of no mass of
    # its own on a calf is fine)
    moving = [b for b in range(1, bare.nbody) if bare.body_jntnum[b] > 0]
    light = [bare.body(b).name for b in moving if bare.body_subtreemass[b] < 1e-6]
    total = float(bare.body_subtreemass[0])
    if light:
        checks.append(Check(FAIL, "masses", f"moving bodies of no mass: {', '.join(light)}"))
    elif not MASS_RANGE[0] <= total <= MASS_RANGE[1]:
        checks.append(
            Check(FAIL, "masses", f"the robot weighs {total:.4g} kg: are the masses in kg?")
        )
    elif (lightest := min(bare.body_subtreemass[b] for b in moving)) < LIGHT_BODY * total:
        body = next(bare.body(b).name for b in moving if bare.body_subtreemass[b] == lightest)
        checks.append(
            Check(
                WARN,
                "masses",
                f"{body} weighs {lightest * 1e3:.3g} g of the robot's "
                f"{total:.3g} kg: a body this light makes the physics step stiff",
            )
        )
    else:
        checks.append(Check(PASS, "masses", f"{total:.3g} kg, every moving body has mass"))
    robot = [b for b in range(1, bare.nbody)]
    if not colliding_geoms(bare, set(robot)):
        groups = sorted({int(g) for g in bare.geom_group})
        checks.append(
            Check(
                WARN if 3 in groups else FAIL,
                "collision",
                "no geom of the model collides (contype and conaffinity 0: its contacts are "
                "pairs in another file)"
                + ("; new robot makes group 3's geoms touch the floor" if 3 in groups else ""),
            )
        )
    return checks


def _undriven(model: mujoco.MjModel, where: str, status: str, advice: str) -> Check:
    """A line on the joints of ``model`` no actuator drives (they flop)."""
    on_tendons = tendon_driven_joints(model)
    joints = moving_joints(model)
    undriven = [
        model.joint(j).name for j in joints if not joint_actuators(model, j) and j not in on_tendons
    ]
    if not undriven:
        return Check(PASS, "actuators", f"every joint of {len(joints)} driven")
    listed = ", ".join(undriven[:6]) + (", ..." if len(undriven) > 6 else "")
    return Check(
        status, "actuators", f"{len(undriven)} joint(s) have no actuator {where} ({listed}){advice}"
    )


def _gain_checks(scene: mujoco.MjModel, key: str | None) -> list[Check]:
    qpos = scene.key(key).qpos if key else None
    dt = float(scene.opt.timestep)
    stiff = stiffest_joint(scene, qpos)
    if stiff is not None and dt > stiff.max_timestep:
        return [
            Check(
                FAIL,
                "gains",
                f"{dt * 1e3:g} ms physics is past the {stiff.max_timestep * 1e3:.3g} "
                f"ms that {stiff.joint}'s gains (kp {stiff.stiffness:.4g} on {stiff.inertia:.3g} "
                "kg m^2) can be stable at: lower the gains or the step",
            )
        ]
    edge = f", under the {stiff.max_timestep * 1e3:.3g} ms edge" if stiff is not None else ""
    return [Check(PASS, "gains", f"{dt * 1e3:g} ms physics{edge}")]


def _scene_checks(scene: mujoco.MjModel, entity: EntityCfg) -> list[Check]:
    """The checks of a floating robot standing on the floor of ``scene``."""
    checks = _gain_checks(scene, entity.default_keyframe)
    if checks[-1].status == FAIL:
        return checks
    root = _root(scene)
    checks.append(_self_collision(scene, root, entity.default_keyframe))
    held = settle(scene, root, harness=True)
    if not np.isfinite(held.qpos).all() or "diverged" in held.reason:
        checks.append(Check(FAIL, "drop test", f"{held.reason}: lower the gains or the step"))
        return checks
    if held.max_joint_speed > 1.0:
        checks.append(Check(FAIL, "drop test", held.reason))
    else:
        checks.append(
            Check(
                PASS,
                "drop test",
                f"lowered onto the floor at {scene.opt.timestep * 1e3:g} ms physics, it settles",
            )
        )
    checks.append(_feet(scene, entity, held))
    checks.append(_saturation(scene, entity.default_keyframe, held))
    checks.append(_sag(scene, held))
    if held.feet:
        status = WARN if held.foot_slip > SLIP_WARN else PASS
        checks.append(
            Check(
                status,
                "slip",
                f"feet slide {held.foot_slip * 1e3:.1f} mm in the last 0.5 s "
                "standing" + (": more friction, or a wider stance" if status == WARN else ""),
            )
        )
    alone = settle(scene, root, harness=False)
    checks.append(
        Check(PASS, "balance", "stands on its own for 1.5 s in the default pose")
        if alone.stands
        else Check(
            WARN,
            "balance",
            f"on its own, {alone.reason}: its policy must balance it "
            "(a biped's straight-legged pose often does not stand alone)",
        )
    )
    return checks


def _root(scene: mujoco.MjModel) -> int:
    free = [
        j for j in range(scene.njnt) if int(scene.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_FREE)
    ]
    return int(scene.jnt_bodyid[free[0]])


def _self_collision(scene: mujoco.MjModel, root: int, key: str | None) -> Check:
    data = mujoco.MjData(scene)
    if key:
        mujoco.mj_resetDataKeyframe(scene, data, scene.key(key).id)
    adr = int(scene.jnt_qposadr[int(scene.body_jntadr[root])])
    data.qpos[adr + 2] += 10.0  # off the floor: only the robot's own contacts
    mujoco.mj_forward(scene, data)
    pairs = []
    for c in data.contact[: data.ncon]:
        if c.dist < -OVERLAP:
            a, b = scene.geom_bodyid[c.geom1], scene.geom_bodyid[c.geom2]
            pairs.append(f"{scene.body(a).name}/{scene.body(b).name} ({-c.dist * 1e3:.1f} mm)")
    if pairs:
        return Check(
            FAIL,
            "self-collision",
            "overlapping in the default pose: "
            + ", ".join(sorted(set(pairs))[:6])
            + "; change the pose or exclude the pair",
        )
    return Check(PASS, "self-collision", "no geoms of the robot overlap in the default pose")


def _feet(scene: mujoco.MjModel, entity: EntityCfg, stance) -> Check:
    configured = list(entity.feet)
    if configured:
        bodies = {scene.body(f).id for f in configured if scene.body(f) is not None}
        bare = [f for f in configured if not colliding_geoms(scene, {scene.body(f).id})]
        if bare:
            return Check(FAIL, "feet", f"feet without a colliding geom: {', '.join(bare)}")
        missing = [scene.body(b).name for b in bodies if b not in stance.foot_bodies]
        if missing:
            return Check(WARN, "feet", f"not on the floor standing: {', '.join(missing)}")
        return Check(PASS, "feet", f"{len(configured)} feet, each on the floor standing")
    if stance.feet:
        return Check(
            PASS, "feet", f"{len(stance.feet)} bodies on the floor: {', '.join(stance.feet)}"
        )
    return Check(FAIL, "feet", "nothing but the base touches the floor standing")


def _saturation(scene: mujoco.MjModel, key: str | None, stance) -> Check:
    data = mujoco.MjData(scene)
    if key:
        mujoco.mj_resetDataKeyframe(scene, data, scene.key(key).id)
    data.qpos[:] = stance.qpos
    data.qvel[:] = 0.0
    mujoco.mj_forward(scene, data)
    worst, where = 0.0, ""
    for j in moving_joints(scene):
        bound, _ = effort_limit(scene, j, joint_actuators(scene, j))
        if not bound:
            continue
        # the drives' torque holding the settled pose (clipped at the limit: 100% there)
        need = abs(float(data.qfrc_actuator[int(scene.jnt_dofadr[j])]))
        share = need / bound
        if share > worst:
            worst, where = share, f"{scene.joint(j).name} needs {need:.3g} of {bound:.3g} N m"
    if worst > SATURATION_FAIL:
        return Check(
            FAIL,
            "saturation",
            f"holding the pose: {where} ({worst:.0%}): stronger motors, "
            "or a pose nearer its joints' straight line",
        )
    if worst > SATURATION_WARN:
        return Check(WARN, "saturation", f"holding the pose: {where} ({worst:.0%})")
    if not where:
        return Check(PASS, "saturation", "no joint states an effort limit to saturate")
    text = f"holding the pose takes at most {worst:.0%} of a joint's effort limit ({where})"
    return Check(PASS, "saturation", text)


def _sag(scene: mujoco.MjModel, stance) -> Check:
    """How far each position loop gives under the load of standing: the torque holding the
    settled stance (inverse dynamics, friction loss left out) over the loop's kp. A servo
    that gives more than :data:`SAG_WARN` rad is too soft to carry the robot."""
    torques = load_torques(scene, stance.qpos)
    worst, where = 0.0, ""
    gains = position_gains(scene)
    for j in moving_joints(scene):
        kp = float(gains[int(scene.jnt_dofadr[j])])
        need = abs(float(torques[int(scene.jnt_dofadr[j])]))
        if kp > 0 and need / kp > worst:
            worst, where = need / kp, f"{scene.joint(j).name}: {need:.3g} N m on kp {kp:.3g}"
    if worst > SAG_WARN:
        return Check(
            WARN,
            "stiffness",
            f"standing, {where} gives {worst:.2f} rad: too soft to carry the robot (raise kp)",
        )
    text = f"standing, no position loop gives over {worst:.3f} rad"
    return Check(PASS, "stiffness", text + (f" ({where})" if where else ""))
