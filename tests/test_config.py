"""Configs: dotted-path overrides with type checks, YAML round trips."""

from __future__ import annotations

import importlib

import pytest
import yaml

from robolearn import mdp
from robolearn.config import (
    apply_override,
    load_config,
    parse_overrides,
    save_config,
    save_yaml,
    to_dict,
)
from robolearn.env import ManagerBasedRLEnvCfg
from robolearn.errors import RobolearnError
from robolearn.registry import get_task
from robolearn.saved_names import MOVED
from robolearn.sim import NewtonCfg, SimCfg


def test_override_by_dotted_path_converts_to_the_field_type():
    cfg = get_task("humanoid_walk").env_cfg()
    apply_override(cfg, "rewards.track_lin_vel_xy.weight", "2")
    assert cfg.rewards["track_lin_vel_xy"].weight == 2.0
    assert isinstance(cfg.rewards["track_lin_vel_xy"].weight, float)
    apply_override(cfg, "commands.base_velocity.ranges.lin_vel_x", "[0.0, 1.5]")
    assert cfg.commands["base_velocity"].ranges.lin_vel_x == (0.0, 1.5)
    apply_override(cfg, "scene.num_envs", "64")
    assert cfg.scene.num_envs == 64
    apply_override(cfg, "rewards.swing_height.params.target_height", "0.12")
    assert cfg.rewards["swing_height"].params["target_height"] == 0.12


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("3e-4", 3e-4),
        ("1e4", 1e4),
        (".5", 0.5),
        ("-2", -2.0),
        ("inf", float("inf")),
        ("1_000", 1e3),
    ],
)
def test_numbers_parse_as_python_reads_them(text, expected):
    """YAML 1.1 reads 3e-4 and 1e4 as strings; the README's own example uses 3e-4."""
    agent = get_task("humanoid_walk").agent_cfg()
    apply_override(agent, "algorithm.entropy_coef", text)
    assert agent.algorithm.entropy_coef == expected
    assert isinstance(agent.algorithm.entropy_coef, float)
    apply_override(agent, "max_iterations", "1e4")
    assert agent.max_iterations == 10_000 and isinstance(agent.max_iterations, int)
    env = get_task("humanoid_walk").env_cfg()
    apply_override(env, "sim.njmax", "2e2")  # a field that holds None: int | None
    assert env.sim.njmax == 200


def test_string_fields_take_the_text_as_written():
    agent = get_task("humanoid_walk").agent_cfg()
    apply_override(agent, "experiment_name", "on")  # YAML 1.1 would make it True
    assert agent.experiment_name == "on"
    apply_override(agent, "experiment_name", "'1e4'")
    assert agent.experiment_name == "1e4"


def test_unknown_path_names_the_valid_keys():
    cfg = get_task("humanoid_walk").env_cfg()
    with pytest.raises(
        RobolearnError,
        match=r"path 'env.rewards.track_lin_vel' \(did you mean 'track_lin_vel_xy'.*valid:",
    ):
        apply_override(cfg, "rewards.track_lin_vel.weight", "1", root_name="env")


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("scene.num_envs", "1.5", "is an integer"),
        ("rewards.track_lin_vel_xy.weight", "high", "cannot set it"),
        ("commands.base_velocity.ranges.lin_vel_x", "[1, 2, 3]", "needs 2 values"),
        # fields that hold None now are checked against their annotation (int | None)
        ("sim.nconmax", "lots", "is int or null"),
        ("sim.nthread", "1.5", "is int or null"),
        ("rewards.track_lin_vel_xy.weight", ".nan", "cannot be NaN"),
        ("rewards.track_lin_vel_xy.weight", "nan", "cannot be NaN"),
        ("scene.num_envs", "inf", "is an integer"),
        ("sim.njmax", "nan", "cannot be NaN"),
    ],
)
def test_bad_values_are_clear_errors(path, value, message):
    cfg = get_task("humanoid_walk").env_cfg()
    with pytest.raises(RobolearnError, match=message):
        apply_override(cfg, path, value)


def test_parse_overrides():
    assert parse_overrides(["a.b=1", "c = x"]) == [("a.b", "1"), ("c", "x")]
    with pytest.raises(RobolearnError, match="not of the form"):
        parse_overrides(["novalue"])


def test_yaml_names_functions_by_module(tmp_path):
    cfg = get_task("humanoid_walk").env_cfg()
    path = tmp_path / "env.yaml"
    save_yaml(cfg, path)
    data = yaml.safe_load(path.read_text())
    assert (
        data["rewards"]["track_lin_vel_xy"]["func"] == "robolearn.mdp.rewards:track_lin_vel_xy_exp"
    )
    assert data["scene"]["entities"]["robot"]["model"] == "humanoid/scene.xml"
    assert to_dict(mdp.time_out) == "robolearn.mdp.terminations:time_out"
    assert not list(tmp_path.glob(".*.tmp"))  # the temp file was renamed into place


def test_fields_that_hold_none_take_values_of_their_annotated_type():
    cfg = get_task("humanoid_walk").env_cfg()
    assert cfg.sim.nconmax is None and cfg.sim.nthread is None
    apply_override(cfg, "sim.nconmax", "64")
    apply_override(cfg, "sim.nthread", "1.0")
    assert cfg.sim.nconmax == 64 and cfg.sim.nthread == 1 and isinstance(cfg.sim.nthread, int)
    apply_override(cfg, "sim.nconmax", "null")
    assert cfg.sim.nconmax is None


def test_a_dataclass_field_that_holds_none_takes_a_mapping_or_is_a_clear_error():
    cfg = get_task("humanoid_walk").env_cfg()
    path = "observations.policy.terms.actions.noise"
    apply_override(cfg, path, "{kind: uniform, low: -0.1, high: 0.1}")
    noise = cfg.observations["policy"].terms["actions"].noise
    assert (noise.kind, noise.low, noise.high) == ("uniform", -0.1, 0.1)
    cfg = get_task("humanoid_walk").env_cfg()
    with pytest.raises(RobolearnError, match="is NoiseCfg or null; cannot set it to 5"):
        apply_override(cfg, path, "5")
    with pytest.raises(RobolearnError, match="has fields kind, low, high, std"):
        apply_override(cfg, path, "{lo: 1}")


def test_null_removes_a_term_as_none_does_in_isaac_lab():
    from robolearn.env import ManagerBasedRLEnv

    cfg = get_task("cartpole_balance").env_cfg()
    cfg.scene.num_envs = 2
    cfg.sim.engine = "cpu"
    name = next(iter(cfg.rewards))
    apply_override(cfg, f"rewards.{name}", "null", root_name="env")
    assert name not in cfg.rewards
    assert name not in ManagerBasedRLEnv(cfg).reward_manager.term_names
    with pytest.raises(RobolearnError, match=r"env\.sim cannot be null; it is now 'SimCfg'"):
        apply_override(cfg, "sim", "null", root_name="env")


@pytest.mark.parametrize(
    ("text", "expected"), [("true", True), ("false", False), ("auto", "auto"), ("no", False)]
)
def test_mixed_precision_takes_a_switch_or_auto(text, expected):
    agent = get_task("humanoid_walk").agent_cfg()
    apply_override(agent, "algorithm.use_mixed_precision", text, root_name="agent")
    assert agent.algorithm.use_mixed_precision == expected
    agent.validate()
    apply_override(agent, "algorithm.use_mixed_precision", "sometimes", root_name="agent")
    with pytest.raises(RobolearnError, match="must be true, false or auto, got 'sometimes'"):
        agent.validate()


def test_auto_mixed_precision_follows_the_cpus_bf16_instructions():
    from pathlib import Path

    flags = Path("/proc/cpuinfo").read_text().split()
    native = "avx512_bf16" in flags or "amx_bf16" in flags
    agent = get_task("humanoid_walk").agent_cfg()
    assert agent.algorithm.use_mixed_precision == "auto"
    assert agent.to_rsl_rl("cpu")["algorithm"]["use_mixed_precision"] is native
    agent.algorithm.use_mixed_precision = False
    assert agent.to_rsl_rl("cpu")["algorithm"]["use_mixed_precision"] is False


def test_a_run_trained_without_a_term_the_play_variant_drops_plays():
    """A run trained with ``env.events.push=null`` replays that override on the play
    variant, which has no pushes either: no error, and still none for a typo of the user's."""
    from robolearn.app.configs import build_setup
    from robolearn.app.play import env_for_checkpoint

    checkpoint = {"task": "quadruped_walk", "overrides": ["env.events.push=null"]}
    env, setup = env_for_checkpoint("quadruped_walk", checkpoint, [], num_envs=2, engine="cpu")
    assert "push" not in setup.env_cfg.events and env.num_envs == 2
    assert setup.overrides == ["env.events.push=null"]  # the run's list, kept for what follows
    with pytest.raises(RobolearnError, match=r"unknown config path 'env\.events\.push'"):
        build_setup("quadruped_walk", ["env.events.push=null"], play=True)
    with pytest.raises(RobolearnError, match=r"unknown config path 'env\.events\.psuh'"):
        build_setup("quadruped_walk", [], play=True, replayed=["env.events.psuh=2"])


def test_a_sensor_config_is_frozen_yet_takes_overrides():
    """Sensor configs are frozen dataclasses: an override replaces the config in its scene
    with a changed copy (the command line's env.scene.sensors.<name>.<field>=...)."""
    cfg = get_task("cartpole_balance_depth").env_cfg()
    camera = cfg.scene.sensors["camera"]
    apply_override(cfg, "scene.sensors.camera.renderer", "opengl", root_name="env")
    apply_override(cfg, "scene.sensors.camera.width", "32", root_name="env")
    changed = cfg.scene.sensors["camera"]
    assert (changed.renderer, changed.width, changed.height) == ("opengl", 32, camera.height)
    assert camera.renderer == "batch"  # the task's own config object is untouched
    unknown = r"unknown config path 'env\.scene\.sensors\.camera\.wdth'"
    with pytest.raises(RobolearnError, match=unknown):
        apply_override(cfg, "scene.sensors.camera.wdth", "32", root_name="env")


def test_a_run_saved_before_the_engine_settings_moved_loads(tmp_path):
    """SimCfg and NewtonCfg lived in robolearn.scene.config; an env.yaml written then names
    them there and still loads, equal to the config it was saved from."""
    cfg = get_task("cartpole_balance").env_cfg()
    cfg.sim = SimCfg(engine="cpu", physics_dt=0.01, newton=NewtonCfg(solver="featherstone"))
    path = tmp_path / "env.yaml"
    save_config(cfg, path)
    text = path.read_text()
    assert text.count("robolearn.sim.config:") == 2  # SimCfg and NewtonCfg
    old = text.replace("robolearn.sim.config:", "robolearn.scene.config:")
    path.write_text(old)
    assert "robolearn.scene.config:SimCfg" in old and "robolearn.scene.config:NewtonCfg" in old
    back = load_config(path, expect=ManagerBasedRLEnvCfg, root="env")
    assert type(back.sim) is SimCfg and type(back.sim.newton) is NewtonCfg
    assert back == cfg


# where each module of robolearn.actuators was before it had a package of its own
ACTUATORS_BEFORE = {
    "robolearn.actuators.config": "robolearn.scene.actuators",
    "robolearn.actuators.apply": "robolearn.scene.actuators",
    "robolearn.actuators.network": "robolearn.scene.actuator_net",
    "robolearn.actuators.drive": "robolearn.scene.drive",
    "robolearn.actuators.delay": "robolearn.scene.delay",
}


def test_a_run_saved_before_the_actuators_had_a_package_loads(tmp_path):
    """The actuator models lived in robolearn.scene; an env.yaml written then names them
    there (quadruped_walk_motors: DC motors with a delay, motor randomizations) and still
    loads, equal to the config it was saved from."""
    cfg = get_task("quadruped_walk_motors").make_env_cfg()
    path = tmp_path / "env.yaml"
    save_config(cfg, path)
    old = text = path.read_text()
    for new, before in ACTUATORS_BEFORE.items():
        old = old.replace(f"{new}:", f"{before}:")
    assert "robolearn.actuators." not in old
    assert old != text and "robolearn.scene.actuators:DCMotorCfg" in old
    path.write_text(old)
    back = load_config(path, expect=ManagerBasedRLEnvCfg, root="env")
    assert type(back.scene.robot.actuators["legs"]).__module__ == "robolearn.actuators.config"
    assert back == cfg


def test_every_old_actuator_module_points_at_modules_that_exist():
    for new, before in ACTUATORS_BEFORE.items():
        assert new in MOVED[before]
        for home in MOVED[before]:
            importlib.import_module(home)
