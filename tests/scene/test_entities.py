"""Scene entities: a second robot and objects beside the robot, each under its own name,
selected by terms with SceneEntityCfg, spawned and reset on their own."""

from __future__ import annotations

import pytest
import torch
from robolearn.envs.quadruped import quadruped_robot
from robolearn.tasks.velocity import quadruped_walk

from robolearn import mdp
from robolearn.env import ManagerBasedRLEnv
from robolearn.errors import RobolearnError
from robolearn.managers import EventTermCfg, ObservationTermCfg
from robolearn.scene import EntityCfg, ImplicitPDCfg, Scene, SceneCfg, SceneEntityCfg, SimCfg


def scene_cfg(num_envs: int = 2):
    cfg = SceneCfg(num_envs=num_envs, entities={"robot": quadruped_robot()})
    cfg.entities |= {
        "buddy": EntityCfg(model="quadruped/quadruped.xml", keyframe="stand", pos=(0.0, 1.0, 0.0)),
        "crate": EntityCfg(box=(0.1, 0.1, 0.1), pos=(1.0, 0.0, 0.1)),
        "post": EntityCfg(box=(0.05, 0.05, 0.5), free=False, pos=(-1.0, 0.0, 0.5)),
    }
    return cfg


@pytest.fixture(scope="module")
def scene() -> Scene:
    return Scene(scene_cfg(), SimCfg(engine="cpu"))


def test_the_same_mjcf_twice_never_clashes_and_each_entity_keeps_its_own(scene):
    assert list(scene.entities) == ["robot", "buddy", "crate", "post"]
    robot = scene.index("joint", ".*")
    buddy = scene.index("joint", SceneEntityCfg("buddy"))
    assert len(robot) == len(buddy) == 12 and not set(robot.tolist()) & set(buddy.tolist())
    # selectors use the entity's own names, and plain regexes stay on the robot
    fl = scene.index("joint", SceneEntityCfg("buddy", joints="FL_.*"))
    assert [scene.joint_names[i] for i in fl.tolist()] == [
        "buddy/FL_hip",
        "buddy/FL_thigh",
        "buddy/FL_calf",
    ]
    assert [scene.joint_names[i] for i in scene.index("joint", "FL_.*").tolist()] == [
        "FL_hip", "FL_thigh", "FL_calf"
    ]  # fmt: skip
    assert len(scene.index("actuator", ".*")) == 12
    assert scene.index("body", SceneEntityCfg("crate")).tolist() == [
        scene.model.body("crate/box").id
    ]
    # the robot's base is its own free joint; the crate floats, the post does not
    assert scene.entities["crate"].root_body_id == scene.model.body("crate/box").id
    assert scene.entities["post"].root_body_id is None


def test_each_entity_starts_where_its_config_and_keyframe_put_it(scene):
    scene.reset_to_default(torch.ones(scene.num_envs, dtype=torch.bool))
    scene.engine.ctrl[:] = scene.default_ctrl
    assert torch.allclose(scene.root_pos_w, torch.tensor([[0.0, 0.0, 0.3014]] * 2), atol=1e-6)
    buddy_pos, _ = scene.entity_root_pose("buddy")
    assert torch.allclose(buddy_pos, torch.tensor([[0.0, 1.0, 0.3014]] * 2), atol=1e-6)
    crate_pos, _ = scene.entity_root_pose("crate")
    assert torch.allclose(crate_pos, torch.tensor([[1.0, 0.0, 0.1]] * 2))
    # the buddy's joints and controls come from its own stand keyframe
    knees = scene.index("joint", SceneEntityCfg("buddy", joints=".*_calf"))
    assert torch.allclose(
        scene.joint_pos[:, knees], scene.joint_pos[:, scene.index("joint", ".*_calf")]
    )
    # and it stands on its own under position control, as the robot does
    scene.step(200)
    buddy_pos, _ = scene.entity_root_pose("buddy")
    assert bool((buddy_pos[:, 2] > 0.2).all()) and bool((scene.root_pos_w[:, 2] > 0.2).all())
    crate_pos, _ = scene.entity_root_pose("crate")
    assert torch.allclose(crate_pos[:, 2], torch.full((2,), 0.1), atol=2e-3)  # resting


def test_terms_act_on_the_entity_they_select():
    cfg = quadruped_walk.env_cfg()
    cfg.scene = scene_cfg(num_envs=4)
    cfg.sim.engine = "cpu"
    cfg.events["reset_crate"] = EventTermCfg(
        func=mdp.reset_root_state_uniform,
        mode="reset",
        params={"pose_range": {"x": (0.5, 0.6)}, "entity": SceneEntityCfg("crate")},
    )
    cfg.observations["policy"].terms["crate"] = ObservationTermCfg(
        func=mdp.entity_pos_b, params={"entity": "crate"}
    )
    env = ManagerBasedRLEnv(cfg)
    crate_pos, _ = env.scene.entity_root_pose("crate")
    assert bool(((crate_pos[:, 0] >= 1.5) & (crate_pos[:, 0] <= 1.6)).all())
    seen = env.obs_buf["policy"][:, env.observation_manager.term_slices("policy")["crate"]]
    assert bool((seen.norm(dim=-1) > 1.0).all())  # 1.5 m and more from the robot's base
    assert env.action_manager.action.shape == (4, 12)  # the robot's actuators only
    for _ in range(5):
        env.step(torch.zeros(4, 12))


@pytest.mark.parametrize(
    "entities, fragment",
    [
        ({"robot": EntityCfg()}, "the robot is an MJCF, not a made object"),
        ({"a/b": EntityCfg()}, "'a/b' is not an entity name"),
        ({"crate": EntityCfg(box=(0.1, -0.1, 0.1))}, "box half-sizes and mass must be > 0"),
        ({"buddy": EntityCfg(model="quadruped/quadruped.xml", keyframe="sit")}, "keyframes: stand"),
        ({"crate": EntityCfg(mocap=True)}, "set free=False with mocap=True"),
        (
            {"buddy": EntityCfg(model="quadruped/quadruped.xml", mocap=True, free=False)},
            "made objects",
        ),
    ],
)
def test_bad_entities_are_one_clear_error(entities, fragment):
    cfg = SceneCfg(num_envs=1, entities={"robot": quadruped_robot(), **entities})
    with pytest.raises(RobolearnError) as err:
        Scene(cfg, SimCfg(engine="cpu"))
    assert fragment in str(err.value) and "\n" not in str(err.value)


def test_a_selector_naming_a_missing_entity_or_element_says_what_exists(scene):
    with pytest.raises(
        RobolearnError, match=r"no entity 'box'.*entities: robot, buddy, crate, post"
    ):
        scene.index("body", SceneEntityCfg("box"))
    with pytest.raises(RobolearnError, match="no buddy joint matches 'knee'; buddy joints: FL_hip"):
        scene.index("joint", SceneEntityCfg("buddy", joints="knee"))
    with pytest.raises(RobolearnError, match="'post' has no free joint"):
        scene.entity_root_pose("post")


def _gain(model, actuator: str) -> float:
    return float(model.actuator_gainprm[model.actuator(actuator).id, 0])


def _on_joint(model, joint: str) -> str:
    """The name of the actuator that drives ``joint``."""
    jid = model.joint(joint).id
    (a,) = [a for a in range(model.nu) if int(model.actuator_trnid[a, 0]) == jid]
    return model.actuator(a).name


def test_two_articulated_robots_each_get_their_own_actuators():
    """The quadruped as the robot and a second quadruped beside it, each with an actuator
    config of its own naming its own joints: each applies to its own robot's joints only."""
    buddy = quadruped_robot()
    buddy.actuators = {"knees": ImplicitPDCfg(joints=".*_calf", stiffness=52.0)}
    robot = quadruped_robot()
    robot.actuators = {"hips": ImplicitPDCfg(joints=".*_hip", stiffness=41.0)}
    cfg = SceneCfg(num_envs=2, entities={"robot": robot, "buddy": buddy})
    cfg.entities["buddy"].pos = (0.0, 1.0, 0.0)
    scene = Scene(cfg, SimCfg(engine="cpu"))
    m = scene.model
    assert m.nu == 24  # each MJCF actuator replaced in place, none added
    legs = ("FL", "FR", "RL", "RR")
    for leg in legs:
        assert _gain(m, _on_joint(m, f"{leg}_hip")) == 41.0
        assert _gain(m, _on_joint(m, f"buddy/{leg}_calf")) == 52.0
        # the other robot's config did not reach these
        assert _gain(m, _on_joint(m, f"buddy/{leg}_hip")) != 41.0
        assert _gain(m, _on_joint(m, f"{leg}_calf")) != 52.0
    driven = {d.joint for d in scene.driven}
    assert driven == {f"{leg}_hip" for leg in legs} | {f"buddy/{leg}_calf" for leg in legs}
    buddy_actuators = set(scene.entities["buddy"].actuator_ids)
    assert {m.actuator(_on_joint(m, f"buddy/{leg}_calf")).id for leg in legs} <= buddy_actuators
    scene.reset_to_default(torch.ones(2, dtype=torch.bool))
    scene.step(4)
    assert bool(torch.isfinite(scene.engine.qpos).all())


def test_a_panda_arm_beside_the_robot_keeps_its_configs_drives_pose_and_gravcomp(
    menagerie_root,
):
    """Menagerie's Panda with its robot config (actuators, init_state, gravity compensation,
    the gripper's edit) as a second robot: all of it lands on the arm's prefixed elements,
    none on the quadruped."""
    from robolearn.envs import franka_panda

    arm = franka_panda.panda_robot()
    arm.pos = (1.5, 0.0, 0.0)
    cfg = SceneCfg(num_envs=2, entities={"robot": quadruped_robot(), "arm": arm})
    scene = Scene(cfg, SimCfg(engine="cpu"))
    m = scene.model
    assert _gain(m, "arm/actuator1") == pytest.approx(1500.0)
    assert m.body_gravcomp[m.body("arm/link4").id] == 1.0
    assert m.body_gravcomp[m.body("trunk").id] == 0.0
    assert _gain(m, _on_joint(m, "FL_hip")) == 30.0  # the quadruped's own MJCF gains
    joint4 = int(m.joint("arm/joint4").qposadr[0])
    assert float(scene.default_qpos[joint4]) == pytest.approx(-1.57079)
    gripper = m.actuator(f"arm/{franka_panda.GRIPPER}").id
    assert float(scene.default_ctrl[gripper]) == franka_panda.GRIPPER_OPEN
    assert {d.joint for d in scene.driven} == {f"arm/{j}" for j in franka_panda.ARM}
