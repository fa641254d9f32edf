"""``robolearn train``: a training run from flags to checkpoints."""

from __future__ import annotations

import copy
import dataclasses
import sys
from pathlib import Path
from typing import Any

from robolearn.app.configs import (
    RunContext,
    Setup,
    build_setup,
    resolve_device_engine,
    setup_from_run,
    versions,
)
from robolearn.app.health import TrainingHealth
from robolearn.app.run_folder import (
    RunFolder,
    check_resume_flags,
    check_wandb,
    engine_that_ran,
    pick_run_folder,
    stop_on_signals,
    write_params,
)
from robolearn.app.runs import PARAMS_FORMAT, Fork, RunParams, read_run_params, resolve_checkpoint
from robolearn.errors import RobolearnError
from robolearn.registry import import_roots
from robolearn.rl import distributed
from robolearn.rl.checkpoint import load_checkpoint
from robolearn.rl.learner import (
    DEFAULT,
    Algorithm,
    Learner,
    LearnerContext,
    StopRequest,
    algorithm,
    algorithm_of,
)


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
    algo: str | None = None
    """The learner (:data:`robolearn.rl.learner.ALGORITHMS`); None: the resumed or
    ``--from`` run's, else PPO."""


def check(opts: TrainOptions) -> None:
    """Every check :func:`train` makes before its process group starts or it writes a file,
    and nothing else: ``robolearn train --nproc`` makes them before it starts the ranks, so
    that a mistake is one line rather than one per rank. With ``--resume``, the run and the
    checkpoint it continues from too (rank 0 finds them again once the ranks started)."""
    opts, _, setup, _ = _checked(opts)
    if opts.resume:
        # rank 0 tidies the run folder and says so
        _resumed(opts, pick_run_folder(opts, setup.agent_cfg.experiment_name, tidy=False))


def _checked(opts: TrainOptions) -> tuple[TrainOptions, Algorithm, Setup, RunParams | None]:
    """The flags and overrides checked: (the options, the task filled in from a ``--from``
    run; the learner; the configs; the ``--from`` run's params)."""
    if opts.logger not in (None, "tensorboard", "wandb"):
        raise RobolearnError(f"unknown logger {opts.logger!r}; valid: tensorboard, wandb")
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
    if opts.checkpoint is not None and source is not None:
        fork = _fork_checkpoint(opts, source)
    else:
        check_resume_flags(opts)
        fork = None
    if opts.video:
        from robolearn.render.video import require_video_memory

        require_video_memory(opts.video_length)  # each clip's frames wait in memory
    algo = _algorithm(opts, source.algo if source is not None else None, "the --from run")
    if fork is not None:
        source = dataclasses.replace(source, fork=fork)
    return opts, algo, _configs(opts, algo, None, source), source


def _fork_checkpoint(opts: TrainOptions, source: RunParams) -> Fork:
    """``--from RUN --checkpoint FILE``: the checkpoint a new run starts its learner from
    (weights, optimizer, normalizers, iterations done), checked to be of the run's task."""
    path = resolve_checkpoint(source.run_dir, opts.checkpoint)
    data = load_checkpoint(path)
    if data.get("task") != source.task:
        raise RobolearnError(
            f"{path} is a checkpoint of {data.get('task')!r}, not of {source.task!r} "
            f"({opts.from_run}'s task)"
        )
    return Fork(path, data)


def train(opts: TrainOptions, log=print) -> int:
    """Run training; returns the exit status."""
    # Every flag and override is checked before a process group starts or a file is written.
    opts, algo, checked, source = _checked(opts)
    ctx = RunContext(opts.task, checked.env_cfg.sim.engine, log)
    if opts.distributed:
        ctx.dist, ctx.engine, ctx.threads = distributed.initialize(
            distributed.from_environment(), ctx.engine, opts.dist_timeout
        )
        ctx.monitor = distributed.Monitor(ctx.dist, opts.dist_timeout)
        if not ctx.dist.is_main:
            ctx.log = _silent
    try:
        return _train(opts, algo, checked, source, ctx)
    except distributed.RankError as exc:
        raise RobolearnError(f"rank {ctx.dist.rank}: the job cannot continue: {exc}") from exc
    finally:
        distributed.shutdown()


def _algorithm(opts: TrainOptions, recorded: str | None, where: str) -> Algorithm:
    """The run's learner: ``--algo``, else the one ``where`` (a ``--from`` run, a resumed
    checkpoint) recorded, else PPO; refusing the flags it does not take. A ``--algo``
    other than the recorded one is an error: the checkpoint's state is that learner's."""
    if recorded is not None and opts.algo is not None and opts.algo != recorded:
        raise RobolearnError(
            f"{where} was trained with --algo {recorded}; leave out --algo {opts.algo}"
        )
    algo = algorithm(opts.algo or recorded or DEFAULT)
    for flag, given, taken in (
        ("--distributed", opts.distributed, algo.takes_ranks),
        ("--video", opts.video, algo.takes_video),
        ("--logger wandb", opts.logger == "wandb", algo.takes_wandb),
    ):
        if given and not taken:
            raise RobolearnError(algo.refusal(flag))
    return algo


def _configs(
    opts: TrainOptions,
    algo: Algorithm,
    resume_data: dict[str, Any] | None,
    source: RunParams | None,
) -> Setup:
    """The run's configs, resolved and validated: the task's (or the ``--from`` run's) with
    the learner's overrides, the user's (after those a resumed run started with) and the
    flags; the checkpoint's seed and env count unless the flags say."""
    overrides = algo.overrides(list(opts.overrides))
    seed, num_envs = opts.seed, opts.num_envs
    if resume_data is not None:
        overrides = list(resume_data.get("overrides", [])) + overrides
        seed = resume_data.get("seed") if seed is None else seed
        num_envs = num_envs or resume_data.get("num_envs")
    flags = {
        "num_envs": num_envs,
        "engine": algo.engine(resolve_device_engine(opts.device, opts.engine)),
        "seed": seed,
        "max_iterations": opts.max_iterations,
    }
    if source is not None:
        if source.fork is not None:
            overrides = source.fork.overrides_since(source.overrides) + overrides
        # a copy: the check before the run folder exists and the run itself both start
        # from the configs as loaded
        setup = setup_from_run(copy.deepcopy(source), overrides, **flags)
    else:
        setup = build_setup(opts.task, overrides, **flags)
    if opts.logger is not None:
        setup.agent_cfg.logger = opts.logger
    if setup.agent_cfg.pipelined and not algo.takes_pipelined:
        raise RobolearnError(algo.refusal("agent.pipelined"))
    algo.check(setup.agent_cfg, opts.distributed)
    state = resume_data
    if state is None and source is not None and source.fork is not None:
        state = source.fork.data  # a fork continues the checkpoint's iterations
    done = int(state["iterations"]) if state is not None else 0
    if state is not None and setup.agent_cfg.max_iterations <= done:
        raise RobolearnError(
            f"the checkpoint has {done} iterations done, and max_iterations is "
            f"{setup.agent_cfg.max_iterations}: nothing to train; pass --max_iterations above "
            f"{done}"
        )
    if setup.agent_cfg.logger == "wandb":
        check_wandb()
    return setup


def _silent(*_args, **_kwargs) -> None:
    """Logging of ranks other than 0."""


def _to_stderr(line: str) -> None:
    """Warnings: on stderr, apart from the progress lines on stdout."""
    print(line, file=sys.stderr, flush=True)


@dataclasses.dataclass
class _Run:
    """A training run ready to start: its folder, learner, configs and env."""

    folder: RunFolder
    algo: Algorithm
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


def _train(
    opts: TrainOptions,
    algo: Algorithm,
    setup: Setup,
    source: RunParams | None,
    ctx: RunContext,
) -> int:
    # A resumed run's configs come from its checkpoint: its folder first. A new run's
    # folder is made once the env is built, so that a refusal, or a kill while
    # allocating, leaves no empty run folder behind.
    folder, resume_data = None, None
    try:
        if opts.resume:
            folder = _shared_folder(opts, setup.agent_cfg.experiment_name, ctx)
            resume_data, algo, setup = _resumed(opts, folder)
        base_seed = setup.env_cfg.seed
        if ctx.threads is not None:
            setup.env_cfg.sim.nthread = ctx.threads
        # params/ gets the configs as they are now: building the env or a curriculum later
        # may change fields of the live ones
        started = Setup(
            setup.spec,
            copy.deepcopy(setup.env_cfg),
            copy.deepcopy(setup.agent_cfg),
            setup.overrides,
        )
        setup.env_cfg.seed = base_seed + ctx.dist.rank  # every rank sees other episodes
        from robolearn.env import ManagerBasedRLEnv

        env = ManagerBasedRLEnv(setup.env_cfg)
        # From here a signal asks for a stop rather than killing the process: a run
        # folder made now is either removed (a stop before training begins) or saved.
        stop = StopRequest()
        with stop_on_signals(stop):
            if folder is None:
                folder = _shared_folder(opts, setup.agent_cfg.experiment_name, ctx)
            try:
                run = _Run(folder, algo, setup, started, env, resume_data, source)
                return _train_in(opts, run, ctx, stop)
            except BaseException:
                if ctx.dist.is_main:
                    folder.discard_if_empty()
                raise
    finally:
        if folder is not None:
            folder.release()


def _shared_folder(opts: TrainOptions, experiment: str, ctx: RunContext) -> RunFolder:
    """Rank 0 picks the run folder (a new one, or the one to resume) and tells the others."""
    folder, problem = None, None
    if ctx.dist.is_main:
        try:
            folder = pick_run_folder(opts, experiment)
        except RobolearnError as exc:
            problem = str(exc)
    if ctx.monitor is not None:
        # the lock is rank 0's: the others get the folder without it
        sent = dataclasses.replace(folder, lock=None) if folder is not None else None
        shared, problem = ctx.monitor.broadcast_object((sent, problem))
        folder = folder if folder is not None else shared
    if problem:
        raise RobolearnError(problem)
    return folder


def _train_in(opts: TrainOptions, run: _Run, ctx: RunContext, stop: StopRequest) -> int:
    """Train the run (resumed, or started with its params/ written) to the end or a stop;
    a stop before training begins leaves no new run folder."""
    info, log, env, folder = ctx.dist, ctx.log, run.env, run.folder
    run_info = {
        "task": opts.task,
        "overrides": run.setup.overrides,
        "seed": run.started.env_cfg.seed,
        "num_envs": env.num_envs,
        "world_size": info.world_size,
    }
    meta = {**run_info, "robolearn_version": versions().get("robolearn")}
    learner = run.algo.build(
        env, run.setup.agent_cfg, LearnerContext(folder.path, meta, info, ctx.monitor)
    )
    fork = run.source.fork if run.source is not None else None
    if run.resume_data is not None:
        learner.restore(run.resume_data)
        log(
            f"{folder.note}resuming {folder.path} from {folder.checkpoint.name} "
            f"({learner.iterations} iterations done)"
        )
    else:
        if fork is not None:
            learner.restore(fork.data)
            log(f"starting from {fork.path} ({learner.iterations} iterations done)")
        if info.is_main:
            _write_params(opts, run, run_info)
    where = f" x {info.world_size} ranks ({info.backend})" if info.enabled else ""
    how = learner.describe()
    log(
        f"training {opts.task}{' ' + how if how else ''}: {env.num_envs} envs{where} on "
        f"{env.scene.engine.name} ({env.device}), run folder {folder.path}"
    )
    recorder = _video_recorder(opts, env, folder.path) if opts.video and info.is_main else None
    if _stopped_before_learning(stop, ctx):
        log(f"stopped by {stop.signal_name} before training began; nothing saved")
        if info.is_main:
            folder.discard_if_empty()
        return 0
    outcome = _learn(learner, run, recorder, ctx, stop)
    if info.enabled:
        log(f"policy parameters identical on all {info.world_size} ranks")
    if outcome == "done":
        log(
            f"done: {learner.iterations} iterations, {learner.env_steps:,} env steps; "
            f"checkpoints in {folder.path}"
        )
    return 0


def _write_params(opts: TrainOptions, run: _Run, run_info: dict[str, Any]) -> None:
    """params/: the configs as the run started and how it started (run.yaml)."""
    ran_on = engine_that_ran(run.env)
    source = run.source
    record = {
        "format": PARAMS_FORMAT,
        **run_info,
        "algo": run.algo.name,
        "engine": ran_on,
        "device": str(run.env.device),
        **_imports_record(opts, source),
        "from_run": str(source.run_dir.resolve()) if source is not None else None,
    }
    if source is not None and source.fork is not None:
        record["from_checkpoint"] = str(source.fork.path.resolve())
    write_params(run.folder.path / "params", run.started, record, ran_on)


def _resumed(opts: TrainOptions, folder: RunFolder) -> tuple[dict[str, Any], Algorithm, Setup]:
    """(the checkpoint a resumed run continues from, checked to be of this task; its
    learner; the configs it continues with)."""
    data = load_checkpoint(folder.checkpoint)
    if data.get("task") != opts.task:
        raise RobolearnError(
            f"{folder.checkpoint} is a checkpoint of {data.get('task')!r}, not {opts.task!r}"
        )
    algo = _algorithm(opts, algorithm_of(data).name, str(folder.checkpoint))
    return data, algo, _configs(opts, algo, data, None)


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


def _stopped_before_learning(stop: StopRequest, ctx: RunContext) -> bool:
    """Whether a signal came while the run was being set up (on any rank: they agree)."""
    if ctx.monitor is None:
        return bool(stop)
    if ctx.monitor.any_true(bool(stop)):
        stop.signal_name = stop.signal_name or "a signal to another rank"
        return True
    return False


def _learn(learner: Learner, run: _Run, recorder, ctx: RunContext, stop: StopRequest) -> str:
    """Train with the health checks, ``stop`` set by the signal handlers; a failed
    collective names the rank that failed."""
    log, monitor = ctx.log, ctx.monitor
    try:
        health = TrainingHealth(
            run.env,
            log=_silent if log is _silent else _to_stderr,
            check_nonfinite=run.setup.agent_cfg.check_for_nan,
            any_rank=monitor.any_true if monitor is not None else None,
        )
        outcome = learner.learn(
            run.setup.agent_cfg.max_iterations,
            stop=stop,
            log=log,
            on_step=recorder,
            health=health,
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
