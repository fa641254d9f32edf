"""Where a scene's MJCF comes from: the one place a model name becomes a file.

A model is named one of three ways:

* a path relative to robolearn's shipped assets (``humanoid/scene.xml``);
* ``menagerie:<robot>`` or ``menagerie:<robot>/<entry or file>``: a robot of MuJoCo
  Menagerie, found by the ``mujoco-menagerie`` package (``menagerie:unitree_g1`` is its
  default scene, ``menagerie:unitree_g1/g1`` the entry point ``g1``, and
  ``menagerie:unitree_g1/g1.xml`` that file of the robot's folder). The package downloads
  a robot on first use into its cache; ``MENAGERIE_ROOT`` points it at a local copy of
  Menagerie instead (here, several folders separated by ``:``, searched in order);
* any path on disk: a vendor's checkout, a user's own MJCF.

Robot configs, entities and ``robolearn inspect`` all resolve their models here, and none
of these files is ever copied into robolearn.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

from robolearn.assets import ASSETS_DIR
from robolearn.errors import RobolearnError

MENAGERIE = "menagerie:"
"""The prefix of a MuJoCo Menagerie model name."""


def resolve_model_path(model: str) -> Path:
    """An MJCF path from a SceneCfg: a Menagerie name, robolearn's assets, then the
    filesystem. RobolearnError, one line, for a name that is none of these."""
    if not model:
        raise RobolearnError("scene.model is empty: name an MJCF file")
    if model.startswith(MENAGERIE):
        return menagerie_path(model[len(MENAGERIE) :])
    shipped = ASSETS_DIR / model
    if shipped.is_file():
        return shipped
    path = Path(model).expanduser()
    if path.is_file():
        return path.resolve()
    choices = sorted(str(p.relative_to(ASSETS_DIR)) for p in ASSETS_DIR.rglob("scene.xml"))
    raise RobolearnError(
        f"scene.model {model!r} is neither a robolearn asset, a Menagerie name "
        f"({MENAGERIE}<robot>) nor a file; robolearn assets: {', '.join(choices)}"
    )


def menagerie_path(name: str) -> Path:
    """The MJCF of Menagerie robot ``name`` (``robot``, ``robot/entry`` or
    ``robot/file.xml``), where the ``mujoco-menagerie`` package finds it: under each folder
    of ``MENAGERIE_ROOT`` in turn, else in its download cache (downloading it there)."""
    import mujoco_menagerie as mm

    robot_name, _, part = name.partition("/")
    try:
        robot = mm.get(robot_name)
    except mm.UnknownRobotError:
        close = difflib.get_close_matches(robot_name, mm.names(), n=3)
        hint = f"did you mean {', '.join(close)}? " if close else ""
        raise RobolearnError(
            f"{MENAGERIE}{robot_name}: MuJoCo Menagerie has no robot {robot_name!r}; {hint}"
            "`python -m mujoco_menagerie list` lists them"
        ) from None
    folder = _robot_folder(mm, robot)
    if part.endswith(".xml"):
        file = folder / part
    else:
        try:
            file = folder / robot.entry(part or None).file
        except mm.UnknownEntryPointError:
            raise RobolearnError(
                f"{MENAGERIE}{name}: robot {robot_name!r} has no entry point {part!r}; its "
                f"entry points: {', '.join(robot.entry_names)} (or name a file: "
                f"{MENAGERIE}{robot_name}/<file>.xml)"
            ) from None
    if not file.is_file():
        present = sorted(p.name for p in folder.glob("*.xml"))
        raise RobolearnError(
            f"{MENAGERIE}{name}: {file} is not there; the robot's folder {folder} has "
            f"{', '.join(present) or 'no MJCF files'} "
            f"(name one: {MENAGERIE}{robot_name}/<file>.xml)"
        )
    return file


def _robot_folder(mm, robot) -> Path:
    """The robot's folder: the first ``MENAGERIE_ROOT`` folder that has it, or the
    package's cache (which downloads it if it is not there yet)."""
    roots = [r for r in os.environ.get("MENAGERIE_ROOT", "").split(os.pathsep) if r]
    for root in roots:
        if (Path(root) / robot.name).is_dir():
            return Path(root) / robot.name
    if roots:
        raise RobolearnError(
            f"{MENAGERIE}{robot.name}: not under MENAGERIE_ROOT ({', '.join(roots)}); add "
            "the folder of a Menagerie copy that has it, or unset MENAGERIE_ROOT to download it"
        )
    cache = mm.Cache()
    try:
        return cache.resolve(robot, progress=None)
    except (mm.MenagerieError, OSError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise RobolearnError(
            f"{MENAGERIE}{robot.name}: not in the download cache ({cache.dir}) and the "
            f"download failed ({reason}); point MENAGERIE_ROOT at a local copy of "
            "mujoco_menagerie (its folder that holds the robots' folders)"
        ) from None
