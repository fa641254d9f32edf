"""The G1's robot config on Menagerie's file (position actuators) and Unitree's own
(torque motors): the config's 29 drives on both, and the G1 stands on them."""

from __future__ import annotations

import pytest
import torch
from cli_helpers import play_eval, shared_file, walks
from robolearn.envs import unitree_g1

from robolearn.errors import RobolearnError
from robolearn.scene import JointMirrorCfg, Scene, SceneCfg, SimCfg
from robolearn.scene.mirror import IndexMirror, joint_mirror

VENDOR_G1 = shared_file("robots/unitree_mujoco/g1/g1_29dof.xml")


def stands(scene: Scene, seconds: float) -> torch.Tensor:
    """Pelvis heights after holding the default pose for ``seconds``."""
    scene.reset_to_default(torch.ones(scene.num_envs, dtype=torch.bool))
    scene.write_ctrl(slice(None), scene.default_ctrl.expand(scene.num_envs, -1))
    scene.prepare(1)
    for _ in range(round(seconds / scene.model.opt.timestep)):
        scene.step(1)
    return scene.root_height.clone()


@pytest.mark.parametrize("source", ["menagerie", "unitree"])
def test_the_g1_stands_on_the_configs_motors_on_either_file(source, menagerie_root):
    if source == "unitree" and not VENDOR_G1.exists():
        pytest.skip(f"Unitree's g1_29dof.xml is not at {VENDOR_G1}")
    robot = unitree_g1.g1_robot(unitree_g1.MODEL if source == "menagerie" else str(VENDOR_G1))
    cfg = SceneCfg(num_envs=2, entities={"robot": robot}, ground=True)
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
    # symmetry augmentation's mirror, the config's: left <-> right, roll and yaw change
    # sign, pitch keeps it; and the same map is found in either file's geometry
    mirror, names = scene.joint_mirror(), scene.joint_names
    for i, name in enumerate(names):
        partner = name.replace("left_", "@").replace("right_", "left_").replace("@", "right_")
        assert names[mirror.perm[i]] == partner, name
        flips = "roll" in name or "yaw" in name  # knee and elbow turn about pitch axes
        assert mirror.sign[i] == (-1.0 if flips else 1.0), name
    assert mirror == geometric_mirror(scene)


def geometric_mirror(scene: Scene) -> IndexMirror:
    """The mirror the scene finds in the model's geometry, without the config's map."""
    return joint_mirror(scene.model, scene.root_body_id, scene._joint_mj_ids, scene.joint_names)


def test_a_mirror_map_naming_a_joint_the_model_lacks_is_refused(menagerie_root):
    cfg = SceneCfg(num_envs=1, entities={"robot": unitree_g1.g1_robot()}, ground=True)
    cfg.robot.mirror = JointMirrorCfg(pairs={"left_knee_joint": "right_kne_joint"})
    with pytest.raises(RobolearnError, match="no joint 'right_kne_joint'"):
        Scene(cfg, SimCfg(engine="cpu"))
    cfg.robot.mirror = JointMirrorCfg(
        pairs={"left_knee_joint": "right_knee_joint"}, flip=("elb.*",)
    )
    with pytest.raises(RobolearnError, match=r"no scene.mirror.flip joint matches .elb"):
        Scene(cfg, SimCfg(engine="cpu"))


def test_the_pretrained_g1_walk_policy_walks_on_unitrees_file(menagerie_root, capsys):
    """Trained on Menagerie's file, it walks on Unitree's (Menagerie's where that is not
    here): the config, not the file, says how the G1 is driven and integrated."""
    for model in [str(VENDOR_G1) if VENDOR_G1.exists() else "menagerie:unitree_g1/g1.xml"]:
        metrics = play_eval(
            "--task", "g1_walk", "--checkpoint", "pretrained", "--num_envs", "16",
            f"env.scene.model={model}", "--engine", "cpu", capsys=capsys,
        )  # fmt: skip
        assert walks(metrics), (model, metrics)
