"""What Newton makes of our scenes: its MJCF import against MuJoCo's compile, the physics of
its MuJoCo solver against the cpu engine, and physics steps/s of its solvers beside ours.

The measurements the ``newton`` engines (robolearn/sim/newton_engine.py) were designed
from, kept to check a new Newton release against: its import and its solvers run bare,
outside the engine (``pip install robolearn[newton]``):

    python benchmarks/newton_probe.py --tasks humanoid_walk quadruped_walk --num_envs 256 \
        --dt 0.01 0.001

For each task the scene's MJCF, as robolearn builds it (actuators, ground, sensors added),
goes through ``newton.ModelBuilder.add_mjcf`` (``ctrl_direct``: MuJoCo's actuators, read
from ``control.mujoco.ctrl``), replicated over the envs, then:

* import: the sizes of the MuJoCo model Newton's MuJoCo solver builds from it against the
  model MuJoCo compiles from the same MJCF, and the solver options that differ;
* parity: one env from the task's default pose, holding its default controls, stepped on
  Newton's MuJoCo solver (MuJoCo Warp on warp's CPU device) and on the cpu engine, the
  largest difference in qpos after each 10 ms; the solver options first set alike;
* speed: physics steps/s of Newton's solvers (MuJoCo, Featherstone, XPBD, semi-implicit;
  the last three with Newton's collision pipeline each step) and of the cpu and warp-cpu
  engines, at ``--num_envs``, one after another in one process, at the task's physics
  dt, after one simulated second from the default pose whose base height is shown (the
  default controls drive MuJoCo's actuators only: under the other solvers the robot is
  unactuated, so only "did it stay on the ground and finite" is compared there).
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
from collections.abc import Callable

import mujoco
import numpy as np
import torch

import robolearn.scene.assembly as assembly
from robolearn.env import ManagerBasedRLEnv
from robolearn.registry import get_task
from robolearn.sim import SimCfg, make_engine

OPTIONS = ("timestep", "integrator", "solver", "cone", "iterations", "ls_iterations", "impratio")


def scene_mjcf(task: str) -> tuple[str, mujoco.MjModel, np.ndarray, np.ndarray]:
    """The task's scene as robolearn compiles it (its last spec, as MJCF), the model, and
    the default keyframe's qpos and ctrl."""
    specs: list[mujoco.MjSpec] = []
    compile_model = assembly.compile_model

    def keep(spec: mujoco.MjSpec) -> mujoco.MjModel:
        specs.append(spec)
        return compile_model(spec)

    assembly.compile_model = keep
    try:
        cfg = get_task(task).env_cfg()
        cfg.scene.num_envs = 1
        cfg.scene.terrain = None  # a plane: Newton's import is what is measured
        env = ManagerBasedRLEnv(cfg)
    finally:
        assembly.compile_model = compile_model
    model = env.scene.model
    key = cfg.scene.robot.default_keyframe
    qpos = model.key(key).qpos.copy() if key else model.qpos0.copy()
    ctrl = model.key(key).ctrl.copy() if key else np.zeros(model.nu)
    return specs[-1].to_xml(), model, qpos, ctrl


def newton_model(xml: str, num_envs: int, device: str = "cpu", requires_grad: bool = False):
    import newton

    robot = newton.ModelBuilder()
    newton.solvers.SolverMuJoCo.register_custom_attributes(robot)
    robot.add_mjcf(xml, ctrl_direct=True)
    scene = newton.ModelBuilder()
    newton.solvers.SolverMuJoCo.register_custom_attributes(scene)
    scene.replicate(robot, num_envs)
    return scene.finalize(device=device, requires_grad=requires_grad)


def joint_q_from_qpos(model: mujoco.MjModel, qpos: np.ndarray) -> np.ndarray:
    """MuJoCo's qpos in Newton's joint_q layout: a free or ball joint's quaternion is
    w x y z in MuJoCo, x y z w in Newton."""
    q = qpos.copy()
    for j in range(model.njnt):
        adr, kind = int(model.jnt_qposadr[j]), int(model.jnt_type[j])
        free, ball = int(mujoco.mjtJoint.mjJNT_FREE), int(mujoco.mjtJoint.mjJNT_BALL)
        start = adr + 3 if kind == free else adr
        if kind in (free, ball):
            q[start : start + 4] = np.roll(qpos[start : start + 4], -1)
    return q


def import_report(task: str, xml: str, model: mujoco.MjModel) -> None:
    import newton

    solver = newton.solvers.SolverMuJoCo(newton_model(xml, 1), use_mujoco_cpu=True)
    theirs = solver.mj_model
    sizes = ("nq", "nv", "nbody", "njnt", "ngeom", "nu", "nsite", "nsensor", "nsensordata")
    print(f"\n### {task}: the import\n")
    print("| | " + " | ".join(sizes) + " |")
    print("|---|" + "---:|" * len(sizes))
    for name, m in (("MuJoCo's compile", model), ("Newton's MuJoCo model", theirs)):
        print(f"| {name} | " + " | ".join(str(getattr(m, s)) for s in sizes) + " |")
    differ = [
        f"{o} {getattr(model.opt, o)} -> {getattr(theirs.opt, o)}"
        for o in OPTIONS
        if not np.allclose(getattr(model.opt, o), getattr(theirs.opt, o))
    ]
    print(f"\nsolver options that differ: {'; '.join(differ) or 'none'}")
    if theirs.nsensor < model.nsensor:
        names = [model.sensor(i).name for i in range(model.nsensor)]
        print(f"sensors not carried over: {', '.join(names)}")


def parity_report(task: str, xml: str, model: mujoco.MjModel, qpos, ctrl, steps: int) -> None:
    import newton
    import warp as wp

    nm = newton_model(xml, 1)
    solver = newton.solvers.SolverMuJoCo(
        nm,
        iterations=int(model.opt.iterations),
        ls_iterations=int(model.opt.ls_iterations),
        solver=int(model.opt.solver),
        cone=int(model.opt.cone),
        impratio=float(model.opt.impratio),
        integrator=int(model.opt.integrator),
    )
    state_0, state_1, control = nm.state(), nm.state(), nm.control()
    state_0.joint_q.assign(joint_q_from_qpos(model, qpos).astype(np.float32))
    state_0.joint_qd.zero_()
    newton.eval_fk(nm, state_0.joint_q, state_0.joint_qd, state_0)
    control.mujoco.ctrl.assign(ctrl.astype(np.float32))
    data = mujoco.MjData(model)
    data.qpos[:], data.ctrl[:] = qpos, ctrl
    dt = model.opt.timestep
    worst, rows = 0.0, []
    for k in range(1, steps + 1):
        solver.step(state_0, state_1, control, None, dt)
        state_0, state_1 = state_1, state_0
        mujoco.mj_step(model, data)
        theirs = solver.mjw_data.qpos.numpy()[0]
        worst = max(worst, float(np.abs(theirs - data.qpos).max()))
        if k in (1, 10, steps):
            rows.append((k, worst, data.qpos[2], theirs[2]))
    wp.synchronize()
    print(f"\n### {task}: Newton's MuJoCo solver against the cpu engine ({steps} x {dt} s)\n")
    print("| steps | largest qpos difference so far | base height, cpu | base height, Newton |")
    print("|---:|---:|---:|---:|")
    for k, w, ours, theirs in rows:
        print(f"| {k} | {w:.2e} | {ours:.4f} | {theirs:.4f} |")


def rate(step: Callable[[], None], sync: Callable[[], None], seconds: float) -> float:
    """Calls of ``step`` per second over about ``seconds`` (after two uncounted)."""
    step()
    step()
    sync()
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        step()
        count += 1
    sync()
    return count / (time.perf_counter() - start)


def speed_report(task: str, xml: str, model, qpos, ctrl, num_envs: int, seconds: float) -> None:
    import newton
    import warp as wp

    dt, z0 = float(model.opt.timestep), float(qpos[2])
    rows = []
    for name in ("cpu", "warp-cpu"):
        engine = make_engine(model, num_envs, SimCfg(engine=name))
        engine.qpos[:] = torch.as_tensor(qpos, dtype=engine.dtype)
        engine.ctrl[:] = torch.as_tensor(ctrl, dtype=engine.dtype)
        engine.forward()
        engine.step(round(1.0 / dt))  # one simulated second from the default pose
        height = float(engine.qpos[:, 2].median())
        steps = rate(lambda e=engine: e.step(1), lambda: None, seconds)
        finite = bool(torch.isfinite(engine.qpos).all())
        rows.append((f"robolearn {name} engine", steps, finite, height))
    solvers = {
        "mujoco": lambda m: newton.solvers.SolverMuJoCo(m),
        "featherstone": lambda m: newton.solvers.SolverFeatherstone(m),
        "xpbd": lambda m: newton.solvers.SolverXPBD(m),
        "semi_implicit": lambda m: newton.solvers.SolverSemiImplicit(m),
    }
    for name, make in solvers.items():
        nm = newton_model(xml, num_envs)
        try:
            solver = make(nm)
        except Exception as exc:  # a solver that refuses the model: say why, go on
            rows.append((f"Newton {name}", float("nan"), f"refused: {exc}"[:120], float("nan")))
            continue
        s0, s1, control = nm.state(), nm.state(), nm.control()
        joint_q = np.tile(joint_q_from_qpos(model, qpos), num_envs).astype(np.float32)
        s0.joint_q.assign(joint_q)
        newton.eval_fk(nm, s0.joint_q, s0.joint_qd, s0)
        if getattr(control, "mujoco", None) is not None:
            control.mujoco.ctrl.assign(np.tile(ctrl, num_envs).astype(np.float32))
        pipeline = None if name == "mujoco" else newton.CollisionPipeline(nm)
        contacts = None if pipeline is None else pipeline.contacts()
        states = [s0, s1]

        def step(solver=solver, pipeline=pipeline, contacts=contacts, states=states, c=control):
            if pipeline is not None:
                pipeline.collide(states[0], contacts)
            states[0].clear_forces()
            solver.step(states[0], states[1], c, contacts, dt)
            states.reverse()

        for _ in range(round(1.0 / dt)):  # one simulated second from the default pose
            step()
        # the root body's pose: XPBD and semi-implicit step the bodies, not joint_q
        root = states[0].body_q.numpy().reshape(num_envs, -1, 7)[:, 0]
        height = float(np.median(root[:, 2])) if np.isfinite(root).all() else float("nan")
        steps = rate(step, wp.synchronize, seconds)
        finite = bool(np.isfinite(states[0].body_q.numpy()).all())
        rows.append((f"Newton {name}", steps, finite, height))
    print(f"\n### {task}: physics steps/s at {num_envs} envs (dt {dt} s)\n")
    print(
        f"| engine | physics steps/s (x envs) | base height after 1 s (median; {z0:.3f} at "
        "the start) | state finite after the run |"
    )
    print("|---|---:|---:|---|")
    for name, steps, finite, height in rows:
        shown = "-" if math.isnan(steps) else f"{steps * num_envs:,.0f}"
        print(f"| {name} | {shown} | {height:.3f} | {finite} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=["humanoid_walk", "quadruped_walk"])
    parser.add_argument("--num_envs", type=int, default=256)
    parser.add_argument("--steps", type=int, default=100, help="parity steps")
    parser.add_argument("--seconds", type=float, default=3.0, help="per speed measurement")
    parser.add_argument(
        "--dt", type=float, nargs="+", default=[],
        help="physics steps of these lengths (s) in the speed section; default the task's",
    )  # fmt: skip
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    import warp as wp

    wp.config.quiet = True
    for task in args.tasks:
        xml, model, qpos, ctrl = scene_mjcf(task)
        import_report(task, xml, model)
        parity_report(task, xml, model, qpos, ctrl, args.steps)
        for dt in args.dt or [float(model.opt.timestep)]:
            model.opt.timestep = dt  # the robolearn engines read it; Newton's step is given it
            speed_report(task, xml, model, qpos, ctrl, args.num_envs, args.seconds)


if __name__ == "__main__":
    main()
