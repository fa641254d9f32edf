"""What robolearn sees in a model, and which engines can run it (``robolearn inspect``).

A user's robot is any MJCF: meshes, default classes, ``position``/``motor``/``general``
actuators, keyframes of any name. This module reads the compiled model the engines will
run (robolearn's contact-force sensor included) and reports its parts in the terms the
task configs use, and asks each engine whether it accepts the model: the Warp engines by
converting it with MuJoCo Warp itself (``put_model``), which is what refuses unsupported
features (e.g. the PGS solver).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import mujoco
import numpy as np

from robolearn.sim.model import CONTACT_FORCE_SENSOR, ModelSource, compile_model


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
            return {"kind": "position", "kp": float(gain[0]), "kv": float(-bias[2])}
        if gain[0] > 0 and bias[1] == 0 and np.isclose(bias[2], -gain[0]):
            return {"kind": "velocity", "kv": float(gain[0])}
    return {
        "kind": "general",
        "gain": [float(x) for x in gain[:3]],
        "bias": [float(x) for x in bias[:3]],
    }


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
    joints: list[dict[str, Any]] = field(default_factory=list)
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
    or compile."""
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
    for j in range(model.njnt):
        kind = _enum(model.jnt_type[j], mujoco.mjtJoint)
        joint = {
            "name": _name(model, obj.mjOBJ_JOINT, j),
            "type": kind,
            "body": _name(model, obj.mjOBJ_BODY, model.jnt_bodyid[j]),
            "qpos": int(model.jnt_qposadr[j]),
            "dof": int(model.jnt_dofadr[j]),
        }
        if model.jnt_limited[j]:
            joint["range"] = [float(x) for x in model.jnt_range[j]]
        report.joints.append(joint)
        if kind == "free":
            report.floating_bases.append(
                {"body": joint["body"], "qpos": joint["qpos"], "dof": joint["dof"]}
            )
    for a in range(model.nu):
        actuator = {"name": _name(model, obj.mjOBJ_ACTUATOR, a), **actuator_kind(model, a)}
        if model.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_JOINT:
            actuator["joint"] = _name(model, obj.mjOBJ_JOINT, model.actuator_trnid[a, 0])
        if model.actuator_ctrllimited[a]:
            actuator["ctrlrange"] = [float(x) for x in model.actuator_ctrlrange[a]]
        if model.actuator_forcelimited[a]:
            actuator["forcerange"] = [float(x) for x in model.actuator_forcerange[a]]
        report.actuators.append(actuator)
    for s in range(model.nsensor):
        name = _name(model, obj.mjOBJ_SENSOR, s)
        report.sensors.append(
            {
                "name": name,
                "type": _enum(model.sensor_type[s], mujoco.mjtSensor),
                "dim": int(model.sensor_dim[s]),
                "added_by_robolearn": name == CONTACT_FORCE_SENSOR,
            }
        )
    report.keyframes = [_name(model, obj.mjOBJ_KEY, k) for k in range(model.nkey)]
    if engines:
        report.engines = {"cpu": None, "warp": warp_refuses(model)}
    return report


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
