"""``robolearn inspect MODEL``: what robolearn sees in an MJCF, and which engines run it."""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections import Counter
from pathlib import Path

EXIT_SOME_ENGINE_REFUSES = 1
GEOMS_LISTED_PER_BODY = 8
"""A body's named geoms listed by name in the text report; the rest are counted (all are
in --json)."""


def register(sub: argparse._SubParsersAction, help: str) -> None:
    """Add ``robolearn inspect`` to the subcommands."""
    p = sub.add_parser(
        "inspect",
        help=help,
        description=(
            "Compile an MJCF as the engines do and print its floating bases, joints (range, "
            "damping, armature, the force limits that bound them), actuators with their kind "
            "and gains, bodies, geoms (which can collide), sites, sensors, keyframes, "
            "timestep and solver, and which engines accept it. Exit status: 0 every engine "
            "runs it, "
            f"{EXIT_SOME_ENGINE_REFUSES} an engine refuses it (the cpu engine runs any model "
            "that compiles), 2 it does not load or compile, or is not an MJCF file."
        ),
    )
    p.add_argument(
        "model",
        help="an MJCF file: a path, a robolearn asset (humanoid/scene.xml) or a MuJoCo "
        "Menagerie name (menagerie:unitree_g1, menagerie:unitree_g1/g1)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Print what robolearn sees in the model; the exit status says which engines run it."""
    from robolearn.assets import ASSETS_DIR
    from robolearn.scene.models import MENAGERIE, resolve_model_path
    from robolearn.sim.inspect import inspect_model

    # a Menagerie name or a shipped asset becomes its file; any other path is inspected as
    # given (inspect says what is wrong with a file that is missing or not an MJCF)
    model = args.model
    if model.startswith(MENAGERIE) or (
        not Path(model).expanduser().exists() and (ASSETS_DIR / model).is_file()
    ):
        model = resolve_model_path(model)
    report = inspect_model(model)
    if args.json:
        print(json.dumps(dataclasses.asdict(report)))
    else:
        print("\n".join(format_report(report)))
    return 0 if report.runs_everywhere else EXIT_SOME_ENGINE_REFUSES


def _range(lo: float, hi: float) -> str:
    return f"±{hi:g}" if lo == -hi and hi > 0 else f"[{lo:g}, {hi:g}]"


def _joint(j: dict) -> str:
    limits = f" range [{j['range'][0]:g}, {j['range'][1]:g}]" if "range" in j else ""
    text = f"{j['name']} ({j['type']}, body {j['body']}){limits}"
    moves = j["type"] in ("hinge", "slide")
    extra = [
        f"{key} {j[key]:g}"
        for key in ("damping", "armature", "frictionloss")
        if j[key] or (moves and key != "frictionloss")
    ]
    if moves or j["actuators"] or "actuatorfrcrange" in j:
        extra.append(_joint_force(j))
    return text + (", " + ", ".join(extra) if extra else "")


def _joint_force(j: dict) -> str:
    """What bounds the force the actuators put on a joint, in a few words."""
    what = "torque" if j["type"] == "hinge" else "force"
    frc = j.get("actuatorfrcrange")
    if not j["actuators"]:
        return "no actuator" + (f", actuatorfrcrange {_range(*frc)}" if frc else "")
    if j["type"] not in ("hinge", "slide"):
        names = ", ".join(a["name"] for a in j["actuators"])
        return f"driven by {names} (force limits are not worked out for a {j['type']} joint)"
    parts = []
    for a in j["actuators"]:
        gear = f" x gear {a['gear']:g}" if a["gear"] != 1 else ""
        if a["force"] is None:
            parts.append(f"{a['name']} has no forcerange")
        elif len(j["actuators"]) == 1 and frc is None:
            whose = "actuator" if a["name"] == j["name"] else f"actuator {a['name']}"
            parts.append(f"{whose} {a['bounded_by']}{gear}")
        else:
            parts.append(f"{a['name']} {_range(*a['force'])} from {a['bounded_by']}{gear}")
    if frc is not None:
        parts.insert(0, f"actuatorfrcrange {_range(*frc)}")
    limit = j["force_limit"]
    return f"{what} {'unbounded' if limit is None else _range(*limit)} ({'; '.join(parts)})"


def _actuator(a: dict) -> str:
    kind = a["kind"]
    gains = {
        "position": lambda: f"kp {a['kp']:g}, kv {a['kv']:g}",
        "velocity": lambda: f"kv {a['kv']:g}",
        "motor": lambda: f"gear x ctrl, gain {a['gain']:g}",
        "general": lambda: f"gain {a['gain']}, bias {a['bias']}",
    }[kind]()
    where = f" on {a['joint']}" if "joint" in a else ""
    gear = f", gear {a['gear']:g}" if a.get("gear", 1) != 1 else ""
    ctrl = f", ctrl [{a['ctrlrange'][0]:g}, {a['ctrlrange'][1]:g}]" if "ctrlrange" in a else ""
    force = f", force [{a['forcerange'][0]:g}, {a['forcerange'][1]:g}]" if "forcerange" in a else ""
    return f"{a['name']}: {kind}{where} ({gains}{gear}{ctrl}{force})"


def _geom_lines(geoms: list[dict]) -> list[str]:
    """The geoms, one line per body: named ones by name and type, unnamed ones counted by
    type; contype/conaffinity shown where they differ from most colliding geoms'."""
    colliding = [g for g in geoms if g["collides"]]
    pairs = Counter((g["contype"], g["conaffinity"]) for g in colliding).most_common(1)
    common = pairs[0][0] if pairs else None
    title = f"geoms ({len(geoms)}"
    if geoms:
        title += f"; {len(colliding)} can collide"
        if common is not None:
            title += f", contype/conaffinity {common[0]}/{common[1]} unless shown"
        title += f"; {len(geoms) - len(colliding)} visual only, contype and conaffinity 0"
    lines = [title + "):"]
    bodies: dict[str, list[dict]] = {}
    for g in geoms:
        bodies.setdefault(g["body"], []).append(g)
    for body, items in bodies.items():
        named, unnamed = [], Counter()
        for g in items:
            notes = []
            pair = (g["contype"], g["conaffinity"])
            if g["collides"] and pair != common:
                notes.append(f"{pair[0]}/{pair[1]}")
            if not g["collides"]:
                notes.append("visual")
            desc = ", ".join([g["type"], *notes])
            if g["named"]:
                named.append(f"{g['name']} ({desc})")
            else:
                unnamed[desc] += 1
        shown = named[:GEOMS_LISTED_PER_BODY]
        if len(named) > len(shown):
            shown.append(f"{len(named) - len(shown)} more named")
        shown += [f"{n} unnamed ({desc})" for desc, n in unnamed.items()]
        lines.append(f"  {body}: {', '.join(shown)}")
    return lines


def _site_lines(sites: list[dict]) -> list[str]:
    bodies: dict[str, list[str]] = {}
    for site in sites:
        bodies.setdefault(site["body"], []).append(site["name"])
    return [f"sites ({len(sites)}):"] + [
        f"  {body}: {', '.join(names)}" for body, names in bodies.items()
    ]


def format_report(r) -> list[str]:
    """The report as indented text, one line per item."""
    lines = [
        f"model {r.name}: timestep {r.timestep:g} s, integrator {r.integrator}, solver "
        f"{r.solver} ({r.iterations} iterations), {r.cone} cone"
    ]
    bases = ", ".join(f"{b['body']} (qpos {b['qpos']}:{b['qpos'] + 7})" for b in r.floating_bases)
    lines.append(f"floating bases: {bases or 'none (fixed to the world)'}")
    sections = [
        ("joints", [_joint(j) for j in r.joints]),
        ("actuators", [_actuator(a) for a in r.actuators]),
        ("bodies", [", ".join(r.bodies)] if r.bodies else []),
        (
            "sensors",
            [
                f"{s['name']} ({s['type']}, {s['dim']} values)"
                + (" added by robolearn for contact forces" if s["added_by_robolearn"] else "")
                for s in r.sensors
            ],
        ),
        ("keyframes", [", ".join(r.keyframes)] if r.keyframes else []),
    ]
    for title, items in sections:
        count = (
            len(r.bodies)
            if title == "bodies"
            else len(r.keyframes)
            if title == "keyframes"
            else len(items)
        )
        lines.append(f"{title} ({count}):")
        lines += [f"  {item}" for item in items]
        if title == "bodies":
            lines += _geom_lines(r.geoms) + _site_lines(r.sites)
    lines.append("engines:")
    for engine, reason in r.engines.items():
        label = "cuda, warp-cpu (MuJoCo Warp)" if engine == "warp" else engine
        lines.append(f"  {label}: {'runs it' if reason is None else 'refuses it: ' + reason}")
    return lines
