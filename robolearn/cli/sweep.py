"""``robolearn sweep``: many training runs on Ray Tune (docs/sweeps.md)."""

from __future__ import annotations

import argparse

from robolearn.cli.common import ENGINE_CHOICES, integer, positive_float, positive_int


def register(sub: argparse._SubParsersAction, help: str) -> None:
    """Add ``robolearn sweep`` to the subcommands."""
    p = sub.add_parser(
        "sweep",
        help=help,
        description=(
            "Run many trainings of a task on Ray Tune, locally (Ray started here with this "
            "machine's cores) or on a cluster (--address): a grid, random or Optuna search "
            "over override paths, several seeds per configuration, ASHA's early stopping or "
            "population-based training. Every trial is a normal run under "
            "DIR/trials/<trial>/; DIR holds results.csv, results.json and curves.png. "
            "'robolearn sweep show DIR' ranks the trials; --resume DIR continues a sweep."
        ),
        epilog="example: robolearn sweep --task cartpole_balance --grid "
        "agent.algorithm.learning_rate=1e-4,3e-4,1e-3 --seeds 1 2 --metric mean_return "
        "--mode max --max_iterations 15 --out sweeps/lr",
    )
    p.add_argument("action", nargs="?", choices=["show"], help="show DIR: the results ranked")
    p.add_argument("folder", nargs="?", metavar="DIR", help="the sweep's folder, for show")
    p.add_argument("--spec", metavar="FILE", help="a YAML spec; its keys are these flags' names")
    p.add_argument("--out", metavar="DIR", help="the new sweep's folder")
    p.add_argument("--resume", metavar="DIR", help="continue the sweep in DIR")
    p.add_argument("--dry_run", action="store_true", help="print the trials, run nothing")
    _add_run_args(p)
    _add_search_args(p)
    _add_scheduler_args(p)
    _add_resource_args(p)
    p.add_argument(
        "overrides",
        nargs="*",
        metavar="OVERRIDE",
        help="env.<path>=<value> or agent.<path>=<value>, for every trial",
    )
    p.set_defaults(run=run)


def _add_run_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--task", help="task name (robolearn list)")
    p.add_argument("--algo", help="the learner: ppo, shac, td3, sac (default: ppo)")
    p.add_argument("--num_envs", type=integer, help="parallel envs per trial (default: the task's)")
    p.add_argument("--device", help="each trial's --device (default: auto)")
    p.add_argument("--engine", choices=ENGINE_CHOICES, help="each trial's --engine")
    p.add_argument(
        "--max_iterations", type=positive_int, help="iterations per trial (default: the task's)"
    )
    p.add_argument(
        "--max_minutes",
        type=positive_float,
        help="minutes of training per trial, as well as or instead of the iterations",
    )
    p.add_argument(
        "--metric",
        help="what ranks the trials: a key of 'play --eval --json' (mean_return, "
        "success_rate, base_velocity/lin_vel_error...), measured at each checkpoint, or of "
        "progress.jsonl (Train/mean_reward...), read each iteration (default: mean_return)",
    )
    p.add_argument("--mode", choices=["max", "min"], help="better is max or min (default: max)")
    p.add_argument(
        "--checkpoint_every",
        type=positive_int,
        help="iterations between a trial's checkpoints, when an evaluation metric is "
        "measured and PBT may exploit (default: a tenth of the iterations)",
    )
    p.add_argument("--eval_envs", type=positive_int, help="envs of each evaluation (default: 256)")


def _add_search_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--grid",
        action="append",
        metavar="PATH=V1,V2,...",
        help="try every value (repeatable; the grids are crossed); PATH is an override "
        "path or num_envs",
    )
    p.add_argument(
        "--random",
        action="append",
        metavar="PATH=LO:HI[:log|:int]",
        help="draw from a range, or from values V1,V2 (repeatable); --samples draws",
    )
    p.add_argument(
        "--samples",
        type=positive_int,
        help="configurations random or Optuna search draws (default: 4)",
    )
    p.add_argument(
        "--optuna",
        action="store_true",
        help="Optuna's TPE picks each configuration from the results so far, in --random's space",
    )
    p.add_argument("--search_seed", type=integer, help="seed of the search's draws (default: 0)")
    p.add_argument(
        "--seeds", type=integer, nargs="+", help="each configuration once per seed (default: 1)"
    )


def _add_scheduler_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--scheduler",
        choices=["fifo", "asha", "pbt"],
        help="fifo: every trial runs its budget; asha: weak trials stop early; pbt: "
        "population-based training (default: fifo)",
    )
    p.add_argument(
        "--grace_period",
        type=positive_int,
        help="ASHA: iterations before a trial may stop (default: a quarter of the budget)",
    )
    p.add_argument(
        "--reduction_factor", type=positive_int, help="ASHA: keep 1 in N at each rung (default: 2)"
    )
    p.add_argument("--pbt_members", type=positive_int, help="PBT: the population (default: 4)")
    p.add_argument(
        "--perturb",
        action="append",
        metavar="PATH=LO:HI[:log]",
        help="PBT: a hyperparameter it adapts, a range or values V1,V2 (repeatable)",
    )
    p.add_argument(
        "--perturbation_interval",
        type=positive_int,
        help="PBT: iterations between exploits (default: --checkpoint_every)",
    )


def _add_resource_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--cpus_per_trial",
        type=positive_float,
        help="CPUs Ray gives a trial; its physics and torch threads follow (default: 1)",
    )
    p.add_argument(
        "--gpus_per_trial",
        type=float,
        help="GPUs per trial, a fraction to share one (default: 0)",
    )
    p.add_argument(
        "--nproc_per_trial",
        type=positive_int,
        help="ranks of each trial's training (train --nproc), e.g. one per GPU of a trial "
        "with --gpus_per_trial 4 (default: 1)",
    )
    p.add_argument("--max_concurrent", type=positive_int, help="trials at once (default: as fit)")
    p.add_argument(
        "--max_failures",
        type=integer,
        help="restarts of a trial whose process or worker died (default: 2)",
    )
    p.add_argument(
        "--address",
        help="join a running Ray cluster (auto, or ray://HOST:10001) instead of starting Ray here",
    )
    p.add_argument(
        "--num_cpus", type=positive_int, help="CPUs of the local Ray (default: this machine's)"
    )


def run(args: argparse.Namespace) -> int:
    """Run, resume or show a sweep; returns the exit status."""
    from robolearn.app.sweep.spec import SPEC_KEYS, load_spec_file, make_spec
    from robolearn.errors import RobolearnError

    flags = {k: getattr(args, k) for k in SPEC_KEYS if k in vars(args)}
    flags["optuna"] = args.optuna or None
    given = sorted(k for k, v in flags.items() if v not in (None, [], False))
    if args.action == "show" or args.resume:
        what = "sweep show" if args.action == "show" else "--resume"
        if given or args.spec or args.out or args.dry_run:
            extra = [f"--{k}" for k in given] + ["--spec"] * bool(args.spec)
            extra += ["--out"] * bool(args.out) + ["--dry_run"] * bool(args.dry_run)
            raise RobolearnError(
                f"{what} reads the sweep's own settings (its sweep.yaml); leave out "
                f"{' '.join(extra)}"
            )
    if args.action == "show":
        if not args.folder:
            raise RobolearnError("sweep show DIR: which sweep's folder?")
        from robolearn.app.sweep.results import show

        for line in show(args.folder):
            print(line)
        return 0
    if args.folder:
        raise RobolearnError(
            f"unexpected {args.folder!r}; did you mean 'sweep show {args.folder}'?"
        )
    if args.resume:
        from robolearn.app.sweep.driver import resume_sweep

        return resume_sweep(args.resume, log=lambda line: print(line, flush=True))
    file_values = load_spec_file(args.spec) if args.spec else {}
    spec = make_spec(file_values, {**flags, "out": args.out})
    from robolearn.app.sweep.driver import run_sweep

    return run_sweep(spec, dry_run=args.dry_run, log=lambda line: print(line, flush=True))
