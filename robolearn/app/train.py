"""``robolearn train``: a training run from flags to checkpoints."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import shutil
import signal
import sys
from pathlib import Path
from typing import Any

from robolearn.app.agents import make_runner
from robolearn.app.health import TrainingHealth
from robolearn.app.memory import require_training_memory
from robolearn.app.runs import (
    PARAMS_FORMAT,
    RunParams,
    create_run_dir,
    read_run_params,
    remove_stale_temp_files,
    resolve_checkpoint,
    resolve_run,
)
from robolearn.app.session import (
    RunContext,
    Setup,
    build_setup,
    resolve_device_engine,
    setup_from_run,
    versions,
)
from robolearn.config import save_config, save_yaml
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
    if (opts.load_run or opts.checkpoint) and not opts.resume:
        # rather than train a fresh policy while the user believes it resumed
        raise RobolearnError(
            "--load_run and --checkpoint choose what --resume continues; add --resume"
        )
    engine = resolve_device_engine(opts.device, opts.engine)
    # Every flag and override is checked before a process group starts or a file is written.
    checked = _setup_for(opts, engine, None, None, source)
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

    folder: _RunFolder
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


@dataclasses.dataclass
class _RunFolder:
    """The folder a run writes to, and what this process created (and alone may delete)."""

    path: Path
    checkpoint: Path | None = None
    created: list[Path] = dataclasses.field(default_factory=list)
    note: str = ""

    def discard_if_empty(self) -> None:
        """After a failure before the first checkpoint: remove the folders this process
        made, so a failed command leaves nothing behind; a resumed run's folder stays."""
        if not self.created or any(self.path.glob("model_*.pt")):
            return
        shutil.rmtree(self.path, ignore_errors=True)
        for parent in self.created[1:]:
            with contextlib.suppress(OSError):
                parent.rmdir()  # only if still empty: another run may have started there


def _pick_run_folder(opts: TrainOptions, experiment: str) -> _RunFolder:
    """A new run folder (created now, by this process only), or the run to resume."""
    log_root = Path(opts.log_root)
    if not opts.resume:
        parents = [p for p in (log_root / experiment, log_root) if not p.exists()]
        path = create_run_dir(log_root, experiment, opts.run_name)
        return _RunFolder(path, created=[path, *parents])
    newest = resolve_run(log_root, experiment, opts.load_run)
    run_dir = resolve_run(log_root, experiment, opts.load_run, need_checkpoint=True)
    note = ""
    if run_dir != newest:
        note = f"the newest run {newest.name} has no checkpoint; "
    removed = remove_stale_temp_files(run_dir)
    if removed:
        note += f"removed {len(removed)} unfinished checkpoint write(s) of a killed run; "
    return _RunFolder(run_dir, resolve_checkpoint(run_dir, opts.checkpoint), note=note)


def _train(opts: TrainOptions, source: RunParams | None, experiment: str, ctx: RunContext) -> int:
    # A resumed run's configs come from its checkpoint: its folder first. A new run's
    # folder is made once the env is built and training fits in memory, so that a
    # refusal, or a kill while allocating, leaves no empty run folder behind.
    folder = _shared_folder(opts, experiment, ctx) if opts.resume else None
    resume_data = _load_resume(opts, folder) if folder is not None else None
    setup = _setup_for(opts, ctx.engine, resume_data, folder, source)
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


def _shared_folder(opts: TrainOptions, experiment: str, ctx: RunContext) -> _RunFolder:
    """Rank 0 picks the run folder (a new one, or the one to resume) and tells the others."""
    folder, problem = None, None
    if ctx.dist.is_main:
        try:
            folder = _pick_run_folder(opts, experiment)
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
        ran_on = _engine_that_ran(env)
        source = run.source
        _write_params(
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


def _load_resume(opts: TrainOptions, folder: _RunFolder) -> dict[str, Any]:
    """The checkpoint a resumed run continues from, checked to be of this task."""
    data = load_checkpoint(folder.checkpoint)
    if data.get("task") != opts.task:
        raise RobolearnError(
            f"{folder.checkpoint} is a checkpoint of {data.get('task')!r}, not {opts.task!r}"
        )
    return data


def _setup_for(
    opts: TrainOptions,
    engine,
    resume_data,
    folder: _RunFolder | None,
    source: RunParams | None = None,
) -> Setup:
    """The run's configs: the task with the overrides (after the ones a resumed run started
    with), the flags, and the checkpoint's seed and env count unless the flags say; with
    ``source`` (``--from``), that run's configs with the overrides and flags on top."""
    overrides, seed, num_envs = list(opts.overrides), opts.seed, opts.num_envs
    if resume_data is not None:
        overrides = list(resume_data.get("overrides", [])) + overrides
        seed = resume_data.get("seed") if seed is None else seed
        num_envs = num_envs or resume_data.get("num_envs")
    flags = {
        "num_envs": num_envs,
        "engine": engine,
        "seed": seed,
        "max_iterations": opts.max_iterations,
    }
    if source is not None:
        # a copy: the check before the run folder exists and the run itself both start
        # from the configs as loaded
        setup = setup_from_run(copy.deepcopy(source), overrides, **flags)
    else:
        setup = build_setup(opts.task, overrides, **flags)
    if opts.logger is not None:
        setup.agent_cfg.logger = opts.logger
    done = int(resume_data["iterations"]) if resume_data is not None else 0
    if resume_data is not None and setup.agent_cfg.max_iterations <= done:
        raise RobolearnError(
            f"{folder.checkpoint.name} has {done} iterations done, and max_iterations is "
            f"{setup.agent_cfg.max_iterations}: nothing to train; pass --max_iterations above "
            f"{done}"
        )
    if setup.agent_cfg.logger == "wandb":
        _check_wandb()
    return setup


def _engine_that_ran(env) -> str:
    """The engine as ``env.sim.engine`` names it, never ``auto``: ``cpu``, ``warp-cpu`` or
    the GPU it ran on (``cuda:0``), so that a run started ``--from`` this one runs there."""
    name = env.scene.engine.name
    return str(env.device) if name == "cuda" else name


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


def _write_params(params: Path, setup: Setup, run: dict[str, Any], engine: str) -> None:
    """The configs as the run started (typed: ``--from`` loads them back equal), how it
    started, and the versions it ran with."""
    env_cfg = setup.env_cfg
    env_cfg.sim.engine = engine  # what ran, not "auto"
    save_config(env_cfg, params / "env.yaml")
    save_config(setup.agent_cfg, params / "agent.yaml")
    save_yaml(run, params / "run.yaml")
    save_yaml(versions(), params / "versions.yaml")


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


def _check_wandb() -> None:
    try:
        import wandb  # noqa: F401
    except ImportError as exc:
        raise RobolearnError("--logger wandb needs the wandb package: pip install wandb") from exc


def _video_recorder(opts: TrainOptions, env, run_dir: Path):
    from robolearn.render.video import PeriodicVideo

    return PeriodicVideo(env, run_dir / "videos" / "train", opts.video_length, opts.video_interval)
