"""Run folders written before the tasks were grouped by family still load.

A saved config names functions and classes by ``module:qualname``; the task modules moved
(``robolearn.tasks.humanoid_walk`` is ``robolearn.tasks.velocity.humanoid_walk``, what it
shared with g1_walk ``robolearn.tasks.velocity.biped``), and ``robolearn.saved_names.MOVED``
sends the old paths to the new homes.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import shutil
from pathlib import Path

import pytest
import yaml
from cli_helpers import progress, robolearn

from robolearn.app.configs import build_setup
from robolearn.app.runs import read_run_params
from robolearn.config import (
    IMPORT_KEY,
    callable_name,
    load_config,
    save_config,
)
from robolearn.errors import RobolearnError
from robolearn.managers import ObservationTermCfg
from robolearn.registry import get_task
from robolearn.rl.config.offpolicy import OffPolicyCfg
from robolearn.saved_names import MOVED, import_saved

FIXTURES = Path(__file__).parent / "fixtures"
OLD_NAMES = yaml.safe_load((FIXTURES / "names_before_families.yaml").read_text())
"""Old import path -> new import path, of every function the old task modules defined."""
FAMILIES = {"robolearn.tasks.velocity", "robolearn.tasks.tracking", "robolearn.tasks.manipulation"}
"""The old modules whose names are packages now: their family's."""
OLD_RUN = FIXTURES / "cartpole_run_before_families"
"""params/ of ``robolearn train --task cartpole_balance --max_iterations 1 --num_envs 8``,
written by the code before the move (commit 44fcd9b)."""


def test_every_old_task_module_is_gone_or_a_family_package():
    modules = {path.partition(":")[0] for path in OLD_NAMES}
    assert len(modules) == 22 and modules <= set(MOVED)
    for module in modules - FAMILIES:
        assert importlib.util.find_spec(module) is None, f"{module} was left behind"
    for module in FAMILIES:
        assert hasattr(importlib.import_module(module), "__path__"), f"{module} is no package"


def test_a_config_naming_the_old_modules_loads_equal(tmp_path):
    """A config whose leaves name every moved function, saved (new paths), rewritten to the
    old paths as a run before the move wrote them, loads back equal."""
    new = {old: import_saved(path, "new") for old, path in OLD_NAMES.items()}
    assert all(callable_name(fn) == OLD_NAMES[old] for old, fn in new.items())
    cfg = get_task("cartpole_balance").env_cfg()
    cfg.observations["policy"].terms["moved"] = ObservationTermCfg(
        func=new["robolearn.tasks.velocity:velocity_env_cfg"], params=dict(new)
    )
    path = tmp_path / "env.yaml"
    save_config(cfg, path)
    data = yaml.safe_load(path.read_text())
    term = data["observations"]["policy"]["terms"]["moved"]
    assert term["func"] == "robolearn.tasks.velocity.recipe:velocity_env_cfg"
    term["func"] = "robolearn.tasks.velocity:velocity_env_cfg"
    for old in new:
        assert term["params"][old] == {IMPORT_KEY: OLD_NAMES[old]}
        term["params"][old] = {IMPORT_KEY: old}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    assert "robolearn.tasks.humanoid_walk:biped_terms" in path.read_text()
    assert load_config(path) == cfg


def test_a_missing_name_of_a_moved_module_names_its_new_home(tmp_path):
    path = tmp_path / "env.yaml"
    save_config(get_task("cartpole_balance").env_cfg(), path)
    text = path.read_text().replace(
        "func: robolearn.mdp.observations:joint_pos_rel",
        "func: robolearn.tasks.humanoid_walk:no_such_term",
        1,
    )
    path.write_text(text)
    with pytest.raises(RobolearnError, match=r"robolearn\.tasks\.velocity\.humanoid_walk has no"):
        load_config(path)


def test_a_run_folder_written_before_the_move_loads_and_trains_from(tmp_path):
    run = tmp_path / "old_run"
    shutil.copytree(OLD_RUN, run)
    loaded = read_run_params(run)
    setup = build_setup("cartpole_balance", [], num_envs=8, seed=42, max_iterations=1)
    setup.env_cfg.sim.engine = "cpu"
    assert loaded.task == "cartpole_balance"
    assert loaded.env_cfg == setup.env_cfg
    # the off-policy settings came after this run: its agent.yaml has none, and they load
    # as their class's defaults, not as the task's recipe of today
    assert loaded.agent_cfg.offpolicy == OffPolicyCfg()
    assert dataclasses.replace(loaded.agent_cfg, offpolicy=setup.agent_cfg.offpolicy) == (
        setup.agent_cfg
    )
    out = robolearn("train", "--from", run, "--log_root", tmp_path / "logs", "--engine", "cpu")
    assert out.returncode == 0, out.stderr[-3000:]
    (again,) = (tmp_path / "logs" / "cartpole_balance").iterdir()
    assert [r["iteration"] for r in progress(again)] == [1]
    assert read_run_params(again).env_cfg == loaded.env_cfg
