"""The engine interface: many simulations of one MuJoCo model, state as torch views.

Every field below is a torch tensor of leading size ``num_envs`` on the engine's device
that is a *view of the engine's memory*: no copy is made per step. State fields (qpos,
qvel, ctrl, qfrc_applied, xfrc_applied, mocap_pos, mocap_quat) are read-write, and a write
is the state the next ``step`` starts from. Derived fields (xpos, xquat, cvel,
subtree_com, site_xpos, site_xmat, sensordata, actuator_force, cfrc_ext, qacc) are
outputs, overwritten by every ``step`` and ``forward``; writing them has no effect.

Timing of derived fields follows ``mj_step``: after ``step`` they describe the state
*before the last substep* (one physics dt behind qpos and qvel). ``forward`` makes them
current; ``reset`` makes them current for the envs it resets.

Quaternions are MuJoCo's order everywhere: w, x, y, z. Spatial vectors (cvel, cfrc_ext)
are MuJoCo's: rotation first, then translation, about the subtree centre of mass of the
body's kinematic tree, in world orientation.
"""

from __future__ import annotations

import abc
import contextlib
import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import mujoco
import numpy as np
import torch

from robolearn.errors import RobolearnError
from robolearn.sim.host_sync import host_syncs_allowed
from robolearn.sim.timer import EngineTimer, timed_call

#: Model fields that get per-env values by default, for domain randomization.
DEFAULT_PER_ENV_FIELDS: tuple[str, ...] = (
    "geom_friction",
    "body_mass",
    "body_ipos",
    "actuator_gainprm",
    "actuator_biasprm",
    "actuator_forcerange",
    "dof_damping",
    "dof_armature",
    "dof_frictionloss",
)

#: The tensor fields every engine binds to its own memory (see the module docstring).
FIELDS: tuple[str, ...] = (
    "qpos",
    "qvel",
    "ctrl",
    "qfrc_applied",
    "xfrc_applied",
    "mocap_pos",
    "mocap_quat",
    "time",
    "qacc",
    "xpos",
    "xquat",
    "cvel",
    "subtree_com",
    "site_xpos",
    "site_xmat",
    "sensordata",
    "actuator_force",
    "cfrc_ext",
)

# MuJoCo's own bound on qpos and qvel (mjMAXVAL): beyond it a state is treated as diverged.
MAX_STATE_VALUE = 1e10

EnvIds = torch.Tensor | Sequence[int] | np.ndarray | None


ENGINE_CALL = "_robolearn_engine_call"
"""The attribute :func:`engine_call` sets on the methods it makes."""


def engine_call(method: Callable[..., Any]) -> Callable[..., Any]:
    """A public engine call: timed when a timer is set (:func:`timed_call`), and, on an
    engine that works through host memory (:attr:`Engine.host_side`), free to read its
    tensors on the host inside :func:`~robolearn.sim.host_sync.forbid_host_syncs`.

    Marked (``ENGINE_CALL``) for the fused env step, which hides it from torch.compile
    (:func:`robolearn.managers.fused.opaque_engine_calls`): the call is MuJoCo's C batch
    or a Warp graph launch, which the compiled code calls as it is."""
    timed = timed_call(method)

    @functools.wraps(method)
    def call(self: Engine, *args: Any, **kwargs: Any) -> Any:
        if not self.host_side:
            return timed(self, *args, **kwargs)
        with host_syncs_allowed():
            return timed(self, *args, **kwargs)

    setattr(call, ENGINE_CALL, True)
    return call


class Engine(abc.ABC):
    """Many simulations of one MuJoCo model, stepped together.

    Subclasses bind the tensor fields listed in the module docstring in ``__init__``
    (:meth:`_bind_fields`) and implement the private forms of the calls (``_step``,
    ``_forward``, ``_forward_envs``, ``_reset``, ``_set_const``, ``_bind_model_field``, and
    ``_diverged`` where they know more than the state).
    """

    #: engine name: "cpu", "cuda" or "warp-cpu"
    name: str
    #: torch dtype of every float field: float64 on "cpu", float32 on the Warp engines
    dtype: torch.dtype
    #: whether the engine's calls work through host memory (the cpu engine: MuJoCo's C
    #: batch); the Warp engines' calls are launches that never wait for the device
    host_side: bool = False

    qpos: torch.Tensor  # (N, nq) generalized positions
    qvel: torch.Tensor  # (N, nv) generalized velocities
    ctrl: torch.Tensor  # (N, nu) actuator controls
    qfrc_applied: torch.Tensor  # (N, nv) applied generalized forces
    xfrc_applied: torch.Tensor  # (N, nbody, 6) applied Cartesian force, torque per body
    mocap_pos: torch.Tensor  # (N, nmocap, 3) mocap bodies' positions, world
    mocap_quat: torch.Tensor  # (N, nmocap, 4) mocap bodies' orientations, w x y z
    time: torch.Tensor  # (N,) simulation time, seconds
    qacc: torch.Tensor  # (N, nv) generalized accelerations
    xpos: torch.Tensor  # (N, nbody, 3) body frame positions, world
    xquat: torch.Tensor  # (N, nbody, 4) body frame orientations, world, w x y z
    cvel: torch.Tensor  # (N, nbody, 6) com-based velocities (ang, lin)
    subtree_com: torch.Tensor  # (N, nbody, 3) subtree centres of mass
    site_xpos: torch.Tensor  # (N, nsite, 3) site positions
    site_xmat: torch.Tensor  # (N, nsite, 3, 3) site orientations as rotation matrices
    sensordata: torch.Tensor  # (N, nsensordata) sensor outputs
    actuator_force: torch.Tensor  # (N, nu) actuator forces
    cfrc_ext: torch.Tensor  # (N, nbody, 6) com-based external (contact) wrench per body

    def __init__(
        self,
        model: mujoco.MjModel,
        num_envs: int,
        device: torch.device,
        per_env_fields: Sequence[str],
    ) -> None:
        if not isinstance(num_envs, int | np.integer) or isinstance(num_envs, bool):
            raise RobolearnError(f"num_envs must be an integer >= 1, got {num_envs!r}")
        if num_envs < 1:
            raise RobolearnError(f"num_envs must be >= 1, got {num_envs}")
        self.model = model
        self.num_envs = int(num_envs)
        self.device = device
        self.per_env_fields = tuple(per_env_fields)
        for field in self.per_env_fields:
            self._check_per_env_field(field)
        self._model_fields: dict[str, torch.Tensor] = {}
        self._root_of_body = torch.as_tensor(model.body_rootid, dtype=torch.long, device=device)
        self.max_speed: float = MAX_STATE_VALUE
        """Speed (any qvel entry, m/s or rad/s) beyond which :meth:`diverged` reports an
        env; MuJoCo's own bound by default. A scene sets its ``sim.max_speed``, far
        lower: a blown-up simulation passes any physical speed long before 1e10."""
        self.timer: EngineTimer | None = None
        """When set, the engine adds the seconds each of its calls takes to it (see
        :meth:`timed`); None measures nothing."""

    def _bind_fields(self, view: Callable[[str], torch.Tensor]) -> None:
        """Bind every field of :data:`FIELDS` to ``view(name)``, the engine's own memory."""
        for name in FIELDS:
            setattr(self, name, view(name))
        self._view = view
        # mujoco.batch gives site_xmat as (N, nsite, 9): one shape on every engine
        self.site_xmat = self.site_xmat.view(self.num_envs, self.model.nsite, 3, 3)

    @contextlib.contextmanager
    def timed(self) -> Iterator[EngineTimer]:
        """Measure the engine's calls inside the block, e.g. the engine's share of a step.

        ``with engine.timed() as timer: env.step(a)``; then ``timer.seconds["step"]`` or
        ``timer.total("step", "reset")``. The timer set before the block is restored after.
        """
        previous, self.timer = self.timer, EngineTimer()
        try:
            yield self.timer
        finally:
            self.timer = previous

    # ---- sizes and timing -------------------------------------------------------------

    @property
    def physics_dt(self) -> float:
        """Seconds advanced by one substep (the model's timestep)."""
        return float(self.model.opt.timestep)

    # ---- stepping ---------------------------------------------------------------------
    # The public calls are the base class's: each measures itself when a timer is set
    # (robolearn.sim.timer) and runs the engine's own form, the same name with a "_".

    @engine_call
    def step(self, nsubsteps: int = 1) -> None:
        """Advance every env by ``nsubsteps`` physics steps with the current ctrl."""
        self._step(nsubsteps)

    @engine_call
    def forward(self) -> None:
        """Recompute every derived field at the current state, for all envs."""
        self._forward()

    def prepare(self, nsubsteps: int) -> None:
        """Get ready to step by ``nsubsteps`` per call: the Warp engines capture their graphs
        here (``step(nsubsteps)``, ``forward`` and the reset), so that the first env step
        does not. A later ``step`` with another count still works. A no-op on ``cpu``."""
        return  # nothing to capture on an engine without graphs

    @engine_call
    def forward_envs(self, env_ids: torch.Tensor) -> None:
        """Recompute derived fields of ``env_ids`` (an engine may do all envs)."""
        self._forward_envs(env_ids)

    @abc.abstractmethod
    def _step(self, nsubsteps: int) -> None:
        """:meth:`step`."""

    @abc.abstractmethod
    def _forward(self) -> None:
        """:meth:`forward`."""

    @abc.abstractmethod
    def _forward_envs(self, env_ids: torch.Tensor) -> None:
        """:meth:`forward_envs`."""

    @abc.abstractmethod
    def _reset(self, env_ids: torch.Tensor, qpos: torch.Tensor | None, qvel: torch.Tensor | None):
        """Reset ``env_ids`` (sorted, unique, long, on device) to defaults, write qpos, qvel."""

    @engine_call
    def reset(
        self,
        env_ids: EnvIds = None,
        qpos: torch.Tensor | None = None,
        qvel: torch.Tensor | None = None,
        forward: bool = True,
    ) -> None:
        """Reset envs to the model's default state, or to the given qpos and qvel.

        Everything else in the state (ctrl, applied forces, time, warm start) returns to its
        default. Derived fields of the reset envs are current afterwards. The other envs'
        state (positions, velocities, warm start) is untouched; on the Warp engines their
        derived fields are recomputed too (MuJoCo Warp's forward runs on every world), on
        ``cpu`` they are not.

        Args:
            env_ids: env indices or a boolean mask over envs; None resets all.
            qpos: (len(env_ids), nq) positions to start from; None for the model's qpos0.
            qvel: (len(env_ids), nv) velocities; None for zeros.
            forward: compute derived fields of the reset envs; pass False when more state
                is written next, then call :meth:`forward_envs`.
        """
        ids = self.env_ids(env_ids)
        if ids.numel() == 0:
            return
        n = ids.numel()
        if qpos is not None:
            qpos = self._check_rows("qpos", qpos, n, self.model.nq)
        if qvel is not None:
            qvel = self._check_rows("qvel", qvel, n, self.model.nv)
        self._reset(ids, qpos, qvel)
        if forward:
            self._forward_envs(ids)  # within this call's time, not counted again

    @engine_call
    def reset_where(
        self,
        mask: torch.Tensor,
        qpos: torch.Tensor | None = None,
        qvel: torch.Tensor | None = None,
        forward: bool = True,
    ) -> None:
        """:meth:`reset` of the envs where ``mask`` is true, given rows for every env: the
        form the env step uses, which never waits for the device (no env indices are made
        from the mask, no count is read; on the Warp engines the reset is a masked kernel).

        Args:
            mask: (N,) bool on the engine's device.
            qpos: (N, nq) positions, of which the masked rows are used; None for qpos0.
            qvel: (N, nv) velocities, likewise; None for zeros.
            forward: compute derived fields of the reset envs (:meth:`forward_where`).
        """
        mask = self._check_mask(mask)
        if qpos is not None:
            qpos = self._check_rows("qpos", qpos, self.num_envs, self.model.nq)
        if qvel is not None:
            qvel = self._check_rows("qvel", qvel, self.num_envs, self.model.nv)
        self._reset_where(mask, qpos, qvel)
        if forward:
            self._forward_where(mask)

    @engine_call
    def forward_where(self, mask: torch.Tensor) -> None:
        """:meth:`forward_envs` of the envs where ``mask`` is true (an engine may do all)."""
        self._forward_where(self._check_mask(mask))

    def _reset_where(
        self, mask: torch.Tensor, qpos: torch.Tensor | None, qvel: torch.Tensor | None
    ) -> None:
        """:meth:`reset_where`; by default through env indices (a host-side engine's way)."""
        ids = mask.nonzero().flatten()
        if ids.numel():
            rows = lambda x: None if x is None else x.index_select(0, ids)  # noqa: E731
            self._reset(ids, rows(qpos), rows(qvel))

    def _forward_where(self, mask: torch.Tensor) -> None:
        """:meth:`forward_where`; by default through env indices."""
        ids = mask.nonzero().flatten()
        if ids.numel():
            self._forward_envs(ids)

    def _check_mask(self, mask: torch.Tensor) -> torch.Tensor:
        if (
            not isinstance(mask, torch.Tensor)
            or mask.dtype != torch.bool
            or mask.shape != (self.num_envs,)
        ):
            shape = tuple(mask.shape) if isinstance(mask, torch.Tensor) else type(mask).__name__
            raise RobolearnError(f"an env mask must be ({self.num_envs},) bool, got {shape}")
        return mask.to(self.device)

    @property
    def history(self) -> torch.Tensor:
        """(N, nhistory) MuJoCo's history buffers of delayed actuators and sensors (their
        stamped past values), writable: bound at the first read, as few models have one."""
        if self.model.nhistory == 0:
            raise RobolearnError("the model has no delayed actuator or sensor: no history")
        bound = self.__dict__.get("_history")
        if bound is None:
            bound = self.__dict__["_history"] = self._view("history")
        return bound

    # ---- per-env model parameters -----------------------------------------------------

    def model_field(self, name: str) -> torch.Tensor:
        """Per-env values of a model field, (N, ...), as a writable view of the engine's.

        A write changes that env's physics from its next step. Only fields named in
        ``per_env_fields`` at construction have per-env values, on every engine alike.
        Fields derived from the model at compile time (such as ``body_subtreemass``) are
        not updated by a write; after a write to mass or inertia fields call
        :meth:`set_const`.
        """
        if name not in self.per_env_fields:
            raise RobolearnError(
                f"model field {name!r} has no per-env values in this engine; pass it in "
                f"per_env_fields when building the engine (now: {', '.join(self.per_env_fields)})"
            )
        if name not in self._model_fields:
            self._model_fields[name] = self._bind_model_field(name)
        return self._model_fields[name]

    @abc.abstractmethod
    def _bind_model_field(self, name: str) -> torch.Tensor:
        """The per-env view of a declared model field."""

    def set_const(self, env_ids: EnvIds = None) -> None:
        """Recompute what MuJoCo derives from mass and inertia, for ``env_ids`` (None: all).

        Call it after writing ``body_mass``, ``body_inertia``, ``body_ipos``,
        ``body_iquat`` or ``dof_armature`` through :meth:`model_field`. MuJoCo computes
        subtree masses, inverse weights and, for bodies it treats as "simple" (a free body
        with one geom, such as a box on the floor), the mass matrix itself once from these
        fields: without this call such a body keeps its old mass (measured: a free box
        whose ``body_mass`` doubled accelerated under a force as before). The state
        (qpos, qvel, ...) is kept.
        """
        ids = self.env_ids(env_ids)
        if ids.numel():
            self._set_const(ids)

    @engine_call
    def set_const_where(self, mask: torch.Tensor) -> None:
        """:meth:`set_const` for the envs where ``mask`` ((N,) bool) is true, with no wait
        for the device (the Warp engines recompute every world)."""
        self._set_const_where(self._check_mask(mask))

    def _set_const_where(self, mask: torch.Tensor) -> None:
        ids = mask.nonzero().flatten()
        if ids.numel():
            self._set_const(ids)

    @abc.abstractmethod
    def _set_const(self, env_ids: torch.Tensor) -> None:
        """:meth:`set_const` for ``env_ids`` (sorted, unique, long, on device, not empty)."""

    def _check_per_env_field(self, name: str) -> None:
        value = getattr(self.model, name, None)
        if not isinstance(value, np.ndarray) or value.dtype.kind != "f":
            raise RobolearnError(
                f"{name!r} is not a floating-point MjModel array field; per-env fields are "
                f"parameters such as {', '.join(DEFAULT_PER_ENV_FIELDS)}"
            )

    # ---- derived quantities -----------------------------------------------------------

    @property
    def contact_force(self) -> torch.Tensor:
        """(N, nbody, 3) net external force on each body, world frame: contacts, equality
        constraints and xfrc_applied together (the translational part of cfrc_ext)."""
        return self.cfrc_ext[..., 3:6]

    def body_velocity(
        self, body_ids: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Linear velocity of body frame origins and angular velocity, world frame.

        Computed from cvel, so it has cvel's timing. Returns (lin, ang), each
        (N, nbody, 3), or (N, len(body_ids), 3) for the given bodies.
        """
        cvel, xpos, root = self.cvel, self.xpos, self._root_of_body
        if body_ids is not None:
            cvel, xpos = cvel.index_select(1, body_ids), xpos.index_select(1, body_ids)
            root = root[body_ids]
        ang = cvel[..., 0:3]
        offset = xpos - self.subtree_com.index_select(1, root)
        return cvel[..., 3:6] + torch.cross(ang, offset, dim=-1), ang

    @engine_call
    def jacobian(
        self, body: int | torch.Tensor, point: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Translational and rotational Jacobians of a world point fixed to a body, per env.

        Args:
            body: a body id for every env, or (N,) long ids, one per env.
            point: (N, 3) world points (e.g. a site's ``site_xpos``), each moving with
                ``body``.

        Returns:
            (jacp, jacr), each (N, 3, nv) in the engine's dtype on its device: d(point
            velocity)/d(qvel) and d(body angular velocity)/d(qvel), world frame. On the Warp
            engines they have the derived fields' timing (the kinematics of the last
            ``forward`` or of the state before the last substep) and are buffers that the
            next call overwrites; the ``cpu`` engine computes the kinematics of the current
            state first (MuJoCo's ``mj_kinematics``, ``mj_comPos``, ``mj_jac`` per env).
            Neither waits for the device.
        """
        n = self.num_envs
        ids = torch.as_tensor(body, device=self.device, dtype=torch.int32).expand(n)
        if (
            ids.numel()
            and self.device.type == "cpu"
            and not (int(ids.min()) >= 0 and int(ids.max()) < self.model.nbody)
        ):
            raise RobolearnError(f"body ids must lie in [0, {self.model.nbody})")
        point = self._check_rows("point", point, n, 3)
        return self._jacobian(ids.contiguous(), point.contiguous())

    def _jacobian(
        self, body: torch.Tensor, point: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`jacobian` of checked (N,) int32 bodies and (N, 3) points."""
        raise RobolearnError(f"the {self.name} engine computes no Jacobians")

    def copy_state_to(self, env_id: int, data: mujoco.MjData) -> None:
        """Copy env ``env_id``'s state (qpos, qvel, and the mocap bodies' poses) into a
        host MjData of :attr:`model`, for a renderer or viewer to compute and draw."""
        data.qpos[:] = self.qpos[env_id].detach().cpu().double().numpy()
        data.qvel[:] = self.qvel[env_id].detach().cpu().double().numpy()
        if self.model.nmocap:
            data.mocap_pos[:] = self.mocap_pos[env_id].detach().cpu().double().numpy()
            data.mocap_quat[:] = self.mocap_quat[env_id].detach().cpu().double().numpy()

    # ---- rays -------------------------------------------------------------------------

    @engine_call
    def cast_rays(
        self,
        origins: torch.Tensor,
        directions: torch.Tensor,
        geom_groups: Sequence[int] | None = None,
        static: bool = True,
        exclude_body: int = -1,
        env_ids: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Intersect rays with each env's geoms (MuJoCo's ``mj_ray`` per ray).

        Args:
            origins, directions: (N, R, 3) world rays per env (directions need not be unit:
                distances are in units of the direction's length); N is the number of envs,
                or of ``env_ids``.
            geom_groups: the geom groups a ray may hit; None for every group.
            static: whether rays hit static geoms (those welded to the world: the floor,
                the terrain, fixed obstacles).
            exclude_body: a body whose geoms no ray hits, or -1.
            env_ids: (n,) long ids of the envs to cast in (``cpu`` only); None for all.

        Returns:
            (dist, geom): (N, R) distance to the first hit, -1 for a miss, in the engine's
            dtype, and the hit geom's id, -1 for a miss (long). MuJoCo skips invisible
            geoms (alpha 0), as its renderer does. On ``cpu`` the geoms are at the current
            state (the batch computes each env's kinematics first); on the Warp engines
            at the derived fields' timing (see the module docstring). Neither waits for
            the device.
        """
        n = self.num_envs if env_ids is None else int(env_ids.numel())
        if origins.dim() != 3 or origins.shape[0] != n or origins.shape[-1] != 3:
            raise RobolearnError(f"ray origins must be (N={n}, R, 3), got {tuple(origins.shape)}")
        if directions.shape != origins.shape:
            raise RobolearnError(
                f"ray directions {tuple(directions.shape)} must match the origins' "
                f"{tuple(origins.shape)}"
            )
        mask = None
        if geom_groups is not None:
            mask = np.zeros(mujoco.mjNGROUP, dtype=np.uint8)
            for group in geom_groups:
                if not 0 <= int(group) < mujoco.mjNGROUP:
                    raise RobolearnError(f"geom groups lie in [0, {mujoco.mjNGROUP}), got {group}")
                mask[int(group)] = 1
        return self._cast_rays(origins, directions, mask, bool(static), int(exclude_body), env_ids)

    def _cast_rays(
        self,
        origins: torch.Tensor,
        directions: torch.Tensor,
        groups: np.ndarray | None,
        static: bool,
        exclude_body: int,
        env_ids: torch.Tensor | None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`cast_rays` with checked arguments; ``groups`` a (mjNGROUP,) 0/1 mask."""
        raise RobolearnError(f"the {self.name} engine casts no rays")

    @engine_call
    def set_ray_group(self, geom_ids: Sequence[int], group: int) -> None:
        """Put geoms in geom group ``group`` of the simulated model, for ray casts only.

        A ray cast whose ``geom_groups`` leave ``group`` out then skips these geoms in
        MuJoCo's own test, at no cost. Geom groups change nothing in the physics (MuJoCo
        reads them only for rays and drawing), and the host model that renderers draw
        (:attr:`model`) keeps its groups, so nothing is hidden from view.
        """
        if not 0 <= int(group) < mujoco.mjNGROUP:
            raise RobolearnError(f"geom groups lie in [0, {mujoco.mjNGROUP}), got {group}")
        ids = np.asarray(list(geom_ids), dtype=np.int64)
        if ids.size and not (ids.min() >= 0 and ids.max() < self.model.ngeom):
            raise RobolearnError(f"geom ids lie in [0, {self.model.ngeom}), got {ids.tolist()}")
        self._set_ray_group(ids, int(group))

    def _set_ray_group(self, geom_ids: np.ndarray, group: int) -> None:
        """:meth:`set_ray_group` with checked arguments."""
        raise RobolearnError(f"the {self.name} engine casts no rays")

    # ---- divergence -------------------------------------------------------------------

    @engine_call
    def diverged(self) -> torch.Tensor:
        """(N,) bool: envs whose physics went wrong since the last call.

        Always: envs whose state diverged (NaN, inf or beyond MuJoCo's bound, or a speed
        beyond :attr:`max_speed`). On the cpu
        engine MuJoCo itself resets a diverged simulation inside the step and warns; those
        envs are reported here too, by the next call (and again by the call after each
        later step in which they diverge again). On the Warp engines also: envs whose
        contact or constraint buffers overflowed, so that contacts were dropped.
        """
        return self._diverged()

    def overflow_report(self) -> str | None:
        """What ran out of room since the last call, and the setting that makes more; None
        when nothing did. Only the Warp engines have fixed contact and constraint buffers
        (the cpu engine grows its own), so only they report anything."""
        return None

    def _diverged(self) -> torch.Tensor:
        """:meth:`diverged`: by default, a scan of qpos and qvel."""
        # A comparison with NaN is False, so one test catches NaN, inf and huge values.
        qpos_ok = (self.qpos.abs() < MAX_STATE_VALUE).all(-1)
        return ~(qpos_ok & (self.qvel.abs() < min(self.max_speed, MAX_STATE_VALUE)).all(-1))

    # ---- helpers ----------------------------------------------------------------------

    def env_ids(self, env_ids: EnvIds) -> torch.Tensor:
        """Sorted unique long env indices on the engine's device from ids, a mask or None."""
        if env_ids is None:
            return torch.arange(self.num_envs, device=self.device)
        ids = torch.as_tensor(env_ids, device=self.device)
        if ids.dtype == torch.bool:
            if ids.shape != (self.num_envs,):
                raise RobolearnError(
                    f"an env mask must have shape ({self.num_envs},), got {tuple(ids.shape)}"
                )
            return ids.nonzero().flatten()
        if ids.dtype.is_floating_point or ids.dim() > 1:
            raise RobolearnError("env ids must be a 1-D sequence of integers or a boolean mask")
        ids = ids.long().flatten()
        if ids.device.type != "cpu":
            # Checking values would synchronise with the GPU inside the env step; ids made
            # on the device (nonzero of a mask) are sorted and unique already.
            return ids
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= self.num_envs):
            raise RobolearnError(f"env ids must lie in [0, {self.num_envs})")
        return torch.unique(ids)

    def _check_rows(self, what: str, value: torch.Tensor, n: int, width: int) -> torch.Tensor:
        value = torch.as_tensor(value, device=self.device, dtype=self.dtype)
        if value.dim() == 1:
            value = value.expand(n, -1)
        if tuple(value.shape) != (n, width):
            raise RobolearnError(
                f"{what} for {n} envs must have shape ({n}, {width}), got {tuple(value.shape)}"
            )
        return value

    def __repr__(self) -> str:
        m = self.model
        return (
            f"{type(self).__name__}(engine={self.name!r}, num_envs={self.num_envs}, "
            f"device={str(self.device)!r}, nq={m.nq}, nv={m.nv}, nu={m.nu}, nbody={m.nbody})"
        )
