"""A scene for any MJCF robot, with what robolearn needs found in the model itself.

Public MJCF robots name things their own way: the floating base is whichever body holds
the free joint, the standing pose is a keyframe called ``home`` or ``stand`` or
``init_state``, and feet may be bodies or collision geoms at the end of the calves.
:func:`robot_entity` reads the model and fills the robot's :class:`EntityCfg` from it, and
:func:`robot_scene` places it in a :class:`SceneCfg`, so a task can take a user's file as
it is.
"""

from __future__ import annotations

from collections.abc import Sequence

import mujoco

from robolearn.errors import RobolearnError
from robolearn.scene.config import SceneCfg
from robolearn.scene.entities import ROBOT, EntityCfg
from robolearn.scene.models import resolve_model_path
from robolearn.scene.names import compile_patterns, match_names
from robolearn.sim import load_spec


def robot_scene(
    model: str,
    feet: str | Sequence[str] = (),
    keyframe: str | None = None,
    num_envs: int = 1024,
) -> SceneCfg:
    """A :class:`SceneCfg` holding :func:`robot_entity` as its ``robot``, ``num_envs``
    copies."""
    return SceneCfg(num_envs=num_envs, entities={ROBOT: robot_entity(model, feet, keyframe)})


def robot_entity(
    model: str, feet: str | Sequence[str] = (), keyframe: str | None = None
) -> EntityCfg:
    """The robot's :class:`EntityCfg` for the robot in ``model`` (a robolearn asset or any
    MJCF path).

    Args:
        model: the MJCF (meshes and default classes as the file has them).
        feet: regexes naming the feet: bodies if any body matches, else geoms (which the
            scene makes bodies of their own; see :mod:`robolearn.scene.feet`).
        keyframe: the default pose; None takes the model's keyframe if it has exactly one,
            and qpos0 if it has none.

    The floating base is the body of the model's free joint (none for a fixed base; more
    than one free joint is an error: name the robot's with ``EntityCfg.root_body``).
    """
    spec = load_spec(resolve_model_path(model))
    return EntityCfg(
        model=model,
        keyframe=_keyframe(spec, keyframe, model),
        root_body=_floating_base(spec, model),
        feet=_feet(spec, feet),
    )


def _floating_base(spec: mujoco.MjSpec, model: str) -> str | None:
    bases = [j.parent.name for j in spec.joints if j.type == mujoco.mjtJoint.mjJNT_FREE]
    if len(bases) > 1:
        raise RobolearnError(
            f"{model} has {len(bases)} free joints (bodies {', '.join(bases)}); set "
            "EntityCfg.root_body to the robot's"
        )
    return bases[0] if bases else None


def _keyframe(spec: mujoco.MjSpec, keyframe: str | None, model: str) -> str | None:
    names = [k.name for k in spec.keys]
    if keyframe is not None:
        if keyframe not in names:
            raise RobolearnError(
                f"keyframe {keyframe!r} is not in {model}; keyframes: {', '.join(names) or 'none'}"
            )
        return keyframe
    if len(names) > 1:
        raise RobolearnError(
            f"{model} has keyframes {', '.join(names)}: name the default pose with keyframe="
        )
    return names[0] if names else None


def _feet(spec: mujoco.MjSpec, feet: str | Sequence[str]) -> tuple[str, ...]:
    if not feet:
        return ()
    compile_patterns(feet, "feet")
    bodies = [b.name for b in spec.bodies]
    try:
        return tuple(bodies[i] for i in match_names(bodies, feet, "body"))
    except RobolearnError:
        geoms = [g.name for g in spec.geoms]
        try:
            return tuple(geoms[i] for i in match_names(geoms, feet, "geom"))
        except RobolearnError:
            named_geoms = [g for g in geoms if g]
            raise RobolearnError(
                f"feet {feet!r} match no body and no geom of the model; bodies: "
                f"{', '.join(b for b in bodies if b)}; named geoms: "
                f"{', '.join(named_geoms) or 'none'}"
            ) from None
