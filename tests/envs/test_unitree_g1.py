"""The G1's robot config on Menagerie's file (position actuators) and Unitree's own
(torque motors): the config's 29 drives on both, and the G1 stands on them."""

from __future__ import annotations

import pytest
import torch
from cli_helpers import shared_file
from robolearn.envs import unitree_g1

from robolearn.scene import Scene, SimCfg

VENDOR_G1 = shared_file("robots/unitree_mujoco/g1/g1_29dof.xml")


def stands(scene: Scene, seconds: float) -> torch.Tensor:
    """Pelvis heights after holding the default pose for ``seconds``."""
    scene.reset_to_default(torch.ones(scene.num_envs, dtype=torch.bool))
    scene.prepare(1)
    for _ in range(round(seconds / scene.model.opt.timestep)):
        scene.step(1)
    return scene.root_height.clone()


@pytest.mark.parametrize("source", ["menagerie", "unitree"])
def test_the_g1_stands_on_the_configs_motors_on_either_file(source, menagerie_root):
    if source == "unitree" and not VENDOR_G1.exists():
        pytest.skip(f"Unitree's g1_29dof.xml is not at {VENDOR_G1}")
    cfg = unitree_g1.g1_scene(unitree_g1.MODEL if source == "menagerie" else str(VENDOR_G1))
    cfg.num_envs = 2
    scene = Scene(cfg, SimCfg(engine="cpu", physics_dt=0.005))
    m = scene.model
    # the files name their actuators differently: find each by the joint it drives
    on = {m.joint(int(m.actuator_trnid[a, 0])).name: a for a in range(m.nu)}
    knee, wrist = on["left_knee_joint"], on["left_wrist_yaw_joint"]
    assert m.nu == 29
    assert m.actuator_forcerange[knee].tolist() == pytest.approx([-139.0, 139.0])
    assert m.actuator_forcerange[wrist].tolist() == pytest.approx([-5.0, 5.0])
    assert m.actuator_gainprm[knee, 0] == pytest.approx(-m.actuator_biasprm[knee, 1])
    assert m.actuator_gainprm[knee, 0] == pytest.approx(
        unitree_g1.g1_actuators()["7520_22"].stiffness
    )
    heights = stands(scene, 1.0)
    assert heights.min() > 0.65, heights
    # symmetry augmentation's mirror, found in either file's geometry: left <-> right, roll
    # and yaw change sign, pitch keeps it
    mirror, names = scene.joint_mirror(), scene.joint_names
    for i, name in enumerate(names):
        partner = name.replace("left_", "@").replace("right_", "left_").replace("@", "right_")
        assert names[mirror.perm[i]] == partner, name
        flips = "roll" in name or "yaw" in name  # knee and elbow turn about pitch axes
        assert mirror.sign[i] == (-1.0 if flips else 1.0), name
