"""Run an exported robolearn policy the way a robot's computer would: ONNX, numpy, mujoco.

A plain MuJoCo simulation of one robot (``mujoco.MjModel``/``MjData``, ``mj_step``) stands
in for the robot. Every control period the loop reads the robot's state, builds the
observation vector from ``policy.json`` alone (no robolearn, no torch: its managers are
not here), runs the ONNX policy, and writes joint position targets to the actuators as the
task's action term does (``ctrl = offset + scale * action``); then physics runs
``decimation`` steps of the policy's physics dt. It prints the distance walked and the
latency percentiles of the policy call and of the whole control step.

    python examples/deploy/run_onnx.py --policy assets/pretrained/humanoid_walk/policy.onnx \\
        --mjcf assets/humanoid/scene.xml --command 0.5 0 0 --duration 5

A mistake (a missing file, a policy.json that does not fit the ONNX file or the MJCF, an
observation term this script cannot compute) prints one line and exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
import onnxruntime as ort

EXIT_USAGE = 2


class DeployError(Exception):
    """A mistake in the inputs: the message names it; the script exits with status 2."""


# ---- the robot's state, as a robot-side program reads it -----------------------------------


class Robot:
    """The simulated robot: its model, its state, and where its base and joints live."""

    def __init__(
        self, mjcf: Path, desc: dict[str, Any], own_physics: bool = False, floor: bool = False
    ) -> None:
        try:
            self.model = load_model(mjcf, floor)
        except (ValueError, OSError) as exc:
            raise DeployError(f"cannot load {mjcf}: {str(exc).strip().splitlines()[0]}") from None
        m = self.model
        # The policy was trained at this physics step and gravity; the MJCF may say others
        # (robolearn's SimCfg overrides them per task). A sim-to-sim check keeps the
        # model's own (``own_physics``): the vendor's simulation is the one to pass.
        if not own_physics:
            m.opt.timestep = float(desc["physics_dt_s"])
            if "gravity" in desc.get("physics", {}):
                m.opt.gravity[:] = desc["physics"]["gravity"]
        self.data = mujoco.MjData(m)
        robot = desc["robot"]
        root = _lookup(m, mujoco.mjtObj.mjOBJ_BODY, robot["root_body"], "body", mjcf)
        joint = int(m.body_jntadr[root])
        if joint < 0 or int(m.jnt_type[joint]) != int(mujoco.mjtJoint.mjJNT_FREE):
            raise DeployError(f"{robot['root_body']!r} in {mjcf} is not a floating base")
        self.root_body = root
        self.root_qpos = int(m.jnt_qposadr[joint])
        self.root_dof = int(m.jnt_dofadr[joint])
        self.mjcf = mjcf
        self.keyframe = robot.get("keyframe")
        self.root_pose = robot.get("root_pose")
        self.read()

    def joint_columns(self, names: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(qpos addresses, qvel addresses) of the named joints, in that order."""
        ids = [_lookup(self.model, mujoco.mjtObj.mjOBJ_JOINT, n, "joint", self.mjcf) for n in names]
        return self.model.jnt_qposadr[ids].copy(), self.model.jnt_dofadr[ids].copy()

    def reset(self, default_joint_pos: dict[str, float]) -> None:
        """The pose training starts from: the task's keyframe if the MJCF has it, else the
        model's qpos0 with the default joint positions."""
        m, d = self.model, self.data
        key = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_KEY, self.keyframe or "")
        if key >= 0:
            mujoco.mj_resetDataKeyframe(m, d, key)
        else:
            mujoco.mj_resetData(m, d)
            qpos, _ = self.joint_columns(list(default_joint_pos))
            d.qpos[qpos] = list(default_joint_pos.values())
            if self.root_pose is not None:  # policy.json's start pose (schema 4)
                d.qpos[self.root_qpos : self.root_qpos + 7] = self.root_pose
        mujoco.mj_forward(m, d)
        self.read()

    def read(self) -> None:
        """Read the base's pose once per control tick: several terms use it."""
        self.base_pos = self.data.qpos[self.root_qpos : self.root_qpos + 3].copy()
        mat = np.empty(9)  # MuJoCo's quaternions are (w, x, y, z)
        mujoco.mju_quat2Mat(mat, self.data.qpos[self.root_qpos + 3 : self.root_qpos + 7])
        self.base_rot = mat.reshape(3, 3)
        """World-from-base rotation."""


def load_model(mjcf: Path, floor: bool = False) -> mujoco.MjModel:
    """The MJCF's model; with ``floor``, a ground plane at z = 0 added where its world has
    none (a robot's own file, such as a vendor's, has no floor)."""
    if not floor:
        return mujoco.MjModel.from_xml_path(str(mjcf))
    spec = mujoco.MjSpec.from_file(str(mjcf))
    plane = mujoco.mjtGeom.mjGEOM_PLANE
    if not any(g.type == plane for g in spec.worldbody.geoms):
        spec.worldbody.add_geom(name="floor", type=plane, size=[0, 0, 0.05])
    return spec.compile()


def _lookup(model: mujoco.MjModel, kind: int, name: str, what: str, mjcf: Path) -> int:
    index = mujoco.mj_name2id(model, kind, name)
    if index < 0:
        raise DeployError(f"policy.json names {what} {name!r}, which {mjcf} does not have")
    return index


# ---- the observation, term by term from policy.json ----------------------------------------


class Observer:
    """Builds the policy's observation vector from ``policy.json``'s terms, in order: per
    term its function's value, clipped, scaled, and stacked over ``history_length`` steps
    as robolearn's observation manager does (noise is a training-time thing: none here)."""

    def __init__(self, desc: dict[str, Any], robot: Robot, command: np.ndarray) -> None:
        self.robot = robot
        self.last_action = np.zeros(desc["action"]["dim"])
        self.clocks: dict[str, float] = {}  # gait phase in [0, 1) per clock command
        self.command = command
        self.commands = desc.get("commands", {})
        self.terms: list[tuple[dict[str, Any], Callable[[], np.ndarray], deque | None]] = []
        for term in desc["observation"]["terms"]:
            history = term.get("history_length") or 0
            ring = deque(maxlen=history) if history > 0 else None
            self.terms.append((term, self._term(term), ring))

    def _term(self, term: dict[str, Any]) -> Callable[[], np.ndarray]:
        """A function computing one term's raw value from the robot's state."""
        name = term["function"].rsplit(":", 1)[-1]
        params = term.get("params", {})
        robot = self.robot
        d = robot.data
        if name == "base_lin_vel":  # the free joint's linear velocity is in the world frame
            return lambda: robot.base_rot.T @ d.qvel[robot.root_dof : robot.root_dof + 3]
        if name == "base_ang_vel":  # and its angular velocity in the body frame
            return lambda: d.qvel[robot.root_dof + 3 : robot.root_dof + 6].copy()
        if name == "projected_gravity":
            return lambda: robot.base_rot.T @ np.array([0.0, 0.0, -1.0])
        if name == "base_height":
            return lambda: robot.base_pos[2:3]
        if name in ("joint_pos_rel", "joint_pos", "joint_vel_rel"):
            qpos, dof = robot.joint_columns(term["joint_names"])
            if name == "joint_vel_rel":
                return lambda: d.qvel[dof].copy()
            default = np.asarray(term.get("default_joint_pos", np.zeros(len(qpos))))
            return lambda: d.qpos[qpos] - default
        if name == "last_action":
            return lambda: self.last_action.copy()
        if name == "generated_commands":
            return self._command_term(params["command_name"])
        if name == "sensor":
            sensor = _lookup(
                robot.model, mujoco.mjtObj.mjOBJ_SENSOR, params["name"], "sensor", robot.mjcf
            )
            adr, dim = int(robot.model.sensor_adr[sensor]), int(robot.model.sensor_dim[sensor])
            return lambda: d.sensordata[adr : adr + dim].copy()
        if name == "height_scan":
            return HeightScan(robot, **params)
        raise DeployError(
            f"observation term {term['term']!r} uses {term['function']}, which this script "
            f"does not compute; it computes: {', '.join(sorted(SUPPORTED))}"
        )

    def _command_term(self, command_name: str) -> Callable[[], np.ndarray]:
        spec = self.commands.get(command_name)
        if spec is None:
            raise DeployError(f"policy.json describes no command {command_name!r}")
        if spec["type"] == "UniformVelocityCommand":
            return lambda: self.command
        if spec["type"] == "GaitPhaseCommand":
            self.clocks[command_name] = 0.0
            return lambda: np.array(
                [
                    math.sin(2 * math.pi * self.clocks[command_name]),
                    math.cos(2 * math.pi * self.clocks[command_name]),
                ]
            )
        raise DeployError(
            f"command {command_name!r} is a {spec['type']}; this script feeds "
            "UniformVelocityCommand (--command) and GaitPhaseCommand (a clock)"
        )

    def __call__(self) -> np.ndarray:
        """The observation vector now, float32."""
        self.robot.read()
        parts = []
        for term, fn, ring in self.terms:
            value = np.asarray(fn(), dtype=np.float64)
            if term.get("clip") is not None:
                value = np.clip(value, *term["clip"])
            if term.get("scale") is not None:
                value = value * term["scale"]
            if ring is not None:  # oldest first; a fresh history repeats the first value
                if not ring:
                    ring.extend([value] * ring.maxlen)
                ring.append(value)
                value = np.concatenate(list(ring))
            if value.size != term["dim"]:
                raise DeployError(
                    f"observation term {term['term']!r} has {value.size} values here; "
                    f"policy.json says {term['dim']} (another robot model?)"
                )
            parts.append(value)
        return np.concatenate(parts).astype(np.float32)

    def advance(self, dt: float) -> None:
        """One control period passed: the gait clocks move on, as the env's commands do
        after each step."""
        for name in self.clocks:
            self.clocks[name] = (self.clocks[name] + dt / self.commands[name]["period_s"]) % 1.0


class HeightScan:
    """Heights of the ground below the base at a grid of points around it (robolearn's
    ``height_scan``): an x-major (size_x, size_y) grid every ``resolution`` m, turned with
    the base's heading; each value is base height - ground height - ``offset``. The ground
    is the highest static geom of the world under each point (a real robot reads a height
    map from its perception instead); on robolearn's flat ground that is the floor, z = 0,
    as in training. A policy trained on a ray caster's scan (``sensor`` named) saw every
    body under the grid; this reads the static world only, which is the same where nothing
    else stands there."""

    def __init__(
        self,
        robot: Robot,
        size=(1.6, 1.0),
        resolution: float = 0.1,
        offset: float = 0.5,
        sensor: str | None = None,
    ):
        xs = np.arange(-size[0] / 2, size[0] / 2 + 1e-6, resolution)
        ys = np.arange(-size[1] / 2, size[1] / 2 + 1e-6, resolution)
        gx, gy = np.meshgrid(xs, ys, indexing="ij")
        self.pattern = np.stack((gx.ravel(), gy.ravel()), axis=-1)
        self.robot, self.offset = robot, offset
        m = robot.model
        static = [g for g in range(m.ngeom) if m.body_weldid[m.geom_bodyid[g]] == 0]
        # Planes (the usual floor) in closed form for all points at once; other geoms
        # (boxes, height fields) by one ray per point.
        self.planes = [g for g in static if m.geom_type[g] == mujoco.mjtGeom.mjGEOM_PLANE]
        self.others = [g for g in static if g not in self.planes]

    def __call__(self) -> np.ndarray:
        base = self.robot.base_pos
        rot = self.robot.base_rot
        yaw = math.atan2(rot[1, 0], rot[0, 0])
        c, s = math.cos(yaw), math.sin(yaw)
        px, py = self.pattern[:, 0], self.pattern[:, 1]
        x, y = base[0] + c * px - s * py, base[1] + s * px + c * py
        top = base[2] + 2.0  # rays start well above anything the robot stands on
        ground = np.full(len(x), -np.inf)
        d = self.robot.data
        for g in self.planes:
            normal, origin = d.geom_xmat[g].reshape(3, 3)[:, 2], d.geom_xpos[g]
            if abs(normal[2]) > 1e-6:  # a wall is no ground
                z = (
                    origin[2]
                    - (normal[0] * (x - origin[0]) + normal[1] * (y - origin[1])) / normal[2]
                )
                ground = np.maximum(ground, np.where(z <= top, z, -np.inf))
        if self.others:
            ground = np.maximum(
                ground, [self._ray(xi, yi, top) for xi, yi in zip(x, y, strict=True)]
            )
        ground = np.where(np.isfinite(ground), ground, 0.0)
        return base[2] - ground - self.offset

    def _ray(self, x: float, y: float, top: float) -> float:
        """The highest surface of the non-plane static geoms under (x, y), or -inf."""
        m, d = self.robot.model, self.robot.data
        start, down = np.array([x, y, top]), np.array([0.0, 0.0, -1.0])
        nearest = math.inf
        for g in self.others:
            if m.geom_type[g] == mujoco.mjtGeom.mjGEOM_HFIELD:
                dist = mujoco.mj_rayHfield(m, d, g, start, down)
            else:
                dist = mujoco.mju_rayGeom(
                    d.geom_xpos[g], d.geom_xmat[g], m.geom_size[g], start, down, m.geom_type[g]
                )
            if dist >= 0:
                nearest = min(nearest, dist)
        return top - nearest if nearest < math.inf else -math.inf


SUPPORTED = (
    "base_lin_vel", "base_ang_vel", "projected_gravity", "base_height", "joint_pos_rel",
    "joint_pos", "joint_vel_rel", "last_action", "generated_commands", "sensor", "height_scan",
)  # fmt: skip


# ---- the action, as the task's action term applies it --------------------------------------


class Actuation:
    """Writes the policy's action to ``ctrl``: per action term ``offset + scale * action``
    (the action clipped first where the term clips) on its actuators; actuators no term
    drives hold the control the task gave them at reset."""

    def __init__(self, desc: dict[str, Any], robot: Robot) -> None:
        m, self.robot = robot.model, robot
        self.slices: list[tuple[slice, np.ndarray, np.ndarray, float, list | None]] = []
        start = 0
        for term in desc["action"]["terms"]:
            if term["type"] not in ("JointPositionAction", "JointEffortAction"):
                raise DeployError(f"action term {term['term']!r} is a {term['type']}")
            ids = np.array(
                [
                    _lookup(m, mujoco.mjtObj.mjOBJ_ACTUATOR, a, "actuator", robot.mjcf)
                    for a in term["actuators"]
                ]
            )
            dim = len(ids)
            offset = np.asarray(term.get("offset", np.zeros(dim)), dtype=np.float64)
            self.slices.append(
                (slice(start, start + dim), ids, offset, term["scale"], term.get("clip"))
            )
            start += dim
        if start != desc["action"]["dim"]:
            raise DeployError(
                f"the action terms drive {start} actuators; the action has {desc['action']['dim']}"
            )
        held = desc["action"].get("held_actuators", {"actuators": [], "ctrl": []})
        self.held = np.array(
            [
                _lookup(m, mujoco.mjtObj.mjOBJ_ACTUATOR, a, "actuator", robot.mjcf)
                for a in held["actuators"]
            ],
            dtype=int,
        )
        self.held_ctrl = np.asarray(held["ctrl"], dtype=np.float64)

    def hold(self) -> None:
        """The controls of the actuators the policy does not drive."""
        self.robot.data.ctrl[self.held] = self.held_ctrl

    def apply(self, action: np.ndarray) -> None:
        ctrl = self.robot.data.ctrl
        for cols, ids, offset, scale, clip in self.slices:
            a = action[cols]
            if clip is not None:
                a = np.clip(a, *clip)
            ctrl[ids] = offset + scale * a


# ---- the loop --------------------------------------------------------------------------------


def load_description(path: Path) -> dict[str, Any]:
    """policy.json, checked for what this script reads (schema 2 or later)."""
    if not path.is_file():
        raise DeployError(f"{path} does not exist: robolearn export writes it beside the policy")
    try:
        desc = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DeployError(f"{path} is not valid JSON ({exc})") from None
    if not isinstance(desc, dict) or desc.get("schema_version", 1) < 2:
        raise DeployError(
            f"{path} is a policy description of schema 1, without what a robot needs to build "
            "the observation; export the policy again with robolearn export"
        )
    return desc


def open_policy(path: Path, desc: dict[str, Any]) -> tuple[ort.InferenceSession, str]:
    """The ONNX session, checked against the description's widths."""
    if not path.is_file():
        raise DeployError(f"{path} does not exist")
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1  # one observation per call: a thread pool only adds jitter
    try:
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime's errors are not importable types
        raise DeployError(
            f"{path} is not an ONNX policy ({str(exc).strip().splitlines()[0][:160]})"
        ) from None
    (inp,), (out,) = session.get_inputs(), session.get_outputs()
    if inp.shape[-1] != desc["observation"]["dim"] or out.shape[-1] != desc["action"]["dim"]:
        raise DeployError(
            f"{path} maps {inp.shape[-1]} observation values to {out.shape[-1]} actions; "
            f"its policy.json says {desc['observation']['dim']} to {desc['action']['dim']}"
        )
    return session, inp.name


def percentiles(seconds: list[float]) -> dict[str, float]:
    """p50, p90 and p99 in microseconds."""
    us = np.asarray(seconds) * 1e6
    return {f"p{q}": round(float(np.percentile(us, q)), 1) for q in (50, 90, 99)}


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run the policy on the simulated robot for ``args.duration`` seconds."""
    policy_path = Path(args.policy)
    desc = load_description(
        Path(args.description) if args.description else policy_path.with_name("policy.json")
    )
    session, input_name = open_policy(policy_path, desc)
    robot = Robot(Path(args.mjcf), desc)
    command = np.asarray(args.command, dtype=np.float64)
    observe = Observer(desc, robot, command)
    actuate = Actuation(desc, robot)
    defaults = dict(
        zip(desc["robot"]["joint_names"], desc["robot"]["default_joint_pos"], strict=True)
    )
    robot.reset(defaults)
    actuate.hold()

    control_dt, decimation = float(desc["control_dt_s"]), int(desc["decimation"])
    steps = round(args.duration / control_dt)
    start = robot.base_pos
    lowest = start[2]
    policy_s, control_s, overruns = [], [], 0
    next_tick = time.perf_counter()
    for _ in range(steps):
        t0 = time.perf_counter()
        obs = observe()
        t1 = time.perf_counter()
        action = session.run(None, {input_name: obs[None]})[0][0]
        t2 = time.perf_counter()
        actuate.apply(action)
        observe.last_action = action.astype(np.float64)
        t3 = time.perf_counter()
        policy_s.append(t2 - t1)
        control_s.append(t3 - t0)
        # The robot's side: physics stands in for the hardware between two control ticks.
        for _ in range(decimation):
            mujoco.mj_step(robot.model, robot.data)
        observe.advance(control_dt)
        robot.read()
        lowest = min(lowest, robot.base_pos[2])
        if args.realtime:
            next_tick += control_dt
            wait = next_tick - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            else:
                overruns += 1
                next_tick = time.perf_counter()  # late: start the next period now
    end = robot.base_pos
    heading = robot.base_rot[:, 0]
    return {
        "policy": str(policy_path),
        "mjcf": str(args.mjcf),
        "command": command.tolist(),
        "control_dt_s": control_dt,
        "physics_dt_s": float(robot.model.opt.timestep),
        "decimation": decimation,
        "steps": steps,
        "sim_time_s": steps * control_dt,
        "base_start": start.tolist(),
        "base_end": end.tolist(),
        "forward_m": float(end[0] - start[0]),
        "lateral_m": float(end[1] - start[1]),
        "min_base_height_m": float(lowest),
        "final_heading_rad": math.atan2(heading[1], heading[0]),
        "realtime": bool(args.realtime),
        "overruns": overruns,
        "latency_us": {"policy": percentiles(policy_s), "control_step": percentiles(control_s)},
    }


def run_and_report(
    prog: str, run: Callable[[argparse.Namespace], dict[str, Any]], args: argparse.Namespace
) -> tuple[int, dict[str, Any] | None]:
    """``run(args)``: (2, None) after one line on stderr for a mistake; (0, None) after
    printing the report as one JSON line with ``--json``; else (0, the report) to print."""
    try:
        report = run(args)
    except DeployError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE, None
    if args.json:
        print(json.dumps(report))
        return 0, None
    return 0, report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Run an exported ONNX policy on a plain MuJoCo model of the robot."
    )
    parser.add_argument("--policy", required=True, help="policy.onnx from robolearn export")
    parser.add_argument("--description", help="its policy.json (default: beside the policy)")
    parser.add_argument("--mjcf", required=True, help="the robot's MJCF (with its ground)")
    parser.add_argument(
        "--command",
        nargs=3,
        type=float,
        default=(0.5, 0.0, 0.0),
        metavar=("VX", "VY", "YAW_RATE"),
        help="velocity command: m/s forward and left in the heading frame, rad/s (default 0.5 0 0)",
    )
    parser.add_argument("--duration", type=float, default=5.0, help="simulated seconds (default 5)")
    parser.add_argument(
        "--no-realtime",
        dest="realtime",
        action="store_false",
        help="do not wait for each control tick (run as fast as the CPU allows)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    status, report = run_and_report("run_onnx", run, args)
    if report is None:
        return status
    lat = report["latency_us"]
    print(
        f"{report['sim_time_s']:.2f} s at {1 / report['control_dt_s']:.0f} Hz "
        f"(physics dt {report['physics_dt_s']} s x {report['decimation']}), "
        f"command {report['command']}"
    )
    print(
        f"base moved {report['forward_m']:+.2f} m forward, {report['lateral_m']:+.2f} m left; "
        f"lowest base height {report['min_base_height_m']:.3f} m"
    )
    for what in ("policy", "control_step"):
        p = lat[what]
        print(
            f"{what:>12} latency (us): p50 {p['p50']:.0f}, p90 {p['p90']:.0f}, p99 {p['p99']:.0f}"
        )
    if report["realtime"]:
        print(f"control ticks late: {report['overruns']} of {report['steps']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
