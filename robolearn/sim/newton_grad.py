"""Gradients through a Newton engine's step: (qpos, qvel, ctrl) -> (qpos, qvel) as a torch
autograd function whose backward pass replays Newton's solver on a warp tape.

The forward pass runs the same kernels as the engine's own step (:mod:`newton_engine`):
MuJoCo's coordinates into Newton's, forward kinematics, then per solver step the actuator
forces, collision and the solver, then Newton's coordinates back into MuJoCo's. What
differs is the memory: a tape needs every intermediate value at the time it was read, so
each solver step gets a state, a control and a contact buffer of its own (the engine's
step ping-pongs two), allocated per call and kept until the backward pass frees them. It
also gets a solver of its own: Featherstone keeps its mass matrix, Jacobian and Cholesky
factor in the solver, overwritten by every step, and a backward pass through a shared
solver reads a later step's matrices (a free body's gradient over 60 steps was 10-20% off
finite differences that way, and within 1e-4 with a solver per step). Solvers go back to a
pool when their step's gradient is taken (or dropped).
Only the solvers whose steps Newton writes differentiably take part
(:data:`DIFFERENTIABLE_SOLVERS`).
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from robolearn.errors import RobolearnError

# The engine is a robolearn.sim.newton_engine.NewtonEngine built for gradients; this
# module reads it by duck typing (it imports this one: no import back)
NewtonEngine = Any

#: Newton's solvers whose step is differentiable: Featherstone and semi-implicit integrate
#: explicit forces with kernels warp differentiates. The mujoco solver (MuJoCo Warp's
#: constraint solver) has no adjoint, and XPBD's projections give gradients Newton does not
#: claim are usable (and XPBD did not hold our robots up, docs/engines.md).
DIFFERENTIABLE_SOLVERS = ("featherstone", "semi_implicit")


def check_differentiable(solver: str) -> None:
    """Refuse a solver whose step has no gradient, naming the ones that have."""
    if solver not in DIFFERENTIABLE_SOLVERS:
        raise RobolearnError(
            f"Newton's {solver} solver is not differentiable; differentiable training needs "
            f"env.sim.newton.solver={' or '.join(DIFFERENTIABLE_SOLVERS)}"
        )


class SolverPool:
    """Solvers of one engine's model, each lent to one recorded solver step at a time."""

    def __init__(self, make) -> None:
        self._make = make
        self._free: list = []
        self._all: list = []

    def take(self, count: int) -> list:
        taken = []
        for _ in range(count):
            if not self._free:
                self._all.append(self._make())
                self._free.append(self._all[-1])
            taken.append(self._free.pop())
        return taken

    def notify_model_changed(self, flags) -> None:
        """Tell every solver of the pool what the engine's solver was told (masses a
        randomization changed): each keeps what it derived from the model."""
        for solver in self._all:
            solver.notify_model_changed(flags)

    def give_back(self, solvers: list) -> None:
        self._free.extend(solvers)


@dataclass
class _Record:
    """One step's tape and every array it read or wrote."""

    tape: Any
    qpos_in: Any
    qvel_in: Any
    ctrl_in: Any
    qpos_out: Any
    qvel_out: Any
    keep: list = field(default_factory=list)


@contextlib.contextmanager
def _in_torch_order(engine: NewtonEngine) -> Iterator[None]:
    """Warp's launches on the engine's device and, on CUDA, on torch's current stream: the
    tensors they read were written there, and what they write is read there next."""
    wp = engine._wp
    with wp.ScopedDevice(engine.wp_device):
        if engine.wp_device.is_cuda:
            with wp.ScopedStream(engine._torch_stream()):
                yield
        else:
            yield


def _run(engine: NewtonEngine, nsubsteps: int, qpos, qvel, ctrl) -> _Record:
    """The step of ``nsubsteps`` physics steps from (qpos, qvel, ctrl), recorded."""
    wp, newton, nm = engine._wp, engine._newton, engine.nm
    n = nsubsteps * engine.substeps
    dt = engine.solver_dt
    with _in_torch_order(engine):
        qpos_in = wp.from_torch(qpos.detach().contiguous().clone(), requires_grad=True)
        qvel_in = wp.from_torch(qvel.detach().contiguous().clone(), requires_grad=True)
        ctrl_in = wp.from_torch(ctrl.detach().contiguous().clone(), requires_grad=True)
        qpos_out = wp.zeros_like(qpos_in, requires_grad=True)
        qvel_out = wp.zeros_like(qvel_in, requires_grad=True)
        states = [nm.state(requires_grad=True) for _ in range(n + 1)]
        controls = [nm.control(clone_variables=True) for _ in range(n)]
        contacts = (
            [engine._collision.contacts() for _ in range(n)]
            if engine._collides
            else [engine._contacts] * n  # empty, never written
        )
        solvers = engine._grad_solvers.take(n)
        body_f = wp.from_torch(
            engine.xfrc_applied[:, 1:].reshape(-1, 6).float().contiguous().clone(),
            dtype=wp.spatial_vector,
        )
        tape = wp.Tape()
        with tape:
            engine._to_newton(states[0], qpos_in, qvel_in)
            newton.eval_fk(nm, states[0].joint_q, states[0].joint_qd, states[0])
            for i in range(n):
                state_in, state_out = states[i], states[i + 1]
                wp.copy(state_in.body_f, body_f)
                if engine.solver_name == "semi_implicit" and i > 0:
                    newton.eval_ik(nm, state_in, state_in.joint_q, state_in.joint_qd)
                engine._actuators.launch(state_in, controls[i], ctrl_in)
                if engine._collides:
                    engine._collision.collide(state_in, contacts[i])
                solvers[i].step(state_in, state_out, controls[i], contacts[i], dt)
            final = states[n]
            if engine.solver_name == "semi_implicit":
                newton.eval_ik(nm, final, final.joint_q, final.joint_qd)
            engine._from_newton(final, qpos_out, qvel_out)
    record = _Record(tape, qpos_in, qvel_in, ctrl_in, qpos_out, qvel_out)
    record.keep = [states, controls, contacts, body_f]
    # the solvers return to the pool with the record: after the backward pass, or when
    # autograd drops a graph that was never differentiated
    weakref.finalize(record, engine._grad_solvers.give_back, solvers)
    return record


def _bounded(grads: tuple, out: tuple, max_gain: float | None, counts: torch.Tensor) -> tuple:
    """The step's input gradients, each env's scaled down where they exceed ``max_gain``
    times the norm of its output gradient (and zeroed where not finite): the truncation
    that keeps a gradient through stiff contacts from growing geometrically with the
    horizon. The direction is kept; only the amplification is capped. ``counts`` (2,)
    gains the number of envs capped and of envs seen."""
    if max_gain is None:
        return grads
    n = grads[0].shape[0]
    rows = lambda gs: torch.cat([g.reshape(n, -1) for g in gs if g is not None], 1)  # noqa: E731
    out_norm = rows(out).norm(dim=1)
    in_norm = rows(grads[:2]).norm(dim=1)
    finite = torch.isfinite(in_norm) & torch.isfinite(rows(grads[2:]).sum(1))
    scale = torch.where(
        in_norm > max_gain * out_norm, max_gain * out_norm / in_norm.clamp_min(1e-30), 1.0
    )
    scale = torch.where(finite, scale, torch.zeros_like(scale))
    counts += torch.stack([(scale < 1).sum(), torch.tensor(n, device=scale.device)]).to(counts)
    scale = scale.unsqueeze(1)
    return tuple(torch.where(scale > 0, g * scale, torch.zeros_like(g)) for g in grads)


class _GradStep(torch.autograd.Function):
    @staticmethod
    def forward(ctx, engine, nsubsteps, max_gain, qpos, qvel, ctrl):
        record = _run(engine, nsubsteps, qpos, qvel, ctrl)
        ctx.record = record
        ctx.max_gain = max_gain
        ctx.engine = engine
        ctx.counts = engine.grad_cap_counts
        wp = engine._wp
        return wp.to_torch(record.qpos_out).clone(), wp.to_torch(record.qvel_out).clone()

    @staticmethod
    def backward(ctx, grad_qpos, grad_qvel):
        record: _Record = ctx.record
        if grad_qpos is not None:
            _to_torch(record.qpos_out.grad).copy_(grad_qpos)
        if grad_qvel is not None:
            _to_torch(record.qvel_out.grad).copy_(grad_qvel)
        with _in_torch_order(ctx.engine):
            record.tape.backward()
        grads = tuple(
            _to_torch(a.grad).clone() for a in (record.qpos_in, record.qvel_in, record.ctrl_in)
        )
        record.tape.reset()
        ctx.record = None  # the states and contacts go now, not with the autograd graph
        grads = _bounded(grads, (grad_qpos, grad_qvel), ctx.max_gain, ctx.counts)
        return (None, None, None, *grads)


def _to_torch(array) -> torch.Tensor:
    import warp as wp

    return wp.to_torch(array)


def grad_step(
    engine: NewtonEngine,
    nsubsteps: int,
    qpos: torch.Tensor,
    qvel: torch.Tensor,
    ctrl: torch.Tensor,
    max_gain: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(qpos, qvel) after ``nsubsteps`` physics steps of ``engine`` from ``qpos`` (N, nq),
    ``qvel`` (N, nv) under ``ctrl`` (N, nu) held over them, differentiable in all three.

    The engine's own state is not touched; its applied forces (``xfrc_applied``) and
    per-env actuator fields are read as constants. ``max_gain``: cap each env's gradient
    with respect to (qpos, qvel) at this multiple of its gradient with respect to the
    result, scaling its control gradient alike (None: the exact gradient).
    """
    return _GradStep.apply(engine, nsubsteps, max_gain, qpos, qvel, ctrl)
