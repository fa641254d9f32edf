"""Gradients through the Newton engine's step (robolearn.sim.newton_grad) against finite
differences of the same step, on warp's CPU device."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from robolearn.errors import RobolearnError
from robolearn.sim import NewtonCfg, SimCfg, make_engine
from robolearn.sim.newton_grad import grad_step

pytestmark = pytest.mark.warp

CARTPOLE = str(Path(__file__).parents[2] / "assets" / "cartpole" / "cartpole.xml")

# A box tumbling in the air: a free joint (quaternion conversions between MuJoCo's and
# Newton's conventions, a rotating inertia in Featherstone's mass matrix), no contact
FREE_BODY = """<mujoco><option timestep="0.01"/><worldbody>
<body name="box" pos="0 0 2"><freejoint/>
<geom type="box" size="0.1 0.2 0.3" mass="1" pos="0.05 0 0"/></body>
</worldbody></mujoco>"""


def _finite_differences(fn, x: torch.Tensor, eps: float = 1e-2) -> torch.Tensor:
    grad = torch.zeros_like(x)
    with torch.no_grad():
        for i in range(x.numel()):
            up, down = x.clone(), x.clone()
            up.view(-1)[i] += eps
            down.view(-1)[i] -= eps
            grad.view(-1)[i] = (fn(up) - fn(down)) / (2 * eps)
    return grad


def _rollout(engine, steps: int):
    """A scalar of the state after ``steps`` env steps (of 2 physics steps each), as a
    function of each input with the others held."""
    torch.manual_seed(0)
    n = engine.num_envs
    weights = torch.randn(n, engine.model.nq), torch.randn(n, engine.model.nv)

    def loss(qpos, qvel, ctrl):
        for _ in range(steps):
            qpos, qvel = grad_step(engine, 2, qpos, qvel, ctrl)
        return (qpos * weights[0]).sum() + (qvel * weights[1]).sum()

    return loss


@pytest.fixture(scope="module")
def cartpole():
    return make_engine(
        CARTPOLE,
        3,
        SimCfg(engine="newton-cpu", newton=NewtonCfg(solver="featherstone", differentiable=True)),
    )


def test_cartpole_gradient_matches_finite_differences(cartpole):
    """d(state after 3 env steps)/d(control, velocity, position): the tape's gradient is
    the step's own, to the precision finite differences of a float32 step give."""
    e = cartpole
    qpos = e.qpos.clone()
    qpos[:, 1] = torch.tensor([0.1, -0.2, 0.3])
    qvel = torch.tensor([[0.2, -0.4], [0.0, 0.5], [-0.3, 0.1]])
    ctrl = torch.tensor([[0.5], [-0.3], [0.8]])
    loss = _rollout(e, 3)
    inputs = [t.clone().requires_grad_() for t in (qpos, qvel, ctrl)]
    loss(*inputs).backward()
    for k, x in enumerate((qpos, qvel, ctrl)):

        def of(v, k=k):
            args = [qpos, qvel, ctrl]
            args[k] = v
            return loss(*args)

        fd = _finite_differences(of, x)
        assert torch.allclose(inputs[k].grad, fd, rtol=2e-2, atol=2e-3), (k, inputs[k].grad, fd)
    assert inputs[2].grad.abs().min() > 0.1  # the push moves the state: a real gradient


def test_free_body_gradient_matches_finite_differences():
    """Through a free joint over 60 solver steps: each recorded step has a solver of its own
    (Featherstone's mass matrix lives in the solver; a shared one was 10-20% off here)."""
    e = make_engine(
        FREE_BODY,
        2,
        SimCfg(engine="newton-cpu", newton=NewtonCfg(solver="featherstone", differentiable=True)),
    )
    torch.manual_seed(1)
    qpos, qvel, ctrl = e.qpos.clone(), torch.randn(2, 6) * 0.5, e.ctrl.clone()
    loss = _rollout(e, 3)
    v = qvel.clone().requires_grad_()
    loss(qpos, v, ctrl).backward()
    fd = _finite_differences(lambda x: loss(qpos, x, ctrl), qvel)
    assert torch.allclose(v.grad, fd, rtol=1e-2, atol=1e-3), (v.grad, fd)


def test_semi_implicit_gradient_matches_finite_differences():
    """Semi-implicit at its default 50 us (200 solver steps for one 10 ms physics step):
    the cart's motor, a force the recorded step computes by MuJoCo's law (not a drive)."""
    e = make_engine(
        CARTPOLE,
        3,
        SimCfg(engine="newton-cpu", newton=NewtonCfg(solver="semi_implicit", differentiable=True)),
    )
    qpos = e.qpos.clone()
    qpos[:, 1] = torch.tensor([0.1, -0.2, 0.3])
    qvel = torch.tensor([[0.2, -0.4], [0.0, 0.5], [-0.3, 0.1]])
    ctrl = torch.tensor([[0.5], [-0.3], [0.8]])
    weights = torch.randn(3, 2, generator=torch.Generator().manual_seed(0))

    def loss(c):
        out = grad_step(e, 1, qpos, qvel, c)
        return (out[0] * weights).sum() + (out[1] * weights).sum()

    c = ctrl.clone().requires_grad_()
    loss(c).backward()
    fd = _finite_differences(loss, ctrl)
    assert torch.allclose(c.grad, fd, rtol=2e-2, atol=1e-3), (c.grad, fd)


def test_the_gradient_step_leaves_the_engine_alone_and_follows_its_physics(cartpole):
    e = cartpole
    e.reset()
    e.qvel[:, 1] = 0.3
    e.ctrl[:] = 0.4
    before = e.qpos.clone(), e.qvel.clone()
    qpos, qvel = grad_step(e, 2, e.qpos.clone(), e.qvel.clone(), e.ctrl.clone())
    assert torch.equal(e.qpos, before[0]) and torch.equal(e.qvel, before[1])
    e.step(2)  # the engine's own (graph) step from the same state
    assert torch.allclose(qpos, e.qpos, atol=1e-6) and torch.allclose(qvel, e.qvel, atol=1e-6)


def test_max_gain_caps_the_step_amplification(cartpole):
    """With max_gain 1, no env's state gradient grows through a step; the control's
    gradient shrinks by the same factor, its direction kept."""
    e = cartpole
    qpos, qvel = e.qpos.clone(), torch.tensor([[0.0, 2.0], [0.5, -3.0], [0.0, 0.0]])
    ctrl = torch.full((3, 1), 0.5)  # inside the ctrlrange: the clamp passes the gradient
    for gain in (None, 1.0):
        inputs = [t.clone().requires_grad_() for t in (qpos, qvel, ctrl)]
        out = grad_step(e, 2, *inputs, max_gain=gain)
        weights = torch.ones_like(out[0]), torch.ones_like(out[1])
        torch.autograd.backward(out, weights)
        g_in = torch.cat([inputs[0].grad, inputs[1].grad], 1).norm(dim=1)
        g_out = torch.cat(weights, 1).norm(dim=1)
        if gain is None:
            exact, exact_ctrl = g_in, inputs[2].grad
            assert (exact > g_out).any()  # the cartpole's step amplifies a little
        else:
            assert (g_in <= g_out * (1 + 1e-5)).all()
            ratio = inputs[2].grad / exact_ctrl
            assert torch.allclose(ratio.squeeze(1), g_in / exact, rtol=1e-4)


def test_non_differentiable_solvers_are_refused():
    for solver in ("mujoco", "xpbd"):
        with pytest.raises(RobolearnError, match=f"Newton's {solver} solver is not diff"):
            make_engine(
                CARTPOLE,
                1,
                SimCfg(engine="newton-cpu", newton=NewtonCfg(solver=solver, differentiable=True)),
            )


def test_an_engine_without_gradients_refuses_a_recorded_step():
    e = make_engine(
        CARTPOLE, 1, SimCfg(engine="newton-cpu", newton=NewtonCfg(solver="featherstone"))
    )
    with pytest.raises(RobolearnError, match="not built for gradients"):
        e.differentiate_next_step(e.qpos, e.qvel, e.ctrl)


def _standing_quadruped_gradient(friction_stiffness: float | None, steps: int) -> float:
    """The norm of d(reward over ``steps`` env steps)/d(first action) of 4 quadrupeds
    standing on Featherstone's contacts (quadruped_walk's differentiable rewards)."""
    from dataclasses import replace

    from robolearn.env import ManagerBasedRLEnv
    from robolearn.registry import get_task
    from robolearn.rl.shac import DifferentiableRollout
    from robolearn.scene import NewtonCfg, SimCfg

    cfg = get_task("quadruped_walk").env_cfg()
    cfg.scene = replace(cfg.scene, num_envs=4)
    for term in ("joint_acc", "torques", "feet_air_time", "undesired_contacts"):
        cfg.rewards[term].weight = 0.0
    newton = NewtonCfg(
        solver="featherstone", differentiable=True, friction_stiffness=friction_stiffness
    )
    cfg.sim = SimCfg(engine="newton-cpu", newton=newton)
    env = ManagerBasedRLEnv(cfg)
    env.reset()
    for _ in range(40):  # settle onto the feet
        env.step(torch.zeros(4, 12))
    rollout = DifferentiableRollout(env)
    actions = torch.zeros(4, 12, requires_grad=True)
    total = sum(
        rollout.step(actions if k == 0 else torch.zeros(4, 12)).reward.sum() for k in range(steps)
    )
    (grad,) = torch.autograd.grad(total, actions)
    return float(grad.norm())


@pytest.mark.slow
def test_softer_friction_bounds_the_quadrupeds_gradient():
    """With Newton's default friction coefficient (kf 1000) the gradient through 4 env
    steps of standing explodes; at kf 100 it stays of the order of the rewards'
    (docs/differentiable.md has the per-step gains)."""
    norms = {kf: _standing_quadruped_gradient(kf, steps=4) for kf in (None, 100.0)}
    assert norms[100.0] < 10.0, norms
    assert norms[None] > 1e3 * norms[100.0], norms
