"""One leaf coercer (robolearn.config._coerce_leaf) for overrides and for files: the rules
tests/test_config.py does not pin, each on the side it did not cover."""

from __future__ import annotations

import pytest

from robolearn.config import apply_override, config_from_data, config_to_data
from robolearn.errors import RobolearnError
from robolearn.registry import get_task


def saved_env_with(path: str, value) -> dict:
    """humanoid_walk's env config as saved data, with the leaf at dotted ``path`` edited
    as a user edits a params file by hand."""
    data = config_to_data(get_task("humanoid_walk").env_cfg())
    node = data
    *parents, leaf = path.split(".")
    for key in parents:
        node = node[key]
    node[leaf] = value
    return data


def test_a_file_reads_numbers_as_an_override_does():
    """YAML 1.1 reads 3e-4 as text; an integral float is an int where an int is expected."""
    cfg = config_from_data(saved_env_with("sim.physics_dt", "3e-4"))
    assert cfg.sim.physics_dt == 3e-4 and isinstance(cfg.sim.physics_dt, float)
    cfg = config_from_data(saved_env_with("decimation", 2.0))
    assert cfg.decimation == 2 and isinstance(cfg.decimation, int)
    cfg = config_from_data(saved_env_with("sim.njmax", 200))  # int | None
    assert cfg.sim.njmax == 200


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("decimation", 2.5, r"^decimation is int, got 2\.5$"),
        ("decimation", None, r"^decimation is int, got None$"),
        ("decimation", True, r"^decimation is int, got True$"),
        ("sim.njmax", "lots", r"^sim\.njmax is int or null, got 'lots'$"),
        ("sim.physics_dt", float("nan"), r"^sim\.physics_dt cannot be NaN$"),
    ],
)
def test_a_bad_value_in_a_file_is_named_with_what_fits(path, value, message):
    with pytest.raises(RobolearnError, match=message):
        config_from_data(saved_env_with(path, value))


@pytest.mark.parametrize("path", ["scene.num_envs", "rewards.track_lin_vel_xy.weight"])
def test_a_bool_is_not_a_number(path):
    """It was: ``true`` set an int field to 1 and a float field to 1.0."""
    cfg = get_task("humanoid_walk").env_cfg()
    with pytest.raises(RobolearnError, match=r"\(now .*\); cannot set it to True"):
        apply_override(cfg, path, "true")


def test_a_field_that_holds_none_is_checked_against_its_tuple_annotation():
    cfg = get_task("humanoid_walk").env_cfg()
    assert cfg.sim.gravity is None
    apply_override(cfg, "sim.gravity", "[0, 0, -9.81]")
    assert cfg.sim.gravity == (0.0, 0.0, -9.81) and isinstance(cfg.sim.gravity[0], float)
    cfg = get_task("humanoid_walk").env_cfg()
    with pytest.raises(
        RobolearnError, match=r"sim\.gravity is tuple\[float, float, float\] or null; cannot set"
    ):
        apply_override(cfg, "sim.gravity", "2")
    with pytest.raises(RobolearnError, match=r"sim\.gravity needs 3 values, got 2"):
        apply_override(cfg, "sim.gravity", "[0, 1]")
    with pytest.raises(RobolearnError, match=r"sim\.gravity\[1\] is float; cannot set it to 'a'"):
        apply_override(cfg, "sim.gravity", "[0, a, 1]")


def test_an_item_is_named_by_its_index_and_typed_as_the_item_it_replaces():
    cfg = get_task("humanoid_walk").env_cfg()
    with pytest.raises(RobolearnError, match=r"lin_vel_x\[1\] is a float \(now .*\); cannot set"):
        apply_override(cfg, "commands.base_velocity.ranges.lin_vel_x", "[0, high]")
    apply_override(cfg, "scene.feet", "[left_foot, 1]")  # a name YAML reads as a number
    assert cfg.scene.robot.feet == ("left_foot", "1")


def test_a_field_of_any_length_takes_another_length():
    """Issue 62, item 8: a third hidden layer, or a camera's second data type, is a list of
    another length than the default's; a field whose meaning fixes its length (gravity, a
    command's range) still refuses one."""
    from robolearn.rl.config import AgentCfg

    agent = AgentCfg()
    apply_override(agent, "policy.actor_hidden_dims", "[64, 64, 64, 64]")
    assert agent.policy.actor_hidden_dims == (64, 64, 64, 64)
    apply_override(agent, "offpolicy.critic_hidden_dims", "[32]")
    assert agent.offpolicy.critic_hidden_dims == (32,)
    with pytest.raises(RobolearnError, match=r"actor_hidden_dims\[2\] is an integer"):
        apply_override(agent, "policy.actor_hidden_dims", "[64, 64, wide]")
    cfg = get_task("cartpole_balance_depth").env_cfg()
    apply_override(cfg, "scene.sensors.camera.data_types", "[depth, rgb]")
    assert cfg.scene.sensors["camera"].data_types == ("depth", "rgb")
    cfg = get_task("humanoid_walk").env_cfg()
    with pytest.raises(RobolearnError, match=r"lin_vel_x needs 2 values, got 3"):
        apply_override(cfg, "commands.base_velocity.ranges.lin_vel_x", "[0, 1, 2]")


def test_one_number_replaces_a_per_joint_mapping_where_the_field_takes_either():
    """Issue 62, item 8: an actuator's ``stiffness`` is one value for every joint or a
    mapping of joint patterns; a config that holds a mapping takes one number too, and
    still refuses text."""
    from robolearn.actuators.config import ImplicitPDCfg

    cfg = get_task("humanoid_walk").env_cfg()
    robot = cfg.scene.entities["robot"]
    name = "legs"
    robot.actuators[name] = ImplicitPDCfg(stiffness={".*_hip.*": 40.0, ".*": 20.0}, damping=2.0)
    apply_override(cfg, f"scene.robot.actuators.{name}.stiffness", "30")
    assert robot.actuators[name].stiffness == 30.0
    apply_override(cfg, f"scene.robot.actuators.{name}.stiffness", "{'.*': 25}")
    assert robot.actuators[name].stiffness == {".*": 25}
    with pytest.raises(RobolearnError, match="stiffness"):
        apply_override(cfg, f"scene.robot.actuators.{name}.stiffness", "stiff")
