"""Load and compile MJCF models for the engines, with errors a user can act on."""

from __future__ import annotations

import os
from pathlib import Path

import mujoco

from robolearn.errors import RobolearnError

ModelSource = str | os.PathLike | mujoco.MjSpec

# Sensors whose evaluation runs mj_rnePostConstraint, which is what fills cfrc_ext (the
# per-body contact forces). Without one, MuJoCo (C and Warp alike) leaves cfrc_ext stale.
_RNEPOST_SENSORS = frozenset(
    {
        mujoco.mjtSensor.mjSENS_ACCELEROMETER,
        mujoco.mjtSensor.mjSENS_FORCE,
        mujoco.mjtSensor.mjSENS_TORQUE,
        mujoco.mjtSensor.mjSENS_FRAMELINACC,
        mujoco.mjtSensor.mjSENS_FRAMEANGACC,
    }
)

#: Name of the sensor robolearn adds, when a model has none of the above, so that contact
#: forces per body (cfrc_ext) are computed every step. It appends 3 values to sensordata.
CONTACT_FORCE_SENSOR = "robolearn_contact_forces"


def _describe(source: ModelSource) -> str:
    if isinstance(source, mujoco.MjSpec):
        return f"MjSpec {source.modelname!r}"
    text = str(source)
    return "MJCF string" if text.lstrip().startswith("<") else f"MJCF file {text!r}"


def load_spec(source: ModelSource) -> mujoco.MjSpec:
    """Parse an MJCF file path, an MJCF string or an MjSpec into a spec of our own.

    A given MjSpec is copied, so the caller's spec is never modified.
    """
    if isinstance(source, mujoco.MjSpec):
        return source.copy()
    if not isinstance(source, str | os.PathLike):
        raise RobolearnError(
            f"a model is an MJCF file path, an MJCF string or a mujoco.MjSpec, "
            f"not {type(source).__name__}"
        )
    text = str(source)
    try:
        if text.lstrip().startswith("<"):
            return mujoco.MjSpec.from_string(text)
        path = Path(text)
        if not path.is_file():
            what = "is not a regular file" if path.exists() else "does not exist"
            raise RobolearnError(f"MJCF file {text!r} {what}")
        spec = mujoco.MjSpec.from_file(str(path))
        if path.suffix.lower() == ".urdf":
            _adapt_urdf(spec, path)
        return spec
    except ValueError as exc:
        if isinstance(exc, RobolearnError):
            raise
        raise RobolearnError(f"{_describe(source)} is not valid MJCF: {_first_line(exc)}") from exc


def _adapt_urdf(spec: mujoco.MjSpec, path: Path) -> None:
    """A URDF as a robot's MJCF would be: every link stays a body (MuJoCo fuses links on
    fixed joints into their parents by default, which leaves feet and the base without
    their names), and a mesh is found beside the file or in a folder under it (a URDF names
    meshes ``package://<pkg>/meshes/x.stl``, which MuJoCo reduces to ``x.stl`` and looks for
    only beside the file)."""
    spec.compiler.fusestatic = False
    folder = path.parent
    meshdir = folder / spec.meshdir if spec.meshdir else folder
    for mesh in spec.meshes:
        if not mesh.file or (meshdir / mesh.file).is_file():
            continue
        found = next(iter(sorted(folder.rglob(Path(mesh.file).name))), None)
        if found is not None:
            mesh.file = str(found.resolve())


def _first_line(exc: Exception) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    # MuJoCo's compiler puts the element and line on the second line: keep both.
    return " ".join(lines[:2]) if lines else type(exc).__name__


def compile_model(source: ModelSource) -> mujoco.MjModel:
    """Compile a model for the engines.

    Adds :data:`CONTACT_FORCE_SENSOR` when the model has no sensor that makes MuJoCo compute
    contact forces per body, so that every engine reports them.

    Raises:
        RobolearnError: the file is missing, the MJCF does not parse or does not compile.
    """
    spec = load_spec(source)
    needs_sensor = not any(s.type in _RNEPOST_SENSORS for s in spec.sensors)
    if needs_sensor:
        spec.add_sensor(
            name=CONTACT_FORCE_SENSOR,
            type=mujoco.mjtSensor.mjSENS_FRAMELINACC,
            objtype=mujoco.mjtObj.mjOBJ_BODY,
            objname="world",
        )
    try:
        return spec.compile()
    except ValueError as exc:
        raise RobolearnError(f"{_describe(source)} does not compile: {_first_line(exc)}") from exc
