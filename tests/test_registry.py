"""Tasks from outside robolearn: --import, installed entry points, broken packages."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest
from cli_helpers import cli_json, one_line_error, robolearn, run_train

MY_TASKS = '''
"""A user's task package: a cartpole of their own, derived from robolearn's."""
from robolearn.registry import TaskSpec, get_task, register_task

BASE = get_task("cartpole_balance")


def env_cfg():
    cfg = BASE.env_cfg()
    cfg.episode_length_s = 3.0  # what differs from the base
    return cfg


register_task(TaskSpec("my_cartpole", "a cartpole of mine", env_cfg, BASE.agent_cfg))
'''


def package(root: Path, name: str, body: str) -> dict[str, str]:
    """A package ``name`` under ``root``, and the environment that puts it on the path."""
    (root / name).mkdir(parents=True)
    (root / name / "__init__.py").write_text(textwrap.dedent(body))
    path = os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path}


def installed(root: Path, dist: str, entry_points: dict[str, str]) -> None:
    """The metadata pip writes for an installed distribution that declares entry points in
    the group robolearn.tasks (a .dist-info folder on the path)."""
    info = root / f"{dist}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    lines = "".join(f"{k} = {v}\n" for k, v in entry_points.items())
    (info / "entry_points.txt").write_text(f"[robolearn.tasks]\n{lines}")


# slow: a whole run end to end (the default suite keeps under 10 minutes)
@pytest.mark.slow
def test_a_task_of_my_own_through_import_trains_and_plays_under_its_own_name(tmp_path):
    """``--import my_tasks`` from the folder that holds my_tasks.py (before: not found, the
    working folder not being on the import path), and the run's policy played and exported
    from elsewhere without repeating ``--import`` (the run records it)."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "my_tasks.py").write_text(textwrap.dedent(MY_TASKS))
    logs = project / "logs"
    listed = robolearn("list", "--import", "my_tasks", cwd=project)
    assert listed.returncode == 0, listed.stderr
    assert "my_cartpole" in listed.stdout and "[--import my_tasks]" in listed.stdout
    out = run_train(
        "--import", "my_tasks", "--task", "my_cartpole", "--num_envs", 64,
        "--max_iterations", 2, "--log_root", logs, cwd=project,
    )  # fmt: skip
    # its runs land under its own name, not the name of the task it derives from
    assert [p.name for p in logs.iterdir()] == ["my_cartpole"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    metrics = cli_json(
        "play", "--task", "my_cartpole", "--num_envs", 8, "--log_root", logs, "--json",
        cwd=elsewhere,
    )  # fmt: skip
    assert metrics["mean_episode_length_s"] <= 3.0 + 1e-6  # the derived episode length
    (run,) = (logs / "my_cartpole").iterdir()
    out = robolearn("export", "--checkpoint", run, cwd=elsewhere)
    assert out.returncode == 0, out.stderr[-2000:]
    recorded = json.loads((run / "exported" / "policy.json").read_text())["imports"]
    assert recorded == {"modules": ["my_tasks"], "path": [str(project.resolve())]}
    out = robolearn(
        "play", "--task", "my_cartpole", "--checkpoint", run / "exported" / "policy.onnx",
        "--num_envs", 8, "--json", cwd=elsewhere,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]


def test_an_installed_package_declares_its_tasks_by_entry_point(tmp_path):
    env = package(tmp_path, "my_tasks", MY_TASKS)
    installed(tmp_path, "my_robot_tasks", {"mine": "my_tasks"})
    listed = robolearn("list", env=env)
    assert listed.returncode == 0, listed.stderr
    line = next(ln for ln in listed.stdout.splitlines() if ln.startswith("my_cartpole"))
    assert "[entry point my_robot_tasks: mine = my_tasks]" in line
    run_train(
        "--task", "my_cartpole", "--num_envs", 64, "--max_iterations", 2,
        "--log_root", tmp_path / "logs", env=env,
    )  # fmt: skip


def test_a_broken_package_is_named_and_the_other_tasks_still_work(tmp_path):
    env = package(tmp_path, "broken_tasks", "raise ImportError('needs a driver we lack')\n")
    installed(tmp_path, "broken_dist", {"broken": "broken_tasks"})
    listed = robolearn("list", env=env)
    assert listed.returncode == 0 and "cartpole_balance" in listed.stdout
    assert "broken_dist" in listed.stderr and "needs a driver we lack" in listed.stderr
    out = robolearn("train", "--task", "broken_task", "--log_root", tmp_path / "logs", env=env)
    one_line_error(out, "unknown task 'broken_task'")
    assert "broken_dist" in out.stderr and "needs a driver we lack" in out.stderr


def test_import_errors_are_one_line(tmp_path):
    env = package(tmp_path, "raising_tasks", "x = 1 / 0\n")
    one_line_error(
        robolearn("list", "--import", "no_such_module_here", cwd=tmp_path),
        f"--import no_such_module_here: no module named 'no_such_module_here' on the import "
        f"path or in {tmp_path.resolve()}; --import takes a module name (my_tasks, "
        "my_pkg.tasks: on the import path or in the working folder), the path of a .py file",
    )
    # a module found, whose own import fails: its error, not "not found"
    (tmp_path / "needs_more.py").write_text("import no_such_dependency\n")
    one_line_error(
        robolearn("list", "--import", "needs_more", cwd=tmp_path),
        "--import needs_more: ModuleNotFoundError: No module named 'no_such_dependency'",
    )
    one_line_error(
        robolearn("train", "--task", "cartpole_balance", "--import", "raising_tasks", env=env),
        "--import raising_tasks: ZeroDivisionError: division by zero",
    )
    one_line_error(robolearn("train", "--task", "nope"), "or from --import <module>")


def test_a_later_task_of_the_same_name_replaces_the_earlier_with_a_warning(tmp_path):
    body = MY_TASKS.replace('"my_cartpole", "a cartpole of mine"', '"cartpole_balance", "mine"')
    env = package(tmp_path, "shadowing", body)
    listed = robolearn("list", "--import", "shadowing", env=env)
    assert listed.returncode == 0, listed.stderr
    assert (
        "task 'cartpole_balance' from --import shadowing replaces the one from robolearn"
        in listed.stderr
    )
    line = next(ln for ln in listed.stdout.splitlines() if ln.startswith("cartpole_balance"))
    assert "mine" in line and "[--import shadowing]" in line


USER_ROBOT = Path(__file__).parent / "assets" / "user_quadruped" / "robot.xml"

MY_ROBOT_TASK = f'''
"""A velocity task for a robot that is not robolearn's, in the lines it differs by."""
from robolearn.registry import TaskSpec, register_task
from robolearn.scene import robot_scene
from robolearn.tasks.velocity import velocity_agent_cfg, velocity_env_cfg, velocity_play_cfg


def env_cfg():
    scene = robot_scene({str(USER_ROBOT)!r}, feet=".._foot", num_envs=64)
    cfg = velocity_env_cfg(scene, base_body="base_link")
    cfg.rewards["flat_orientation"].weight = -2.0
    return cfg


register_task(
    TaskSpec(
        "my_quadruped_walk",
        "the velocity recipe on my quadruped",
        env_cfg,
        velocity_agent_cfg,
        lambda: velocity_play_cfg(env_cfg()),
    )
)
'''


def test_a_velocity_task_for_a_robot_of_my_own_is_a_few_lines(tmp_path, monkeypatch):
    """A public-collection style MJCF (classes, general actuators, a mesh, feet that are
    geoms, a keyframe called home) trains through the CLI with the family's recipe, and its
    config is the recipe's but for what it overrides."""
    env = package(tmp_path, "my_robot_tasks", MY_ROBOT_TASK)
    logs = tmp_path / "logs"
    run_train(
        "--import", "my_robot_tasks", "--task", "my_quadruped_walk",
        "--max_iterations", 2, "--log_root", logs, env=env,
    )  # fmt: skip
    run = next((logs / "my_quadruped_walk").iterdir())
    assert (run / "model_2.pt").is_file()

    from robolearn.tasks.velocity import velocity_env_cfg

    from robolearn.config import to_dict
    from robolearn.registry import get_task, import_tasks

    monkeypatch.syspath_prepend(str(tmp_path))
    import_tasks(["my_robot_tasks"])
    derived = get_task("my_quadruped_walk").env_cfg()
    robot = derived.scene.robot
    assert robot.root_body == "base_link" and robot.keyframe == "home"
    assert robot.feet == ("FL_foot", "FR_foot", "RL_foot", "RR_foot")  # geoms
    mine, recipe = to_dict(derived), to_dict(velocity_env_cfg(derived.scene, "base_link"))
    assert mine["rewards"].pop("flat_orientation")["weight"] == -2.0
    assert recipe["rewards"].pop("flat_orientation")["weight"] == -1.0
    assert mine == recipe


def test_a_keyframe_of_the_wrong_length_is_one_line(tmp_path):
    """MuJoCo fills a short keyframe from qpos0 without a word; as a robot's default pose
    that is a mistake (a keyframe written for another version of the model)."""
    model = tmp_path / "short_key.xml"
    model.write_text(
        USER_ROBOT.read_text()
        .replace('meshdir="meshes"', f'meshdir="{USER_ROBOT.parent / "meshes"}"')
        .replace('qpos="0 0 0.33 1 0 0 0 0 0.8 -1.6', 'qpos="0 0 0.33 1 0 0 0 0 0.8')
    )
    body = MY_ROBOT_TASK.replace(repr(str(USER_ROBOT)), repr(str(model)))
    env = package(tmp_path, "short_key_tasks", body)
    out = robolearn(
        "train", "--import", "short_key_tasks", "--task", "my_quadruped_walk",
        "--log_root", tmp_path / "logs", env=env,
    )  # fmt: skip
    one_line_error(out, "keyframe 'home' has 18 qpos values; the model has 19 (nq)")
    assert not (tmp_path / "logs").exists()
