"""``robolearn new robot``: a robot config and a walking task written from any MJCF or URDF.

The user's package gets two modules, written from what :func:`derive_robot` found, each
value with the line that says where it came from: ``<name>.py``, the robot config
(:class:`~robolearn.scene.EntityCfg`) and what the velocity family needs beyond it
(:class:`~robolearn.tasks.velocity.walker.WalkerCfg`); ``<name>_walk.py``, which registers
``<name>_walk`` and ``<name>_walk_rough`` (or ``<name>_reach`` for an arm). The package's
``__init__.py`` imports the task module, so ``robolearn train --import PACKAGE --task
<name>_walk`` runs it. Nothing is written into robolearn, and nothing is overwritten: a
module of the same name is refused.
"""

from __future__ import annotations

import datetime
import json
import keyword
import re
from dataclasses import dataclass
from pathlib import Path

from robolearn import __version__
from robolearn.errors import RobolearnError
from robolearn.files import write_atomic
from robolearn.scene.derive import DerivedRobot, derive_robot
from robolearn.scene.derive.robot import COLLISION_GROUP

_NAME = re.compile(r"[a-z_][a-z0-9_]*")


@dataclass
class Written:
    """What ``new robot`` wrote."""

    robot: DerivedRobot
    name: str
    package: Path
    files: list[Path]
    tasks: list[str]
    import_arg: str
    """What ``--import`` takes to find the tasks from the working folder."""


def robot_name(model: str, name: str | None) -> str:
    """The robot's Python name: ``name``, or the model file's stem made one."""
    if name is None:
        stem = Path(model.split(":", 1)[-1]).stem
        name = re.sub(r"[^a-z0-9_]", "_", stem.lower()).strip("_") or "robot"
        if name[0].isdigit():
            name = f"robot_{name}"
    if not _NAME.fullmatch(name) or keyword.iskeyword(name):
        raise RobolearnError(
            f"--name {name!r} is not a Python module name (lower case letters, digits and _, "
            "not starting with a digit)"
        )
    return name


def new_robot(model: str, package: Path, name: str | None = None, kind: str = "auto") -> Written:
    """Derive ``model``'s robot config and write it and its task into ``package``."""
    name = robot_name(model, name)
    package = package.expanduser()
    if package.exists() and not package.is_dir():
        raise RobolearnError(f"--out {package} is a file, not a package folder")
    if not _NAME.fullmatch(package.resolve().name):
        raise RobolearnError(
            f"--out {package}: the folder's name {package.resolve().name!r} is not a Python "
            "package name (lower case letters, digits and _)"
        )
    for module in (name, f"{name}_walk", f"{name}_reach"):
        if (package / f"{module}.py").exists():
            raise RobolearnError(
                f"{package / f'{module}.py'} exists: new robot writes no file over another "
                "(remove it, or give --name)"
            )
    robot = derive_robot(model, kind)
    arm = robot.kind == "arm"
    task_module = f"{name}_{'reach' if arm else 'walk'}"
    _check_task_names(name, arm)
    if not arm and (robot.stance is None or not robot.feet):
        reason = robot.stance.reason if robot.stance is not None else "it has no stance"
        raise RobolearnError(
            f"{model}: no stance found, so no feet to walk on ({reason}); "
            f"`robolearn doctor {model}` says what to change"
        )
    pkg_name = package.resolve().name
    package.mkdir(parents=True, exist_ok=True)
    files = [package / f"{name}.py", package / f"{task_module}.py"]
    write_atomic(files[0], robot_module(robot, name, model).encode())
    task_text = reach_module_text if arm else task_module_text
    write_atomic(files[1], task_text(robot, name, pkg_name).encode())
    init = package / "__init__.py"
    line = f"from {pkg_name} import {task_module}  # noqa: F401  (registers its tasks)\n"
    text = (
        init.read_text() if init.exists() else '"""Robots brought with robolearn new robot."""\n\n'
    )
    if line not in text:
        write_atomic(init, (text + line).encode())
        files.append(init)
    import_arg = pkg_name if package.resolve().parent == Path.cwd().resolve() else str(package)
    tasks = [f"{name}_reach"] if arm else [f"{name}_walk", f"{name}_walk_rough"]
    return Written(robot, name, package, files, tasks, import_arg)


def _check_task_names(name: str, arm: bool) -> None:
    """The tasks' names are free: a shipped task of the same name would be replaced."""
    from robolearn.registry import task_names

    ours = [f"{name}_reach"] if arm else [f"{name}_walk", f"{name}_walk_rough"]
    taken = [t for t in ours if t in task_names()]
    if taken:
        raise RobolearnError(
            f"{', '.join(taken)} is a task already (robolearn's or an installed package's): "
            "give --name another name"
        )


def _literal(value) -> str:
    """A value as Python source, strings in double quotes (as ruff formats them)."""
    if isinstance(value, float):
        return repr(round(value, 6))
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a Python string literal
    if isinstance(value, tuple):
        inner = ", ".join(_literal(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    return repr(value)


def _field(name: str, value, indent: str, width: int = 99) -> list[str]:
    """``name=value,`` on one line, or a tuple one item a line when it is too long."""
    line = f"{indent}{name}={_literal(value)},"
    if len(line) <= width or not isinstance(value, tuple):
        return [line]
    return [f"{indent}{name}=(", *(f"{indent}    {_literal(v)}," for v in value), f"{indent}),"]


def _wrap(text: str, indent: str, width: int = 92) -> list[str]:
    words, lines, line = text.split(), [], ""
    for word in words:
        if line and len(indent) + 2 + len(line) + 1 + len(word) > width:
            lines.append(f"{indent}# {line}")
            line = word
        else:
            line = f"{line} {word}".strip()
    if line:
        lines.append(f"{indent}# {line}")
    return lines


def robot_module(robot: DerivedRobot, name: str, model: str) -> str:
    """The robot config module's text: ``robot()`` and ``walker()``, each value with the
    line that explains it."""
    return "\n".join(
        [
            *_module_head(robot, name, model),
            "def robot() -> EntityCfg:",
            '    """The robot on its drives, in its default pose."""',
            *_actuator_lines(robot),
            *_pose_lines(robot),
            *_mirror_lines(robot),
            *_entity_lines(robot),
            "",
            "",
            *(_reacher_lines(robot) if robot.kind == "arm" else _walker_lines(robot)),
            "",
        ]
    )


def _module_head(robot: DerivedRobot, name: str, model: str) -> list[str]:
    today = datetime.date.today().isoformat()
    out = [
        f'"""{name}: a robot config written by `robolearn new robot` from',
        f"{Path(model.split(':', 1)[-1]).name} (robolearn {__version__}, {today}); the model is "
        "MODEL.",
        "",
        "Every value was derived from the model; the comment above it says from what. The",
        "file is yours: change a value and train again (`robolearn doctor --import <this",
        f'package> {name}_{"reach" if robot.kind == "arm" else "walk"}` checks the result)."""',
        "",
        "from __future__ import annotations",
        "",
        "from robolearn.scene import EntityCfg, ImplicitPDCfg, InitStateCfg, JointMirrorCfg",
    ]
    if robot.floor_contact_group == COLLISION_GROUP:
        out.append("from robolearn.scene.derive.robot import touch_floor")
    return [
        *out,
        (
            "from robolearn.tasks.manipulation.reacher import ReacherCfg"
            if robot.kind == "arm"
            else "from robolearn.tasks.velocity.walker import WalkerCfg"
        ),
        "",
        f"MODEL = {_literal(robot_path(model))}",
        "",
        "",
    ]


def _actuator_lines(robot: DerivedRobot) -> list[str]:
    out = [*_wrap(f"Actuators ({robot.why['actuators']}).", "    "), "    actuators = {"]
    for key, (drive, joints) in _drive_groups(robot).items():
        out += _wrap(drive.why, "        ")
        out.append(f"        {_literal(key)}: ImplicitPDCfg(")
        out += _field("joints", tuple(re.escape(j) for j in joints), " " * 12)
        out += _field("stiffness", drive.stiffness, " " * 12)
        out += _field("damping", drive.damping, " " * 12)
        out += _field("effort_limit", drive.effort_limit, " " * 12)
        out.append("        ),")
    return [*out, "    }"]


def _pose_lines(robot: DerivedRobot) -> list[str]:
    return [
        *_wrap(f"Default pose: {robot.why['pose']}; {robot.why.get('height', '')}.", "    "),
        "    init_state = InitStateCfg(",
        f"        pos={_literal(robot.base_pos)},",
        f"        rot={_literal(robot.base_rot)},",
        "        joint_pos={",
        *(
            f"            {_literal(re.escape(k))}: {_literal(v)},"
            for k, v in robot.joint_pos.items()
        ),
        "        },",
        "    )",
    ]


def _mirror_lines(robot: DerivedRobot) -> list[str]:
    out = _wrap(f"Mirror: {robot.why.get('mirror', 'none')}.", "    ")
    if robot.mirror is None:
        return [*out, "    mirror = None"]
    return [
        *out,
        "    mirror = JointMirrorCfg(",
        "        pairs={",
        *(f"            {_literal(a)}: {_literal(b)}," for a, b in robot.mirror.pairs.items()),
        "        },",
        *_field("flip", tuple(robot.mirror.flip), " " * 8),
        "    )",
    ]


def _entity_lines(robot: DerivedRobot) -> list[str]:
    out = _wrap(f"Feet: {robot.why.get('feet', '')}.", "    ")
    if "contacts" in robot.why:
        out += _wrap(f"Contacts: {robot.why['contacts']}.", "    ")
    out += [
        "    return EntityCfg(",
        "        model=MODEL,",
        f"        floating_base={robot.floating_base!r},",
        "        init_state=init_state,",
        *(_field("root_body", re.escape(robot.root_body), " " * 8) if robot.root_body else []),
        *_field("feet", tuple(robot.feet), " " * 8),
        "        mirror=mirror,",
        "        actuators=actuators,",
    ]
    if robot.floor_contact_group == COLLISION_GROUP:
        out.append("        edit=touch_floor,")
    return [*out, "    )"]


def _walker_lines(robot: DerivedRobot) -> list[str]:
    out = ["def walker() -> WalkerCfg:"]
    out.append('    """What the velocity family needs beyond the robot config."""')
    for topic in ("physics", "legs", "actions"):
        out += _wrap(f"{topic.capitalize()}: {robot.why.get(topic, '')}.", "    ")
    legs = robot.legs
    fields = {
        "feet": len(robot.feet),
        "base_body": re.escape(robot.root_body or ""),
        "standing_height": round(robot.base_pos[2] - 0.005, 4),
        "physics_dt": robot.physics_dt,
        "driven": tuple(re.escape(a) for a in robot.driven_actuators),
        "leg_length": round(legs.length, 4) if legs else 0.0,
        "feet_width": round(legs.width, 4) if legs else 0.0,
        "hips": tuple(re.escape(j) for j in robot.hips),
        "ankles": tuple(re.escape(j) for j in robot.ankles),
        "waist": tuple(re.escape(j) for j in robot.waist),
        "shin_bodies": tuple(re.escape(b) for b in robot.shin_bodies),
        "contact_bodies": tuple(re.escape(b) for b in robot.contact_bodies),
        "symmetric": robot.mirror is not None,
        "action_scale": robot.action_scale,
        "num_envs": 1024 if len(robot.feet) == 2 else 512,
    }
    out += ["    return WalkerCfg(", "        robot=robot(),"]
    for key, value in fields.items():
        out += _field(key, value, " " * 8)
    return [*out, "    )"]


def _reacher_lines(robot: DerivedRobot) -> list[str]:
    arm = robot.arm
    assert arm is not None
    out = [
        "def reacher() -> ReacherCfg:",
        '    """What the reach task needs beyond the robot config."""',
    ]
    for topic in ("physics", "arm", "actions"):
        out += _wrap(f"{topic.capitalize()}: {robot.why.get(topic, '')}.", "    ")
    fields = {
        "base_body": re.escape(robot.base_body or ""),
        "tool_body": re.escape(robot.tool_body or ""),
        "arm_joints": tuple(re.escape(j) for j in robot.driven_joints),
        "driven": tuple(re.escape(a) for a in robot.driven_actuators),
        "physics_dt": robot.physics_dt,
        "centre": tuple(float(c) for c in arm.centre),
        "half": tuple(float(h) for h in arm.half),
        "action_scale": robot.action_scale,
    }
    out += ["    return ReacherCfg(", "        robot=robot(),"]
    for key, value in fields.items():
        out += _field(key, value, " " * 8)
    return [*out, "    )"]


def _registration(task: str, description: str, prefix: str) -> str:
    """A task module's ``register_task`` call for ``task``, whose functions are
    ``<prefix>env_cfg``, ``<prefix>agent_cfg`` and ``<prefix>play_env_cfg``."""
    return f"""register_task(
    TaskSpec(
        {_literal(task)},
        {_literal(description)},
        {prefix}env_cfg,
        {prefix}agent_cfg,
        {prefix}play_env_cfg,
    )
)
"""


def reach_module_text(robot: DerivedRobot, name: str, package: str) -> str:
    """An arm's task module's text: it registers ``<name>_reach``."""
    return f'''"""{name}_reach: {name}'s tool reaches goal positions (the reach task).

Written by `robolearn new robot` (robolearn {__version__}); {name}.py holds the robot config
and the values this task reads. Train with
`robolearn train --import {package} --task {name}_reach`.
"""

from __future__ import annotations

from robolearn.registry import TaskSpec, register_task
from robolearn.tasks.manipulation.reacher import reach_agent_cfg, reach_env_cfg, reach_play_cfg

from {package}.{name} import reacher


def env_cfg():
    return reach_env_cfg(reacher())


def play_env_cfg():
    return reach_play_cfg(reacher())


def agent_cfg():
    return reach_agent_cfg(reacher())


{_registration(f"{name}_reach", f"{name}'s tool reaches goal positions", "")}'''


def _drive_groups(robot: DerivedRobot) -> dict[str, tuple]:
    """The drives with the same gains, limit and reason as one config each, keyed by the
    joints' shared name (``FL_hip_joint``, ``FR_hip_joint``: ``hip_joint``)."""
    groups: dict[tuple, list] = {}
    for d in robot.drives:
        groups.setdefault((d.stiffness, d.damping, d.effort_limit, d.why), [d, []])[1].append(
            d.joint
        )
    named: dict[str, tuple] = {}
    for drive, joints in groups.values():
        key = joints[0] if len(joints) == 1 else _shared_name(joints)
        while not key or key in named:
            key = f"{key or 'group'}_{len(named)}"
        named[key] = (drive, joints)
    return named


def _shared_name(names: list[str]) -> str:
    """The longest suffix (else prefix) all ``names`` share, trimmed of separators and of
    the word ``joint``."""

    def common(words: list[str]) -> str:
        n = 0
        while all(len(w) > n and w[n] == words[0][n] for w in words):
            n += 1
        return words[0][:n]

    suffix = common([n[::-1] for n in names])[::-1]
    suffix = re.sub(r"(?i)^[_.\- ]*(joint)?[_.\- ]*|[_.\- ]*(joint)?[_.\- ]*$", "", suffix)
    if len(suffix) >= 3:
        return suffix
    prefix = re.sub(r"[_.\- ]+$", "", common(names))
    return prefix if len(prefix) >= 3 else ""


def robot_path(model: str) -> str:
    """The model as the config names it: a ``menagerie:`` name as given, a path absolute
    (the generated package may be imported from anywhere)."""
    from robolearn.scene.models import MENAGERIE

    return model if model.startswith(MENAGERIE) else str(Path(model).expanduser().resolve())


def task_module_text(robot: DerivedRobot, name: str, package: str) -> str:
    """The task module's text: it registers ``<name>_walk`` and ``<name>_walk_rough``."""
    kind = {2: "biped", 4: "quadruped"}.get(len(robot.feet), f"{len(robot.feet)}-legged robot")
    flat = _registration(f"{name}_walk", f"{name} follows velocity commands on flat ground", "")
    rough = _registration(
        f"{name}_walk_rough", f"{name} follows velocity commands on rough terrain", "rough_"
    )
    return f'''"""{name}_walk and {name}_walk_rough: the velocity family on {name}, a {kind}.

Written by `robolearn new robot` (robolearn {__version__}); {name}.py holds the robot config
and the values these tasks read. Train with
`robolearn train --import {package} --task {name}_walk`.
"""

from __future__ import annotations

from robolearn.registry import TaskSpec, register_task
from robolearn.tasks.velocity.walker import (
    walk_agent_cfg,
    walk_env_cfg,
    walk_play_cfg,
    walk_rough_env_cfg,
    walk_rough_play_cfg,
)

from {package}.{name} import walker


def env_cfg():
    return walk_env_cfg(walker())


def play_env_cfg():
    return walk_play_cfg(walker())


def agent_cfg():
    return walk_agent_cfg(walker())


def rough_env_cfg():
    return walk_rough_env_cfg(walker())


def rough_play_env_cfg():
    return walk_rough_play_cfg(walker())


def rough_agent_cfg():
    return walk_agent_cfg(walker(), rough=True)


{flat}
{rough}'''
