"""The Newton engines: ``newton`` (a GPU) and ``newton-cpu`` (warp's CPU device).

The same MJCF as the other engines goes through Newton's own MJCF importer, is replicated
over the envs, and is stepped by one of Newton's solvers (``env.sim.newton.solver``):

* ``mujoco``: Newton's MuJoCo Warp solver, with MuJoCo's actuators (``ctrl`` as is).
* ``featherstone``, ``xpbd``, ``semi_implicit``: Newton's own solvers, with Newton's
  collision pipeline. MuJoCo's actuators become joint forces computed by robolearn from
  ``ctrl`` before every solver step (gain, affine bias, force range and gear as MuJoCo
  states them), except that on XPBD and semi-implicit position actuators become Newton's
  joint drives (see :class:`_ActuatorMap`).

Design: the engine *is* a MuJoCo Warp engine (:class:`~robolearn.sim.mjwarp.WarpEngine`)
of robolearn's compiled model, whose data holds the state in robolearn's layout (qpos,
qvel, ctrl as torch views of its memory, MuJoCo's order and conventions) and computes the
derived fields (body frames, sensors, contact forces, rays, Jacobians) after each step
with MuJoCo Warp's forward pass. Only the physics step is Newton's: the state is
converted into Newton's joint coordinates, the solver runs, and its result is converted
back. So every field, sensor and manager works unchanged on every solver, contact forces
mean MuJoCo's contact model at the state Newton reached, and the parity of solvers is a
question of their dynamics alone. The price is two conversions and one forward pass per
env step (the conversions are Newton's own kernels, the ones its MuJoCo solver runs at
every substep).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import warnings
from collections.abc import Callable, Iterator

import mujoco
import numpy as np
import torch

from robolearn.errors import RobolearnError, did_you_mean
from robolearn.sim.config import SimCfg
from robolearn.sim.memory import Reserve
from robolearn.sim.mjwarp import WarpEngine

#: Newton's solvers the engine runs, by the name ``env.sim.newton.solver`` takes.
SOLVERS = ("mujoco", "featherstone", "xpbd", "semi_implicit")

#: Longest default solver step, in seconds: at 1 ms Featherstone and XPBD hold our standing
#: humanoid (tests/sim/test_newton.py); semi-implicit blew up at 0.25 ms and stayed finite
#: at 50 us, where the humanoid still sinks (docs/engines.md). The default number of solver
#: steps per physics step is the physics dt over this.
MAX_SOLVER_DT = {"mujoco": math.inf, "featherstone": 1e-3, "xpbd": 1e-3, "semi_implicit": 5e-5}

# Per-env model fields each solver takes. On the MuJoCo solver, every field MuJoCo Warp
# batches is copied into its model; on Newton's own solvers, actuator fields are read by
# robolearn's actuator kernel, and masses and frictions are copied into Newton's model.
_OWN_SOLVER_FIELDS = frozenset(
    {
        "actuator_gainprm",
        "actuator_biasprm",
        "actuator_forcerange",
        "dof_damping",
        "body_mass",
        "geom_friction",
    }
)


def _import_newton():
    import newton
    import newton.solvers

    return newton


def check_solver(solver: str, substeps: int | None) -> None:
    """Refuse an unknown solver name or a substep count that is not a whole number >= 1."""
    if solver not in SOLVERS:
        raise RobolearnError(
            f"unknown Newton solver {solver!r}{did_you_mean(str(solver), SOLVERS)}; "
            f"valid: {', '.join(SOLVERS)} (env.sim.newton.solver)"
        )
    if substeps is not None and (
        isinstance(substeps, bool) or not isinstance(substeps, int) or substeps < 1
    ):
        raise RobolearnError(
            f"env.sim.newton.substeps must be a whole number >= 1 or None, got {substeps!r}"
        )


def default_substeps(solver: str, physics_dt: float) -> int:
    """Solver steps per physics step: enough that none is longer than the solver's
    :data:`MAX_SOLVER_DT`."""
    limit = MAX_SOLVER_DT[solver]
    return 1 if math.isinf(limit) else max(1, math.ceil(physics_dt / limit - 1e-9))


@contextlib.contextmanager
def _quiet_newton() -> Iterator[None]:
    """Newton's notices that say nothing to a robolearn user: Newton 1.8 declares MuJoCo
    3.17 and warns of any other at every solver it builds (robolearn runs the MuJoCo 4 it
    pins, and the parity tests check the physics against the cpu engine's), and its
    MuJoCo solver calls functions MuJoCo Warp 4 deprecated."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="MuJoCo dependency version mismatch")
        warnings.filterwarnings("ignore", category=DeprecationWarning, module="newton")
        warnings.filterwarnings("ignore", category=DeprecationWarning, module="mujoco_warp")
        yield


def _path_resolver(spec: mujoco.MjSpec) -> Callable[[str | None, str], str]:
    """Where Newton's importer finds a mesh or height-field file the MJCF names: beside the
    model file, under its meshdir, as MuJoCo resolves it."""
    base = spec.modelfiledir or os.getcwd()
    meshdir = spec.meshdir or ""

    def resolve(_base_dir: str | None, path: str) -> str:
        if os.path.isabs(path):
            return path
        for candidate in (os.path.join(base, meshdir, path), os.path.join(base, path)):
            if os.path.exists(candidate):
                return candidate
        return os.path.join(base, meshdir, path)

    return resolve


class NewtonEngine(WarpEngine):
    """Many simulations of one MJCF stepped by a Newton solver; fields as on MuJoCo Warp.

    Args:
        model: robolearn's compiled model (it holds the state and computes derived fields).
        spec: the spec ``model`` was compiled from; Newton imports it as MJCF.
        sim: the settings; ``sim.newton`` chooses the solver (one of :data:`SOLVERS`), its
            substeps per physics step (None for :func:`default_substeps`), whether
            Newton's model is built for gradients, so that :meth:`differentiate_next_step`
            can record a step (a differentiable solver only,
            :data:`~robolearn.sim.newton_grad.DIFFERENTIABLE_SOLVERS`), and the shapes'
            friction stiffness (Newton's own solvers).
    """

    def __init__(
        self,
        model: mujoco.MjModel,
        num_envs: int,
        spec: mujoco.MjSpec,
        sim: SimCfg,
        device: str = "cuda:0",
        reserve_per_env: Reserve = 0,
    ) -> None:
        solver, substeps = sim.newton.solver, sim.newton.substeps
        differentiable = sim.newton.differentiable
        nconmax, njmax = sim.nconmax, sim.njmax
        check_solver(solver, substeps)
        self._init_gradients(differentiable, solver, device)
        super().__init__(model, num_envs, sim, device=device, reserve_per_env=reserve_per_env)
        self.name = "newton" if self.wp_device.is_cuda else "newton-cpu"
        self.solver_name = solver
        self.substeps = substeps or default_substeps(solver, self.physics_dt)
        self.solver_dt = self.physics_dt / self.substeps
        newton = _import_newton()
        self._newton = newton
        wp = self._wp
        with wp.ScopedDevice(self.wp_device):
            template = self._import(newton, spec)
            self._check_layout(newton, template)
            scene = newton.ModelBuilder()
            newton.solvers.SolverMuJoCo.register_custom_attributes(scene)
            scene.replicate(template, self.num_envs)
            with warnings.catch_warnings():
                # a terrain is several height fields, all static: they never touch
                warnings.filterwarnings("ignore", message="Heightfield-vs-heightfield")
                self.nm = scene.finalize(device=self.wp_device, requires_grad=differentiable)
            self.nm.set_gravity(tuple(float(g) for g in model.opt.gravity))
            self._joints_per_world = self.nm.joint_count // self.num_envs
            self._dof_ref = getattr(getattr(self.nm, "mujoco", None), "dof_ref", None)
            self._states = (self.nm.state(), self.nm.state())
            self._control = self.nm.control()
            with _quiet_newton():
                self._solver = self._make_solver(newton, nconmax, njmax)
            if differentiable:
                from robolearn.sim.newton_grad import SolverPool

                self._grad_solvers = SolverPool(lambda: self._make_solver(newton, None, None))
            self._their_overflow = None
            if solver == "mujoco":
                # as for our own MuJoCo Warp model: warn of dropped contacts only, and
                # report them in diverged() (Newton clears the flags at each of its steps)
                self._solver.mjw_model.opt.warn_overflow = self._overflow_bad
                self._their_overflow = wp.to_torch(self._solver.mjw_data.overflow)
            self._init_collision(newton, nconmax)
        self._ctrl_in = (
            wp.to_torch(self._control.mujoco.ctrl, requires_grad=False).view(
                self.num_envs, model.nu
            )
            if solver == "mujoco" and model.nu
            else None
        )
        # views as plain tensors: a model built for gradients makes its arrays leaves that
        # require grad, which torch would not let the engine write in place
        self._body_f = wp.to_torch(self._states[0].body_f, requires_grad=False).view(
            self.num_envs, -1, 6
        )
        self._synced: dict[str, Callable[[], None]] = {}
        wp.synchronize_device(self.wp_device)
        if sim.newton.friction_stiffness is not None:
            self.set_friction_stiffness(sim.newton.friction_stiffness)

    # ---- building ---------------------------------------------------------------------

    def _init_gradients(self, differentiable: bool, solver: str, device: str) -> None:
        """What a step recorded for gradients needs (a differentiable solver, refused
        otherwise), before anything is allocated."""
        if differentiable:
            from robolearn.sim.newton_grad import check_differentiable

            check_differentiable(solver)
        self.differentiable = bool(differentiable)
        self._grad_inputs: tuple | None = None
        self.grad_outputs: tuple[torch.Tensor, torch.Tensor] | None = None
        """(qpos, qvel) after the last recorded step, with autograd history."""
        self.grad_cap_counts = torch.zeros(2, dtype=torch.long, device=device)
        """(envs whose step gradient ``max_gain`` capped, envs seen) over the backward
        passes so far; the learner reads and zeroes it."""

    def _init_collision(self, newton, nconmax: int | None) -> None:
        """Newton's collision pipeline and the actuator map, for Newton's own solvers."""
        self._collision = None
        self._contacts = None
        if self.solver_name == "mujoco":
            return
        self._contact_room = self._contact_capacity(nconmax)
        self._collision = newton.CollisionPipeline(
            self.nm, rigid_contact_max=self._contact_room * self.num_envs
        )
        self._contacts = self._collision.contacts()
        # a model none of whose shapes collides (the cartpole) skips the collision
        # pipeline: its contact buffer stays empty
        flags = self.nm.shape_flags.numpy() & int(newton.ShapeFlags.COLLIDE_SHAPES)
        self._collides = bool(flags.any())
        self._contact_count = self._wp.to_torch(self._contacts.rigid_contact_count)
        self._actuators = _ActuatorMap(self)

    def _import(self, newton, spec: mujoco.MjSpec):
        """The scene's MJCF through Newton's importer: one world, the template."""
        builder = newton.ModelBuilder()
        newton.solvers.SolverMuJoCo.register_custom_attributes(builder)
        try:
            xml = spec.to_xml()
            builder.add_mjcf(
                xml,
                ctrl_direct=True,
                path_resolver=_path_resolver(spec),
                # the viewer draws robolearn's model: Newton needs only what collides
                parse_visuals=False,
            )
        except (ValueError, KeyError, NotImplementedError, RuntimeError) as exc:
            raise RobolearnError(
                f"Newton's MJCF importer refuses this model: {str(exc).splitlines()[0]}"
            ) from exc
        return builder

    def _check_layout(self, newton, template) -> None:
        """Newton's MuJoCo solver maps Newton's joints onto MuJoCo coordinates; the engine
        converts through the same maps, so the model it builds from the import must lay
        out qpos, qvel and the actuators as robolearn's compile does."""
        one = template.finalize(device="cpu")
        with _quiet_newton():
            probe = newton.solvers.SolverMuJoCo(one, use_mujoco_cpu=True)
        theirs, ours = probe.mj_model, self.model
        for what in ("nq", "nv", "nu", "njnt", "nbody"):
            if getattr(theirs, what) != getattr(ours, what):
                raise RobolearnError(
                    f"Newton's import of this model has {what}={getattr(theirs, what)} where "
                    f"MuJoCo's has {getattr(ours, what)}: the newton engine cannot map its state"
                )
        for what in ("jnt_qposadr", "jnt_dofadr", "jnt_type", "actuator_trnid"):
            if not np.array_equal(getattr(theirs, what), getattr(ours, what)):
                raise RobolearnError(
                    f"Newton's import of this model orders its {what.split('_')[0]}s "
                    "differently from MuJoCo's: the newton engine cannot map its state"
                )
        with self._wp.ScopedDevice(self.wp_device):
            self._mj_q_start = self._wp.array(probe.mj_q_start.numpy(), dtype=self._wp.int32)
            self._mj_qd_start = self._wp.array(probe.mj_qd_start.numpy(), dtype=self._wp.int32)
        # the actuator kernel of Newton's own solvers indexes Newton's joint coordinates
        # by MuJoCo's addresses: true of every model whose joints Newton maps one to one
        mapped = probe.mj_q_start.numpy() >= 0
        same_coords = (
            one.joint_coord_count == ours.nq
            and one.joint_dof_count == ours.nv
            and np.array_equal(
                one.joint_q_start.numpy()[:-1][mapped], probe.mj_q_start.numpy()[mapped]
            )
            and np.array_equal(
                one.joint_qd_start.numpy()[:-1][mapped], probe.mj_qd_start.numpy()[mapped]
            )
        )
        if self.solver_name != "mujoco" and not same_coords:
            raise RobolearnError(
                f"Newton's import of this model lays out its joint coordinates apart from "
                f"MuJoCo's, which the newton engine's {self.solver_name} solver needs; use "
                "the mujoco solver (env.sim.newton.solver=mujoco)"
            )
        self._geom_of_mjc = _match_geoms(theirs, ours)
        self._shape_of_mjc = probe.mjc_geom_to_newton_shape.numpy().reshape(-1)

    def _world_bytes(self, model, data, nconmax, njmax) -> int:
        # Memory check before anything is allocated: the MuJoCo solver holds a second
        # MuJoCo Warp data of every world beside ours, and Newton's own solvers hold
        # states and contact buffers of their own; counted as one more world's data
        return 2 * super()._world_bytes(model, data, nconmax, njmax)

    def _contact_capacity(self, nconmax: int | None) -> int:
        """Contacts per env in Newton's collision pipeline: ``nconmax`` when set, else 4x
        MuJoCo Warp's estimate for the model. Newton's own estimate overflowed on rough
        terrain (72 per env for the quadruped, whose feet meet several of the height
        field's triangles each), and an overflow drops contacts."""
        self._narrowphase_bit = int(self._mjw.OverflowType.NARROWPHASE)
        if nconmax is not None:
            return int(nconmax)
        return max(64, 4 * int(self.d.naconmax) // self.num_envs)

    def _contacts_per_env(self) -> int:
        if self._contacts is not None:  # Newton's collision pipeline's room
            return self._contact_room
        return super()._contacts_per_env()

    def _make_solver(self, newton, nconmax: int | None, njmax: int | None):
        solvers = newton.solvers
        opt = self.model.opt
        try:
            if self.solver_name == "mujoco":
                integrators = {0: "euler", 1: "rk4", 2: "implicit", 3: "implicitfast"}
                return solvers.SolverMuJoCo(
                    self.nm,
                    separate_worlds=True,
                    nconmax=nconmax,
                    njmax=njmax,
                    iterations=int(opt.iterations),
                    ls_iterations=int(opt.ls_iterations),
                    solver=int(opt.solver),
                    integrator=integrators[int(opt.integrator)],
                    cone=int(opt.cone),
                    impratio=float(opt.impratio),
                    tolerance=float(opt.tolerance),
                    ls_tolerance=float(opt.ls_tolerance),
                    disable_sensors=True,
                )
            if self.solver_name == "featherstone":
                return solvers.SolverFeatherstone(self.nm)
            if self.solver_name == "xpbd":
                return solvers.SolverXPBD(self.nm, iterations=4)
            return solvers.SolverSemiImplicit(self.nm)
        except (ValueError, NotImplementedError) as exc:
            raise RobolearnError(
                f"Newton's {self.solver_name} solver refuses this model: {str(exc).splitlines()[0]}"
            ) from exc

    # ---- stepping ---------------------------------------------------------------------

    def _joint_layout(self) -> list:
        """The arguments Newton's two conversion kernels share after the joint count: the
        joints' types, coordinate and dof starts, dof counts, child bodies and frames."""
        nm = self.nm
        return [
            nm.joint_type,
            nm.joint_q_start,
            nm.joint_qd_start,
            nm.joint_dof_dim,
            nm.joint_child,
            nm.joint_X_p,
            nm.joint_X_c,
        ]

    def _to_newton(self, state, qpos=None, qvel=None) -> None:
        """robolearn's qpos, qvel (MuJoCo's coordinates; or the (N, nq) and (N, nv) warp
        arrays given) into a Newton state's joints."""
        from newton._src.solvers.mujoco.kernels import convert_mj_coords_to_warp_kernel

        self._wp.launch(
            convert_mj_coords_to_warp_kernel,
            dim=(self.num_envs, self._joints_per_world),
            inputs=[
                self.d.qpos if qpos is None else qpos,
                self.d.qvel if qvel is None else qvel,
                self._joints_per_world,
                *self._joint_layout(),
                self.nm.body_com,
                self._dof_ref,
                self.nm.body_flags,
                state.joint_q,
                state.joint_qd,
                self._mj_q_start,
                self._mj_qd_start,
            ],
            outputs=[state.joint_q, state.joint_qd],
        )

    def _from_newton(self, state, qpos=None, qvel=None) -> None:
        """A Newton state's joints into robolearn's qpos, qvel (or the arrays given)."""
        from newton._src.solvers.mujoco.kernels import convert_warp_coords_to_mj_kernel

        self._wp.launch(
            convert_warp_coords_to_mj_kernel,
            dim=(self.num_envs, self._joints_per_world),
            inputs=[
                state.joint_q,
                state.joint_qd,
                None,  # every world
                self._joints_per_world,
                *self._joint_layout(),
                self.nm.joint_axis,
                self.nm.body_com,
                self._dof_ref,
                self._mj_q_start,
                self._mj_qd_start,
                None,  # no mocap roots driven by joints
                True,  # write the state
            ],
            outputs=[
                self.d.qpos if qpos is None else qpos,
                self.d.qvel if qvel is None else qvel,
                None,
                None,
                None,
            ],
        )

    def _substeps(self, nsubsteps: int) -> Callable[[], None]:
        newton, solver, control = self._newton, self._solver, self._control
        states, dt, n = self._states, self.solver_dt, nsubsteps * self.substeps
        own = self.solver_name != "mujoco"
        body_primary = self.solver_name in ("xpbd", "semi_implicit")

        def substeps() -> None:
            state = states[0]
            self._to_newton(state)
            if own:
                newton.eval_fk(self.nm, state.joint_q, state.joint_qd, state)
            for i in range(n):
                state_in, state_out = states[i % 2], states[(i + 1) % 2]
                if own:
                    if body_primary and i > 0:
                        # these solvers integrate bodies: the actuators read joints
                        newton.eval_ik(self.nm, state_in, state_in.joint_q, state_in.joint_qd)
                    self._actuators.launch(state_in, control)
                    if self._collides:
                        self._collision.collide(state_in, self._contacts)
                    solver.step(state_in, state_out, control, self._contacts, dt)
                else:
                    solver.step(state_in, state_out, control, None, dt)
                if i + 1 < n:  # the applied forces hold over the physics step
                    state_out.body_f.assign(state_in.body_f)
            final = states[n % 2]
            if body_primary:
                newton.eval_ik(self.nm, final, final.joint_q, final.joint_qd)
            self._from_newton(final)
            self._mjw.forward(self.m, self.d)

        return substeps

    def differentiate_next_step(
        self,
        qpos: torch.Tensor,
        qvel: torch.Tensor,
        ctrl: torch.Tensor,
        max_gain: float | None = None,
    ) -> None:
        """Record the next :meth:`step` for gradients: it starts from ``qpos`` (N, nq) and
        ``qvel`` (N, nv) under ``ctrl`` (N, nu), tensors with autograd history whose values
        are the engine's own state and controls by then (the physics runs from the engine's
        values; the gradient flows to these tensors as if they were equal), and leaves the
        differentiable result in :attr:`grad_outputs` beside the engine's state.
        ``max_gain`` bounds the step's gradient amplification per env
        (:func:`robolearn.sim.newton_grad.grad_step`)."""
        if not self.differentiable:
            raise RobolearnError(
                "this newton engine was not built for gradients (env.sim.newton.differentiable)"
            )
        self._grad_inputs = (qpos, qvel, ctrl, max_gain)

    def _step(self, nsubsteps: int) -> None:
        self._push_inputs()
        if self._grad_inputs is not None:
            self._recorded_step(nsubsteps)
        else:
            super()._step(nsubsteps)
        self.time += nsubsteps * self.physics_dt
        if self._their_overflow is not None:
            self._overflow |= self._their_overflow
        elif self._contacts is not None:
            # Newton's contact buffer is shared by all envs: a full one may have dropped
            # any env's contacts (what the last solver step saw; one reading per env step)
            full = self._contact_count >= self._contact_room * self.num_envs
            self._overflow |= full.to(self._overflow.dtype) * self._narrowphase_bit

    def _recorded_step(self, nsubsteps: int) -> None:
        """The step on a warp tape (:mod:`robolearn.sim.newton_grad`), its result written
        into the engine's state and completed by MuJoCo Warp's forward pass."""
        from robolearn.sim.newton_grad import grad_step

        qpos, qvel, ctrl, max_gain = self._grad_inputs
        self._grad_inputs = None
        # straight through: the engine's values, the caller's gradient paths
        qpos = qpos + (self.qpos - qpos).detach()
        qvel = qvel + (self.qvel - qvel).detach()
        ctrl = ctrl + (self.ctrl - ctrl).detach()
        out = grad_step(self, nsubsteps, qpos, qvel, ctrl, max_gain)
        self.qpos.copy_(out[0].detach())
        self.qvel.copy_(out[1].detach())
        self._forward()
        self.grad_outputs = out

    def _push_inputs(self) -> None:
        """Controls, applied forces and per-env model fields into Newton's arrays: torch
        copies in stream order before the step's graph, which reads them."""
        if self._ctrl_in is not None:
            self._ctrl_in.copy_(self.ctrl)
        self._body_f.copy_(self.xfrc_applied[:, 1:])
        if self.solver_name != "mujoco":
            self._actuators.push()
        for sync in self._synced.values():
            sync()

    # ---- per-env model parameters -----------------------------------------------------

    def _bind_model_field(self, name: str) -> torch.Tensor:
        view = super()._bind_model_field(name)
        if self.solver_name == "mujoco":
            self._synced[name] = self._mujoco_sync(name, view)
        elif name in _OWN_SOLVER_FIELDS:
            sync = self._own_solver_sync(name, view)
            if sync is not None:
                self._synced[name] = sync
        else:
            raise RobolearnError(
                f"the newton engine's {self.solver_name} solver takes no per-env {name} "
                f"(it takes {', '.join(sorted(_OWN_SOLVER_FIELDS))}; the mujoco solver "
                "takes every field)"
            )
        return view

    def _mujoco_sync(self, name: str, view: torch.Tensor) -> Callable[[], None]:
        """Copy a per-env field into the MuJoCo solver's model (its bodies, dofs and
        actuators are in MuJoCo's order; its geoms are the colliding ones, matched)."""
        array = getattr(self._solver.mjw_model, name, None)
        theirs = None if array is None else self._wp.to_torch(array)
        index = None
        if name.startswith("geom_"):
            index = torch.as_tensor(self._geom_of_mjc, device=self.device)
        want = view.shape if index is None else (view.shape[0], len(index), *view.shape[2:])
        if theirs is None or tuple(theirs.shape) != tuple(want):
            raise RobolearnError(
                f"the newton engine's mujoco solver holds no per-env {name} (Newton's model "
                "of it has none, or one value for all envs)"
            )
        if index is None:
            return lambda: theirs.copy_(view)
        return lambda: theirs.copy_(view.index_select(1, index))

    def _own_solver_sync(self, name: str, view: torch.Tensor) -> Callable[[], None] | None:
        """Per-env fields on Newton's own solvers: actuator and damping fields are read by
        the actuator kernel from robolearn's model; frictions are copied into Newton's
        shapes before each step; masses reach Newton's bodies in :meth:`set_const`."""
        if name == "geom_friction":
            mu = self._wp.to_torch(self.nm.shape_material_mu, requires_grad=False).view(
                self.num_envs, -1
            )
            shapes = torch.as_tensor(self._shape_of_mjc, device=self.device, dtype=torch.long)
            geoms = torch.as_tensor(self._geom_of_mjc, device=self.device)
            keep = shapes >= 0
            shapes, geoms = shapes[keep], geoms[keep]
            return lambda: mu.index_copy_(1, shapes, view[:, geoms, 0])
        return None

    def _field_rows(self, name: str) -> torch.Tensor:
        """(N or 1, ...) values of a model field on the device: per env where declared."""
        return self._wp.to_torch(getattr(self.m, name)).view(-1, *getattr(self.model, name).shape)

    def _set_const(self, env_ids: torch.Tensor) -> None:
        super()._set_const(env_ids)
        if self.solver_name == "mujoco":
            for sync in self._synced.values():
                sync()
            with self._wp.ScopedDevice(self.wp_device), _quiet_newton():
                self._mjw.set_const(self._solver.mjw_model, self._solver.mjw_data)
        elif "body_mass" in self._model_fields:
            nm = self.nm
            mass = self._wp.to_torch(nm.body_mass, requires_grad=False).view(self.num_envs, -1)
            inv = self._wp.to_torch(nm.body_inv_mass, requires_grad=False).view(self.num_envs, -1)
            mass.copy_(self._model_fields["body_mass"][:, 1:])
            inv.copy_(torch.where(mass > 0, 1.0 / mass, torch.zeros_like(mass)))
            flags = self._newton.ModelFlags.BODY_INERTIAL_PROPERTIES
            with _quiet_newton():
                self._solver.notify_model_changed(flags)
                if self.differentiable:
                    self._grad_solvers.notify_model_changed(flags)

    def set_friction_stiffness(self, kf: float) -> None:
        """Newton's friction coefficient ``kf`` (N s/m) of every shape, on Newton's own
        solvers (the MuJoCo solver's friction is MuJoCo's: refused there)."""
        if isinstance(kf, bool) or not isinstance(kf, int | float) or not 0 < kf < math.inf:
            raise RobolearnError(
                f"env.sim.newton.friction_stiffness must be a number > 0, got {kf!r}"
            )
        if self.solver_name == "mujoco":
            raise RobolearnError(
                "env.sim.newton.friction_stiffness sets the friction of Newton's own solvers; "
                "the mujoco solver's is MuJoCo's (set env.sim.newton.solver)"
            )
        self.nm.shape_material_kf.fill_(float(kf))

    def __repr__(self) -> str:
        return super().__repr__()[:-1] + f", solver={self.solver_name!r}, substeps={self.substeps})"


_SIZE_PARAMS = {
    int(mujoco.mjtGeom.mjGEOM_SPHERE): 1,
    int(mujoco.mjtGeom.mjGEOM_CAPSULE): 2,
    int(mujoco.mjtGeom.mjGEOM_CYLINDER): 2,
    int(mujoco.mjtGeom.mjGEOM_ELLIPSOID): 3,
    int(mujoco.mjtGeom.mjGEOM_BOX): 3,
}


def _match_geoms(theirs: mujoco.MjModel, ours: mujoco.MjModel) -> np.ndarray:
    """For each geom of the model Newton's MuJoCo solver built, the same geom of ours (by
    body, type, size and pose: Newton renames geoms and drops the visual-only ones)."""
    index = np.empty(theirs.ngeom, dtype=np.int64)
    taken = np.zeros(ours.ngeom, dtype=bool)
    for g in range(theirs.ngeom):
        for h in np.flatnonzero(ours.geom_bodyid == theirs.geom_bodyid[g]):
            if taken[h] or ours.geom_type[h] != theirs.geom_type[g]:
                continue
            # the sizes a geom of this type reads (a plane's is only how MuJoCo draws it)
            k = _SIZE_PARAMS.get(int(ours.geom_type[h]), 0)
            size_ok = np.allclose(ours.geom_size[h, :k], theirs.geom_size[g, :k], atol=1e-5)
            if size_ok and np.allclose(ours.geom_pos[h], theirs.geom_pos[g], atol=1e-5):
                index[g], taken[h] = h, True
                break
        else:
            raise RobolearnError(
                f"geom {theirs.geom(g).name!r} of Newton's import has no counterpart in "
                "MuJoCo's compile of the same MJCF"
            )
    return index


@dataclasses.dataclass
class _ActuatorMap:
    """MuJoCo's actuators as joint forces for Newton's own solvers (which have no MuJoCo
    actuators): force = gain * ctrl + bias0 + bias1 * length + bias2 * velocity, clamped
    to the force range, times the gear, on the actuated dof; plus each dof's damping."""

    engine: NewtonEngine

    @property
    def model(self) -> mujoco.MjModel:
        return self.engine.model

    def __post_init__(self) -> None:
        self._refuse_unsupported()
        self._build()

    def _refuse_unsupported(self) -> None:
        """One line naming the first actuator the solver cannot drive."""
        m = self.model
        for a in range(m.nu):
            name = m.actuator(a).name or f"#{a}"
            trn = int(m.actuator_trntype[a])
            joint = int(m.actuator_trnid[a, 0])
            kind = int(m.jnt_type[joint]) if trn == int(mujoco.mjtTrn.mjTRN_JOINT) else -1
            if kind not in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)):
                raise RobolearnError(
                    f"actuator {name!r} does not drive a hinge or slide joint, which is all "
                    f"the newton engine's {self.engine.solver_name} solver drives; use the "
                    "mujoco solver (env.sim.newton.solver=mujoco)"
                )
            if int(m.actuator_dyntype[a]) != int(mujoco.mjtDyn.mjDYN_NONE) or int(
                m.actuator_gaintype[a]
            ) != int(mujoco.mjtGain.mjGAIN_FIXED):
                raise RobolearnError(
                    f"actuator {name!r} has activation dynamics or a non-fixed gain, which "
                    f"the newton engine's {self.engine.solver_name} solver does not model; "
                    "use the mujoco solver"
                )
            if int(m.actuator_biastype[a]) not in (
                int(mujoco.mjtBias.mjBIAS_NONE),
                int(mujoco.mjtBias.mjBIAS_AFFINE),
            ):
                raise RobolearnError(
                    f"actuator {name!r} has a non-affine bias, which the newton engine's "
                    f"{self.engine.solver_name} solver does not model; use the mujoco solver"
                )

    def _build(self) -> None:
        """The actuators' constants on the device, and the drives of XPBD and
        semi-implicit."""
        m, wp, engine = self.model, self.engine._wp, self.engine
        joint = m.actuator_trnid[:, 0]
        with wp.ScopedDevice(engine.wp_device):
            self.act_qadr = wp.array(m.jnt_qposadr[joint].astype(np.int32), dtype=wp.int32)
            self.act_dof = wp.array(m.jnt_dofadr[joint].astype(np.int32), dtype=wp.int32)
            self.gear = wp.array(m.actuator_gear[:, 0].astype(np.float32), dtype=wp.float32)
            self.ctrlrange = wp.array(
                np.where(
                    m.actuator_ctrllimited[:, None].astype(bool),
                    m.actuator_ctrlrange,
                    np.array([-np.inf, np.inf]),
                ).astype(np.float32),
                dtype=wp.vec2,
            )
            self.forcelimited = wp.array(m.actuator_forcelimited.astype(np.int32), dtype=wp.int32)
            self.no_ref = wp.zeros(1, dtype=wp.float32)  # made here: a graph cannot allocate
        # XPBD and semi-implicit take no armature, so a stiff PD as an explicit force on a
        # light link blows up (our humanoid's ankles at 1 ms): there position actuators
        # become Newton's joint drives (implicit in XPBD) and the force range is not held
        self.drive = np.zeros(m.nu, dtype=bool)
        # a recorded step keeps MuJoCo's force law on semi-implicit: the drives' targets
        # are torch copies into Newton's control, which the tape would not see
        drives = engine.solver_name == "xpbd" or (
            engine.solver_name == "semi_implicit" and not engine.differentiable
        )
        if drives:
            gain, bias = m.actuator_gainprm, m.actuator_biasprm
            self.drive = (
                (m.actuator_biastype == int(mujoco.mjtBias.mjBIAS_AFFINE))
                & (gain[:, 0] > 0)
                & np.isclose(gain[:, 0], -bias[:, 1])
                & (bias[:, 0] == 0)
            )
        with wp.ScopedDevice(engine.wp_device):
            self.skip = wp.array(self.drive.astype(np.int32), dtype=wp.int32)
            damped = np.ones(m.nv, dtype=np.int32)
            damped[m.jnt_dofadr[joint[self.drive]]] = 0  # their damping joins the drive's
            self.damped = wp.array(damped, dtype=wp.int32)
        if self.drive.any():
            n, nv = engine.num_envs, m.nv
            acts = np.flatnonzero(self.drive)
            dev = engine.device
            self._acts = torch.as_tensor(acts, device=dev)
            self._dofs = torch.as_tensor(m.jnt_dofadr[joint[acts]], device=dev)
            self._gear = torch.as_tensor(m.actuator_gear[acts, 0], dtype=torch.float32, device=dev)
            lo, hi = wp.to_torch(self.ctrlrange)[acts].unbind(-1)
            self._lo, self._hi = lo, hi
            # targets are per coordinate (joint_q's layout), gains per dof
            self._qadr = torch.as_tensor(m.jnt_qposadr[joint[acts]], device=dev)
            self._target = wp.to_torch(engine._control.joint_target_q, requires_grad=False).view(
                n, m.nq
            )
            self._ke = wp.to_torch(engine.nm.joint_target_ke, requires_grad=False).view(n, nv)
            self._kd = wp.to_torch(engine.nm.joint_target_kd, requires_grad=False).view(n, nv)
            ref = engine._dof_ref
            self._ref = (
                wp.to_torch(ref, requires_grad=False).view(n, nv)[:, self._dofs]
                if ref is not None
                else 0.0
            )

    def push(self) -> None:
        """The drives' targets and gains from ctrl and the (per-env) actuator fields:
        torque = kp * gear^2 * (ctrl / gear - q) - (kv * gear^2 + damping) * qdot."""
        if not self.drive.any():
            return
        e, acts, dofs, g2 = self.engine, self._acts, self._dofs, self._gear**2
        u = torch.clamp(e.ctrl[:, acts], self._lo, self._hi)
        self._target[:, self._qadr] = u / self._gear - self._ref
        gain = e._field_rows("actuator_gainprm")[:, acts, 0]
        bias = e._field_rows("actuator_biasprm")[:, acts, 2]
        damping = e._field_rows("dof_damping")[:, dofs]
        self._ke[:, dofs] = gain * g2
        self._kd[:, dofs] = -bias * g2 + damping

    def launch(self, state, control, ctrl=None) -> None:
        """joint_f of ``control`` from robolearn's ctrl (or the (N, nu) array ``ctrl``)
        at ``state``."""
        from robolearn.sim import newton_kernels as kernels

        e = self.engine
        wp = e._wp
        nu, nv = self.model.nu, self.model.nv
        control.joint_f.zero_()
        wp.launch(
            kernels.dof_damping,
            dim=(e.num_envs, nv),
            inputs=[state.joint_qd, e.m.dof_damping, self.damped, nv],
            outputs=[control.joint_f],
        )
        if nu == 0:
            return
        wp.launch(
            kernels.actuator_force,
            dim=(e.num_envs, nu),
            inputs=[
                e.d.ctrl if ctrl is None else ctrl,
                state.joint_q,
                state.joint_qd,
                e.m.actuator_gainprm,
                e.m.actuator_biasprm,
                e.m.actuator_forcerange,
                self.forcelimited,
                self.skip,
                self.ctrlrange,
                self.gear,
                self.act_qadr,
                self.act_dof,
                e._dof_ref if e._dof_ref is not None else self.no_ref,
                int(e._dof_ref is not None),
                self.model.nq,
                nv,
            ],
            outputs=[control.joint_f],
        )
