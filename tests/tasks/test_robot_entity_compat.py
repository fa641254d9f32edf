"""Run folders and overrides written before the robot was an entity still work.

The robot's fields (``model``, ``keyframe``, ``init_state``, ``actuators``...) were
SceneCfg's; they are the ``robot`` entity's now (``scene.entities.robot``). An old env.yaml
names them on the scene, and users type ``env.scene.model=...``: ``SceneCfg.MOVED_FIELDS``
sends both to the robot entity.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from robolearn.app.configs import build_setup
from robolearn.app.runs import read_run_params
from robolearn.config import apply_override, load_config
from robolearn.env import ManagerBasedRLEnvCfg
from robolearn.registry import get_task
from robolearn.scene import ImplicitPDCfg, SceneCfg
from robolearn.scene.config import ROBOT_FIELDS

FIXTURES = Path(__file__).parent / "fixtures"
OLD_RUN = FIXTURES / "cartpole_run_before_families"
"""params/ of a cartpole_balance run written by the code of commit 44fcd9b."""


@pytest.mark.parametrize("task", ["go2_walk", "panda_lift"])
def test_an_env_yaml_written_before_the_robot_was_an_entity_loads_equal(task):
    """The task's env config as the code before the change saved it (the robot's fields on
    the scene; panda_lift's cube alone in ``scene.entities``) loads equal to the task's."""
    path = FIXTURES / f"{task}_env_before_robot_entity.yaml"
    scene = yaml.safe_load(path.read_text())["scene"]
    assert {"model", "init_state", "joints", "actuators"} <= set(scene)
    loaded = load_config(path, expect=ManagerBasedRLEnvCfg, root="env")
    assert loaded == get_task(task).make_env_cfg()
    assert list(loaded.scene.entities) == ["robot", *scene["entities"]]
    assert loaded.scene.robot.model == scene["model"]
    assert set(loaded.scene.robot.actuators) == set(scene["actuators"])


def test_an_old_run_folder_reads_back_the_tasks_configs(tmp_path):
    run = tmp_path / "old_run"
    shutil.copytree(OLD_RUN, run)
    scene = yaml.safe_load((run / "params" / "env.yaml").read_text())["scene"]
    assert scene["model"] == "cartpole/cartpole.xml" and scene["entities"] == {}
    loaded = read_run_params(run)
    setup = build_setup("cartpole_balance", [], num_envs=8, seed=42, max_iterations=1)
    setup.env_cfg.sim.engine = "cpu"
    assert loaded.env_cfg == setup.env_cfg
    assert loaded.env_cfg.scene.robot.model == "cartpole/cartpole.xml"


@pytest.mark.parametrize(
    "path, text, value",
    [
        ("scene.model", "/robots/go2.xml", ("model", "/robots/go2.xml")),
        ("scene.keyframe", "stand", ("keyframe", "stand")),
        ("scene.feet", "[FL, FR, RL, RR_foot]", ("feet", ("FL", "FR", "RL", "RR_foot"))),
        ("scene.root_body", "base", ("root_body", "base")),
        ("scene.init_state.pos", "[0, 0, 0.3]", ("init_state", (0.0, 0.0, 0.3))),
        ("scene.actuators.knees.stiffness", "40", ("actuators", 40.0)),
        ("scene.robot.keyframe", "home", ("keyframe", "home")),
        ("scene.entities.robot.keyframe", "home", ("keyframe", "home")),
    ],
)
def test_an_override_of_a_scene_field_that_moved_sets_the_robots(path, text, value):
    cfg = get_task("go2_walk").make_env_cfg()
    apply_override(cfg, path, text, "env")
    field, expected = value
    got = getattr(cfg.scene.robot, field)
    if field == "init_state":
        got = got.pos
    if field == "actuators":
        got = got["knees"].stiffness
    assert got == expected


def test_every_moved_field_has_an_override_alias():
    assert set(ROBOT_FIELDS) <= set(SceneCfg.MOVED_FIELDS)
    for field in ROBOT_FIELDS:
        assert SceneCfg.MOVED_FIELDS[field] == f"entities.robot.{field}"


def test_a_run_setup_takes_the_old_override_paths():
    """Through the one place a run's overrides apply (``build_setup``), as typed on the
    command line and as a run's params record them."""
    setup = build_setup(
        "go2_walk",
        ["env.scene.model=/robots/go2.xml", "env.scene.actuators.hips.damping=1.5"],
        num_envs=4,
    )
    robot = setup.env_cfg.scene.robot
    assert robot.model == "/robots/go2.xml" and robot.actuators["hips"].damping == 1.5


def test_an_unknown_scene_field_suggests_the_moved_one():
    cfg = get_task("go2_walk").make_env_cfg()
    with pytest.raises(Exception, match=r"unknown config path 'env\.scene\.modle'.*'model'"):
        apply_override(cfg, "scene.modle", "x", "env")


def test_setting_a_moved_field_in_python_names_its_place_now():
    """A task written before (``cfg.scene.actuators = ...``) is refused, not set on
    nothing."""
    cfg = get_task("go2_walk").make_env_cfg()
    with pytest.raises(AttributeError, match=r"scene\.robot\.actuators"):
        cfg.scene.actuators = {"legs": ImplicitPDCfg()}
    with pytest.raises(AttributeError, match=r"scene\.robot\.model"):
        _ = cfg.scene.model
