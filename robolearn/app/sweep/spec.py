"""A sweep's settings: one schema for the YAML spec file and the command line, checked
before anything runs, and the trials they make.

The spec file's keys are the flags' names without their dashes (docs/sweeps.md lists
them); a flag given on the command line wins over the file. A search dimension is an
override path (``agent.algorithm.learning_rate``, ``env.rewards.alive.weight``, or the flag
``num_envs``) with either values (``1e-4,3e-4``; a list in YAML) or a range (``1e-4:1e-2``,
``1e-4:1e-2:log``, ``16:64:int``).
"""

from __future__ import annotations

import dataclasses
import math
import random
import re
from pathlib import Path
from typing import Any

from robolearn.errors import RobolearnError

SPEC_FILE = "sweep.yaml"
"""The file in a sweep's folder that holds its spec, resolved (what ``--resume`` and
``sweep show`` read)."""

SCHEDULERS = ("fifo", "asha", "pbt")
"""``fifo``: every trial runs its budget; ``asha``: weak trials stop early (ASHA);
``pbt``: population-based training."""

FLAG_PATHS = ("num_envs",)
"""Search paths that are ``robolearn train`` flags rather than config overrides."""

EVAL_KEYS = ("mean_return", "fall_rate", "mean_episode_length_s", "success_rate")
"""Keys of ``robolearn play --eval --json`` that every task reports (``success_rate`` only
where the task declares a success)."""

EVAL_FAMILIES = ("reward_terms", "metrics")
"""Nested keys of the evaluation, named ``reward_terms/<term>`` and ``metrics/<metric>``."""

PROGRESS_KEYS = (
    "Train/mean_reward",
    "Train/mean_episode_length",
    "Perf/env_steps_per_s",
    "Perf/collection_time",
    "Perf/learning_time",
)
"""Keys of progress.jsonl that every learner writes each iteration."""

PROGRESS_FAMILIES = {"Episode_Reward": "rewards", "Episode_Termination": "terminations"}
"""progress.jsonl's per-term keys (``Episode_Reward/<term>``) and the config section that
names their terms."""


@dataclasses.dataclass
class Range:
    """A search range: uniform between ``low`` and ``high``, on a log scale with ``log``,
    whole numbers with ``integer``."""

    low: float
    high: float
    log: bool = False
    integer: bool = False

    def sample(self, rng: random.Random) -> float | int:
        """A value drawn from the range."""
        if self.integer:
            return rng.randint(int(self.low), int(self.high))
        if self.log:
            return math.exp(rng.uniform(math.log(self.low), math.log(self.high)))
        return rng.uniform(self.low, self.high)

    def ends(self) -> list[str]:
        """The range's two ends as override values (each is checked against the config)."""
        return [format_value(self.low, self.integer), format_value(self.high, self.integer)]

    def __str__(self) -> str:
        kind = ":log" if self.log else ":int" if self.integer else ""
        return f"{self.ends()[0]}:{self.ends()[1]}{kind}"


Dimension = list[str] | Range
"""A search dimension: the values to try (override values as text), or a range."""


@dataclasses.dataclass
class SweepSpec:
    """Everything a sweep is: what trains, what is searched, what is measured, the budget,
    the scheduler and where it runs. Field names are the spec file's keys and the flags'."""

    task: str | None = None
    out: str | None = None
    """The sweep's folder: trials' run folders, the results table, Tune's state, Ray's logs."""
    algo: str | None = None
    num_envs: int | None = None
    device: str = "auto"
    engine: str | None = None
    overrides: list[str] = dataclasses.field(default_factory=list)
    """Overrides every trial takes."""
    grid: dict[str, Any] = dataclasses.field(default_factory=dict)
    """Path -> values; every combination is tried."""
    random: dict[str, Any] = dataclasses.field(default_factory=dict)
    """Path -> values or a range; ``samples`` draws, each crossed with the grid."""
    samples: int = 4
    """Configurations drawn by random or Optuna search."""
    optuna: bool = False
    """Optuna's TPE chooses each configuration from the results so far (``random``'s space)."""
    search_seed: int = 0
    """Seeds the draws of random and Optuna search."""
    seeds: list[int] = dataclasses.field(default_factory=lambda: [1])
    """Each configuration trains once per seed."""
    metric: str = "mean_return"
    mode: str = "max"
    max_iterations: int | None = None
    """Iterations per trial (default: the task's)."""
    max_minutes: float | None = None
    """Minutes of training per trial (as well as, or instead of, the iterations)."""
    checkpoint_every: int | None = None
    """Iterations between a trial's checkpoints, which is when an evaluation metric is
    measured and PBT may exploit (default: a tenth of the iterations)."""
    eval_envs: int = 256
    """Envs (one episode each) of an evaluation metric's measurement."""
    scheduler: str = "fifo"
    grace_period: int | None = None
    """ASHA: iterations before a trial may be stopped (default: a quarter of the budget)."""
    reduction_factor: int = 2
    """ASHA: the share of trials kept at each rung is 1 in this."""
    pbt_members: int = 4
    perturb: dict[str, Any] = dataclasses.field(default_factory=dict)
    """PBT: path -> values or a range, resampled or perturbed by 0.8x/1.2x on exploit."""
    perturbation_interval: int | None = None
    """PBT: iterations between exploits (default: ``checkpoint_every``)."""
    cpus_per_trial: float = 1.0
    gpus_per_trial: float = 0.0
    nproc_per_trial: int = 1
    """Ranks of a trial's training (``train --nproc``): a trial over several GPUs of one
    node; its CPUs and GPUs are shared among them."""
    max_concurrent: int | None = None
    """Trials running at once (default: as many as the resources allow)."""
    max_failures: int = 2
    """Restarts of a trial whose process or worker died, from its latest checkpoint."""
    address: str | None = None
    """A running Ray cluster to join (``auto``, ``ray://host:10001``); default: start Ray
    here with this machine's cores."""
    num_cpus: int | None = None
    """CPUs of the local Ray (default: the cores this process may use)."""
    imports: list[str] = dataclasses.field(default_factory=list)

    @property
    def search(self) -> str:
        """``grid``, ``random`` or ``optuna``: how configurations are chosen."""
        return "optuna" if self.optuna else "random" if self.random else "grid"


SPEC_KEYS = tuple(f.name for f in dataclasses.fields(SweepSpec))


def format_value(value: float | int | str, integer: bool = False) -> str:
    """A number as an override's value: short, and exact enough to reproduce."""
    if isinstance(value, str):
        return value
    if integer or (isinstance(value, int) and not isinstance(value, bool)):
        return str(int(value))
    return f"{value:.4g}"


def split_values(text: str) -> list[str]:
    """``a,b,[1,2]`` -> ``['a', 'b', '[1,2]']``: commas inside brackets belong to a value."""
    values, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += (char in "[(" and 1) or (char in "])" and -1) or 0
        if char == "," and depth == 0:
            values.append(text[start:i].strip())
            start = i + 1
    values.append(text[start:].strip())
    return values


_RANGE_RE = re.compile(r"^([^:,\[\]]+):([^:,\[\]]+)(?::(log|int))?$")


def parse_dimension(text: Any, where: str, ranges: bool) -> Dimension:
    """A dimension's values from the command line's or the file's form: ``V1,V2``, a YAML
    list, or (``ranges``) ``LO:HI[:log|:int]`` / ``{low, high, log, int}``."""
    if isinstance(text, dict) and ranges:
        unknown = set(text) - {"low", "high", "log", "int"}
        if unknown or not {"low", "high"} <= set(text):
            raise RobolearnError(f"{where}: a range is {{low: L, high: H, log: bool, int: bool}}")
        return _range(
            text["low"], text["high"], bool(text.get("log")), bool(text.get("int")), where
        )
    if isinstance(text, list | tuple):
        values = [format_value(v) if not isinstance(v, list) else str(v) for v in text]
    else:
        text = str(text).strip()
        match = _RANGE_RE.match(text) if ranges else None
        if match:
            return _range(match[1], match[2], match[3] == "log", match[3] == "int", where)
        values = split_values(text) if text else []
    values = [v for v in values if v != ""]
    if not values:
        raise RobolearnError(f"{where}: no values to try (an empty range)")
    if len(set(values)) < len(values):
        raise RobolearnError(f"{where}: a value is given twice ({', '.join(values)})")
    return values


def _range(low: Any, high: Any, log: bool, integer: bool, where: str) -> Range:
    try:
        lo, hi = float(low), float(high)
    except (TypeError, ValueError):
        raise RobolearnError(f"{where}: a range's ends are numbers, got {low!r}:{high!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi)) or not lo < hi:
        raise RobolearnError(
            f"{where}: an empty range ({low} to {high}); its low end must be below its high end"
        )
    if log and lo <= 0:
        raise RobolearnError(f"{where}: a log range starts above 0, got {low}")
    if integer and (lo != int(lo) or hi != int(hi)):
        raise RobolearnError(f"{where}: an integer range has whole ends, got {low}:{high}")
    return Range(lo, hi, log, integer)


def parse_assignments(items: list[str], flag: str, ranges: bool) -> dict[str, Dimension]:
    """``--grid PATH=V1,V2`` (repeatable) as path -> dimension."""
    out: dict[str, Dimension] = {}
    for item in items:
        path, sep, values = item.partition("=")
        path = path.strip().removeprefix("--")
        if not sep or not path:
            form = "PATH=V1,V2,... or PATH=LO:HI[:log]" if ranges else "PATH=V1,V2,..."
            raise RobolearnError(f"{flag} {item!r}: expected {form}")
        if path in out:
            raise RobolearnError(f"{flag}: {path} is given twice")
        out[path] = parse_dimension(values, f"{flag} {path}", ranges)
    return out


def load_spec_file(path: str) -> dict[str, Any]:
    """A spec file's keys, checked against the schema (values are checked with the flags')."""
    from robolearn.config import load_yaml

    file = Path(path)
    if not file.is_file():
        raise RobolearnError(f"--spec {path}: no such file")
    try:
        data = load_yaml(file)
    except Exception as exc:  # a YAML error: its first line says where
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise RobolearnError(f"--spec {path}: not a YAML spec ({first})") from None
    if not isinstance(data, dict):
        raise RobolearnError(f"--spec {path}: a spec is a mapping of the sweep's settings")
    unknown = sorted(set(data) - set(SPEC_KEYS))
    if unknown:
        raise RobolearnError(
            f"--spec {path}: unknown key(s) {', '.join(unknown)}; the keys are the flags' "
            f"names: {', '.join(SPEC_KEYS)}"
        )
    return data


def make_spec(file_values: dict[str, Any], flag_values: dict[str, Any]) -> SweepSpec:
    """The spec from a file's values with the given flags on top (a flag left out is None,
    or an empty list)."""
    values = dict(file_values)
    for key, value in flag_values.items():
        if value is not None and value != [] and value != {} and value is not False:
            values[key] = value
    for key in ("grid", "random", "perturb"):
        given = values.get(key) or {}
        if isinstance(given, list):  # flags: PATH=VALUES items
            values[key] = parse_assignments(given, f"--{key}", key != "grid")
        elif isinstance(given, dict):
            values[key] = {
                str(p).removeprefix("--"): parse_dimension(v, f"{key} {p}", key != "grid")
                for p, v in given.items()
            }
        else:
            raise RobolearnError(f"{key}: a mapping of path to values")
    for key in ("overrides", "seeds", "imports"):
        if key in values and not isinstance(values[key], list):
            raise RobolearnError(f"{key}: a list")
    try:
        return SweepSpec(**values)
    except TypeError as exc:
        raise RobolearnError(f"the spec: {exc}") from None


def spec_to_data(spec: SweepSpec) -> dict[str, Any]:
    """The spec as its YAML file holds it (ranges in their ``LO:HI[:log]`` form)."""
    data = dataclasses.asdict(spec)
    for key in ("grid", "random", "perturb"):
        data[key] = {
            p: str(d) if isinstance(d, Range) else list(d) for p, d in getattr(spec, key).items()
        }
    return data


@dataclasses.dataclass
class Point:
    """One trial of a grid or random search: its configuration and seed."""

    values: dict[str, str]
    """Search path -> value (override text)."""
    seed: int


def dimensions(spec: SweepSpec) -> dict[str, Dimension]:
    """Every searched path with its dimension (PBT's perturbed paths included)."""
    return {**spec.grid, **spec.random, **spec.perturb}


def grid_points(spec: SweepSpec) -> list[dict[str, str]]:
    """Every combination of the grid's values (one empty configuration without a grid)."""
    combos: list[dict[str, str]] = [{}]
    for path, values in spec.grid.items():
        combos = [{**c, path: v} for c in combos for v in values]
    return combos


def points(spec: SweepSpec) -> list[Point]:
    """The trials of a grid or random search, in the order they start: each configuration
    (grid combinations crossed with ``samples`` random draws) once per seed."""
    configs = grid_points(spec)
    if spec.random:
        rng = random.Random(spec.search_seed)
        draws = [
            {
                p: format_value(d.sample(rng), d.integer) if isinstance(d, Range) else rng.choice(d)
                for p, d in spec.random.items()
            }
            for _ in range(spec.samples)
        ]
        configs = [{**c, **d} for c in configs for d in draws]
    return [Point(c, seed) for c in configs for seed in spec.seeds]


def trial_count(spec: SweepSpec) -> int:
    """How many trials the sweep runs."""
    if spec.scheduler == "pbt":
        return spec.pbt_members
    if spec.optuna:
        return spec.samples * len(spec.seeds)
    return len(points(spec))


def as_arguments(values: dict[str, str]) -> tuple[list[str], list[str]]:
    """A configuration as (``robolearn train`` flags, overrides)."""
    flags: list[str] = []
    overrides: list[str] = []
    for path, value in values.items():
        if path in FLAG_PATHS:
            flags += [f"--{path}", value]
        else:
            overrides.append(f"{path}={value}")
    return flags, overrides


def describe(values: dict[str, Any]) -> str:
    """A configuration in one short line: ``learning_rate=3e-4 alive.weight=2``."""
    if not values:
        return "defaults"
    return " ".join(f"{_short(p)}={format_value(v)}" for p, v in values.items())


def _short(path: str) -> str:
    parts = path.split(".")
    return (
        ".".join(parts[-2:]) if len(parts) > 2 and parts[-1] in ("weight", "params") else parts[-1]
    )


def check_spec(spec: SweepSpec) -> SweepSpec:
    """The spec checked as far as it can be before Ray starts, its defaults filled in: the
    task, every path and value (against the task's configs), the ranges, the metric, the
    budget and the scheduler's settings. A mistake is a one-line RobolearnError."""
    from robolearn.app.configs import build_setup
    from robolearn.registry import get_task

    if not spec.task:
        raise RobolearnError("--task is required (or a spec file's task:)")
    get_task(spec.task)  # a mistyped name, before anything is built
    if spec.mode not in ("max", "min"):
        raise RobolearnError(f"--mode is max or min, got {spec.mode!r}")
    if spec.scheduler not in SCHEDULERS:
        raise RobolearnError(
            f"--scheduler is one of {', '.join(SCHEDULERS)}, got {spec.scheduler!r}"
        )
    _check_counts(spec)
    _check_search(spec)
    flags = {"num_envs": spec.num_envs, "max_iterations": spec.max_iterations}
    try:
        setup = build_setup(spec.task, list(spec.overrides), **flags)
    except RobolearnError as exc:
        raise RobolearnError(f"the sweep's overrides: {exc}") from None
    for path, dim in dimensions(spec).items():
        values = dim.ends() if isinstance(dim, Range) else dim
        for value in values:
            _check_value(spec, path, value)
    max_iterations = spec.max_iterations or setup.agent_cfg.max_iterations
    every = spec.checkpoint_every or max(1, max_iterations // 10)
    if every > max_iterations:
        raise RobolearnError(
            f"--checkpoint_every {every} is above the trials' {max_iterations} iterations"
        )
    spec = dataclasses.replace(spec, max_iterations=max_iterations, checkpoint_every=every)
    _check_metric(spec, setup.env_cfg)
    if spec.scheduler == "asha":
        grace = spec.grace_period or max(1, max_iterations // 4)
        if grace > max_iterations:
            raise RobolearnError(
                f"--grace_period {grace} is above the trials' {max_iterations} iterations: "
                "ASHA would stop nothing"
            )
        spec = dataclasses.replace(spec, grace_period=grace)
    if spec.scheduler == "pbt":
        interval = spec.perturbation_interval or every
        if interval >= max_iterations:
            raise RobolearnError(
                f"--perturbation_interval {interval} leaves no exploit within the trials' "
                f"{max_iterations} iterations"
            )
        spec = dataclasses.replace(spec, perturbation_interval=interval)
    return spec


def _check_counts(spec: SweepSpec) -> None:
    if not spec.seeds:
        raise RobolearnError("--seeds: at least one seed")
    if len(set(spec.seeds)) < len(spec.seeds):
        raise RobolearnError(f"--seeds: a seed is given twice ({spec.seeds})")
    for name in ("samples", "pbt_members", "eval_envs", "reduction_factor"):
        if getattr(spec, name) < 1:
            raise RobolearnError(f"--{name} must be >= 1, got {getattr(spec, name)}")
    for name in ("max_iterations", "checkpoint_every", "grace_period", "perturbation_interval"):
        value = getattr(spec, name)
        if value is not None and value < 1:
            raise RobolearnError(f"--{name} must be >= 1, got {value}")
    if spec.max_minutes is not None and not spec.max_minutes > 0:
        raise RobolearnError(f"--max_minutes must be > 0, got {spec.max_minutes}")
    if spec.max_failures < 0:
        raise RobolearnError(f"--max_failures must be >= 0, got {spec.max_failures}")
    if not spec.cpus_per_trial > 0:
        raise RobolearnError(f"--cpus_per_trial must be > 0, got {spec.cpus_per_trial}")
    if spec.gpus_per_trial < 0:
        raise RobolearnError(f"--gpus_per_trial must be >= 0, got {spec.gpus_per_trial}")
    if spec.nproc_per_trial < 1:
        raise RobolearnError(f"--nproc_per_trial must be >= 1, got {spec.nproc_per_trial}")
    if (
        spec.nproc_per_trial > 1
        and spec.gpus_per_trial
        and spec.gpus_per_trial < spec.nproc_per_trial
    ):
        raise RobolearnError(
            f"--nproc_per_trial {spec.nproc_per_trial} ranks on GPUs take a GPU each: "
            f"--gpus_per_trial {spec.nproc_per_trial}"
        )
    if spec.max_concurrent is not None and spec.max_concurrent < 1:
        raise RobolearnError(f"--max_concurrent must be >= 1, got {spec.max_concurrent}")


def _check_search(spec: SweepSpec) -> None:
    overlap = (set(spec.grid) & set(spec.random)) | (set(spec.grid) | set(spec.random)) & set(
        spec.perturb
    )
    if overlap:
        raise RobolearnError(
            f"{', '.join(sorted(overlap))}: searched twice (grid, random, perturb)"
        )
    fixed = {o.partition("=")[0] for o in spec.overrides} & set(dimensions(spec))
    if fixed:
        raise RobolearnError(f"{', '.join(sorted(fixed))}: both searched and fixed by an override")
    for path in dimensions(spec):
        if path in FLAG_PATHS:
            continue
        if not path.startswith(("env.", "agent.")):
            raise RobolearnError(
                f"{path}: a search path is an override path (env.<path> or agent.<path>) or "
                f"one of the flags {', '.join(FLAG_PATHS)}"
            )
    if spec.grid and any(isinstance(d, Range) for d in spec.grid.values()):
        raise RobolearnError("--grid takes values, not a range (--random takes ranges)")
    if spec.scheduler == "pbt":
        if not spec.perturb:
            raise RobolearnError("--scheduler pbt needs --perturb PATH=... (what it adapts)")
        if spec.grid or spec.random or spec.optuna:
            raise RobolearnError(
                "--scheduler pbt searches its --perturb paths itself; leave out --grid, "
                "--random and --optuna"
            )
        if spec.pbt_members < 2:
            raise RobolearnError("--pbt_members: a population has at least 2 members")
    elif spec.perturb:
        raise RobolearnError("--perturb is PBT's; add --scheduler pbt")
    if spec.optuna:
        if not spec.random:
            raise RobolearnError("--optuna searches the --random space; give --random PATH=...")
        if spec.grid:
            raise RobolearnError(
                "--optuna chooses every value itself: give the grid's paths as --random "
                "PATH=V1,V2 (a choice)"
            )
        if spec.scheduler == "asha" and len(spec.seeds) > 1:
            raise RobolearnError(
                "--optuna with several --seeds averages each configuration over its seeds, "
                "which ASHA's early stops would cut short; use one seed, or --scheduler fifo"
            )


def _check_value(spec: SweepSpec, path: str, value: str) -> None:
    """One searched value, applied to the task's configs: an unknown path or a value of the
    wrong kind is named with the flag it came from."""
    from robolearn.app.configs import build_setup

    kind = "perturb" if path in spec.perturb else "random" if path in spec.random else "grid"
    try:
        if path == "num_envs":
            number = int(value)
            build_setup(spec.task, list(spec.overrides), num_envs=number)
        else:
            build_setup(spec.task, [*spec.overrides, f"{path}={value}"], num_envs=spec.num_envs)
    except RobolearnError as exc:  # first: a RobolearnError is a ValueError too
        raise RobolearnError(f"--{kind} {path}={value}: {exc}") from None
    except ValueError:
        raise RobolearnError(f"--{kind} {path}: {value!r} is not an integer") from None


def known_metrics(env_cfg: Any) -> tuple[list[str], list[str]]:
    """(the evaluation's keys, progress.jsonl's keys) a metric may name for this task; a
    command's own step metrics are ``<command>/<name>``, any name."""
    evaluation = [k for k in EVAL_KEYS if k != "success_rate" or env_cfg.success is not None]
    evaluation += [f"reward_terms/{n}" for n in env_cfg.rewards]
    evaluation += [f"metrics/{n}" for n in env_cfg.metrics]
    progress = list(PROGRESS_KEYS)
    for prefix, section in PROGRESS_FAMILIES.items():
        progress += [f"{prefix}/{n}" for n in getattr(env_cfg, section)]
    return evaluation, progress


def metric_source(metric: str, env_cfg: Any) -> str | None:
    """``eval`` when ``metric`` is measured by evaluating a checkpoint, ``progress`` when
    read from progress.jsonl, None when no trial would report it."""
    evaluation, progress = known_metrics(env_cfg)
    if metric in evaluation:
        return "eval"
    if metric in progress:
        return "progress"
    command = metric.partition("/")[0]
    if "/" in metric and command in env_cfg.commands:
        return "eval"
    return None


def _check_metric(spec: SweepSpec, env_cfg: Any) -> None:
    if metric_source(spec.metric, env_cfg) is not None:
        return
    evaluation, progress = known_metrics(env_cfg)
    commands = [f"{c}/<its metric>" for c in env_cfg.commands]
    if spec.metric == "success_rate":
        raise RobolearnError(f"--metric success_rate: {spec.task} declares no success")
    raise RobolearnError(
        f"--metric {spec.metric}: no trial of {spec.task} reports it; the evaluation's: "
        f"{', '.join(evaluation + commands)}; progress.jsonl's: {', '.join(progress)}"
    )
