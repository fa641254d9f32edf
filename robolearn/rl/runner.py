"""The runner: rsl-rl's PPO in robolearn's learning loop.

The runner composes rsl-rl's PPO or Distillation (:func:`robolearn.rl.ppo.build_algorithm`:
rsl-rl's own construction of the models, the rollout storage and the algorithm) and calls its public
steps (``act``, ``process_env_step``, ``compute_returns``, ``update``, ``save``, ``load``);
the loop around them is ours: it stops cleanly between env steps when asked (SIGINT,
SIGTERM), writes checkpoints atomically with the iteration count, learning rate and random
state, loads them with ``weights_only``, and logs TensorBoard scalars and a one-line
progress report. Checks between the rollout and the update (the application's training
health) come in through :meth:`Runner.learn`'s ``health``.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from robolearn.errors import RobolearnError
from robolearn.rl.checkpoint import load_checkpoint, save_checkpoint
from robolearn.rl.distributed import SINGLE, DistInfo, Monitor, RankError
from robolearn.rl.iteration_run import append_progress, hms, trim_progress
from robolearn.rl.learner import RolloutCheck, StopRequest, spread_episode_ends
from robolearn.rl.ppo import build_algorithm
from robolearn.threads import single_threaded, threads_for, update_threads


class EpisodeStats:
    """Returns and lengths of the episodes that end in an iteration, and the env's logs.

    Everything accumulates on the env's device and is read once per iteration, so the
    rollout never waits for the GPU.
    """

    def __init__(self, num_envs: int, device) -> None:
        self.device = device
        self._ret = torch.zeros(num_envs, device=device)
        self._len = torch.zeros(num_envs, device=device)
        self._done_sums = torch.zeros(3, device=device)  # returns, lengths, count
        self._logs: dict[str, list[torch.Tensor]] = {}

    def add(self, rewards: torch.Tensor, dones: torch.Tensor, extras: dict) -> None:
        self._ret += rewards
        self._len += 1
        done = dones.float()
        self._done_sums += torch.stack(
            ((self._ret * done).sum(), (self._len * done).sum(), done.sum())
        )
        keep = 1.0 - done
        self._ret *= keep
        self._len *= keep
        for key, value in extras.get("log", {}).items():
            self._logs.setdefault(key, []).append(
                torch.as_tensor(value, dtype=torch.float32, device=self.device)
            )

    def add_scalars(self, scalars: dict[str, float]) -> None:
        """Values to log with the env's, averaged over the iteration like them."""
        for key, value in scalars.items():
            self._logs.setdefault(key, []).append(
                torch.as_tensor(value, dtype=torch.float32, device=self.device)
            )

    def pop(self) -> tuple[float, float, dict[str, float]]:
        """(mean return, mean length of episodes ended since the last pop, mean logs).

        A log value is averaged over the steps that have one: the env's statistics of
        ended episodes are NaN in a step where none ended. One host read for all of them.
        """
        ret, length, count = self._done_sums.tolist()
        self._done_sums.zero_()
        names = list(self._logs)
        means = [torch.stack(v).nanmean() for v in self._logs.values()]
        values = torch.stack(means).tolist() if means else []
        logs = {k: v for k, v in zip(names, values, strict=True) if not math.isnan(v)}
        self._logs.clear()
        if count == 0:
            return math.nan, math.nan, logs
        return ret / count, length / count, logs


class Runner:
    """rsl-rl's PPO with clean interruption, atomic checkpoints and robolearn's logs.

    ``iterations`` counts completed learning iterations; ``model_<iterations>.pt`` holds the
    policy after that many, and training resumed from it starts the next one.

    Args:
        env: rsl-rl's view of the env (:class:`~robolearn.wrappers.rsl_rl.RslRlVecEnv`).
        agent_cfg: rsl-rl's train config (``AgentCfg.to_rsl_rl``); rsl-rl resolves its
            ``obs_groups`` and the runner sets ``multi_gpu``, in place.
        device: where the networks train.
        run_dir: the run folder checkpoints and logs go to; None writes nothing.
        meta: what every checkpoint records besides the learned state (task, overrides).
        dist_info, monitor: the process group of a distributed run
            (:mod:`robolearn.rl.distributed`).
    """

    def __init__(
        self,
        env,
        agent_cfg: dict[str, Any],
        device: str,
        run_dir: Path | None = None,
        meta: dict[str, Any] | None = None,
        dist_info: DistInfo = SINGLE,
        monitor: Monitor | None = None,
    ) -> None:
        self.env, self.cfg, self.device = env, agent_cfg, device
        self.dist_info, self.monitor = dist_info, monitor
        self.world_size = dist_info.world_size
        """Ranks training together (1 alone)."""
        self.is_distributed = dist_info.enabled
        # PPO averages gradients over the process group robolearn.rl.distributed started
        # (NCCL or gloo) when told about it
        self.cfg["multi_gpu"] = (
            {
                "global_rank": dist_info.rank,
                "local_rank": dist_info.local_rank,
                "world_size": dist_info.world_size,
            }
            if dist_info.enabled
            else None
        )
        self.alg = build_algorithm(env, self.cfg, device)
        self.distilling = "student" in self.cfg
        """Whether the algorithm is rsl-rl's Distillation (a student and its teacher)."""
        self.run_dir = run_dir
        self.meta = meta or {}
        self.iterations = 0
        self.env_steps = 0
        self.wall_time = 0.0
        """Seconds spent training in earlier sessions of this run (restored on resume)."""
        self._session_start: float | None = None
        self.writer = None
        self.wandb_run = None
        self.stats = EpisodeStats(env.num_envs, env.device)
        self._shown_episode = ("-", "-")
        """The progress line's reward and ep_len: the latest iteration's in which an
        episode ended."""
        self.is_main = dist_info.is_main
        self._torch_threads = torch.get_num_threads()
        self._update_threads = self._choose_update_threads()
        self._compiled = False

    def describe(self) -> str:
        """Nothing to add to the run's first line: PPO is the default learner."""
        return ""

    def get_inference_policy(self, device: str | None = None):
        """The policy in evaluation mode on ``device``, for acting (rsl-rl's model: a
        callable from an observation TensorDict to actions)."""
        self.alg.eval_mode()
        return self.alg.get_policy().to(device)

    def check_ranks_agree(self) -> None:
        """Raise if the policy's parameters differ between ranks (they never should)."""
        if self.monitor is None:
            return
        flat = torch.cat([p.detach().flatten().cpu() for p in self.alg.get_policy().parameters()])
        if not self.monitor.same_on_all_ranks(flat):
            raise RankError(
                f"policy parameters differ between ranks after {self.iterations} iterations"
            )

    # ---- checkpoints ------------------------------------------------------------------

    def checkpoint_data(self) -> dict[str, Any]:
        rng = {"torch": torch.get_rng_state()}
        if torch.cuda.is_available():
            rng["cuda"] = torch.cuda.get_rng_state_all()
        return {
            "iterations": self.iterations,
            "env_steps": self.env_steps,
            "model": self.alg.save(),
            "learning_rate": float(self.alg.learning_rate),
            "wall_time": self._elapsed(),
            "rng": rng,
            **self.meta,
            "algo": "ppo",
        }

    def save(self, path: str | Path) -> None:
        """Write a checkpoint of the run as it is now to ``path`` (atomically)."""
        save_checkpoint(path, self.checkpoint_data())

    def save_iteration(self) -> Path | None:
        """Write ``model_<iterations>.pt`` in the run folder (main process only)."""
        self.check_ranks_agree()
        if self.run_dir is None or not self.is_main:
            return None
        path = self.run_dir / f"model_{self.iterations}.pt"
        self.save(path)
        return path

    def load(self, path: str | Path) -> dict:
        """Restore the run from the checkpoint at ``path``; returns its data."""
        data = load_checkpoint(path, map_location=self.device)
        self.restore(data)
        return data

    def load_teacher(self, data: dict[str, Any], source: str) -> None:
        """Load a distillation's teacher from a PPO checkpoint's ``data`` (its actor and
        observation normalizer); ``source`` names it in errors."""
        try:
            self.alg.load(data["model"], {"teacher": True}, strict=True)
        except (RuntimeError, KeyError) as exc:
            reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
            raise RobolearnError(
                f"teacher {source} does not fit agent.obs_groups.teacher of this task "
                f"({reason}); the teacher group must hold what the teacher was trained on"
            ) from exc

    def load_weights(self, data: dict[str, Any], source: str) -> None:
        """Start from a PPO checkpoint's actor, critic and normalizers (``agent.init_from``;
        ``source`` names it in errors); optimizer and counters stay fresh."""
        if "actor_state_dict" not in data.get("model", {}) or self.distilling:
            raise RobolearnError(f"{source} holds no PPO policy (no actor) to start from")
        try:
            self.alg.load(data["model"], {"actor": True, "critic": True}, strict=True)
        except (RuntimeError, KeyError) as exc:
            # torch's message opens with a header line; the first mismatch says more
            lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
            reason = (lines[1] if len(lines) > 1 else lines[0] if lines else "")[:200]
            reason = reason.rstrip(".") or type(exc).__name__
            raise RobolearnError(
                f"{source} does not fit this task's networks ({reason}); its observations "
                "and actions must have the sizes it was trained with"
            ) from exc

    def restore(self, data: dict[str, Any], training_state: bool = True) -> None:
        """Load the policy (and, for resuming, optimizer, counters and random state)."""
        nets = ("student", "teacher") if self.distilling else ("actor", "critic")
        load_cfg = {**dict.fromkeys(nets, True), "optimizer": training_state}
        configured = self.alg.learning_rate  # rsl-rl's load sets the optimizer state's
        self.alg.load(data["model"], load_cfg, strict=True)
        if training_state:
            self.iterations = int(data["iterations"])
            self.env_steps = int(data.get("env_steps", 0))
            self.wall_time = float(data.get("wall_time", 0.0))
            # An adaptive rate is state the KL has moved; a fixed one is a setting, so the
            # configs' (a fork or a resume may change it) win over the checkpoint's.
            if getattr(self.alg, "schedule", "adaptive") == "adaptive":
                self.alg.learning_rate = float(data["learning_rate"])
            else:
                self.alg.learning_rate = configured
            for group in self.alg.optimizer.param_groups:
                group["lr"] = self.alg.learning_rate
            torch.set_rng_state(data["rng"]["torch"])
            if "cuda" in data["rng"] and torch.cuda.is_available():
                torch.cuda.set_rng_state_all(data["rng"]["cuda"])

    # ---- training ---------------------------------------------------------------------

    def learn(
        self,
        max_iterations: int,
        stop: StopRequest | None = None,
        on_step: Callable[[int], None] | None = None,
        log: Callable[[str], None] = print,
        init_at_random_ep_len: bool = True,
        health: RolloutCheck | None = None,
    ) -> str:
        """Train until ``max_iterations`` iterations are done (in total, counting resumed
        ones) or a stop is requested. Returns ``"done"`` or ``"stopped"``.

        ``log`` takes the progress lines; ``health`` checks each rollout before its update
        (none without it)."""
        stop = StopRequest() if stop is None else stop
        obs = self._start(init_at_random_ep_len)
        start_it, wall_start = self.iterations, self._session_start
        if self.cfg.get("pipelined"):
            try:
                self._learn_pipelined(obs, max_iterations, stop, on_step, log, health)
            finally:
                self._close_writer()
            return "stopped" if stop else "done"
        try:
            while self.iterations < max_iterations and not self._stop_together(stop):
                t0 = self._device_time()
                obs = self._rollout(obs, stop, on_step)
                if obs is None:  # stopped mid-rollout: the policy stays the last update's
                    break
                if health is not None:  # e.g. non-finite rollouts stop here, before the update
                    self.stats.add_scalars(
                        health.after_rollout(self.alg.storage, self.iterations + 1, last_obs=obs)
                    )
                t1 = self._device_time()
                with threads_for(self.env.device, self._update_threads):
                    losses = self.alg.update()
                self.iterations += 1
                self.env_steps += self._batch_size()
                t2 = self._device_time()
                self._log_iteration(
                    losses, t1 - t0, t2 - t1, start_it, max_iterations, wall_start, log
                )
                self._save_if_due(max_iterations)
            self._save_on_stop(stop, log)
        finally:
            self._close_writer()
        return "stopped" if stop else "done"

    def _start(self, init_at_random_ep_len: bool) -> torch.Tensor:
        """Ready the env, the networks and the logs; returns the first observations."""
        env = self.env
        if init_at_random_ep_len:
            spread_episode_ends(env)
        obs = env.get_observations().to(self.device)
        if self.distilling and not self.alg.teacher_loaded:
            raise RobolearnError("distillation needs its teacher loaded (Runner.load_teacher)")
        if self.cfg.get("compile"):
            self.compile_networks()
        self.alg.train_mode()
        if self.is_distributed:
            self.alg.broadcast_parameters()
        self._session_start = time.time()
        self._open_writer()
        return obs

    def compile_networks(self) -> None:
        """``torch.compile`` the actor's and critic's MLPs for training
        (``agent.policy.compile``). Each input shape gets its own kernels (the rollout's
        env count, the update's mini-batch), compiled on first use; the modules keep their
        parameters and state-dict keys, so checkpoints do not change."""
        if self._compiled:
            return
        nets = ("student",) if self.distilling else ("actor", "critic")
        for name in nets:
            getattr(self.alg, name).mlp.compile(dynamic=False)
        self._compiled = True

    def _stop_together(self, stop: StopRequest) -> bool:
        """In a distributed run, whether any rank was asked to stop: ranks stop together,
        at the same iteration, whichever was signalled. A single process checks between
        env steps instead (:meth:`_rollout`)."""
        if self.monitor is None:
            return False
        self.monitor.barrier(f"iteration {self.iterations + 1}")
        if self.monitor.any_true(bool(stop)):
            stop.signal_name = stop.signal_name or "a signal to another rank"
            return True
        return False

    def _rollout(self, obs, stop: StopRequest, on_step) -> torch.Tensor | None:
        """One iteration's env steps into PPO's storage, and the returns; the observations
        after it, or None when a stop came mid-rollout (single process)."""
        with torch.inference_mode():
            obs = self.collect(self.alg, obs, stop, on_step)
            if obs is not None:
                self.alg.compute_returns(obs)
        return obs

    def collect(self, alg, obs, stop: StopRequest, on_step) -> torch.Tensor | None:
        """One iteration's env steps into ``alg``'s storage (the runner's algorithm, or
        the pipelined collector's copy); the observations after them, or None when a stop
        came mid-rollout (single process)."""
        env, alone = self.env, self.monitor is None
        with single_threaded(env.device):
            for _ in range(self.cfg["num_steps_per_env"]):
                actions = alg.act(obs)
                obs, rewards, dones, extras = env.step(actions.to(env.device))
                obs, rewards, dones = (x.to(self.device) for x in (obs, rewards, dones))
                alg.process_env_step(obs, rewards, dones, extras)
                self.stats.add(rewards, dones, extras)
                if on_step is not None:
                    on_step(self.iterations)
                if stop and alone:
                    return None
        return obs

    def _learn_pipelined(self, obs, max_iterations, stop, on_step, log, health) -> None:
        """:meth:`learn` with each rollout collected during the previous update
        (:mod:`robolearn.rl.pipelined`): the collecting and learning times logged are
        the wait for the collector after the update, and the update with its V-trace."""
        from robolearn.rl.pipelined import PipelinedCollection

        pipeline = PipelinedCollection(self)
        start_it, wall_start = self.iterations, self._session_start
        t0 = self._device_time()
        obs = pipeline.collect_now(obs, stop, on_step)
        waited = self._device_time() - t0
        while obs is not None and self.iterations < max_iterations:
            if health is not None:
                self.stats.add_scalars(
                    health.after_rollout(
                        pipeline.storages[pipeline.turn], self.iterations + 1, last_obs=obs
                    )
                )
            t1 = self._device_time()
            last_obs = obs
            more = self.iterations + 1 < max_iterations and not stop
            if more:  # the next rollout, with the policy as it is before this update
                pipeline.snapshot()
                pipeline.start(obs, stop, on_step)
            with threads_for(self.env.device, self._update_threads):
                pipeline.prepare_update(last_obs)
                losses = self.alg.update()
            t2 = self._device_time()
            obs = pipeline.wait() if more else None
            t3 = self._device_time()
            self.iterations += 1
            self.env_steps += self._batch_size()
            learn_s, waited = t2 - t1, waited + (t3 - t2)
            self._log_iteration(losses, waited, learn_s, start_it, max_iterations, wall_start, log)
            waited = 0.0
            self._save_if_due(max_iterations)
        self._save_on_stop(stop, log)

    def _save_if_due(self, max_iterations: int) -> None:
        """A checkpoint at the save interval and at the last iteration."""
        if self.iterations % self.cfg["save_interval"] == 0 or self.iterations == max_iterations:
            self.save_iteration()

    def _save_on_stop(self, stop: StopRequest, log: Callable[[str], None]) -> None:
        """A checkpoint, and the line that says so, when a stop was asked for."""
        if stop:
            path = self.save_iteration()
            saved = f"; saved {path}" if path else ""
            log(f"stopped by {stop.signal_name} after {self.iterations} iterations{saved}")

    def _device_time(self) -> float:
        """``time.time()`` once the GPU has done the work queued so far on this thread's
        current stream: on CUDA a call returns when its kernels are queued, so the
        collection and learning times would otherwise be of the launches. One
        synchronisation per timer boundary, three per iteration (the iteration's logs read
        the device anyway).

        The current stream only, not the device: a pipelined collector queues on a stream
        of its own (:mod:`robolearn.rl.streams`), and its work in flight is not the
        update's; it is waited for where the main stream waits for it, after the join.
        Without a collector thread all the work is on the current stream."""
        for device in {torch.device(self.device), torch.device(self.env.device)}:
            if device.type == "cuda":
                torch.cuda.current_stream(device).synchronize()
        return time.time()

    def _batch_size(self) -> int:
        """Env steps per iteration, all ranks together."""
        return self.cfg["num_steps_per_env"] * self.env.num_envs * self.world_size

    # ---- threads ----------------------------------------------------------------------

    def _choose_update_threads(self) -> int:
        """Threads of the PPO update on the CPU (robolearn.threads): the cores this process
        was given, or 1 for networks too small to share between threads."""
        cfg = self.cfg
        batches = cfg["algorithm"].get("num_mini_batches", 1)
        rows = cfg["num_steps_per_env"] * self.env.num_envs // batches
        roles = ("student",) if self.distilling else ("actor", "critic")
        if any(cfg[role].get("class_name") != "MLPModel" for role in roles):
            return self._torch_threads  # convolutions and recurrences share well
        return max(
            update_threads(self._torch_threads, rows, cfg[role].get("hidden_dims", []))
            for role in roles
        )

    # ---- logging ----------------------------------------------------------------------

    def _elapsed(self) -> float:
        """Training seconds of this run, earlier sessions included."""
        start = self._session_start
        return self.wall_time + (time.time() - start if start is not None else 0.0)

    def _open_writer(self) -> None:
        if self.run_dir is None or not self.is_main or self.writer is not None:
            return
        from torch.utils.tensorboard import SummaryWriter

        self._trim_progress()
        # A run killed after its last checkpoint logged iterations that the resumed run
        # logs again: purge_step drops TensorBoard's scalars from the first of them on
        # (iterations done + 1; the scalar of the checkpoint's own iteration stays).
        purge = self.iterations + 1 if self.iterations > 0 else None
        self.writer = SummaryWriter(log_dir=str(self.run_dir), purge_step=purge, flush_secs=10)
        if self.cfg.get("logger") == "wandb":
            import wandb

            # Offline unless the user set WANDB_MODE: a cluster node often has no internet.
            self.wandb_run = wandb.init(
                dir=str(self.run_dir),
                id=self.run_dir.name,
                resume="allow",
                project=self.meta.get("task", "robolearn"),
                config=self.meta,
                mode=os.environ.get("WANDB_MODE", "offline"),
            )

    def _close_writer(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        if self.wandb_run is not None:
            self.wandb_run.finish()
            self.wandb_run = None

    def _log_iteration(self, losses, collect_s, learn_s, start_it, max_it, wall_start, log) -> None:
        it = self.iterations
        fps = self._batch_size() / max(collect_s + learn_s, 1e-9)
        mean_return, mean_len, env_logs = self.stats.pop()
        std = float(self.alg.get_policy().output_std.detach().mean())
        if not self.is_main:
            return
        scalars = {
            "Train/mean_reward": mean_return,
            "Train/mean_episode_length": mean_len,
            "Perf/env_steps_per_s": fps,
            "Perf/collection_time": collect_s,
            "Perf/learning_time": learn_s,
            "Loss/learning_rate": self.alg.learning_rate,
            "Policy/mean_std": std,
            **{f"Loss/{k}": v for k, v in losses.items()},
            **env_logs,
        }
        if self.writer is not None:
            for key, value in scalars.items():
                if not math.isnan(value):
                    self.writer.add_scalar(key, value, it)
        if self.wandb_run is not None:
            self.wandb_run.log({k: v for k, v in scalars.items() if not math.isnan(v)}, step=it)
        if self.run_dir is not None:
            record = {
                "iteration": it,
                "env_steps": self.env_steps,
                "wall_time": self._elapsed(),
                **scalars,
            }
            self._append_progress(record)
        done = it - start_it
        elapsed = time.time() - wall_start
        eta = elapsed / max(done, 1) * (max_it - it)
        # An iteration in which no episode ended has no means (NaN in the scalars, null in
        # progress.jsonl); the line shows the last ones known, or a dash before the first.
        if not math.isnan(mean_return):
            self._shown_episode = (f"{mean_return:.2f}", f"{mean_len:.0f}")
        shown_return, shown_len = self._shown_episode
        log(
            f"it {it}/{max_it}  {fps / 1000:.1f}k steps/s  reward {shown_return}  "
            f"ep_len {shown_len}  lr {self.alg.learning_rate:.1e}  "
            f"elapsed {hms(elapsed)}  ETA {hms(eta)}"
        )

    def _append_progress(self, record: dict[str, Any]) -> None:
        append_progress(self.run_dir, record)

    def _trim_progress(self) -> None:
        """Keep only the progress rows of iterations the checkpoint holds (a run killed
        after its last checkpoint wrote rows that the resumed run writes again). The wall
        time of a checkpoint that does not record it comes from its last row."""
        last = trim_progress(self.run_dir, self.iterations)
        if last is not None and not self.wall_time:
            self.wall_time = float(last.get("wall_time") or 0.0)
