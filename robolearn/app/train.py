"""``robolearn train``: a training run from flags to checkpoints."""

from __future__ import annotations

import copy
import dataclasses
import sys
from pathlib import Path
from typing import Any

from robolearn.app.agents import make_runner
from robolearn.app.health import TrainingHealth
from robolearn.app.memory import require_training_memory
from robolearn.app.runs import (
    PARAMS_FORMAT,
    RunParams,
    read_run_params,
)
from robolearn.app.session import (
    RunContext,
    Setup,
    resolve_device_engine,
    versions,
)
from robolearn.app.train_run import (
    RunFolder,
    check_resume_flags,
    engine_that_ran,
    pick_run_folder,
    setup_for,
    stop_on_signals,
    write_params,
)
from robolearn.errors import RobolearnError
from robolearn.registry import import_roots
from robolearn.rl import distributed
from robolearn.rl.checkpoint import load_checkpoint
from robolearn.rl.config import compile_problem
from robolearn.rl.runner import Runner, StopRequest


@dataclasses.dataclass
class TrainOptions:
    """The flags of ``robolearn train`` (see docs/training.md)."""

    task: str | None = None
    """The task; with ``from_run``, the source run's (naming another is an error)."""
    from_run: str | None = None
    """A run folder whose params/ a new run starts from (``--from``)."""
    num_envs: int | None = None
    device: str = "auto"
    engine: str | None = None
    seed: int | None = None
    max_iterations: int | None = None
    run_name: str = ""
    resume: bool = False
    load_run: str | None = None
    checkpoint: str | None = None
    logger: str | None = None
    """``tensorboard`` or ``wandb``; None keeps the agent config's (``agent.logger``)."""
    video: bool = False
    video_length: int = 200
    video_interval: int = 2000
    log_root: str = "logs"
    distributed: bool = False
    dist_timeout: float = 300.0
    overrides: list[str] = dataclasses.field(default_factory=list)
    imports: list[str] = dataclasses.field(default_factory=list)
    """``--import`` modules, recorded in params/run.yaml for ``--from``."""
    algo: str = "ppo"
    """``ppo`` (rsl-rl's) or ``shac`` (the differentiable learner,
    :mod:`robolearn.app.train_shac`)."""


def train(opts: TrainOptions, log=print) -> int:
    """Run training; returns the exit status."""
    if opts.logger not in (None, "tensorboard", "wandb"):
        raise RobolearnError(f"unknown logger {opts.logger!r}; valid: tensorboard, wandb")
    if opts.algo not in ("ppo", "shac"):
        raise RobolearnError(f"unknown --algo {opts.algo!r}; valid: ppo, shac")
    if opts.algo == "shac":
        from robolearn.app.train_shac import train_shac

        return train_shac(opts, log)
    source = None
    if opts.from_run is not None:
        if opts.resume:
            raise RobolearnError(
                "--from starts a new run from another's configs, --resume continues a run; "
                "choose one"
            )
        source = read_run_params(opts.from_run)
        if opts.task is not None and opts.task != source.task:
            raise RobolearnError(
                f"--task {opts.task}, but {opts.from_run} is a run of {source.task}; "
                "leave --task out"
            )
        opts = dataclasses.replace(opts, task=source.task)
    elif not opts.task:
        raise RobolearnError("--task is required (or --from a run folder)")
    check_resume_flags(opts)
    engine = resolve_device_engine(opts.device, opts.engine)
    # Every flag and override is checked before a process group starts or a file is written.
    checked = setup_for(opts, engine, None, None, source)
    engine = checked.env_cfg.sim.engine
    ctx = RunContext(opts.task, engine, log)
    if opts.distributed:
        ctx.dist, ctx.engine, ctx.threads = distributed.initialize(
            distributed.from_environment(), engine, opts.dist_timeout
        )
        ctx.monitor = distributed.Monitor(ctx.dist, opts.dist_timeout)
        if not ctx.dist.is_main:
            ctx.log = _silent
    try:
        return _train(opts, source, checked.agent_cfg.experiment_name, ctx)
    except distributed.RankError as exc:
        raise RobolearnError(f"rank {ctx.dist.rank}: the job cannot continue: {exc}") from exc
    finally:
        distributed.shutdown()


def _silent(*_args, **_kwargs) -> None:
    """Logging of ranks other than 0."""


def _to_stderr(line: str) -> None:
    """Warnings: on stderr, apart from the progress lines on stdout."""
    print(line, file=sys.stderr, flush=True)


@dataclasses.dataclass
class _Run:
    """A training run ready to start: its folder, its configs and its env."""

    folder: RunFolder
    setup: Setup
    """The configs the env was built from."""
    started: Setup
    """The configs as the run started, before building the env changed any (params/
    records these)."""
    env: Any
    """The ManagerBasedRLEnv."""
    resume_data: dict[str, Any] | None = None
    """The checkpoint a resumed run continues from."""
    source: RunParams | None = None
    """The run a ``--from`` run starts from."""


def _train(opts: TrainOptions, source: RunParams | None, experiment: str, ctx: RunContext) -> int:
    # A resumed run's configs come from its checkpoint: its folder first. A new run's
    # folder is made once the env is built and training fits in memory, so that a
    # refusal, or a kill while allocating, leaves no empty run folder behind.
    folder = _shared_folder(opts, experiment, ctx) if opts.resume else None
    resume_data = _load_resume(opts, folder) if folder is not None else None
    setup = setup_for(opts, ctx.engine, resume_data, folder, source)
    base_seed = setup.env_cfg.seed
    if ctx.threads is not None:
        setup.env_cfg.sim.nthread = ctx.threads
    # params/ gets the configs as they are now: building the env or a curriculum later may
    # change fields of the live ones
    started = Setup(
        setup.spec, copy.deepcopy(setup.env_cfg), copy.deepcopy(setup.agent_cfg), setup.overrides
    )
    setup.env_cfg.seed = base_seed + ctx.dist.rank  # every rank sees other episodes
    env = _build_env(setup)
    if folder is None:
        folder = _shared_folder(opts, experiment, ctx)
    try:
        return _train_in(opts, _Run(folder, setup, started, env, resume_data, source), ctx)
    except BaseException:
        if ctx.dist.is_main:
            folder.discard_if_empty()
        raise


def _shared_folder(opts: TrainOptions, experiment: str, ctx: RunContext) -> RunFolder:
    """Rank 0 picks the run folder (a new one, or the one to resume) and tells the others."""
    folder, problem = None, None
    if ctx.dist.is_main:
        try:
            folder = pick_run_folder(opts, experiment)
        except RobolearnError as exc:
            problem = str(exc)
    if ctx.monitor is not None:
        folder, problem = ctx.monitor.broadcast_object((folder, problem))
    if problem:
        raise RobolearnError(problem)
    return folder


def _build_env(setup: Setup):
    """The env, once it is known that training it can run here (a C++ compiler where the
    networks are compiled; memory for the rollout and the update)."""
    from robolearn.env import ManagerBasedRLEnv

    env = ManagerBasedRLEnv(setup.env_cfg)
    if setup.agent_cfg.policy.compile and (problem := compile_problem(str(env.device))):
        raise RobolearnError(problem)
    require_training_memory(env, setup.agent_cfg)
    return env


def _train_in(opts: TrainOptions, run: _Run, ctx: RunContext) -> int:
    """Train the run (resumed, or started with its params/ written) to the end or a stop."""
    info, log, env, folder = ctx.dist, ctx.log, run.env, run.folder
    run_info = {
        "task": opts.task,
        "overrides": run.setup.overrides,
        "seed": run.started.env_cfg.seed,
        "num_envs": env.num_envs,
        "world_size": info.world_size,
    }
    runner = _make_runner(run, ctx, run_info)
    if run.resume_data is not None:
        runner.restore(run.resume_data)
        log(
            f"{folder.note}resuming {folder.path} from {folder.checkpoint.name} "
            f"({runner.iterations} iterations done)"
        )
    elif info.is_main:
        ran_on = engine_that_ran(env)
        source = run.source
        write_params(
            folder.path / "params",
            run.started,
            {
                "format": PARAMS_FORMAT,
                **run_info,
                "engine": ran_on,
                "device": str(env.device),
                **_imports_record(opts, source),
                "from_run": str(source.run_dir.resolve()) if source is not None else None,
            },
            ran_on,
        )
    where = f" x {info.world_size} ranks ({info.backend})" if info.enabled else ""
    log(
        f"training {opts.task}: {env.num_envs} envs{where} on {env.scene.engine.name} "
        f"({env.device}), run folder {folder.path}"
    )
    recorder = _video_recorder(opts, env, folder.path) if opts.video and info.is_main else None
    outcome = _learn(runner, run.setup.agent_cfg.max_iterations, recorder, ctx)
    if info.enabled:
        log(f"policy parameters identical on all {info.world_size} ranks")
    if outcome == "done":
        log(
            f"done: {runner.iterations} iterations, {runner.env_steps:,} env steps; "
            f"checkpoints in {folder.path}"
        )
    return 0


def _make_runner(run: _Run, ctx: RunContext, run_info: dict[str, Any]) -> Runner:
    """The runner of ``run``; its checkpoints record ``run_info`` and the agent config."""
    meta = {**run_info, "agent": None, "robolearn_version": versions().get("robolearn")}
    return make_runner(
        run.env,
        run.setup.agent_cfg,
        run_dir=run.folder.path if ctx.dist.is_main else None,
        meta=meta,
        dist_info=ctx.dist,
        monitor=ctx.monitor,
    )


def _load_resume(opts: TrainOptions, folder: RunFolder) -> dict[str, Any]:
    """The checkpoint a resumed run continues from, checked to be of this task."""
    data = load_checkpoint(folder.checkpoint)
    if data.get("task") != opts.task:
        raise RobolearnError(
            f"{folder.checkpoint} is a checkpoint of {data.get('task')!r}, not {opts.task!r}"
        )
    return data


def _imports_record(opts: TrainOptions, source: RunParams | None) -> dict[str, list[str]]:
    """run.yaml's ``imports`` (a ``--from`` source's first) and ``import_path``: where module
    names were found off the import path (the working folder), so that play, export, view
    and a later ``--from`` import them again from any folder without ``--import``."""
    earlier = (source.imports, source.import_path) if source is not None else ([], [])
    modules = [*earlier[0], *(_import_for_record(m) for m in opts.imports)]
    folders = [*earlier[1], *(str(p) for p in import_roots())]
    return {"imports": list(dict.fromkeys(modules)), "import_path": list(dict.fromkeys(folders))}


def _import_for_record(module: str) -> str:
    """An ``--import`` as a later ``--from`` can repeat it from any folder: a ``.py``
    path made absolute, a module name as given."""
    return str(Path(module).resolve()) if module.endswith(".py") else module


def _learn(runner: Runner, max_iterations: int, recorder, ctx: RunContext) -> str:
    """Train under the signal handlers and the health checks; a failed collective names the
    rank that failed."""
    stop = StopRequest()
    log, monitor = ctx.log, ctx.monitor
    with stop_on_signals(stop):
        try:
            warn = _silent if log is _silent else _to_stderr
            health = TrainingHealth.for_runner(runner, log=warn)
            outcome = runner.learn(
                max_iterations, stop=stop, on_step=recorder, log=log, health=health
            )
        except RuntimeError as exc:
            if monitor is None or isinstance(exc, distributed.RankError):
                raise
            raise monitor.explain(exc) from exc
    if recorder is not None:
        recorder.close()
    return outcome


def _video_recorder(opts: TrainOptions, env, run_dir: Path):
    from robolearn.render.video import PeriodicVideo

    return PeriodicVideo(env, run_dir / "videos" / "train", opts.video_length, opts.video_interval)
