"""Where a model comes from: robolearn's assets, any path, or MuJoCo Menagerie by name (read
from the test packages' copies of Menagerie, never downloaded)."""

from __future__ import annotations

import time

import pytest
import torch
from cli_helpers import one_line_error, robolearn_in_process

from robolearn.errors import RobolearnError
from robolearn.scene import EntityCfg, Scene, SceneCfg, SimCfg
from robolearn.scene.models import resolve_model_path


def test_a_menagerie_name_is_found_under_each_root_in_turn(menagerie_root):
    g1 = resolve_model_path("menagerie:unitree_g1/g1")  # an entry point, in the first root
    assert g1.name == "g1.xml" and g1.parent.name == "unitree_g1" and g1.is_file()
    assert resolve_model_path("menagerie:unitree_g1/g1.xml") == g1  # a file of its folder
    panda = resolve_model_path("menagerie:franka_emika_panda/panda")  # in the second root
    assert panda.name == "panda.xml" and panda.is_file()


def test_a_scene_runs_menageries_g1(menagerie_root):
    scene = Scene(
        SceneCfg(
            num_envs=2,
            entities={"robot": EntityCfg(model="menagerie:unitree_g1/g1", root_body="pelvis")},
            ground=True,  # g1.xml has no floor, and a floating robot needs one
        ),
        SimCfg(engine="cpu"),
    )
    assert len(scene.joint_names) == 29
    scene.step(2)
    assert bool(torch.isfinite(scene.engine.qpos).all())


@pytest.mark.parametrize(
    "name, fragment",
    [
        ("menagerie:unitree_g9", "no robot 'unitree_g9'; did you mean unitree_g1"),
        ("menagerie:unitree_go2", "not under MENAGERIE_ROOT"),
        ("menagerie:unitree_g1/nope", "no entry point 'nope'; its entry points: g1,"),
        ("menagerie:unitree_g1/nope.xml", "nope.xml is not there; the robot's folder"),
    ],
)
def test_bad_menagerie_names_are_one_line_errors(menagerie_root, name, fragment):
    with pytest.raises(RobolearnError, match=fragment.replace("(", r"\(")):
        resolve_model_path(name)


def test_offline_and_not_downloaded_says_where_it_looked_and_what_to_do(tmp_path, monkeypatch):
    monkeypatch.delenv("MENAGERIE_ROOT", raising=False)
    monkeypatch.setenv("MENAGERIE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MENAGERIE_BASE_URL", "http://127.0.0.1:9")  # nothing listens there
    # the download package waits 1, 2 and 4 s between its tries; the message is the same
    monkeypatch.setattr(time, "sleep", lambda seconds: None)
    with pytest.raises(RobolearnError) as error:
        resolve_model_path("menagerie:unitree_g1")
    message = str(error.value)
    assert "\n" not in message
    assert str(tmp_path / "cache") in message and "point MENAGERIE_ROOT at" in message


def test_inspect_takes_menagerie_names(menagerie_root, monkeypatch, capsys):
    monkeypatch.setenv("MENAGERIE_ROOT", menagerie_root)
    report = robolearn_in_process(capsys, "inspect", "menagerie:unitree_g1/g1", "--json")
    assert report.returncode in (0, 1), report.stderr
    assert '"left_knee_joint"' in report.stdout
    bad = robolearn_in_process(capsys, "inspect", "menagerie:unitree_g9")
    one_line_error(bad, "did you mean unitree_g1")
