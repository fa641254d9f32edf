"""``robolearn train``: a training run from flags to checkpoints."""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import signal
from pathlib import Path
from typing import Any

from robolearn.config import save_yaml
from robolearn.errors import RobolearnError
from robolearn.rl import distributed
from robolearn.rl.checkpoint import load_checkpoint
from robolearn.rl.distributed import SINGLE
from robolearn.rl.runner import Runner, StopRequest
from robolearn.rl.runs import new_run_dir, resolve_checkpoint, resolve_run
from robolearn.rl.session import build_setup, resolve_device_engine, versions


@dataclasses.dataclass
class TrainOptions:
    task: str
    num_envs: int | None = None
    device: str = "auto"
    engine: str | None = None
    seed: int | None = None
    max_iterations: int | None = None
    run_name: str = ""
    resume: bool = False
    load_run: str | None = None
    checkpoint: str | None = None
    logger: str = "tensorboard"
    video: bool = False
    video_length: int = 200
    video_interval: int = 2000
    log_root: str = "logs"
    distributed: bool = False
    dist_timeout: float = 300.0
    overrides: list[str] = dataclasses.field(default_factory=list)


@contextlib.contextmanager
def stop_on_signals(stop: StopRequest):
    """SIGINT and SIGTERM set ``stop`` instead of killing the process."""

    def handler(signum, _frame):
        stop.signal_name = signal.Signals(signum).name

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def train(opts: TrainOptions, log=print) -> int:
    """Run training; returns the exit status."""
    if opts.logger not in ("tensorboard", "wandb"):
        raise RobolearnError(f"unknown logger {opts.logger!r}; valid: tensorboard, wandb")
    engine = resolve_device_engine(opts.device, opts.engine)
    info, monitor, threads = SINGLE, None, None
    if opts.distributed:
        info, engine, threads = distributed.initialize(
            distributed.from_environment(), engine, opts.dist_timeout
        )
        monitor = distributed.Monitor(info, opts.dist_timeout)
        if not info.is_main:
            log = _silent
    try:
        return _train(opts, engine, info, monitor, threads, log)
    except distributed.RankError as exc:
        raise RobolearnError(f"rank {info.rank}: the job cannot continue: {exc}") from exc
    finally:
        distributed.shutdown()


def _silent(*_args, **_kwargs) -> None:
    """Logging of ranks other than 0."""


def _train(opts: TrainOptions, engine: str, info, monitor, threads, log) -> int:
    log_root = Path(opts.log_root)
    resume_data: dict[str, Any] | None = None
    overrides = list(opts.overrides)
    experiment = build_setup(opts.task, overrides).agent_cfg.experiment_name
    # Rank 0 picks the run folder (a new one, or the one to resume) and tells the others.
    run_dir, ckpt, problem = None, None, None
    if info.is_main:
        try:
            if opts.resume:
                run_dir = resolve_run(log_root, experiment, opts.load_run)
                ckpt = resolve_checkpoint(run_dir, opts.checkpoint)
            else:
                run_dir = new_run_dir(log_root, experiment, opts.run_name)
        except RobolearnError as exc:
            problem = str(exc)
    if monitor is not None:
        run_dir, ckpt, problem = monitor.broadcast_object((run_dir, ckpt, problem))
    if problem:
        raise RobolearnError(problem)
    seed, num_envs = opts.seed, opts.num_envs
    if opts.resume:
        resume_data = load_checkpoint(ckpt)
        if resume_data.get("task") != opts.task:
            raise RobolearnError(
                f"{ckpt} is a checkpoint of {resume_data.get('task')!r}, not {opts.task!r}"
            )
        # The run continues with the overrides it started with; new ones apply on top.
        overrides = list(resume_data.get("overrides", [])) + overrides
        seed = resume_data.get("seed") if seed is None else seed
        num_envs = num_envs or resume_data.get("num_envs")
    setup = build_setup(
        opts.task,
        overrides,
        num_envs=num_envs,
        engine=engine,
        seed=seed,
        max_iterations=opts.max_iterations,
    )
    agent_cfg = setup.agent_cfg
    agent_cfg.logger = opts.logger
    if opts.logger == "wandb":
        _check_wandb()
    base_seed = setup.env_cfg.seed
    setup.env_cfg.seed = base_seed + info.rank  # every rank sees other episodes
    if threads is not None:
        setup.env_cfg.sim.nthread = threads

    from robolearn.adapters import RslRlVecEnv
    from robolearn.env import ManagerBasedRLEnv

    env = ManagerBasedRLEnv(setup.env_cfg)
    vec = RslRlVecEnv(env)
    meta = {
        "task": opts.task,
        "overrides": setup.overrides,
        "seed": base_seed,
        "num_envs": env.num_envs,
        "world_size": info.world_size,
        "agent": agent_cfg.to_rsl_rl(),
        "robolearn_version": versions().get("robolearn"),
    }
    runner = Runner(
        vec,
        agent_cfg.to_rsl_rl(),
        device=str(env.device),
        run_dir=run_dir if info.is_main else None,
        meta=meta,
        dist_info=info,
        monitor=monitor,
    )
    if resume_data is not None:
        runner.restore(resume_data)
        log(f"resuming {run_dir} from {ckpt.name} ({runner.iterations} iterations done)")
    created = info.is_main and not opts.resume
    try:
        if created:
            run_dir.mkdir(parents=True)
            params = run_dir / "params"
            save_yaml(setup.env_cfg, params / "env.yaml")
            save_yaml(agent_cfg, params / "agent.yaml")
            save_yaml(
                {
                    "task": opts.task,
                    "overrides": setup.overrides,
                    "seed": base_seed,
                    "num_envs": env.num_envs,
                    "engine": env.engine.name,
                    "world_size": info.world_size,
                },
                params / "run.yaml",
            )
            save_yaml(versions(), params / "versions.yaml")
        where = f" x {info.world_size} ranks ({info.backend})" if info.enabled else ""
        log(
            f"training {opts.task}: {env.num_envs} envs{where} on {env.engine.name} "
            f"({env.device}), run folder {run_dir}"
        )
        recorder = _video_recorder(opts, env, run_dir) if opts.video and info.is_main else None
        stop = StopRequest()
        with stop_on_signals(stop):
            try:
                outcome = runner.learn(
                    agent_cfg.max_iterations, stop=stop, on_step=recorder, log=log
                )
            except RuntimeError as exc:
                if monitor is None or isinstance(exc, distributed.RankError):
                    raise
                raise monitor.explain(exc) from exc
        if recorder is not None:
            recorder.close()
    except BaseException:
        if created and not any(run_dir.glob("model_*.pt")):
            shutil.rmtree(run_dir, ignore_errors=True)  # nothing worth keeping was written
        raise
    if info.enabled:
        log(f"policy parameters identical on all {info.world_size} ranks")
    if outcome == "done":
        log(
            f"done: {runner.iterations} iterations, {runner.env_steps:,} env steps; "
            f"checkpoints in {run_dir}"
        )
    return 0


def _check_wandb() -> None:
    try:
        import wandb  # noqa: F401
    except ImportError as exc:
        raise RobolearnError("--logger wandb needs the wandb package: pip install wandb") from exc


def _video_recorder(opts: TrainOptions, env, run_dir: Path):
    from robolearn.viewer.video import PeriodicVideo

    return PeriodicVideo(env, run_dir / "videos" / "train", opts.video_length, opts.video_interval)
