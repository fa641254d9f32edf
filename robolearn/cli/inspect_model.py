"""``robolearn inspect MODEL``: what robolearn sees in an MJCF, and which engines run it."""

from __future__ import annotations

import argparse
import dataclasses
import json

EXIT_SOME_ENGINE_REFUSES = 1


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``robolearn inspect`` to the subcommands."""
    p = sub.add_parser(
        "inspect",
        help="what robolearn sees in an MJCF model",
        description=(
            "Compile an MJCF as the engines do and print its floating bases, joints with "
            "ranges, actuators with their kind and gains, bodies, sensors, keyframes, timestep "
            "and solver, and which engines accept it. Exit status: 0 every engine runs it, "
            f"{EXIT_SOME_ENGINE_REFUSES} an engine refuses it (the cpu engine runs any model "
            "that compiles), 2 it does not load or compile."
        ),
    )
    p.add_argument("model", help="path of an MJCF file")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Print what robolearn sees in the model; the exit status says which engines run it."""
    from robolearn.sim.inspect import inspect_model

    report = inspect_model(args.model)
    if args.json:
        print(json.dumps(dataclasses.asdict(report)))
    else:
        print("\n".join(format_report(report)))
    return 0 if report.runs_everywhere else EXIT_SOME_ENGINE_REFUSES


def _joint(j: dict) -> str:
    limits = f" range [{j['range'][0]:g}, {j['range'][1]:g}]" if "range" in j else ""
    return f"{j['name']} ({j['type']}, body {j['body']}){limits}"


def _actuator(a: dict) -> str:
    kind = a["kind"]
    gains = {
        "position": lambda: f"kp {a['kp']:g}, kv {a['kv']:g}",
        "velocity": lambda: f"kv {a['kv']:g}",
        "motor": lambda: f"gear x ctrl, gain {a['gain']:g}",
        "general": lambda: f"gain {a['gain']}, bias {a['bias']}",
    }[kind]()
    where = f" on {a['joint']}" if "joint" in a else ""
    ctrl = f", ctrl [{a['ctrlrange'][0]:g}, {a['ctrlrange'][1]:g}]" if "ctrlrange" in a else ""
    force = f", force [{a['forcerange'][0]:g}, {a['forcerange'][1]:g}]" if "forcerange" in a else ""
    return f"{a['name']}: {kind}{where} ({gains}{ctrl}{force})"


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
    lines.append("engines:")
    for engine, reason in r.engines.items():
        label = "cuda, warp-cpu (MuJoCo Warp)" if engine == "warp" else engine
        lines.append(f"  {label}: {'runs it' if reason is None else 'refuses it: ' + reason}")
    return lines
