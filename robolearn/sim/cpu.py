"""The ``cpu`` engine: MuJoCo's batch engine (``mujoco.batch.Batch``) on a thread pool.

Fields are ``torch.from_numpy`` over the arrays ``Batch.bind`` returns: state fields are
views of the batch's state rows, derived fields views of the arrays the batch copies each
simulation's outputs into after every call. Results are bit-identical to a loop of
``mj_step`` over one MjData per env, at 1 and at 2 threads (tests/sim/test_cpu.py; MuJoCo
steps each simulation on one thread, so more threads only change which thread runs it).
"""

from __future__ import annotations

import mujoco
import numpy as np
import torch
from mujoco import batch as mjbatch

from robolearn.sim.config import SimCfg
from robolearn.sim.engine import MAX_STATE_VALUE, Engine
from robolearn.sim.memory import (
    Reserve,
    field_bytes_per_env,
    model_field_bytes_per_env,
    require_envs,
)
from robolearn.threads import available_cores

# Warnings after which MuJoCo has reset a simulation to qpos0 inside mj_step (bad qpos,
# qvel, qacc), or zeroed its controls because they were NaN or beyond 1e10 (bad ctrl): in
# every case that env's episode no longer follows from the policy's actions.
_DIVERGENCE_WARNINGS = [
    int(mujoco.mjtWarning.mjWARN_BADQPOS),
    int(mujoco.mjtWarning.mjWARN_BADQVEL),
    int(mujoco.mjtWarning.mjWARN_BADQACC),
    int(mujoco.mjtWarning.mjWARN_BADCTRL),
]
_DIVERGENCE_FIRST, _DIVERGENCE_END = min(_DIVERGENCE_WARNINGS), max(_DIVERGENCE_WARNINGS) + 1
assert len(_DIVERGENCE_WARNINGS) == _DIVERGENCE_END - _DIVERGENCE_FIRST


def _tensor(array: np.ndarray) -> torch.Tensor:
    """A torch view of a bound batch array, also of the read-only output arrays."""
    if not array.flags.writeable:
        # Outputs are marked read-only because a write is lost at the next call; torch
        # cannot view read-only memory, so view it through a writable alias instead.
        array = array.view()
        array.flags.writeable = True
    return torch.from_numpy(array)


class CpuEngine(Engine):
    """Many simulations on MuJoCo's multithreaded batch engine; float64 fields."""

    name = "cpu"
    dtype = torch.float64
    host_side = True

    def __init__(
        self,
        model: mujoco.MjModel,
        num_envs: int,
        sim: SimCfg,
        reserve_per_env: Reserve = 0,
    ) -> None:
        """``sim``: the settings this engine reads (``nthread``, ``per_env_fields``);
        ``reserve_per_env``: bytes the caller will allocate per env beside the engine (an
        env's buffers, by consumer where named), counted with the engine's own when the
        memory is checked before anything is allocated (:mod:`robolearn.sim.memory`)."""
        super().__init__(model, num_envs, torch.device("cpu"), sim.per_env_fields)
        per_env = field_bytes_per_env(model)
        per_env += model_field_bytes_per_env(model, self.per_env_fields)
        require_envs(self.num_envs, self.device, model, per_env, 8, reserve_per_env)
        self.nthread = int(sim.nthread) if sim.nthread else available_cores()
        self.batch = mjbatch.Batch(model, self.num_envs, self.nthread)
        b = self.batch
        # Derived fields must be bound before the first call: the batch copies out only
        # the fields that are bound.
        self._bind_fields(lambda name: _tensor(b.bind(name)))
        self._warnings = b.warning  # (N, nwarning, 2): last info, count
        self._failed = np.zeros(self.num_envs, dtype=bool)
        self._speeds = np.empty((self.num_envs, model.nv))
        b.reset()
        self._seen_warnings = self._divergence_counts()

    def _divergence_counts(self, ids: np.ndarray | slice = slice(None)) -> np.ndarray:
        # The four warnings are consecutive in mjtWarning: a slice, not a gather.
        return self._warnings[ids, _DIVERGENCE_FIRST:_DIVERGENCE_END, 1].sum(axis=1)

    def _step(self, nsubsteps: int) -> None:
        try:
            self.batch.step(nstep=nsubsteps)
        except mjbatch.SimulationError as exc:
            # MuJoCo raised in these simulations (they kept their state from before the
            # call); the rest stepped. Report them as diverged instead of stopping all envs.
            self._failed[exc.ids] = True

    def _forward(self) -> None:
        self.batch.forward()

    def _reset(self, env_ids: torch.Tensor, qpos: torch.Tensor | None, qvel: torch.Tensor | None):
        ids = env_ids.numpy().astype(np.int32)
        self.batch.reset(ids, stage=mujoco.mjtStage.mjSTAGE_NONE)
        if qpos is not None:
            self.qpos[env_ids] = qpos
        if qvel is not None:
            self.qvel[env_ids] = qvel
        self._failed[ids] = False
        # only these envs' counters: a pass over all of them right after a step costs
        # ~10x its time alone (the batch's memory is out of cache)
        self._seen_warnings[ids] = self._divergence_counts(ids)

    def _forward_envs(self, env_ids: torch.Tensor) -> None:
        self.batch.forward(env_ids.numpy().astype(np.int32))

    def _bind_model_field(self, name: str) -> torch.Tensor:
        return _tensor(self.batch.expand(name))

    def _set_const(self, env_ids: torch.Tensor) -> None:
        # mj_setConst per simulation; measured 0.3 ms for 4 humanoids on one thread
        self.batch.set_const(env_ids.numpy().astype(np.int32))

    def _jacobian(
        self, body: torch.Tensor, point: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        # the batch's own call, on its threads: kinematics of the current state, then mj_jac
        jacp, jacr = self.batch.jac(body.numpy(), point.numpy())
        return torch.from_numpy(jacp), torch.from_numpy(jacr)

    def _cast_rays(
        self,
        origins: torch.Tensor,
        directions: torch.Tensor,
        groups: np.ndarray | None,
        static: bool,
        exclude_body: int,
        env_ids: torch.Tensor | None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        # the batch's own call, on its threads: each env's kinematics, then mj_ray per ray
        dist, geom = self.batch.ray(
            origins.to(torch.float64).numpy(),
            directions.to(torch.float64).numpy(),
            geomgroup=groups,
            flg_static=static,
            bodyexclude=exclude_body,
            ids=None if env_ids is None else env_ids.numpy().astype(np.int32),
        )
        return torch.from_numpy(dist), torch.from_numpy(geom).long()

    def _set_ray_group(self, geom_ids: np.ndarray, group: int) -> None:
        # the batch steps a copy of the model: its groups are per-simulation values of
        # that copy (ngeom ints each), which the host model does not share
        self.batch.expand("geom_group")[:, geom_ids] = group

    def _diverged(self) -> torch.Tensor:
        """Envs MuJoCo found diverged (and reset) or failed in since the last call.

        MuJoCo checks qpos, qvel, qacc and ctrl for NaN, infinity and values beyond 1e10
        in every step and resets a simulation that fails; its warning counters are all we
        need to read for that, which is cheaper than scanning the state. Speeds beyond
        :attr:`max_speed` take a scan of qvel. An env that diverges again
        in every step is reported in every step (see below).
        """
        counts = self._divergence_counts()
        flagged = (counts != self._seen_warnings) | self._failed
        if self.max_speed < MAX_STATE_VALUE:
            # MuJoCo's check stops at 1e10. One max over all envs first, into a buffer made
            # once; the per-env scan only when some speed is beyond the bound. 0.12 ms a
            # step at 1024 humanoids (0.3% of the env step): qvel is strided through the
            # batch's state rows, out of cache after the step
            speeds = np.abs(self.qvel.numpy(), out=self._speeds)
            if speeds.max() > self.max_speed:
                flagged |= (speeds > self.max_speed).any(axis=1)
        self._failed[:] = False
        ids = np.flatnonzero(flagged)
        if ids.size:
            # MuJoCo's reset inside mj_step zeroes the counters and then counts the warning
            # that caused it, so an env that diverges in every step holds 1 after each step:
            # a comparison with the last reading alone would report it only once. Zeroing
            # the counters of the envs reported (few, in a healthy run) makes the next
            # divergence a change again; it also makes MuJoCo print that warning again,
            # which robolearn.sim.messages rate-limits.
            self._warnings[ids, _DIVERGENCE_FIRST:_DIVERGENCE_END, 1] = 0
            counts[ids] = 0
        self._seen_warnings = counts
        return torch.from_numpy(flagged)
