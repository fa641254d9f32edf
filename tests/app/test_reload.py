"""Reloadable runs: params/ loads back into equal configs, and ``train --from`` repeats a
run bit for bit on the cpu engine."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import pytest
import torch
import yaml
from cli_helpers import progress, robolearn_in_process, run_train, train_here

from robolearn import mdp
from robolearn.app.configs import build_setup
from robolearn.app.runs import read_run_params
from robolearn.config import load_config, save_config
from robolearn.env import ManagerBasedRLEnvCfg
from robolearn.errors import RobolearnError
from robolearn.managers import TermCfg
from robolearn.registry import get_task, task_names
from robolearn.rl.checkpoint import load_checkpoint
from robolearn.rl.config import AgentCfg
from robolearn.scene.entities import SceneEntityCfg

TASK = "cartpole_balance"
# Small and off every default (envs, seed, rollout, a reward weight): a --from run that
# fell back on the task's defaults anywhere would not reproduce the original.
FLAGS = ("--num_envs", 64, "--seed", 7, "--max_iterations", 3)
OVERRIDES = ("agent.num_steps_per_env=8", "env.rewards.pole_pos.weight=-1.5")


# ---- configs round-trip through typed YAML ----------------------------------------------


@pytest.mark.parametrize("name", task_names())
def test_every_task_config_loads_back_equal(tmp_path, name):
    spec = get_task(name)
    for i, cfg in enumerate((spec.make_env_cfg(), spec.make_env_cfg(play=True), spec.agent_cfg())):
        path = tmp_path / f"{i}.yaml"
        save_config(cfg, path)
        back = load_config(path, expect=type(cfg))
        assert type(back) is type(cfg)
        assert back == cfg, f"{name}: config {i} changed on its way through YAML"
        yaml.safe_load(path.read_text())  # plain YAML: any reader opens it


def test_action_and_command_configs_keep_their_types(tmp_path):
    cfg = get_task("humanoid_walk").env_cfg()
    path = tmp_path / "env.yaml"
    save_config(cfg, path)
    data = yaml.safe_load(path.read_text())
    assert data["__type__"] == "robolearn.env:ManagerBasedRLEnvCfg"
    action = data["actions"]["joint_pos"]
    assert action["__type__"] == "robolearn.mdp.actions:JointPositionActionCfg"
    assert action["class_type"] == "robolearn.mdp.actions:JointPositionAction"
    command = data["commands"]["base_velocity"]
    assert command["__type__"] == "robolearn.mdp.commands:UniformVelocityCommandCfg"
    back = load_config(path)
    assert type(back.commands["base_velocity"]) is type(cfg.commands["base_velocity"])
    assert back.commands["base_velocity"].ranges == cfg.commands["base_velocity"].ranges
    # a run folder saved before the concrete terms moved to robolearn.mdp still loads
    old = path.read_text()
    old = old.replace("robolearn.mdp.actions:", "robolearn.managers.action:")
    old = old.replace("robolearn.mdp.commands:", "robolearn.managers.command:")
    path.write_text(old)
    back = load_config(path)
    assert type(back.actions["joint_pos"]) is type(cfg.actions["joint_pos"])
    assert (
        back.commands["base_velocity"].class_type is type(cfg.commands["base_velocity"]).class_type
    )


def test_untyped_params_keep_lists_tuples_configs_and_functions(tmp_path):
    """A term's params are annotated Any: the YAML itself must say which kind each is."""
    params = {
        "names": ["pelvis", "torso"],
        "bounds": (-1.0, 2.5),
        "entity": SceneEntityCfg("robot", joints=("hip", "knee")),
        "fn": mdp.is_alive,
        "nested": {"inner": (1, [2, 3])},
        "text": "robolearn.mdp.rewards:is_alive",  # text that looks like an import path
        "limit": math.inf,
        "nothing": None,
    }
    cfg = TermCfg(func=mdp.time_out, params=params)
    path = tmp_path / "term.yaml"
    save_config(cfg, path)
    back = load_config(path)
    assert back == cfg
    p = back.params
    assert type(p["names"]) is list and type(p["bounds"]) is tuple
    assert type(p["nested"]["inner"]) is tuple and type(p["nested"]["inner"][1]) is list
    assert p["fn"] is mdp.is_alive and back.func is mdp.time_out
    assert type(p["entity"]) is SceneEntityCfg and p["entity"].joints == ("hip", "knee")
    assert p["text"] == "robolearn.mdp.rewards:is_alive"


def write_edited(src: Path, dst: Path, old: str, new: str) -> None:
    text = src.read_text()
    assert old in text, old
    dst.write_text(text.replace(old, new))


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "robolearn.mdp.rewards:is_alive",
            "robolearn.mdp.rewards:was_alive",
            "env.rewards.alive.func: 'robolearn.mdp.rewards:was_alive' does not exist",
        ),
        (
            "robolearn.mdp.actions:JointEffortActionCfg",
            "robolearn.gone_module:JointEffortActionCfg",
            "env.actions.cart_force.__type__: cannot import "
            "'robolearn.gone_module:JointEffortActionCfg' (ModuleNotFoundError",
        ),
        ("weight: 1.0", "wieght: 1.0", "RewardTermCfg has no field 'wieght'"),
        ("decimation: 2", "decimation: [2", "is not valid YAML"),
        (
            "robolearn.managers.reward:RewardTermCfg",
            "robolearn.mdp.rewards:is_alive",
            "is not a config class",
        ),
    ],
)
def test_a_broken_params_file_is_an_error_naming_the_place(tmp_path, old, new, message):
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    save_config(get_task(TASK).env_cfg(), good)
    write_edited(good, bad, old, new)
    with pytest.raises(RobolearnError, match=r"^" + str(bad).replace(".", r"\.")) as info:
        load_config(bad, expect=ManagerBasedRLEnvCfg, root="env")
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_a_file_of_the_wrong_config_is_refused(tmp_path):
    path = tmp_path / "agent.yaml"
    save_config(get_task(TASK).agent_cfg(), path)
    with pytest.raises(RobolearnError, match="holds a AgentCfg, not a ManagerBasedRLEnvCfg"):
        load_config(path, expect=ManagerBasedRLEnvCfg)
    path.write_text(yaml.safe_dump({"decimation": 2}))  # the untyped env.yaml of before
    with pytest.raises(RobolearnError, match="holds no saved config"):
        load_config(path, expect=ManagerBasedRLEnvCfg)


# ---- train --from: a new run with another's configs --------------------------------------


def only_run(root: Path, experiment: str = TASK) -> Path:
    (run,) = (root / experiment).iterdir()
    return run


def learning_rows(run: Path) -> list[dict]:
    """progress.jsonl without what depends on the clock."""
    rows = progress(run)
    return [
        {k: v for k, v in row.items() if not k.startswith("Perf/") and k != "wall_time"}
        for row in rows
    ]


@pytest.fixture(scope="module")
def original(tmp_path_factory) -> Path:
    """A 3-iteration cartpole run on the device 'auto' picks, off the defaults."""
    root = tmp_path_factory.mktemp("original")
    run_train("--task", TASK, *FLAGS, "--log_root", root, *OVERRIDES)
    return only_run(root)


def test_params_record_what_ran_and_load_back_equal(original):
    params = original / "params"
    run = yaml.safe_load((params / "run.yaml").read_text())
    expected_engine = "cuda:0" if torch.cuda.is_available() else "cpu"
    assert run["engine"] == expected_engine and run["device"] == expected_engine
    assert run["task"] == TASK and run["seed"] == 7 and run["num_envs"] == 64
    assert run["overrides"] == list(OVERRIDES) and run["from_run"] is None
    env = yaml.safe_load((params / "env.yaml").read_text())
    assert env["sim"]["engine"] == expected_engine  # what ran, never "auto"

    setup = build_setup(TASK, list(OVERRIDES), num_envs=64, seed=7, max_iterations=3)
    setup.env_cfg.sim.engine = expected_engine
    loaded = read_run_params(original)
    assert loaded.task == TASK and loaded.overrides == list(OVERRIDES)
    assert loaded.env_cfg == setup.env_cfg
    assert loaded.agent_cfg == setup.agent_cfg
    assert load_config(params / "agent.yaml", AgentCfg) == setup.agent_cfg


@pytest.mark.skipif(torch.cuda.is_available(), reason="bit for bit on the cpu engine")
def test_a_run_from_another_repeats_it_bit_for_bit(original, tmp_path):
    run_train("--from", original, "--log_root", tmp_path)
    again = only_run(tmp_path)
    assert again.name != original.name or again.parent != original.parent
    first, second = learning_rows(original), learning_rows(again)
    assert [r["iteration"] for r in first] == [1, 2, 3]
    assert first[0]["Loss/surrogate"] != 0 and first[0]["Train/mean_reward"] is not None
    assert second == first  # losses, rewards, terminations: exactly equal floats
    a = load_checkpoint(original / "model_3.pt")["model"]["actor_state_dict"]
    b = load_checkpoint(again / "model_3.pt")["model"]["actor_state_dict"]
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    run = yaml.safe_load((again / "params" / "run.yaml").read_text())
    assert run["from_run"] == str(original.resolve())
    assert run["overrides"] == list(OVERRIDES)
    assert read_run_params(again).env_cfg == read_run_params(original).env_cfg


def test_flags_and_overrides_apply_on_top_of_the_source(original, tmp_path):
    train_here(
        "--from", original, "--log_root", tmp_path, "--max_iterations", 1,
        "--engine", "cpu", "--run_name", "branch", "agent.algorithm.learning_rate=5e-4",
    )  # fmt: skip
    run = only_run(tmp_path)
    assert run.name.endswith("_branch")
    loaded = read_run_params(run)
    assert loaded.agent_cfg.max_iterations == 1
    assert loaded.agent_cfg.algorithm.learning_rate == 5e-4
    assert loaded.agent_cfg.num_steps_per_env == 8  # the source's override, kept
    assert loaded.env_cfg.rewards["pole_pos"].weight == -1.5
    assert (loaded.env_cfg.scene.num_envs, loaded.env_cfg.seed) == (64, 7)
    # the task plus the recorded overrides rebuild the configs (what --resume and play do)
    assert loaded.overrides == [*OVERRIDES, "agent.algorithm.learning_rate=5e-4"]
    assert load_checkpoint(run / "model_1.pt")["overrides"] == loaded.overrides
    assert [r["iteration"] for r in progress(run)] == [1]


def test_a_run_of_a_task_from_a_file_reloads_from_any_folder(tmp_path):
    """--import my_tasks.py (relative): --from repeats the import from the recorded path,
    and the file's own function comes back by its import path."""
    code = tmp_path / "code"
    code.mkdir()
    (code / "my_tasks.py").write_text(
        textwrap.dedent(
            """
            from robolearn.managers import RewardTermCfg
            from robolearn.registry import TaskSpec, get_task, register_task

            def upright(env):
                return env.scene.engine.qpos[:, 1].float().cos()

            def env_cfg():
                cfg = get_task("cartpole_balance").env_cfg()
                cfg.rewards["upright"] = RewardTermCfg(func=upright, weight=0.5)
                return cfg

            register_task(TaskSpec("my_cartpole", "cartpole, upright bonus", env_cfg,
                                   get_task("cartpole_balance").agent_cfg))
            """
        )
    )
    small = ("--num_envs", 8, "--max_iterations", 1, "agent.num_steps_per_env=4")
    run_train(
        "--import", "my_tasks.py", "--task", "my_cartpole", *small,
        "--log_root", tmp_path / "logs", cwd=code,
    )  # fmt: skip
    source = only_run(tmp_path / "logs", "my_cartpole")
    env = yaml.safe_load((source / "params" / "env.yaml").read_text())
    assert env["rewards"]["upright"]["func"] == "my_tasks:upright"
    run = yaml.safe_load((source / "params" / "run.yaml").read_text())
    assert run["imports"] == [str(code / "my_tasks.py")]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run_train("--from", source, "--log_root", elsewhere / "logs", cwd=elsewhere)
    assert (only_run(elsewhere / "logs", "my_cartpole") / "model_1.pt").is_file()


# ---- bad input: one line, exit status 2, nothing created ---------------------------------


def broken_copy(original: Path, root: Path, file: str, old: str, new: str) -> Path:
    """A copy of the run's params/ with one text edited in one file."""
    copy = root / "source" / original.name
    (copy / "params").mkdir(parents=True)
    for path in (original / "params").iterdir():
        (copy / "params" / path.name).write_text(path.read_text())
    write_edited(original / "params" / file, copy / "params" / file, old, new)
    return copy


def run_cli(capsys, *args) -> tuple[int, list[str]]:
    """The real command line, in this process: exit status and the lines on stderr."""
    out = robolearn_in_process(capsys, *args)
    return out.returncode, [line for line in out.stderr.splitlines() if line.strip()]


@pytest.mark.parametrize(
    ("case", "fragment"),
    [
        ("no_params", "is not a run folder: it has no params/"),
        ("missing", "is not a folder"),
        ("corrupt", "env.yaml is not valid YAML"),
        ("gone_function", "'robolearn.mdp.rewards:was_alive' does not exist"),
        ("gone_module", "cannot import 'old_pkg.terms:alive'"),
        ("old_format", "cannot be reloaded"),
        ("no_env_yaml", "env.yaml is missing"),
        ("other_task", "is a run of cartpole_balance; leave --task out"),
        ("resume", "--from starts a new run"),
    ],
)
def test_bad_from_is_one_line_and_creates_nothing(original, tmp_path, capsys, case, fragment):
    source, extra = original, []
    if case == "no_params":
        source = tmp_path / "source" / "not_a_run"
        source.mkdir(parents=True)
    elif case == "missing":
        source = tmp_path / "nowhere"
    elif case == "corrupt":
        source = broken_copy(original, tmp_path, "env.yaml", "decimation: 2", "decimation: [2")
    elif case == "gone_function":
        source = broken_copy(
            original, tmp_path, "env.yaml", "rewards:is_alive", "rewards:was_alive"
        )
    elif case == "gone_module":
        source = broken_copy(
            original, tmp_path, "env.yaml", "robolearn.mdp.rewards:is_alive", "old_pkg.terms:alive"
        )
    elif case == "old_format":
        source = broken_copy(original, tmp_path, "run.yaml", "format: 2", "format: 1")
    elif case == "no_env_yaml":
        source = broken_copy(original, tmp_path, "env.yaml", "decimation", "decimation")
        (source / "params" / "env.yaml").unlink()
    elif case == "other_task":
        extra = ["--task", "humanoid_walk"]
    elif case == "resume":
        extra = ["--resume"]
    logs = tmp_path / "logs"
    status, lines = run_cli(capsys, "train", "--from", source, "--log_root", logs, *extra)
    assert status == 2 and len(lines) == 1, lines
    assert lines[0].startswith("robolearn: error: ") and fragment in lines[0], lines[0]
    assert not logs.exists(), "a refused --from created a run folder"


def test_train_without_task_or_from_is_one_line(tmp_path, capsys):
    status, lines = run_cli(capsys, "train", "--log_root", tmp_path / "logs")
    assert status == 2 and lines == [
        "robolearn: error: --task is required (or --from a run folder)"
    ]
    assert not (tmp_path / "logs").exists()
