"""The MuJoCo Warp engines: ``cuda`` (a GPU, substeps in a CUDA graph) and ``warp-cpu``.

Both run the same ``mujoco_warp`` code with ``nworld = num_envs``; ``warp-cpu`` runs it on
warp's CPU device, slowly, so that the GPU code path can be tested where there is no GPU.
Fields are ``wp.to_torch`` views of the warp arrays (float32). On CUDA every launch goes to
torch's current stream, so physics and policy are ordered without host synchronisation.
"""

from __future__ import annotations

from collections.abc import Sequence

import mujoco
import torch

from robolearn.errors import RobolearnError
from robolearn.sim.capacity import default_capacity
from robolearn.sim.engine import DEFAULT_PER_ENV_FIELDS, Engine


def _import_warp():
    import mujoco_warp as mjw
    import warp as wp

    # warp prints a banner and a line per loaded module otherwise
    if hasattr(wp, "LOG_WARNING"):
        wp.config.log_level = wp.LOG_WARNING
    else:  # warp < 1.14
        wp.config.quiet = True
    wp.init()
    return wp, mjw


def batchable_fields() -> frozenset[str]:
    """Model fields MuJoCo Warp can hold per env (its array fields with a batch axis)."""
    import dataclasses

    from mujoco_warp._src import types, warp_util

    return frozenset(
        f.name
        for f in dataclasses.fields(types.Model)
        if warp_util.is_array_spec(f.type) and getattr(f.type, "shape", ("",))[0] == "*"
    )


def _overflow_kinds(flags) -> tuple:
    """MuJoCo Warp's single overflow flags that mean dropped contacts or constraints
    (reaching a solver's iteration limit is routine: MuJoCo's own solver stops there too)."""
    routine = flags.ITERATIONS | flags.LS_ITERATIONS
    return tuple(
        f for f in flags if f.value and f.value & (f.value - 1) == 0 and not f.value & routine
    )


# What ran out for each kind of overflow, and what makes room (formatted with the engine's
# per-env capacities).
_OVERFLOW_ADVICE = {
    "NEFC": ("constraints beyond njmax={njmax} per env", "raise env.sim.njmax"),
    "NJMAX_NNZ": ("constraint Jacobian entries beyond its room", "raise env.sim.njmax"),
    "BROADPHASE": ("contact pairs beyond nconmax={nconmax} per env", "raise env.sim.nconmax"),
    "NARROWPHASE": ("contacts beyond nconmax={nconmax} per env", "raise env.sim.nconmax"),
    "CCD": ("convex contacts beyond nconmax={nconmax} per env", "raise env.sim.nconmax"),
    "HFIELD": (
        "a geom over more than 50 height-field cells at once",
        "coarser cells (env.scene.terrain.horizontal_scale) or smaller collision geoms",
    ),
}


class WarpEngine(Engine):
    """Many simulations on MuJoCo Warp, one warp "world" per env; float32 fields."""

    dtype = torch.float32

    def __init__(
        self,
        model: mujoco.MjModel,
        num_envs: int,
        device: str = "cuda:0",
        per_env_fields: Sequence[str] = DEFAULT_PER_ENV_FIELDS,
        nconmax: int | None = None,
        njmax: int | None = None,
        cuda_graph: bool = True,
    ) -> None:
        wp, mjw = _import_warp()
        self._wp, self._mjw = wp, mjw
        self.wp_device = wp.get_device(device)
        self.name = "cuda" if self.wp_device.is_cuda else "warp-cpu"
        super().__init__(model, num_envs, torch.device(str(self.wp_device)), per_env_fields)
        unbatchable = sorted(set(self.per_env_fields) - batchable_fields())
        if unbatchable:
            raise RobolearnError(
                f"MuJoCo Warp cannot hold per-env values of {', '.join(unbatchable)}"
            )
        with wp.ScopedDevice(self.wp_device):
            self.m = self._put_model(model)
            self.d = self._put_data(model, nconmax, njmax)
            self._reset_mask = wp.zeros(self.num_envs, dtype=bool)
        self._bind_fields(lambda name: wp.to_torch(getattr(self.d, name)))
        self._overflow = wp.to_torch(self.d.overflow)
        self._overflow_kinds = _overflow_kinds(mjw.OverflowType)
        self._overflow_bits = torch.tensor(
            [int(f) for f in self._overflow_kinds], dtype=self._overflow.dtype, device=self.device
        )
        # env steps in which each kind overflowed, kept on the device: read (with one host
        # synchronisation) only when a report is asked for, once per iteration
        self._overflow_counts = torch.zeros(
            len(self._overflow_kinds), dtype=torch.int64, device=self.device
        )
        self._reset_mask_t = wp.to_torch(self._reset_mask)
        self._use_graph = bool(cuda_graph) and self.wp_device.is_cuda
        self._graphs: dict[object, object] = {}

    def _put_model(self, model: mujoco.MjModel):
        """The model on the device, with a batch axis on the per-env fields."""
        mjw = self._mjw
        try:
            m = mjw.put_model(model, batch_sizes={f: self.num_envs for f in self.per_env_fields})
        except (NotImplementedError, ValueError) as exc:
            raise RobolearnError(
                f"the {self.name} engine (MuJoCo Warp) cannot run this model: {exc}; "
                "the cpu engine runs every MuJoCo feature"
            ) from exc
        # Running out of contact or constraint room means contacts were dropped and that
        # world's physics is wrong: warn of that only, and report it in diverged().
        self._overflow_bad = sum(int(f) for f in _overflow_kinds(mjw.OverflowType))
        m.opt.warn_overflow = self._overflow_bad
        return m

    def _put_data(self, model: mujoco.MjModel, nconmax: int | None, njmax: int | None):
        """One world per env, each in the model's initial state (forward computed)."""
        data = mujoco.MjData(model)
        mujoco.mj_forward(model, data)
        nconmax, njmax = default_capacity(model, data, nconmax, njmax)
        try:
            return self._mjw.put_data(
                model, data, nworld=self.num_envs, nconmax=nconmax, njmax=njmax
            )
        except ValueError as exc:
            raise RobolearnError(
                f"the {self.name} engine cannot hold this model's initial state: {exc} "
                "(sim.nconmax and sim.njmax set the capacity per env)"
            ) from exc

    # ---- launching --------------------------------------------------------------------

    def _torch_stream(self):
        """torch's current stream on our device, as a warp stream (CUDA only)."""
        return self._wp.stream_from_torch(torch.cuda.current_stream(self.device))

    def _launch(self, key: object, fn) -> None:
        """Run ``fn`` (warp launches only) on our device, in torch's stream order.

        On CUDA ``fn`` is captured once per key into a graph, then replayed on torch's
        current stream: one launch per call, no host synchronisation.
        """
        wp = self._wp
        with wp.ScopedDevice(self.wp_device):
            if not self.wp_device.is_cuda:
                fn()
            elif not self._use_graph:
                with wp.ScopedStream(self._torch_stream()):
                    fn()
            else:
                graph = self._graphs.get(key)
                if graph is None:
                    # Captured on warp's own stream (CUDA cannot capture on torch's legacy
                    # default stream); capturing records the launches without running them.
                    with wp.ScopedCapture(force_module_load=True) as capture:
                        fn()
                    graph = self._graphs[key] = capture.graph
                wp.capture_launch(graph, stream=self._torch_stream())

    def _step(self, nsubsteps: int) -> None:
        m, d, mjw = self.m, self.d, self._mjw

        def substeps() -> None:
            for _ in range(nsubsteps):
                mjw.step(m, d)

        self._launch(("step", nsubsteps), substeps)

    def _forward(self) -> None:
        self._launch("forward", lambda: self._mjw.forward(self.m, self.d))

    def _reset(self, env_ids: torch.Tensor, qpos: torch.Tensor | None, qvel: torch.Tensor | None):
        self._reset_mask_t.zero_()
        self._reset_mask_t[env_ids] = True
        self._launch("reset", lambda: self._mjw.reset_data(self.m, self.d, reset=self._reset_mask))
        if qpos is not None:
            self.qpos[env_ids] = qpos
        if qvel is not None:
            self.qvel[env_ids] = qvel

    def _forward_envs(self, env_ids: torch.Tensor) -> None:
        # MuJoCo Warp's forward runs every world; it leaves their state (qpos, qvel,
        # warm start) untouched, so envs not reset continue exactly as they would have.
        self._forward()

    def _diverged(self) -> torch.Tensor:
        """Diverged envs, and envs whose contact or constraint buffers overflowed since the
        last call (MuJoCo Warp drops what does not fit; raise sim.nconmax / sim.njmax)."""
        overflow = self._overflow
        self._overflow_counts += ((overflow.unsqueeze(-1) & self._overflow_bits) != 0).sum(0)
        overflowed = (overflow & self._overflow_bad) != 0
        self._overflow.zero_()  # each overflow is reported once; a reset also clears it
        return super()._diverged() | overflowed

    def overflow_report(self) -> str | None:
        counts = self._overflow_counts.tolist()
        self._overflow_counts.zero_()
        if not any(counts):
            return None
        nconmax = int(self.d.naconmax) // self.num_envs
        capacity = {"nconmax": nconmax, "njmax": int(self.d.njmax)}
        parts = []
        for flag, count in zip(self._overflow_kinds, counts, strict=True):
            if count:
                what, fix = _OVERFLOW_ADVICE.get(flag.name, ("a buffer", "see MuJoCo Warp"))
                what = what.format(**capacity)
                parts.append(f"{what} ({flag.name.lower()}, {count} env steps): {fix}")
        return (
            "MuJoCo Warp ran out of room and dropped contacts or constraints, and reset "
            f"those envs as diverged: {'; '.join(parts)}"
        )

    def _bind_model_field(self, name: str) -> torch.Tensor:
        return self._wp.to_torch(getattr(self.m, name))

    def _set_const(self, env_ids: torch.Tensor) -> None:
        # MuJoCo Warp recomputes its constants for every world at once (its state is
        # restored afterwards); outside any captured graph, as it runs only when a
        # mass or inertia was randomized
        with self._wp.ScopedDevice(self.wp_device):
            self._mjw.set_const(self.m, self.d)
