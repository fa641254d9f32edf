"""The Newton engine on warp's CPU device: Newton's MJCF import and solvers behind robolearn's
engine interface, against the cpu engine."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from conftest import stand

from robolearn.errors import RobolearnError
from robolearn.sim import NewtonCfg, SimCfg, compile_model, load_spec, make_engine

pytestmark = pytest.mark.warp

CARTPOLE = str(Path(__file__).parents[2] / "assets" / "cartpole" / "cartpole.xml")


@pytest.fixture(scope="module")
def newton_mujoco(humanoid_scene):
    return make_engine(humanoid_scene, 3, SimCfg(engine="newton-cpu"))


def test_mujoco_solver_matches_the_cpu_engine(newton_mujoco, humanoid_scene):
    """Same MJCF, same controls: Newton's MuJoCo solver follows MuJoCo's physics to float32
    precision over a second of standing and a swing of one knee."""
    cpu = make_engine(humanoid_scene, 3, SimCfg(engine="cpu"))
    e = newton_mujoco
    assert e.name == "newton-cpu" and e.solver_name == "mujoco" and e.substeps == 1
    knee = e.model.actuator("left_knee").id
    for engine in (cpu, e):
        stand(engine)
        engine.ctrl[1, knee] += 0.6  # one env bends its knee: the envs must stay apart
    worst = 0.0
    for _ in range(50):
        cpu.step(2)
        e.step(2)
        worst = max(worst, (cpu.qpos.float() - e.qpos).abs().max().item())
    assert worst < 1e-3, worst
    assert (e.qpos[1] - e.qpos[0]).abs().max() > 0.05  # the knee moved env 1 only
    assert torch.allclose(e.time, cpu.time.float(), atol=1e-5)
    # derived fields are current after a step on newton: a forward changes nothing
    xpos = e.xpos.clone()
    e.forward()
    assert torch.allclose(xpos, e.xpos, atol=1e-5)


def test_fields_are_views_and_reset_keeps_other_envs(newton_mujoco):
    e = newton_mujoco
    for name in ("qpos", "qvel", "ctrl", "xpos", "sensordata", "cfrc_ext"):
        assert getattr(e, name).data_ptr() == getattr(e.d, name).ptr, name
    stand(e)
    e.qvel[:, 0] = 0.3  # every env slides in x
    e.step(3)
    before = e.qpos[1].clone()
    e.reset([0])
    assert torch.allclose(e.qpos[0], torch.as_tensor(e.model.qpos0, dtype=torch.float32))
    assert torch.equal(e.qpos[1], before)
    e.step(1)
    assert not torch.equal(e.qpos[1], before)  # env 1 went on from where it was


# XPBD, semi-implicit and the standing humanoid on Newton's own solvers: behind -m slow,
# to hold the default suite's time (mujoco and Featherstone run by default)
SLOW = pytest.mark.slow


@pytest.mark.parametrize("solver", ["mujoco", pytest.param("featherstone", marks=SLOW)])
def test_per_env_mass_reaches_newtons_solver(newton_mujoco, humanoid_scene, solver):
    """Domain randomization writes robolearn's per-env fields; Newton's solver must see them:
    a torso three times as heavy sinks the standing humanoid further."""
    e = newton_mujoco
    if solver != "mujoco":
        e = make_engine(
            humanoid_scene, 3, SimCfg(engine="newton-cpu", newton=NewtonCfg(solver=solver))
        )
    mass = e.model_field("body_mass")
    pelvis = e.model.body("pelvis").id
    original = mass[:, pelvis].clone()
    try:
        mass[2, pelvis] = original[2] * 3
        e.set_const()
        stand(e)
        e.step(40)
        assert e.qpos[0, 2] - e.qpos[2, 2] > 2e-3, (e.qpos[0, 2].item(), e.qpos[2, 2].item())
        assert torch.allclose(e.qpos[0], e.qpos[1], atol=1e-5)
    finally:
        mass[:, pelvis] = original
        e.set_const()


@SLOW
@pytest.mark.parametrize("solver", ["featherstone", "xpbd"])
def test_own_solvers_hold_the_standing_humanoid(humanoid_scene, solver):
    """MuJoCo's position actuators, carried over to Newton's own solvers, hold the pose: the
    humanoid is still standing after half a second, near where MuJoCo holds it."""
    e = make_engine(humanoid_scene, 2, SimCfg(engine="newton-cpu", newton=NewtonCfg(solver=solver)))
    assert e.substeps == round(e.physics_dt / 1e-3)
    stand(e)
    e.step(50)
    assert torch.isfinite(e.qpos).all()
    assert 0.6 < e.qpos[0, 2] < 0.8, e.qpos[0, 2].item()  # the stand keyframe's pelvis: 0.76
    assert not e.diverged().any()


@pytest.mark.parametrize(
    "solver",
    [
        "mujoco",
        "featherstone",
        pytest.param("xpbd", marks=SLOW),
        pytest.param("semi_implicit", marks=SLOW),
    ],
)
def test_own_solvers_push_the_cart_as_mujoco_does(solver):
    """A motor's ctrl and an applied force (xfrc_applied) reach every solver as MuJoCo
    means them: the cart pushed for 0.1 s travels as far as in MuJoCo's converged answer
    (within 2%; at the model's 10 ms on the mujoco solver, which steps at 10 ms too), the
    opposite ctrl the opposite way. (MuJoCo at 10 ms puts it further than at 0.1 ms.)"""
    spec = load_spec(CARTPOLE)
    if solver != "mujoco":
        spec.option.timestep = 1e-4
    cpu = make_engine(spec, 3, SimCfg(engine="cpu"))
    e = make_engine(CARTPOLE, 3, SimCfg(engine="newton-cpu", newton=NewtonCfg(solver=solver)))
    cart = cpu.model.body("cart").id
    for engine in (cpu, e):
        engine.ctrl[:, 0] = torch.tensor([0.5, -0.5, 0.0], dtype=engine.dtype)
        engine.xfrc_applied[2, cart, 0] = 15.0  # what ctrl 0.5 pushes with (gear 30)
        engine.step(round(0.1 / engine.physics_dt))
    slider = cpu.model.jnt_qposadr[cpu.model.joint("slider").id]
    want, got = cpu.qpos[:, slider].float(), e.qpos[:, slider]
    assert want[0] > 0.03 and want[1] < -0.03
    assert torch.allclose(got, want, rtol=0.02), (got, want)


def test_bad_solver_settings_are_one_line_errors(humanoid_scene):
    with pytest.raises(RobolearnError, match=r"unknown Newton solver 'featherston'.*featherstone"):
        make_engine(
            humanoid_scene, 1, SimCfg(engine="newton-cpu", newton=NewtonCfg(solver="featherston"))
        )
    with pytest.raises(RobolearnError, match="substeps must be a whole number >= 1"):
        make_engine(humanoid_scene, 1, SimCfg(engine="newton-cpu", newton=NewtonCfg(substeps=0)))
    if not torch.cuda.is_available():
        with pytest.raises(RobolearnError, match=r"needs a CUDA GPU.*newton-cpu"):
            make_engine(humanoid_scene, 1, SimCfg(engine="newton"))
    spec = load_spec(humanoid_scene)
    with pytest.raises(RobolearnError, match="pass the spec"):
        make_engine(compile_model(spec), 1, SimCfg(engine="newton-cpu"))


def test_unsupported_features_are_refused_naming_them(humanoid_scene):
    # an actuator with activation dynamics: MuJoCo's, which Newton's own solvers lack
    spec = load_spec(humanoid_scene)
    act = spec.actuator("left_knee")
    act.inheritrange = 0
    act.dyntype = 2  # mjDYN_FILTER
    act.dynprm[0] = 0.02
    with pytest.raises(RobolearnError, match=r"'left_knee' has activation dynamics.*featherstone"):
        make_engine(spec, 1, SimCfg(engine="newton-cpu", newton=NewtonCfg(solver="featherstone")))
    # a per-env field the solver cannot take: refused when a randomization asks for it
    e = make_engine(CARTPOLE, 1, SimCfg(engine="newton-cpu", newton=NewtonCfg(solver="xpbd")))
    with pytest.raises(RobolearnError, match="xpbd solver takes no per-env dof_armature"):
        e.model_field("dof_armature")


def test_a_task_runs_on_newton_through_the_env():
    """cartpole_balance through ManagerBasedRLEnv on Newton's Featherstone solver: the
    managers read the engine's fields, episodes end and reset, observations stay finite."""
    from robolearn.env import ManagerBasedRLEnv
    from robolearn.registry import get_task

    cfg = get_task("cartpole_balance").make_env_cfg()
    cfg.scene.num_envs = 8
    cfg.sim.engine = "newton-cpu"
    cfg.sim.newton.solver = "featherstone"
    env = ManagerBasedRLEnv(cfg)
    assert env.scene.engine.name == "newton-cpu"
    obs, _ = env.reset()
    done = torch.zeros(8, dtype=torch.bool)
    for _ in range(120):
        obs, _, terminated, truncated, _ = env.step(torch.ones(8, env.num_actions))
        done |= terminated | truncated
    assert done.all()  # pushed hard one way, every pole falls or the cart hits its stop
    assert torch.isfinite(obs["policy"]).all()
