"""The memory check's estimates against what the memory takes: a ray caster's rays, the
delays of delayed actuators, and a motion clip's frames.

Before an engine is built, the memory an env count needs is estimated and refused when the
machine does not have it (:mod:`robolearn.sim.memory`). Some parts of that estimate are a
size times a constant that was measured once: bytes a ray, a value per actuator for each
step of a delay, bytes a clip's frame. This measures them again. Each part is built at two
sizes, each in a fresh interpreter (what one build leaves with the allocator would take in
the next one's arrays), and the growth of that process's peak resident memory over the
build is read from the kernel (``VmHWM``, reset just before the build). The difference of
the two sizes' growths per unit of size, where everything the build holds apart from the
part cancels, is set against the same difference of the code's own estimates:

* ``rays``: the scene of ``quadruped_walk_rough_obstacles`` (cpu engine, its terrain and
  boxes) built without its height scan, then the scan built on it with its grid at two
  resolutions and read three times; per ray of one env, against
  ``RayCasterCfg.memory_per_env``. (Built with the scene, a small scan's growth would hide
  under the peak of the scene's own build.)
* ``explicit delay`` and ``MuJoCo delay``: a one-joint arm whose joint lags up to
  ``--delay_steps`` physics steps, driven by ``DCMotorCfg`` (robolearn's ring of commands)
  or ``ImplicitPDCfg`` (MuJoCo's histories), at two env counts, built, reset and stepped;
  per env, against the per-env estimate the engine checks.
* ``clip``: the env of ``humanoid_track`` (4 envs, cpu engine) tracking the shipped walk
  clip saved at two lower frame rates (the same frames lasting longer: more frames at the
  control rate); per frame at the control rate, against the estimate ``MotionCommand``
  checks.

The engine and the command sum their estimates from several terms; those are read as the
code hands them to ``robolearn.sim.memory.require`` (wrapped during the build), so the
figure compared is the check's own.

Every size is measured twice: with glibc's malloc as a run has it, and with every array
over 64 KiB a mapping of its own (``MALLOC_MMAP_THRESHOLD_``). The first is what a run
sees, slack of the allocator included, but its slope is only sound where both sizes are
large enough that neither fits in heap memory freed before it (the defaults are); the
second is the arrays' own memory, steady at any size.

    python benchmarks/memory_estimates.py [--ray_envs 256] [--resolutions 0.02 0.01]
        [--delay_envs 100 400] [--delay_steps 10000] [--clip_fps 5 0.5]

Linux only (``/proc/self``); about a minute on two cores.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import torch

import robolearn.mdp.motion_command as motion_command
import robolearn.sim.memory as memory
from robolearn.env import ManagerBasedRLEnv
from robolearn.motion import load_clip, save_clip
from robolearn.registry import get_task, load_tasks
from robolearn.scene import DCMotorCfg, EntityCfg, ImplicitPDCfg, Scene, SceneCfg, SimCfg

# a one-joint arm; its actuator config gives it its motor
ARM = """
<mujoco>
  <option gravity="0 0 0" timestep="0.001"/>
  <worldbody>
    <body name="arm">
      <joint name="shoulder" type="hinge" axis="0 1 0" range="-1.5 1.5"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" mass="0.5"/>
    </body>
  </worldbody>
</mujoco>
"""
WALK = "motions/humanoid_walk.npz"
ALLOCATORS = {"malloc": None, "own mappings": str(64 * 1024)}
"""How the children allocate: glibc's defaults, or every array over 64 KiB a mapping."""


def _status(field: str) -> int:
    """A size from /proc/self/status, in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def peak_growth(build: Callable[[], object]) -> int:
    """Bytes by which the process's peak resident memory rose over ``build()``."""
    start = _status("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # the peak starts again from now
    build()
    return _status("VmHWM") - start


@contextmanager
def checked_needs(module: ModuleType) -> Iterator[list[int]]:
    """The bytes of each memory check made through ``module.require`` inside the block."""
    needs: list[int] = []
    require = module.require

    def record(need: int, *args, **kwargs) -> None:
        needs.append(need)
        require(need, *args, **kwargs)

    module.require = record
    try:
        yield needs
    finally:
        module.require = require


# ---- the children: one size of one part each, as one JSON line ----------------------


def rays(num_envs: int, resolution: float) -> dict:
    """quadruped_walk_rough_obstacles' scene, then its scan every ``resolution`` m."""
    load_tasks()
    cfg = get_task("quadruped_walk_rough_obstacles").make_env_cfg()
    cfg.scene.num_envs = num_envs
    scan = cfg.scene.sensors["scan"]
    scan = replace(scan, pattern=replace(scan.pattern, resolution=resolution))
    cfg.scene.sensors = {}
    scene = Scene(cfg.scene, replace(cfg.sim, engine="cpu"))
    every = torch.ones(num_envs, dtype=torch.bool)
    scene.reset_to_default(every)
    scene.forward(every)

    def build() -> None:
        sensor = scan.build("scan", scene)
        for _ in range(3):  # each reading casts again
            scene.step(1)
            sensor.invalidate(every)
            sensor.read()

    grew = peak_growth(build)
    estimate, what = scan.memory_per_env()
    return {
        "size": f"{num_envs} envs x {what}",
        "units": num_envs * math.prod(scan.pattern.shape),
        "grew": grew,
        "estimate": num_envs * estimate,
    }


def delay(explicit: bool, num_envs: int, steps: int) -> dict:
    """The arm at ``num_envs`` envs, its joint lagging up to ``steps`` physics steps."""
    gains = {"joints": "shoulder", "stiffness": 5.0, "delay": (0, steps)}
    if explicit:
        actuator = DCMotorCfg(**gains, saturation_effort=3.0, velocity_limit=3.0)
    else:
        actuator = ImplicitPDCfg(**gains)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "arm.xml"
        path.write_text(ARM)
        robot = EntityCfg(model=str(path), actuators={"arm": actuator})
        cfg = SceneCfg(num_envs=num_envs, entities={"robot": robot})

        def build() -> None:
            scene = Scene(cfg, SimCfg(engine="cpu"))
            scene.reset_to_default(torch.ones(num_envs, dtype=torch.bool))
            for _ in range(3):
                scene.step(1)

        with checked_needs(memory) as needs:
            grew = peak_growth(build)
    return {"size": f"{num_envs:,} envs", "units": num_envs, "grew": grew, "estimate": needs[0]}


def clip(fps: float) -> dict:
    """humanoid_track's env tracking the walk clip's frames saved at ``fps``."""
    load_tasks()
    cfg = get_task("humanoid_track").make_env_cfg()
    cfg.scene.num_envs = 4
    cfg.sim.engine = "cpu"
    walk = load_clip(motion_command.motion_path(WALK))
    envs: list[ManagerBasedRLEnv] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = save_clip(replace(walk, fps=fps), Path(tmp) / "walk.npz")
        cfg.commands["motion"].motion_files = [str(path)]
        with checked_needs(motion_command) as needs:
            grew = peak_growth(lambda: envs.append(ManagerBasedRLEnv(cfg)))
    frames = sum(c.num_frames for c in envs[0].command_manager.terms["motion"].clips)
    return {"size": f"{fps:g} Hz", "units": frames, "grew": grew, "estimate": needs[0]}


def child(part: str, size: str, delay_steps: int) -> dict:
    """One size of ``part`` (``size`` as :func:`main` passes it), measured here."""
    if part == "rays":
        num_envs, resolution = size.split(",")
        return rays(int(num_envs), float(resolution))
    if part == "clip":
        return clip(float(size))
    return delay(part == "explicit delay", int(size), delay_steps)


# ---- the parent ----------------------------------------------------------------------


def measure(part: str, size: str, delay_steps: int, mmap_threshold: str | None) -> dict:
    """One size of ``part``, built in a fresh interpreter allocating as ``mmap_threshold``
    says (None: glibc's own threshold)."""
    env = dict(os.environ)
    env.pop("MALLOC_MMAP_THRESHOLD_", None)
    if mmap_threshold is not None:
        env["MALLOC_MMAP_THRESHOLD_"] = mmap_threshold
    command = [sys.executable, __file__, "--child", part, size, "--delay_steps", str(delay_steps)]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{part} at {size} failed:\n{done.stderr}")
    return json.loads(done.stdout.splitlines()[-1])


def _bytes(n: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= 10 * scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n:,.0f} B"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ray_envs", type=int, default=256)
    parser.add_argument("--resolutions", type=float, nargs=2, default=[0.02, 0.01], help="m")
    parser.add_argument("--delay_envs", type=int, nargs=2, default=[100, 400])
    parser.add_argument("--delay_steps", type=int, default=10_000)
    parser.add_argument("--clip_fps", type=float, nargs=2, default=[5.0, 0.5])
    parser.add_argument("--child", nargs=2, metavar=("PART", "SIZE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*args.child, args.delay_steps)))
        return
    delay_envs = [str(n) for n in args.delay_envs]
    parts = {
        "rays": ("ray of one env", [f"{args.ray_envs},{r}" for r in args.resolutions]),
        "explicit delay": ("env", delay_envs),
        "MuJoCo delay": ("env", delay_envs),
        "clip": ("frame at the control rate", [f"{f:g}" for f in args.clip_fps]),
    }
    print(f"Peak resident memory growth; delays of up to {args.delay_steps:,} physics steps.")
    heads = " | ".join(f"grew ({a}) | per unit ({a})" for a in ALLOCATORS)
    ratio = f"measured / estimate ({', '.join(ALLOCATORS)})"
    print(f"| part | per | sizes | {heads} | estimate per unit | {ratio} |")
    print("|---|---|---|" + "---:|" * (2 * len(ALLOCATORS) + 2))
    for part, (unit, sizes) in parts.items():
        cells, ratios = [], []
        for threshold in ALLOCATORS.values():
            small, large = (measure(part, s, args.delay_steps, threshold) for s in sizes)
            units = large["units"] - small["units"]
            measured = (large["grew"] - small["grew"]) / units
            estimate = (large["estimate"] - small["estimate"]) / units
            cells += [f"{_bytes(small['grew'])} -> {_bytes(large['grew'])}", _bytes(measured)]
            ratios.append(f"{measured / estimate:.2f}")
        print(
            f"| {part} | {unit} | {small['size']} -> {large['size']} | {' | '.join(cells)} "
            f"| {_bytes(estimate)} | {' / '.join(ratios)} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
