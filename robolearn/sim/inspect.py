"""What robolearn sees in a model, and which engines can run it (``robolearn inspect``).

A user's robot is any MJCF: meshes, default classes, ``position``/``motor``/``general``
actuators, keyframes of any name. This module reads the compiled model the engines will
run (robolearn's contact-force sensor included) and reports its parts in the terms the
task configs use, and asks each engine whether it accepts the model: the Warp engines by
converting it with MuJoCo Warp itself (``put_model``), which is what refuses unsupported
features (e.g. the PGS solver).
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

from robolearn.errors import RobolearnError
from robolearn.sim.model import CONTACT_FORCE_SENSOR, ModelSource, compile_model

_JOINT_TRANSMISSIONS = (int(mujoco.mjtTrn.mjTRN_JOINT), int(mujoco.mjtTrn.mjTRN_JOINTINPARENT))

MODEL_SUFFIXES = (".xml", ".urdf")
"""The file names MuJoCo reads a model from (it picks the decoder by this ending)."""


def _name(model: mujoco.MjModel, kind: mujoco.mjtObj, index: int) -> str:
    return mujoco.mj_id2name(model, kind, index) or f"<{kind.name[6:].lower()} {index}>"


def _enum(value: int, enum: type) -> str:
    return enum(value).name.split("_", 1)[1].lower()


def actuator_kind(model: mujoco.MjModel, a: int) -> dict[str, Any]:
    """How actuator ``a`` makes force, in the words of MJCF's shortcuts.

    ``position``: force = kp (ctrl - q) - kv qdot; ``velocity``: kv (ctrl - qdot);
    ``motor``: gear x ctrl; anything else is ``general`` with its gain and bias
    parameters (e.g. an affine bias whose terms are not a position servo's).
    """
    gain, bias = model.actuator_gainprm[a], model.actuator_biasprm[a]
    fixed = model.actuator_gaintype[a] == mujoco.mjtGain.mjGAIN_FIXED
    no_dyn = model.actuator_dyntype[a] == mujoco.mjtDyn.mjDYN_NONE
    biastype = model.actuator_biastype[a]
    if fixed and no_dyn and biastype == mujoco.mjtBias.mjBIAS_NONE and gain[0] != 0:
        return {"kind": "motor", "gain": float(gain[0])}
    if fixed and no_dyn and biastype == mujoco.mjtBias.mjBIAS_AFFINE and bias[0] == 0:
        if gain[0] > 0 and np.isclose(bias[1], -gain[0]):
            # + 0.0: a servo without kv has kv 0, not -0
            return {"kind": "position", "kp": float(gain[0]), "kv": float(-bias[2]) + 0.0}
        if gain[0] > 0 and bias[1] == 0 and np.isclose(bias[2], -gain[0]):
            return {"kind": "velocity", "kv": float(gain[0])}
    return {
        "kind": "general",
        "gain": [float(x) for x in gain[:3]],
        "bias": [float(x) for x in bias[:3]],
    }


def actuator_force_bound(model: mujoco.MjModel, a: int) -> tuple[list[float] | None, str | None]:
    """The range of force actuator ``a`` can make (before its gear) and what bounds it:
    its ``forcerange`` (``"forcerange"``), else, for a motor, gain x its ``ctrlrange``
    (``"ctrlrange"``); ``(None, None)`` when nothing does (a position servo's force grows
    with the error, unless a forcerange clips it)."""
    if model.actuator_forcelimited[a]:
        return sorted(float(x) for x in model.actuator_forcerange[a]), "forcerange"
    kind = actuator_kind(model, a)
    if kind["kind"] == "motor" and model.actuator_ctrllimited[a]:
        return sorted(kind["gain"] * float(x) for x in model.actuator_ctrlrange[a]), "ctrlrange"
    return None, None


def _collides(contype: int, conaffinity: int) -> bool:
    """MuJoCo makes a contact between two geoms when one's contype shares a bit with the
    other's conaffinity: a geom with both 0 never touches anything."""
    return bool(contype or conaffinity)


@dataclass
class ModelReport:
    """A model's parts as robolearn's configs name them, and the engines that accept it."""

    name: str
    timestep: float
    integrator: str
    solver: str
    iterations: int
    cone: str
    floating_bases: list[dict[str, Any]] = field(default_factory=list)
    bodies: list[str] = field(default_factory=list)
    geoms: list[dict[str, Any]] = field(default_factory=list)
    """Every geom: name (``<geom i>`` when it has none, and ``named`` false), body, type,
    size, group, contype, conaffinity, condim, and ``collides``: whether contype and
    conaffinity let it touch anything (both 0: a visual geom)."""
    sites: list[dict[str, Any]] = field(default_factory=list)
    """Every site: name and body."""
    joints: list[dict[str, Any]] = field(default_factory=list)
    """Every joint: name, type, body, qpos and dof addresses, range (when limited),
    damping, armature, frictionloss, the actuators that drive it (name, gear, the force
    they can put on the joint and what bounds it), its actuatorfrcrange (when limited)
    and ``force_limit``: the generalized force (a hinge's torque) the actuators can apply
    to it, every bound included (None: no actuator, or one nothing bounds)."""
    actuators: list[dict[str, Any]] = field(default_factory=list)
    sensors: list[dict[str, Any]] = field(default_factory=list)
    keyframes: list[str] = field(default_factory=list)
    engines: dict[str, str | None] = field(default_factory=dict)
    """Engine -> None when it runs the model, else why it refuses."""

    @property
    def runs_everywhere(self) -> bool:
        return all(reason is None for reason in self.engines.values())


def inspect_model(source: ModelSource | mujoco.MjModel, engines: bool = True) -> ModelReport:
    """Compile ``source`` as the engines do and describe it; with ``engines``, also ask
    each engine whether it accepts it. Raises RobolearnError if the model does not load
    or compile, or if the path is a folder or a file that is not MJCF
    (:func:`check_model_file`)."""
    if isinstance(source, str | os.PathLike) and not str(source).lstrip().startswith("<"):
        check_model_file(source)
    model = source if isinstance(source, mujoco.MjModel) else compile_model(source)
    obj = mujoco.mjtObj
    report = ModelReport(
        name=model.names[: model.names.find(b"\0")].decode() or "model",
        timestep=float(model.opt.timestep),
        integrator=_enum(model.opt.integrator, mujoco.mjtIntegrator),
        solver=_enum(model.opt.solver, mujoco.mjtSolver),
        iterations=int(model.opt.iterations),
        cone=_enum(model.opt.cone, mujoco.mjtCone),
    )
    report.bodies = [_name(model, obj.mjOBJ_BODY, b) for b in range(1, model.nbody)]
    report.geoms = [_geom(model, g) for g in range(model.ngeom)]
    report.sites = [
        {
            "name": _name(model, obj.mjOBJ_SITE, i),
            "body": _name(model, obj.mjOBJ_BODY, model.site_bodyid[i]),
        }
        for i in range(model.nsite)
    ]
    _add_joints(model, report)
    report.actuators = [_actuator(model, a) for a in range(model.nu)]
    report.sensors = [_sensor(model, s) for s in range(model.nsensor)]
    report.keyframes = [_name(model, obj.mjOBJ_KEY, k) for k in range(model.nkey)]
    if engines:
        report.engines = {"cpu": None, "warp": warp_refuses(model)}
    return report


def _geom(model: mujoco.MjModel, g: int) -> dict[str, Any]:
    obj = mujoco.mjtObj
    contype, conaffinity = int(model.geom_contype[g]), int(model.geom_conaffinity[g])
    return {
        "name": _name(model, obj.mjOBJ_GEOM, g),
        "named": bool(mujoco.mj_id2name(model, obj.mjOBJ_GEOM, g)),
        "body": _name(model, obj.mjOBJ_BODY, model.geom_bodyid[g]),
        "type": _enum(model.geom_type[g], mujoco.mjtGeom),
        "size": [float(x) for x in model.geom_size[g]],
        "group": int(model.geom_group[g]),
        "contype": contype,
        "conaffinity": conaffinity,
        "condim": int(model.geom_condim[g]),
        "collides": _collides(contype, conaffinity),
    }


def _add_joints(model: mujoco.MjModel, report: ModelReport) -> None:
    """The joints, with what bounds their force, and the floating bases among them."""
    obj = mujoco.mjtObj
    driving: dict[int, list[int]] = {}
    for a in range(model.nu):
        if int(model.actuator_trntype[a]) in _JOINT_TRANSMISSIONS:
            driving.setdefault(int(model.actuator_trnid[a, 0]), []).append(a)
    for j in range(model.njnt):
        kind = _enum(model.jnt_type[j], mujoco.mjtJoint)
        dof = int(model.jnt_dofadr[j])
        joint = {
            "name": _name(model, obj.mjOBJ_JOINT, j),
            "type": kind,
            "body": _name(model, obj.mjOBJ_BODY, model.jnt_bodyid[j]),
            "qpos": int(model.jnt_qposadr[j]),
            "dof": dof,
        }
        if model.jnt_limited[j]:
            joint["range"] = [float(x) for x in model.jnt_range[j]]
        # MJCF sets these per joint; MuJoCo copies them to each of its dofs
        joint["damping"] = float(model.dof_damping[dof])
        joint["armature"] = float(model.dof_armature[dof])
        joint["frictionloss"] = float(model.dof_frictionloss[dof])
        joint.update(_joint_forces(model, j, kind, driving.get(j, [])))
        report.joints.append(joint)
        if kind == "free":
            report.floating_bases.append(
                {"body": joint["body"], "qpos": joint["qpos"], "dof": joint["dof"]}
            )


def _actuator(model: mujoco.MjModel, a: int) -> dict[str, Any]:
    obj = mujoco.mjtObj
    actuator = {"name": _name(model, obj.mjOBJ_ACTUATOR, a), **actuator_kind(model, a)}
    if model.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_JOINT:
        actuator["joint"] = _name(model, obj.mjOBJ_JOINT, model.actuator_trnid[a, 0])
    actuator["gear"] = float(model.actuator_gear[a, 0])
    if model.actuator_ctrllimited[a]:
        actuator["ctrlrange"] = [float(x) for x in model.actuator_ctrlrange[a]]
    if model.actuator_forcelimited[a]:
        actuator["forcerange"] = [float(x) for x in model.actuator_forcerange[a]]
    return actuator


def _sensor(model: mujoco.MjModel, s: int) -> dict[str, Any]:
    name = _name(model, mujoco.mjtObj.mjOBJ_SENSOR, s)
    return {
        "name": name,
        "type": _enum(model.sensor_type[s], mujoco.mjtSensor),
        "dim": int(model.sensor_dim[s]),
        "added_by_robolearn": name == CONTACT_FORCE_SENSOR,
    }


def _joint_forces(model: mujoco.MjModel, j: int, kind: str, actuators: list[int]) -> dict:
    """What bounds the force the actuators put on joint ``j``: each actuator's force range
    x its gear, their sum, clipped by the joint's actuatorfrcrange (as MuJoCo clips it)."""
    out: dict[str, Any] = {"actuators": []}
    total: list[float] | None = [0.0, 0.0] if actuators else None
    for a in actuators:
        gear = float(model.actuator_gear[a, 0])
        bound, source = actuator_force_bound(model, a)
        force = None
        if bound is not None and kind in ("hinge", "slide"):
            force = sorted(gear * x for x in bound)
        else:
            source = None
        out["actuators"].append(
            {
                "name": _name(model, mujoco.mjtObj.mjOBJ_ACTUATOR, a),
                "gear": gear,
                "force": force,
                "bounded_by": source,
            }
        )
        total = (
            None if force is None or total is None else [total[0] + force[0], total[1] + force[1]]
        )
    if model.jnt_actfrclimited[j]:
        lo, hi = (float(x) for x in model.jnt_actfrcrange[j])
        out["actuatorfrcrange"] = [lo, hi]
        if actuators:
            total = [lo, hi] if total is None else [max(total[0], lo), min(total[1], hi)]
    out["force_limit"] = total
    return out


def check_model_file(path: str | os.PathLike) -> None:
    """Raise a one-line RobolearnError when ``path`` is a folder, or a file that is not an
    MJCF (or URDF) model MuJoCo reads; a missing path, or an MJCF with an error inside,
    is left to the loader, which names the problem."""
    p = Path(path)
    if p.is_dir():
        found = sorted(x.name for x in p.glob("*.xml"))
        listed = ", ".join(found[:6]) + (", ..." if len(found) > 6 else "")
        hint = f"; the .xml files in it: {listed}" if found else "; it holds no .xml file"
        raise RobolearnError(f"{path} is a folder, not an MJCF file{hint}")
    if not p.is_file():
        return
    root = _root_element(p)
    if p.suffix not in MODEL_SUFFIXES:
        if root == "mujoco":
            raise RobolearnError(
                f"{path} holds MJCF, but MuJoCo reads a model only from a file whose name ends "
                "in .xml; rename it"
            )
        raise RobolearnError(
            f"{path} is not an MJCF file (a {p.suffix or 'nameless'} file; an MJCF is XML "
            "whose top element is <mujoco>, in a .xml file)"
        )
    if root is None:
        raise RobolearnError(f"{path} is not an MJCF file: it is not XML")
    if root not in ("mujoco", "robot"):
        raise RobolearnError(
            f"{path} is not an MJCF file: its top element is <{root}>, an MJCF's is <mujoco>"
        )


def _root_element(path: Path) -> str | None:
    """The tag of the XML file's top element, or None when it is not XML; only the start of
    the file is read (an error later in it is MuJoCo's to report)."""
    try:
        with path.open("rb") as f:
            for _event, element in ET.iterparse(f, events=("start",)):
                return element.tag
    except (ET.ParseError, UnicodeError, ValueError):
        return None
    return None


def warp_refuses(model: mujoco.MjModel) -> str | None:
    """Why MuJoCo Warp (the ``cuda`` and ``warp-cpu`` engines) cannot run ``model``, or None.

    Converting the model is the check MuJoCo Warp itself makes; it runs on warp's CPU
    device, so no GPU is needed to ask.
    """
    from robolearn.sim.mjwarp import _import_warp

    wp, mjw = _import_warp()
    try:
        with wp.ScopedDevice("cpu"):
            mjw.put_model(model)
    except (NotImplementedError, ValueError, TypeError) as exc:
        lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
        return lines[0] if lines else type(exc).__name__
    return None
