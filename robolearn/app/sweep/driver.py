"""A sweep's driver: Ray started here (or joined with ``--address``), the trials run or
resumed by Ray Tune, and progress told the way a robolearn user reads it (a line per
finished trial and a summary line), while Ray's own output goes to the sweep's folder."""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from robolearn.app.sweep import results
from robolearn.app.sweep.spec import (
    SPEC_FILE,
    Range,
    SweepSpec,
    check_spec,
    describe,
    make_spec,
    metric_source,
    points,
    spec_to_data,
    trial_count,
)
from robolearn.app.sweep.trial import TrialPlan, run_trial
from robolearn.errors import RobolearnError

TUNE_DIR = "tune"

_QUIET_RAY = {
    "RAY_AIR_NEW_OUTPUT": "0",  # Tune's tables and banners: off with verbose=0
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_DEDUP_LOGS": "0",
    "TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S": "1000",
    # a worker that exits (Tune pausing or stopping a trial) would SIGKILL its children: a
    # trial's training process gets its SIGTERM instead (robolearn.process), and saves
    "RAY_kill_child_processes_on_worker_exit": "0",
    # Ray starts its workers at niceness 15, below everything else on the machine: beside
    # a busy process a trial then all but stops. Trials are the work, at the command's own
    # priority, as robolearn train runs.
    "RAY_worker_niceness": "0",
    # a trial that failed before its first report ends with a result that has no metric:
    # Tune would stop the whole sweep for it (the trial's record says why it failed)
    "TUNE_DISABLE_STRICT_METRIC_CHECKING": "1",
}


def run_sweep(spec: SweepSpec, dry_run: bool = False, log: Callable[[str], None] = print) -> int:
    """Check the spec, then run the sweep into ``spec.out`` (or, with ``dry_run``, print the
    trials it would run); returns the exit status."""
    if not spec.out:
        raise RobolearnError("--out DIR is required: the sweep's folder")
    out = Path(spec.out)
    if (out / SPEC_FILE).exists():
        raise RobolearnError(
            f"{out} holds a sweep already; robolearn sweep --resume {out} continues it, or "
            "give another --out"
        )
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise RobolearnError(f"--out {out}: not an empty folder; give a new one")
    spec = check_spec(spec)
    if dry_run:
        for line in dry_run_lines(spec):
            log(line)
        return 0
    existed = out.exists()
    try:
        _start_ray(spec, out)
    except BaseException:
        if not existed:  # a cluster that cannot be joined leaves no folder behind
            shutil.rmtree(out, ignore_errors=True)
        raise
    from robolearn.config import save_yaml

    save_yaml(spec_to_data(spec), out / SPEC_FILE)
    log(
        f"sweep of {spec.task}: {trial_count(spec)} trials ({_how(spec)}), "
        f"{spec.cpus_per_trial:g} CPU(s) per trial, folder {out}"
    )
    return _fit(spec, out, _tuner(spec, out), log)


def resume_sweep(folder: str, log: Callable[[str], None] = print) -> int:
    """Continue the sweep in ``folder``: its unfinished trials resume from their
    checkpoints, its finished ones are not run again."""
    out = Path(folder)
    if not (out / SPEC_FILE).is_file():
        raise RobolearnError(f"{out} is not a sweep's folder (no {SPEC_FILE})")
    if not (out / TUNE_DIR).is_dir():
        raise RobolearnError(f"{out}: the sweep never started (no {TUNE_DIR}/); run it anew")
    from robolearn.config import load_yaml

    spec = check_spec(make_spec(load_yaml(out / SPEC_FILE), {}))
    _start_ray(spec, out)
    from ray import tune

    tuner = tune.Tuner.restore(
        str((out / TUNE_DIR).resolve()),
        trainable=_trainable(spec, out),
        resume_unfinished=True,
        resume_errored=False,
        restart_errored=False,
    )
    done = sum(1 for r in results.collect(out) if r["status"] in results.FINAL)
    log(f"resuming the sweep in {out}: {done} of {trial_count(spec)} trials finished before")
    return _fit(spec, out, tuner, log)


def dry_run_lines(spec: SweepSpec) -> list[str]:
    """What ``--dry_run`` prints: the trials, or the space a search or PBT draws from."""
    lines = [f"{trial_count(spec)} trials of {spec.task} ({_how(spec)}):"]
    budget = f"{spec.max_iterations} iterations"
    if spec.max_minutes:
        budget += f" or {spec.max_minutes:g} minutes"
    if spec.search in ("grid", "random") and spec.scheduler != "pbt":
        for i, point in enumerate(points(spec)):
            lines.append(f"  t{i:03d}  {describe(point.values)}  seed {point.seed}")
    else:
        space = spec.perturb if spec.scheduler == "pbt" else spec.random
        for path, dim in space.items():
            shown = str(dim) if isinstance(dim, Range) else ", ".join(dim)
            lines.append(f"  {path}: {shown}")
        lines.append(f"  seeds: {', '.join(map(str, spec.seeds))}")
    lines.append(f"each for {budget}, measured by {spec.metric} ({spec.mode})")
    if spec.overrides:
        lines.append(f"every trial with: {' '.join(spec.overrides)}")
    return lines


def _how(spec: SweepSpec) -> str:
    parts = {"pbt": "population-based training"}.get(spec.scheduler) or f"{spec.search} search"
    if spec.scheduler == "asha":
        parts += ", ASHA stops weak trials"
    return parts


# ---- Ray -------------------------------------------------------------------------------


def _start_ray(spec: SweepSpec, out: Path) -> None:
    """Ray started here with this machine's cores (or ``num_cpus``), or the cluster at
    ``address`` joined; a trial asking more than the cluster has is refused first."""
    from robolearn.threads import available_cores

    for key, value in _QUIET_RAY.items():
        os.environ.setdefault(key, value)
    if spec.address is None:
        cores = spec.num_cpus or available_cores()
        _check_fits(spec, {"CPU": cores, "GPU": _local_gpus()}, "this machine")
    warnings.filterwarnings("ignore", module=r"ray(\..*)?$")
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    try:
        import ray
    except ImportError as exc:
        raise RobolearnError(
            "robolearn sweep needs Ray Tune: pip install 'robolearn[sweep]'"
        ) from exc
    kwargs: dict[str, Any] = dict(
        logging_level=logging.WARNING,
        log_to_driver=False,
        include_dashboard=False,
        configure_logging=False,  # Ray's log lines go to the sweep's ray.log
    )
    _ray_logs_to(out)
    _errors_to_log(out)
    # a new local Ray says that it turned its token authentication on, which is its default
    logging.getLogger("ray._private.authentication").setLevel(logging.ERROR)
    if spec.address is None:
        # "local": a Ray of its own even where RAY_ADDRESS or a `ray start` names another
        ray.init(address="local", num_cpus=cores, num_gpus=_local_gpus(), **kwargs)
    else:
        _require_reachable(spec.address)
        try:
            ray.init(address=spec.address, **kwargs)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise RobolearnError(f"--address {spec.address}: cannot join it ({first})") from None
        _check_fits(spec, ray.cluster_resources(), f"the cluster at {spec.address}")


def _require_reachable(address: str) -> None:
    """A ``HOST:PORT`` that nothing answers on is one line at once (Ray itself retries for
    minutes, printing as it goes); ``auto`` and ``ray://`` addresses Ray checks itself."""
    import socket

    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or "://" in address:
        return
    try:
        with socket.create_connection((host, int(port)), timeout=5):
            return
    except OSError as exc:
        raise RobolearnError(
            f"--address {address}: no Ray cluster answers there ({exc.strerror or exc}); "
            "start one (ray start --head) or leave out --address to run on this machine"
        ) from None


def _errors_to_log(out: Path) -> None:
    """Ray prints the errors its nodes publish (a worker that died) to the terminal; they
    go to ``<out>/ray.log`` instead, and the sweep says in its own line what it does."""
    try:
        from ray._private import worker  # no public switch for this printer
    except ImportError:
        return
    log = logging.getLogger("ray.errors")

    def to_log(data: dict, ignore_prefix: bool = False) -> None:
        for line in data.get("lines", []):
            log.warning("(%s) %s", data.get("pid", "?"), line)

    if hasattr(worker, "print_to_stdstream"):
        worker.print_to_stdstream = to_log


def _local_gpus() -> int:
    try:
        import torch

        return torch.cuda.device_count()
    except Exception:  # no CUDA build: no GPUs
        return 0


def _check_fits(spec: SweepSpec, resources: dict[str, float], where: str) -> None:
    cpus, gpus = resources.get("CPU", 0), resources.get("GPU", 0)
    if spec.cpus_per_trial > cpus:
        raise RobolearnError(
            f"--cpus_per_trial {spec.cpus_per_trial:g}: {where} has {cpus:g} CPUs; no trial "
            "could start"
        )
    if spec.gpus_per_trial > gpus:
        raise RobolearnError(
            f"--gpus_per_trial {spec.gpus_per_trial:g}: {where} has {gpus:g} GPUs; no trial "
            "could start"
        )


def _ray_logs_to(out: Path) -> None:
    """Ray's and Tune's log lines in the driver go to ``<out>/ray.log``, not the terminal."""
    out.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(out / "ray.log")
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    for name in ("ray", "ray.tune", "ray.train", "ray.air", "ray.errors"):
        logger = logging.getLogger(name)
        logger.handlers = [handler]
        logger.propagate = False


def _copy_session_logs(out: Path) -> None:
    """The local Ray session's logs (workers, raylet, GCS) into ``<out>/ray_logs``."""
    try:
        from ray._private import worker  # the session folder has no public accessor

        session = Path(worker._global_node.get_session_dir_path())
    except Exception:  # another Ray: the logs stay in Ray's temp folder
        return
    if (session / "logs").is_dir():
        shutil.copytree(session / "logs", out / "ray_logs", dirs_exist_ok=True)


# ---- Tune ------------------------------------------------------------------------------


def plan_of(spec: SweepSpec, out: Path) -> TrialPlan:
    from robolearn.app.configs import build_setup

    env_cfg = build_setup(spec.task, list(spec.overrides)).env_cfg
    return TrialPlan(
        task=spec.task,
        out=str(out.resolve()),
        metric=spec.metric,
        mode=spec.mode,
        source=metric_source(spec.metric, env_cfg),
        search="pbt" if spec.scheduler == "pbt" else spec.search,
        seeds=list(spec.seeds),
        max_iterations=spec.max_iterations,
        checkpoint_every=spec.checkpoint_every,
        eval_envs=spec.eval_envs,
        cpus=spec.cpus_per_trial,
        max_minutes=spec.max_minutes,
        nproc=spec.nproc_per_trial,
        algo=spec.algo,
        num_envs=spec.num_envs,
        device=spec.device,
        engine=spec.engine,
        overrides=list(spec.overrides),
        imports=list(spec.imports),
    )


def _trainable(spec: SweepSpec, out: Path):
    from ray import tune

    plan = dataclasses.asdict(plan_of(spec, out))
    return tune.with_resources(
        tune.with_parameters(run_trial, plan=plan),
        {"cpu": spec.cpus_per_trial, "gpu": spec.gpus_per_trial},
    )


def _domain(dim: Any):
    from ray import tune

    if not isinstance(dim, Range):
        return tune.choice(list(dim))
    if dim.integer:
        return tune.randint(int(dim.low), int(dim.high) + 1)
    return tune.loguniform(dim.low, dim.high) if dim.log else tune.uniform(dim.low, dim.high)


def _tuner(spec: SweepSpec, out: Path):
    from ray import tune

    from robolearn.app.sweep import progress  # subclasses Ray's Callback: after Ray is checked

    search_alg, scheduler = None, None
    if spec.scheduler == "pbt":
        from ray.tune.schedulers import PopulationBasedTraining

        param_space = {"values": {p: _domain(d) for p, d in spec.perturb.items()}}
        num_samples = spec.pbt_members
        mutations = {
            p: list(d) if isinstance(d, list) else _domain(d) for p, d in spec.perturb.items()
        }
        scheduler = PopulationBasedTraining(
            time_attr="iteration",
            perturbation_interval=spec.perturbation_interval,
            hyperparam_mutations={"values": mutations},
            quantile_fraction=0.5 if spec.pbt_members < 4 else 0.25,
            synch=False,
        )
    elif spec.optuna:
        from ray.tune.search import Repeater
        from ray.tune.search.optuna import OptunaSearch

        param_space = {"values": {p: _domain(d) for p, d in spec.random.items()}}
        search_alg = OptunaSearch(seed=spec.search_seed)
        if len(spec.seeds) > 1:
            search_alg = Repeater(search_alg, repeat=len(spec.seeds))
        num_samples = spec.samples * len(spec.seeds)
    else:
        trials = [{"values": p.values, "seed": p.seed} for p in points(spec)]
        param_space = {"point": tune.grid_search(trials)}
        num_samples = 1
    if spec.scheduler == "asha":
        from ray.tune.schedulers import ASHAScheduler

        scheduler = ASHAScheduler(
            time_attr="iteration",
            max_t=spec.max_iterations,
            grace_period=spec.grace_period,
            reduction_factor=spec.reduction_factor,
        )
    tune_config = tune.TuneConfig(
        metric=spec.metric,
        mode=spec.mode,
        search_alg=search_alg,
        scheduler=scheduler,
        num_samples=num_samples,
        max_concurrent_trials=spec.max_concurrent,
        trial_name_creator=progress.trial_label,
        trial_dirname_creator=progress.trial_label,
    )
    run_config = tune.RunConfig(
        name=TUNE_DIR,
        storage_path=str(out.resolve()),
        failure_config=tune.FailureConfig(max_failures=spec.max_failures),
        # all kept: each is a small meta.json naming a robolearn checkpoint, and PBT hands
        # on one it chose a while ago
        checkpoint_config=tune.CheckpointConfig(num_to_keep=None),
        callbacks=[
            progress.SweepProgress(
                str(out.resolve()), spec.metric, spec.mode, spec.max_iterations, spec.max_failures
            )
        ],
        verbose=0,
    )
    return tune.Tuner(
        _trainable(spec, out),
        param_space=param_space,
        tune_config=tune_config,
        run_config=run_config,
    )


def _fit(spec: SweepSpec, out: Path, tuner, log: Callable[[str], None]) -> int:
    import ray

    started = time.monotonic()
    try:
        tuner.fit()
    finally:
        if spec.address is None:
            _copy_session_logs(out)
        ray.shutdown()
    rows = results.write_results(out, spec)
    counts = {s: sum(r["status"] == s for r in rows) for s in ("done", "stopped", "failed")}
    log(
        f"sweep finished in {time.monotonic() - started:.0f} s: {counts['done']} done, "
        f"{counts['stopped']} stopped early, {counts['failed']} failed; results in "
        f"{out / 'results.csv'}, curves in {out / 'curves.png'}"
    )
    for line in results.table_lines(rows, spec):
        log(line)
    if rows and counts["failed"] == len(rows):
        log("every trial failed (their reasons are above): nothing was learned")
        return 1
    return 0
