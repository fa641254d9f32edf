"""A user's mistakes reach them as one RobolearnError naming the problem and what is valid."""

from __future__ import annotations

import pytest
import torch
from conftest import SLIDER_XML

from robolearn.errors import RobolearnError
from robolearn.sim import NewtonCfg, SimCfg, compile_model, make_engine, resolve_engine


def test_missing_mjcf_file(tmp_path):
    with pytest.raises(RobolearnError, match="does not exist"):
        make_engine(tmp_path / "nope.xml", 2, SimCfg(engine="cpu"))


def test_mjcf_that_does_not_parse(tmp_path):
    bad = tmp_path / "bad.xml"
    bad.write_text("<mujoco><worldbody></mujoco>")
    with pytest.raises(RobolearnError, match="is not valid MJCF"):
        make_engine(bad, 2, SimCfg(engine="cpu"))


def test_mjcf_that_does_not_compile():
    xml = "<mujoco><worldbody><body><joint/><geom size='0.1' mass='0'/></body></worldbody></mujoco>"
    with pytest.raises(RobolearnError, match="does not compile: Error: mass and inertia"):
        make_engine(xml, 2, SimCfg(engine="cpu"))


@pytest.mark.parametrize("num_envs", [0, -3, 2.5, True, "8"])
def test_bad_num_envs(num_envs):
    with pytest.raises(RobolearnError, match="num_envs must be an integer >= 1"):
        make_engine(SLIDER_XML, num_envs, SimCfg(engine="cpu"))


def test_unknown_engine_names_the_valid_ones():
    expected = r"unknown engine 'cpus' \(did you mean 'cpu'\?\); valid: auto, cpu, cuda, warp-cpu"
    with pytest.raises(RobolearnError, match=expected):
        make_engine(SLIDER_XML, 2, SimCfg(engine="cpus"))
    with pytest.raises(RobolearnError, match="unknown engine"):
        resolve_engine("warp-cpu:1")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the machine without a GPU")
def test_auto_is_cpu_and_cuda_is_refused_without_a_gpu():
    assert resolve_engine("auto") == "cpu"
    assert make_engine(SLIDER_XML, 2).name == "cpu"
    with pytest.raises(RobolearnError, match="needs a CUDA GPU"):
        make_engine(SLIDER_XML, 2, SimCfg(engine="cuda"))


def test_model_field_without_per_env_values():
    engine = make_engine(SLIDER_XML, 2, SimCfg(engine="cpu", per_env_fields=["geom_friction"]))
    with pytest.raises(RobolearnError, match=r"'body_mass' has no per-env values.*geom_friction"):
        engine.model_field("body_mass")
    with pytest.raises(RobolearnError, match="not a floating-point MjModel array field"):
        make_engine(SLIDER_XML, 2, SimCfg(engine="cpu", per_env_fields=["geom_typo"]))


def test_bad_reset_arguments():
    engine = make_engine(SLIDER_XML, 3, SimCfg(engine="cpu"))
    with pytest.raises(RobolearnError, match=r"qpos for 2 envs must have shape \(2, 7\)"):
        engine.reset(torch.tensor([0, 1]), qpos=torch.zeros(2, 5))
    with pytest.raises(RobolearnError, match=r"env ids must lie in \[0, 3\)"):
        engine.reset(torch.tensor([3]))
    with pytest.raises(RobolearnError, match="mask must have shape"):
        engine.reset(torch.tensor([True, False]))


def test_a_model_that_is_not_mjcf():
    with pytest.raises(RobolearnError, match="not int"):
        compile_model(42)


def test_the_settings_reach_the_engine():
    """A bare engine reads the same settings as a scene's: none is dropped on the way."""
    sim = SimCfg(engine="cpu", physics_dt=0.004, gravity=(0.0, 0.0, -1.62), max_speed=50.0)
    engine = make_engine(SLIDER_XML, 2, sim)
    assert engine.model.opt.timestep == 0.004
    assert engine.model.opt.gravity.tolist() == [0.0, 0.0, -1.62]
    assert engine.max_speed == 50.0
    with pytest.raises(RobolearnError, match=r"sim.physics_dt must be > 0"):
        make_engine(SLIDER_XML, 2, SimCfg(engine="cpu", physics_dt=0.0))


def test_an_engine_name_in_place_of_the_settings_says_how_to_pass_it():
    with pytest.raises(RobolearnError, match=r"SimCfg\(engine='cpu'\)"):
        make_engine(SLIDER_XML, 2, "cpu")


def test_newton_settings_on_another_engine_are_refused():
    sim = SimCfg(engine="cpu", newton=NewtonCfg(friction_stiffness=100.0))
    with pytest.raises(RobolearnError, match="setting of the newton engines' own solvers"):
        make_engine(SLIDER_XML, 2, sim)
