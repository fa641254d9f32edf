"""The robot owner's sim-to-sim check: an exported policy on the vendor's own robot model.

Before a policy goes onto a real robot, its owner runs it in a simulation that is not the
one it trained in: the vendor's MJCF with the vendor's masses, armature, joint friction and
solver settings, torque motors instead of the simulator's position loops, the motor loop at
the physics rate and the policy at its own (as Unitree's unitree_rl_gym ``deploy_mujoco``
does). A policy that only works in its training simulator falls here.

Per physics step of the model's own timestep, each joint's motor gets the torque of the
position loop the policy was trained with, ``kp (target - q) - kd qd`` clipped to the
joint's torque limit (``robot.drives`` of policy.json, schema 4); per control period the
policy reads the observation (built as ``run_onnx.py`` builds it) and sets the targets.
Joints with a position actuator in the file get the target as their control instead.

Several episodes, each from the policy's start pose with a velocity command drawn from
the task's ranges (or one fixed ``--command``), report falls (the base below
``--fall_height``, half its start height unless given, or tilted past 60 degrees) and how
well the robot tracks its command: linear velocity error (m/s, heading frame) and yaw-rate
error (rad/s), averaged over the time before a fall. ``--engine warp-cpu`` runs the same
loop on MuJoCo Warp (on the CPU) instead of MuJoCo: the GPU engine's physics, checked here
without a GPU.

    python examples/deploy/sim2sim.py --policy assets/pretrained/go2_walk/policy.onnx \\
        --mjcf /path/to/unitree_mujoco/unitree_robots/go2/go2.xml --episodes 8

The robot's own file, not a scene: a flat floor is added where its world has none (Unitree's
Go2 ``scene.xml`` lays bars and stairs in the robot's way, which no flat-ground policy is
trained for).

Needs mujoco, numpy and onnxruntime (and mujoco-warp for ``--engine warp-cpu``). A mistake
prints one line and exits with status 2.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
# the sibling script, found by the line above
from run_onnx import (
    DeployError,
    Observer,
    Robot,
    load_description,
    open_policy,
    run_and_report,
)

_JOINT = int(mujoco.mjtTrn.mjTRN_JOINT)
_FIXED = int(mujoco.mjtGain.mjGAIN_FIXED)
_NONE = int(mujoco.mjtBias.mjBIAS_NONE)
_AFFINE = int(mujoco.mjtBias.mjBIAS_AFFINE)


class MotorLoop:
    """The joints' position loops, run by this program at every physics step on the
    model's torque motors (or by MuJoCo, on a position actuator the model has)."""

    def __init__(self, desc: dict[str, Any], robot: Robot) -> None:
        m, self.robot = robot.model, robot
        drives = {d["joint"]: d for d in desc["robot"].get("drives", [])}
        if not drives:
            raise DeployError(
                "policy.json has no robot.drives (the joints' gains): export the policy "
                "again with this robolearn (policy.json schema 4)"
            )
        on_joint = {
            m.joint(int(m.actuator_trnid[a, 0])).name: a
            for a in range(m.nu)
            if int(m.actuator_trntype[a]) == _JOINT
        }
        # Every joint the policy or the hold drives, and the target each term writes
        self.terms: list[tuple[slice, np.ndarray, np.ndarray, float, list | None]] = []
        joints: list[str] = []
        start = 0
        for term in desc["action"]["terms"]:
            if term["type"] != "JointPositionAction" or not term.get("joints"):
                raise DeployError(
                    f"action term {term['term']!r} is a {term['type']}; the motor loop takes "
                    "joint position targets"
                )
            dim = len(term["joints"])
            rows = np.arange(len(joints), len(joints) + dim)
            offset = np.asarray(term.get("offset", np.zeros(dim)), dtype=np.float64)
            self.terms.append(
                (slice(start, start + dim), rows, offset, term["scale"], term.get("clip"))
            )
            joints += term["joints"]
            start += dim
        held = desc["action"].get("held_actuators", {})
        held_joints = held.get("joints", [])
        if len(held_joints) != len(held.get("actuators", [])) or None in held_joints:
            raise DeployError("policy.json's held actuators name no joints (schema 4 does)")
        self.held_rows = np.arange(len(joints), len(joints) + len(held_joints))
        self.held_targets = np.asarray(held.get("ctrl", []), dtype=np.float64)
        joints += held_joints
        self.targets = np.zeros(len(joints))
        self.joints = joints

        motor, position = [], []
        for row, name in enumerate(joints):
            if name not in on_joint:
                raise DeployError(f"{robot.mjcf} has no actuator on joint {name!r}")
            if name not in drives:
                raise DeployError(f"policy.json gives no gains for joint {name!r}")
            a = on_joint[name]
            if int(m.actuator_biastype[a]) == _NONE and int(m.actuator_gaintype[a]) == _FIXED:
                motor.append((row, a, name))
            elif int(m.actuator_biastype[a]) == _AFFINE:
                position.append((row, a))
            else:
                raise DeployError(
                    f"the actuator on joint {name!r} in {robot.mjcf} is neither a torque "
                    "motor nor a position loop"
                )
        self.motor_rows = np.array([r for r, _, _ in motor], dtype=int)
        self.motor_ids = np.array([a for _, a, _ in motor], dtype=int)
        qpos, dof = robot.joint_columns([n for _, _, n in motor])
        self.qpos, self.dof = qpos, dof
        self.kp = np.array([drives[n]["stiffness"] for _, _, n in motor])
        self.kd = np.array([drives[n]["damping"] for _, _, n in motor])
        effort = np.array([drives[n]["effort_limit"] or math.inf for _, _, n in motor])
        gear = m.actuator_gear[self.motor_ids, 0] if motor else np.zeros(0)
        # the motor's own control range caps its torque too (the vendor's rated torque)
        limited = m.actuator_ctrllimited[self.motor_ids].astype(bool) if motor else []
        for i, lim in enumerate(limited):
            if lim:
                effort[i] = min(
                    effort[i], float(m.actuator_ctrlrange[self.motor_ids[i], 1]) * gear[i]
                )
        self.effort, self.gear = effort, gear
        self.position_rows = np.array([r for r, _ in position], dtype=int)
        self.position_ids = np.array([a for _, a in position], dtype=int)
        self.motors = len(motor)

    def command(self, action: np.ndarray) -> None:
        """New targets from the policy's action (the held joints keep theirs)."""
        for cols, rows, offset, scale, clip in self.terms:
            a = action[cols]
            if clip is not None:
                a = np.clip(a, *clip)
            self.targets[rows] = offset + scale * a
        self.targets[self.held_rows] = self.held_targets
        self.robot.data.ctrl[self.position_ids] = self.targets[self.position_rows]

    def torques(self) -> None:
        """One tick of the motor drivers: torque from the loop, into the motors' controls."""
        d = self.robot.data
        error = self.targets[self.motor_rows] - d.qpos[self.qpos]
        tau = np.clip(self.kp * error - self.kd * d.qvel[self.dof], -self.effort, self.effort)
        d.ctrl[self.motor_ids] = tau / self.gear


class MujocoPhysics:
    """The model's physics on MuJoCo."""

    name = "mujoco"

    def __init__(self, robot: Robot) -> None:
        self.robot = robot

    def reset(self) -> None:
        pass

    def step(self) -> None:
        mujoco.mj_step(self.robot.model, self.robot.data)


class WarpPhysics:
    """The same physics on MuJoCo Warp's CPU device: the state goes to Warp before each
    step and comes back after it, so the loop reads and writes ``MjData`` as for MuJoCo."""

    name = "warp-cpu"

    def __init__(self, robot: Robot) -> None:
        try:
            import mujoco_warp as mjw
            import warp as wp
        except ImportError as exc:
            raise DeployError(f"--engine warp-cpu needs mujoco-warp ({exc})") from None
        # warp prints a banner and a line per loaded module otherwise
        if hasattr(wp, "LOG_WARNING"):
            wp.config.log_level = wp.LOG_WARNING
        else:  # warp < 1.14
            wp.config.quiet = True
        self.wp, self.mjw, self.robot = wp, mjw, robot
        self.device = wp.get_device("cpu")
        with wp.ScopedDevice(self.device):
            self.m = mjw.put_model(robot.model)

    def reset(self) -> None:
        model, data = self.robot.model, self.robot.data
        with self.wp.ScopedDevice(self.device):
            # room for a robot lying on the ground: more contacts than its start pose has
            self.d = self.mjw.put_data(model, data, nconmax=64, njmax=8 * model.nv + 256)

    def step(self) -> None:
        data, d = self.robot.data, self.d
        with self.wp.ScopedDevice(self.device):
            d.ctrl.assign(data.ctrl[None].astype(np.float32))
            self.mjw.step(self.m, d)
            data.qpos[:] = d.qpos.numpy()[0]
            data.qvel[:] = d.qvel.numpy()[0]
            data.sensordata[:] = d.sensordata.numpy()[0]
        data.time += self.robot.model.opt.timestep


def draw_commands(desc: dict[str, Any], episodes: int, seed: int) -> np.ndarray:
    """(episodes, 3) velocity commands uniform in the task's ranges (vx, vy, yaw rate)."""
    for spec in desc.get("commands", {}).values():
        if spec["type"] == "UniformVelocityCommand":
            r = spec["ranges"]
            lows = [r["lin_vel_x"][0], r["lin_vel_y"][0], r["ang_vel_z"][0]]
            highs = [r["lin_vel_x"][1], r["lin_vel_y"][1], r["ang_vel_z"][1]]
            return np.random.default_rng(seed).uniform(lows, highs, size=(episodes, 3))
    raise DeployError("policy.json describes no velocity command to draw commands from")


def episode(robot, observe, loop, physics, session, input_name, command, args, defaults):
    """One episode: (fell, seconds walked, linear and yaw-rate errors averaged over them)."""
    robot.reset(defaults)
    physics.reset()
    observe.command[:] = command
    observe.last_action[:] = 0.0
    for name in observe.clocks:
        observe.clocks[name] = 0.0
    for _, _, ring in observe.terms:
        if ring is not None:
            ring.clear()
    control_dt = args.control_dt
    decimation = max(1, round(control_dt / robot.model.opt.timestep))
    lin_err, yaw_err, fell = [], [], False
    steps = round(args.duration / control_dt)
    d = robot.data
    for _ in range(steps):
        action = session.run(None, {input_name: observe()[None]})[0][0]
        loop.command(action)
        observe.last_action = action.astype(np.float64)
        for _ in range(decimation):
            loop.torques()
            physics.step()
        observe.advance(control_dt)
        robot.read()
        if not np.all(np.isfinite(d.qpos)):
            fell = True
            break
        rot = robot.base_rot
        yaw = math.atan2(rot[1, 0], rot[0, 0])
        c, s = math.cos(yaw), math.sin(yaw)
        v = d.qvel[robot.root_dof : robot.root_dof + 3]
        v_heading = np.array([c * v[0] + s * v[1], -s * v[0] + c * v[1]])
        wz = (rot @ d.qvel[robot.root_dof + 3 : robot.root_dof + 6])[2]  # world yaw rate
        lin_err.append(float(np.linalg.norm(v_heading - command[:2])))
        yaw_err.append(abs(float(wz - command[2])))
        if robot.base_pos[2] < args.fall_height or rot[2, 2] < 0.5:
            fell = True
            break
    walked = len(lin_err) * control_dt
    return (
        fell,
        walked,
        float(np.mean(lin_err or [math.nan])),
        float(np.mean(yaw_err or [math.nan])),
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    policy_path = Path(args.policy)
    desc = load_description(
        Path(args.description) if args.description else policy_path.with_name("policy.json")
    )
    session, input_name = open_policy(policy_path, desc)
    if not Path(args.mjcf).is_file():
        raise DeployError(f"{args.mjcf} does not exist")
    robot = Robot(Path(args.mjcf), desc, own_physics=True, floor=True)
    if args.fall_height is None:
        start = (
            desc["robot"].get("root_pose") or robot.data.qpos[robot.root_qpos : robot.root_qpos + 3]
        )
        args.fall_height = 0.5 * float(start[2])
    args.control_dt = float(desc["control_dt_s"])
    if robot.model.opt.timestep > args.control_dt:
        raise DeployError(
            f"{args.mjcf}'s timestep {robot.model.opt.timestep:g} s is longer than the "
            f"policy's period {args.control_dt:g} s"
        )
    if args.episodes < 1 or args.duration <= 0:
        raise DeployError("--episodes must be >= 1 and --duration > 0")
    commands = (
        np.tile(np.asarray(args.command, dtype=np.float64), (args.episodes, 1))
        if args.command is not None
        else draw_commands(desc, args.episodes, args.seed)
    )
    observe = Observer(desc, robot, commands[0].copy())
    loop = MotorLoop(desc, robot)
    physics = WarpPhysics(robot) if args.engine == "warp-cpu" else MujocoPhysics(robot)
    defaults = dict(
        zip(desc["robot"]["joint_names"], desc["robot"]["default_joint_pos"], strict=True)
    )
    results = []
    for command in commands:
        fell, walked, lin, yaw = episode(
            robot, observe, loop, physics, session, input_name, command, args, defaults
        )
        results.append(
            {"command": command.round(3).tolist(), "fell": fell, "seconds": round(walked, 2),
             "lin_vel_error": round(lin, 4), "yaw_rate_error": round(yaw, 4)}
        )  # fmt: skip
    falls = sum(r["fell"] for r in results)
    return {
        "policy": str(policy_path),
        "mjcf": str(args.mjcf),
        "engine": physics.name,
        "physics_dt_s": float(robot.model.opt.timestep),
        "control_dt_s": args.control_dt,
        "motors": loop.motors,
        "position_actuators": len(loop.position_ids),
        "episodes": len(results),
        "duration_s": args.duration,
        "falls": falls,
        "fall_rate": falls / len(results),
        "lin_vel_error": float(np.nanmean([r["lin_vel_error"] for r in results])),
        "yaw_rate_error": float(np.nanmean([r["yaw_rate_error"] for r in results])),
        "per_episode": results,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Run an exported policy on a vendor's torque-motor model: falls and tracking."
    )
    parser.add_argument("--policy", required=True, help="policy.onnx from robolearn export")
    parser.add_argument("--description", help="its policy.json (default: beside the policy)")
    parser.add_argument(
        "--mjcf",
        required=True,
        help="the vendor's MJCF of the robot (a flat floor is added where it has none)",
    )
    parser.add_argument("--episodes", type=int, default=8, help="episodes (default 8)")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds each (default 10)")
    parser.add_argument(
        "--command",
        nargs=3,
        type=float,
        metavar=("VX", "VY", "YAW_RATE"),
        help="one velocity command for every episode (default: drawn from the task's ranges)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the drawn commands")
    parser.add_argument(
        "--fall_height",
        type=float,
        help="base height (m) below which the robot has fallen (default: half its start height)",
    )
    parser.add_argument("--engine", choices=("mujoco", "warp-cpu"), default="mujoco")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    status, report = run_and_report("sim2sim", run, args)
    if report is None:
        return status
    print(
        f"{report['episodes']} episodes of {args.duration:g} s on {report['engine']} "
        f"(physics dt {report['physics_dt_s']:g} s, {report['motors']} torque motors, "
        f"policy every {report['control_dt_s']:g} s)"
    )
    for r in report["per_episode"]:
        print(
            f"  command {r['command']}: {'FELL after' if r['fell'] else 'walked'} "
            f"{r['seconds']:.1f} s, errors {r['lin_vel_error']:.3f} m/s, "
            f"{r['yaw_rate_error']:.3f} rad/s"
        )
    print(
        f"falls {report['falls']}/{report['episodes']}; mean errors "
        f"{report['lin_vel_error']:.3f} m/s, {report['yaw_rate_error']:.3f} rad/s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
