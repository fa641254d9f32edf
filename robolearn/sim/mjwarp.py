"""The MuJoCo Warp engines: ``cuda`` (a GPU) and ``warp-cpu`` (warp's CPU device).

Both run the same ``mujoco_warp`` code with ``nworld = num_envs``; ``warp-cpu`` runs it on
warp's CPU device, slowly, so that the GPU code path can be tested where there is no GPU.
Fields are ``wp.to_torch`` views of the warp arrays (float32). ``step(n)``, ``forward`` and
the masked reset are each captured once into a graph (a CUDA graph on ``cuda``, Warp's CPU
graph on ``warp-cpu``) and replayed; on CUDA every launch goes to torch's current stream,
so physics and policy are ordered without host synchronisation.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import numbers
import os
import re
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import mujoco
import numpy as np
import torch

from robolearn.errors import RobolearnError
from robolearn.sim.capacity import default_capacity
from robolearn.sim.config import SimCfg
from robolearn.sim.engine import Engine
from robolearn.sim.memory import Reserve, model_field_bytes_per_env, require_envs


def _import_warp():
    import mujoco_warp as mjw
    import warp as wp

    # warp prints a banner and a line per loaded module otherwise
    if hasattr(wp, "LOG_WARNING"):
        wp.config.log_level = wp.LOG_WARNING
    else:  # warp < 1.14
        wp.config.quiet = True
    _init_without_driver_warning(wp)
    return wp, mjw


_NO_DRIVER = "Could not find or load the NVIDIA CUDA driver"


def _init_without_driver_warning(wp) -> None:
    """``wp.init()``, less the line warp's C code prints on stderr on every machine without
    an NVIDIA driver (it returned on each ``robolearn inspect``): on such a machine the
    Warp engines run on warp's CPU device, as intended. Anything else it prints is passed
    on."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as caught:
        os.dup2(caught.fileno(), 2)
        try:
            wp.init()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        caught.seek(0)
        text = caught.read().decode("utf-8", "replace")
    rest = [line for line in text.splitlines() if _NO_DRIVER not in line]
    if rest:
        print("\n".join(rest), file=sys.stderr)


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


#: The Warp that first replayed MuJoCo Warp's step from a graph on its CPU device here:
#: CPU capture came with Warp 1.13 and tiled kernels in it with 1.14, but only 1.19 is
#: checked (tests/sim/test_mjwarp.py); older ones run warp-cpu with plain launches.
CPU_GRAPHS_SINCE = (1, 19)


def graphs_unsupported(wp, device, model) -> str | None:
    """Why MuJoCo Warp's step cannot be captured into a graph on ``device``; None if it can.

    On CUDA the capture takes the scratch arrays that MuJoCo Warp allocates inside its step
    from Warp's memory pool, and, where ``model.opt.graph_conditional`` is set (put_model
    sets it), puts the solver's loop-until-converged into conditional graph nodes, which
    need CUDA 12.4 in both the driver and the toolkit Warp was built with.
    """
    if device.is_cpu:
        version = tuple(int(p) for p in re.findall(r"\d+", wp.__version__)[:2])
        if version < CPU_GRAPHS_SINCE:
            return f"Warp {wp.__version__} is older than the 1.19 checked to replay it on the CPU"
        return None
    reasons = []
    if not wp.is_mempool_enabled(device):
        reasons.append(
            f"Warp's memory pool is disabled on {device}, and the step allocates scratch "
            "arrays that a capture can only take from the pool"
        )
    if model.opt.graph_conditional and not wp.is_conditional_graph_supported():
        driver, toolkit = wp.get_cuda_driver_version(), wp.get_cuda_toolkit_version()
        reasons.append(
            "conditional graph nodes, which hold the solver's loop, need CUDA 12.4 or newer "
            f"(driver {driver}, Warp's toolkit {toolkit})"
        )
    return "; ".join(reasons) or None


def _data_arrays(wp, data) -> Iterator:
    """Every non-empty warp array of a MuJoCo Warp ``Data``, nested ones included."""
    for field in dataclasses.fields(data):
        value = getattr(data, field.name)
        if dataclasses.is_dataclass(value):
            yield from _data_arrays(wp, value)
        elif isinstance(value, wp.array) and value.size:
            yield value


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """No garbage collection inside: a collection during a capture could free an old graph
    or array and record that into the new graph."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class WarpEngine(Engine):
    """Many simulations on MuJoCo Warp, one warp "world" per env; float32 fields.

    ``sim``: the settings this engine reads (``per_env_fields``, ``nconmax``, ``njmax``,
    ``cuda_graph``). ``reserve_per_env``: bytes the caller will allocate per env on the
    same device beside the engine (an env's buffers, by consumer where named), counted
    with the engine's own when the memory is checked before anything is allocated
    (:mod:`robolearn.sim.memory`).
    """

    dtype = torch.float32

    def __init__(
        self,
        model: mujoco.MjModel,
        num_envs: int,
        sim: SimCfg,
        device: str = "cuda:0",
        reserve_per_env: Reserve = 0,
    ) -> None:
        wp, mjw = _import_warp()
        self._wp, self._mjw = wp, mjw
        self.wp_device = wp.get_device(device)
        self.name = "cuda" if self.wp_device.is_cuda else "warp-cpu"
        super().__init__(model, num_envs, torch.device(str(self.wp_device)), sim.per_env_fields)
        nconmax, njmax = sim.nconmax, sim.njmax
        unbatchable = sorted(set(self.per_env_fields) - batchable_fields())
        if unbatchable:
            raise RobolearnError(
                f"MuJoCo Warp cannot hold per-env values of {', '.join(unbatchable)}"
            )
        with wp.ScopedDevice(self.wp_device):
            data = mujoco.MjData(model)
            mujoco.mj_forward(model, data)
            nconmax, njmax = default_capacity(model, data, nconmax, njmax)
            per_env = self._world_bytes(model, data, nconmax, njmax)
            per_env += model_field_bytes_per_env(model, self.per_env_fields) // 2  # float32
            require_envs(self.num_envs, self.device, model, per_env, 4, reserve_per_env)
            self.m = self._put_model(model)
            self.d = self._put_data(model, data, nconmax, njmax)
            self._reset_mask = wp.zeros(self.num_envs, dtype=bool)
            # 1 when any env reset in this step: the forward after resets runs only then,
            # decided on the device (a conditional node in the graph)
            self._any_reset = wp.zeros(1, dtype=wp.int32)
        # CUDA refuses a conditional node whose body allocates, and MuJoCo Warp's forward
        # allocates at every call: on the GPU the forward after resets runs in every env
        # step (at thousands of envs nearly every step has a reset; docs/gpu.md)
        self.forward_only_after_resets = not self.wp_device.is_cuda
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
        self._any_reset_t = wp.to_torch(self._any_reset)
        # captured graphs by call ("step", n), "forward", "reset"; see prepare()
        self._graphs: dict[object, object] = {}
        self._warmed_up = False
        self._jac_buffers: tuple | None = None  # (jacp, jacr), made at the first jacobian()
        self._ray_buffers: dict[int, tuple] = {}  # by rays per world, made at first use
        self._wp_streams: dict[int, object] = {}  # torch stream handle -> its warp stream
        self._use_graph = bool(sim.cuda_graph)
        if self._use_graph:
            reason = graphs_unsupported(wp, self.wp_device, self.m)
            if reason:
                self._use_graph = False
                warnings.warn(
                    f"the {self.name} engine runs MuJoCo Warp without graphs: {reason}. "
                    "Each step, forward and reset then launches its kernels (about 90 per "
                    "substep for a humanoid) one by one from Python"
                    + (
                        ", and the solver's convergence is read on the host once per "
                        "iteration (a synchronisation each)"
                        if self.wp_device.is_cuda and self.m.opt.graph_conditional
                        else ""
                    )
                    + ": several times slower per step at small and medium env counts "
                    "(sim.cuda_graph=False chooses this without the warning)",
                    RuntimeWarning,
                    stacklevel=3,
                )
        # put_data's uploads ran on warp's stream; torch may next write them on its own
        wp.synchronize_device(self.wp_device)

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

    def _world_bytes(
        self, model: mujoco.MjModel, data: mujoco.MjData, nconmax: int | None, njmax: int | None
    ) -> int:
        """Device bytes of one more world of MuJoCo Warp's data at these capacities: the
        difference between the data of two worlds and of one (both small)."""
        try:
            one, two = (
                _nbytes(self._mjw.put_data(model, data, nworld=n, nconmax=nconmax, njmax=njmax))
                for n in (1, 2)
            )
        except ValueError:
            return 0  # _put_data says what is wrong with the capacities
        return max(two - one, 0)

    def _put_data(
        self, model: mujoco.MjModel, data: mujoco.MjData, nconmax: int | None, njmax: int | None
    ):
        """One world per env, each in the model's initial state (``data``, forward
        computed), with the contact and constraint capacities given."""
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

    def prepare(self, nsubsteps: int) -> None:
        """Capture the graphs of ``step(nsubsteps)``, ``forward`` and the masked reset now,
        so that no env step captures or compiles anything. Without graphs, a no-op."""
        if isinstance(nsubsteps, bool) or not isinstance(nsubsteps, numbers.Integral):
            raise RobolearnError(f"nsubsteps must be an integer >= 1, got {nsubsteps!r}")
        if nsubsteps < 1:
            raise RobolearnError(f"nsubsteps must be an integer >= 1, got {nsubsteps}")
        if not self._use_graph:
            return
        nsubsteps = int(nsubsteps)
        calls = (
            (("step", nsubsteps), self._substeps(nsubsteps)),
            ("forward", self._forward_all),
            ("reset", self._masked_reset),
            ("forward_if_any_reset", self._forward_if_any_reset),
        )
        with self._wp.ScopedDevice(self.wp_device):
            for key, fn in calls:
                if key not in self._graphs:
                    self._capture(key, fn)

    def _torch_stream(self):
        """torch's current stream on our device as a warp stream (CUDA only): one wrapper
        per torch stream, made on its first use."""
        stream = torch.cuda.current_stream(self.device)
        wrapped = self._wp_streams.get(stream.cuda_stream)
        if wrapped is None:
            wrapped = self._wp_streams[stream.cuda_stream] = self._wp.stream_from_torch(stream)
        return wrapped

    def _launch(self, key: object, fn: Callable[[], None]) -> None:
        """Run ``fn`` (warp launches only) on our device, in torch's stream order.

        With graphs, ``fn`` is captured once per key (by :meth:`prepare`, else here on its
        first call) and replayed: one launch per call, no host synchronisation; on CUDA on
        torch's current stream. Without, its kernels are launched one by one.
        """
        wp = self._wp
        with wp.ScopedDevice(self.wp_device):
            if self._use_graph:
                graph = self._graphs.get(key)
                if graph is None:
                    graph = self._capture(key, fn)
                if self.wp_device.is_cuda:
                    wp.capture_launch(graph, stream=self._torch_stream())
                else:
                    wp.capture_launch(graph)
            elif self.wp_device.is_cuda:
                with wp.ScopedStream(self._torch_stream()):
                    fn()
            else:
                fn()

    def _capture(self, key: object, fn: Callable[[], None]):
        """Capture ``fn`` into the graph for ``key``, its kernels loaded first.

        Captured on warp's own stream (CUDA cannot capture on torch's legacy default
        stream); a capture records the launches without running them, on CUDA as on the
        CPU. The garbage collector waits meanwhile (:func:`_gc_paused`).
        """
        if not self._warmed_up:
            self._warm_up()
        with _gc_paused(), self._wp.ScopedCapture(self.wp_device, force_module_load=False) as c:
            fn()
        self._graphs[key] = c.graph
        return c.graph

    def _warm_up(self) -> None:
        """Run the reset (of no env), forward and one step once, uncaptured, so that every
        kernel the graphs launch is compiled and loaded before any capture; then put the
        whole state back, so that the envs go on exactly as if this had not run.

        (``force_module_load`` would load every Warp module imported instead. MuJoCo Warp's
        own benchmarks and mjlab load kernels inside the capture, which CUDA allows from
        driver 12.3; a kernel of a branch the state did not take here still loads so.)
        """
        wp, mjw, m, d = self._wp, self._mjw, self.m, self.d
        if self.wp_device.is_cuda:
            torch.cuda.current_stream(self.device).synchronize()  # torch's writes land first
        with wp.ScopedDevice(self.wp_device):
            saved = [(array, wp.clone(array, device="cpu")) for array in _data_arrays(wp, d)]
            no_env = wp.zeros(self.num_envs, dtype=bool)
            try:
                mjw.reset_data(m, d, reset=no_env)
                mjw.forward(m, d)
                self._substeps(1)()  # the engine's own step (a subclass may step otherwise)
            finally:
                for array, copy in saved:
                    wp.copy(array, copy)
                wp.synchronize_device(self.wp_device)
        self._warmed_up = True

    def _substeps(self, nsubsteps: int) -> Callable[[], None]:
        m, d, step = self.m, self.d, self._mjw.step

        def substeps() -> None:
            for _ in range(nsubsteps):
                step(m, d)

        return substeps

    def _step(self, nsubsteps: int) -> None:
        self._launch(("step", nsubsteps), self._substeps(nsubsteps))

    def _forward_all(self) -> None:
        self._mjw.forward(self.m, self.d)

    def _forward(self) -> None:
        self._launch("forward", self._forward_all)

    def _masked_reset(self) -> None:
        """MuJoCo Warp's reset of the worlds set in ``self._reset_mask``: what the "reset"
        graph runs (:meth:`prepare` captures it; ``_reset_where`` replays it)."""
        self._mjw.reset_data(self.m, self.d, reset=self._reset_mask)

    def _reset(self, env_ids: torch.Tensor, qpos: torch.Tensor | None, qvel: torch.Tensor | None):
        mask = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
        mask[env_ids] = True
        rows = torch.zeros(self.num_envs, dtype=torch.long, device=self.device)
        rows[env_ids] = torch.arange(env_ids.numel(), device=self.device)
        full = lambda x: None if x is None else x.index_select(0, rows)  # noqa: E731
        self._reset_where(mask, full(qpos), full(qvel))

    def _reset_where(
        self, mask: torch.Tensor, qpos: torch.Tensor | None, qvel: torch.Tensor | None
    ) -> None:
        # MuJoCo Warp's reset takes a mask of worlds: no indices, no count, no host wait
        self._reset_mask_t.copy_(mask)
        self._launch("reset", self._masked_reset)
        keep = ~mask.unsqueeze(-1)
        if qpos is not None:
            torch.where(keep, self.qpos, qpos.to(self.dtype), out=self.qpos)
        if qvel is not None:
            torch.where(keep, self.qvel, qvel.to(self.dtype), out=self.qvel)

    def _forward_envs(self, env_ids: torch.Tensor) -> None:
        # MuJoCo Warp's forward runs every world; it leaves their state (qpos, qvel,
        # warm start) untouched, so envs not reset continue exactly as they would have.
        self._forward()

    def _forward_where(self, mask: torch.Tensor) -> None:
        # The env step calls this at every step; a forward of every world when no env
        # reset would cost about a substep for nothing. Whether any did is decided on the
        # device, so the host does not wait to know.
        if self._forward_is_conditional():
            self._any_reset_t.copy_(mask.any())
        self._launch("forward_if_any_reset", self._forward_if_any_reset)

    def _forward_is_conditional(self) -> bool:
        # without a graph the host reads the flag: plain launches wait on the host anyway
        return self.forward_only_after_resets or not self._use_graph

    def _forward_if_any_reset(self) -> None:
        if self._forward_is_conditional():
            self._wp.capture_if(self._any_reset, on_true=self._forward_all)
        else:
            self._forward_all()

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
        capacity = {"nconmax": self._contacts_per_env(), "njmax": int(self.d.njmax)}
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

    def _contacts_per_env(self) -> int:
        """The contact room per env that an overflow ran out of."""
        return int(self.d.naconmax) // self.num_envs

    def _bind_model_field(self, name: str) -> torch.Tensor:
        return self._wp.to_torch(getattr(self.m, name))

    def _jacobian(
        self, body: torch.Tensor, point: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        # MuJoCo Warp's Jacobian kernel over every world, launched in torch's stream order
        # (no graph: one launch, and its inputs are new tensors each call)
        wp = self._wp
        if self._jac_buffers is None:
            shape = (self.num_envs, 3, self.model.nv)
            with wp.ScopedDevice(self.wp_device):
                self._jac_buffers = (wp.zeros(shape, dtype=float), wp.zeros(shape, dtype=float))
        jacp, jacr = self._jac_buffers
        points = wp.from_torch(point.to(torch.float32).contiguous(), dtype=wp.vec3)
        bodies = wp.from_torch(body)
        with wp.ScopedDevice(self.wp_device):
            if self.wp_device.is_cuda:
                with wp.ScopedStream(self._torch_stream()):
                    self._mjw.jac(self.m, self.d, jacp, jacr, points, bodies)
            else:
                self._mjw.jac(self.m, self.d, jacp, jacr, points, bodies)
        return wp.to_torch(jacp), wp.to_torch(jacr)

    def _cast_rays(
        self,
        origins: torch.Tensor,
        directions: torch.Tensor,
        groups: np.ndarray | None,
        static: bool,
        exclude_body: int,
        env_ids: torch.Tensor | None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        # MuJoCo Warp's ray kernel over every world, in torch's stream order, on buffers
        # made once per ray count (and their torch views: no conversion per call)
        if env_ids is not None:
            raise RobolearnError(f"the {self.name} engine casts rays in every env at once")
        wp, mjw = self._wp, self._mjw
        nray = origins.shape[1]
        buffers = self._ray_buffers.get(nray)
        if buffers is None:
            buffers = self._ray_buffers[nray] = self._make_ray_buffers(nray)
        arrays, views = buffers
        views["pnt"].copy_(origins)
        views["vec"].copy_(directions)
        views["exclude"].fill_(exclude_body)
        # MuJoCo Warp's group mask: 1 hits, 0 skips, all -1 hits every group
        vec6 = wp.types.vector(length=mujoco.mjNGROUP, dtype=wp.float32)
        mask = vec6(*([-1.0] * mujoco.mjNGROUP if groups is None else groups.tolist()))
        args = (arrays["pnt"], arrays["vec"], mask, static, arrays["exclude"])
        outputs = (arrays["dist"], arrays["geom"], arrays["normal"])
        with wp.ScopedDevice(self.wp_device):
            if self.wp_device.is_cuda:
                with wp.ScopedStream(self._torch_stream()):
                    mjw.rays(self.m, self.d, *args, *outputs)
            else:
                mjw.rays(self.m, self.d, *args, *outputs)
        # copies: the buffers are the next call's
        return views["dist"].clone(), views["geom"].long()

    def _set_ray_group(self, geom_ids: np.ndarray, group: int) -> None:
        # the device model's own groups, which the ray kernel reads; the host model keeps
        # its own for drawing
        groups = self.m.geom_group.numpy()
        groups[..., geom_ids] = group
        self.m.geom_group.assign(groups)
        # the copy ran on warp's stream; the ray kernel runs on torch's
        self._wp.synchronize_device(self.wp_device)

    def _make_ray_buffers(self, nray: int) -> tuple[dict, dict]:
        """Warp arrays for casting ``nray`` rays per world, and torch views of them."""
        wp, n = self._wp, self.num_envs
        with wp.ScopedDevice(self.wp_device):
            arrays = {
                "pnt": wp.zeros((n, nray), dtype=wp.vec3),
                "vec": wp.zeros((n, nray), dtype=wp.vec3),
                "exclude": wp.zeros(nray, dtype=int),
                "dist": wp.zeros((n, nray), dtype=float),
                "geom": wp.zeros((n, nray), dtype=int),
                "normal": wp.zeros((n, nray), dtype=wp.vec3),
            }
        views = {name: wp.to_torch(array) for name, array in arrays.items()}
        return arrays, views

    def _set_const_where(self, mask: torch.Tensor) -> None:
        self._set_const(mask)

    def _set_const(self, env_ids: torch.Tensor) -> None:
        # MuJoCo Warp recomputes its constants for every world at once (its state is
        # restored afterwards); outside any captured graph, as it runs only when a
        # mass or inertia was randomized
        with self._wp.ScopedDevice(self.wp_device):
            self._mjw.set_const(self.m, self.d)


def _nbytes(value: Any) -> int:
    """Bytes held by the warp arrays of a MuJoCo Warp struct (dataclasses, nested)."""
    import warp as wp

    if isinstance(value, wp.array):
        return int(value.capacity or 0)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return sum(_nbytes(getattr(value, f.name)) for f in dataclasses.fields(value))
    return 0
