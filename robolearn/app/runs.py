"""Run folders and checkpoint files, and the checkpoint that the command line names.

A training run lives in ``<log_root>/<experiment>/<YYYY-MM-DD_HH-MM-SS>[.<k>][_<run_name>]/``
(``.<k>`` only when runs started in the same second: a parallel seed sweep gets one folder
per run, each created by exactly one process):

    params/env.yaml, params/agent.yaml   the resolved configs, typed: they load back equal
    params/run.yaml                      task, overrides, seed, engine, device, imports
    params/versions.yaml                 package versions and the git state
    model_<iterations>.pt                checkpoints (written atomically)
    progress.jsonl                       one JSON object per iteration
    events.out.tfevents.*                TensorBoard scalars
    videos/, exported/                   when asked for
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import os
import re
from pathlib import Path
from typing import Any

from robolearn.assets import pretrained_path
from robolearn.config import load_config, load_yaml
from robolearn.errors import RobolearnError
from robolearn.files import CHECKPOINT_RE, remove_orphans
from robolearn.rl.config import AgentCfg

_NAME_RE = re.compile(r"[A-Za-z0-9._-]+")
_RUN_RE = re.compile(r"^(\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d)(?:\.(\d+))?(?:_(.*))?$")
# Temp files of checkpoint writes: write_atomic names them .<file>.<pid>.<random>.tmp
_TEMP_RE = re.compile(r"^\.model_\d+\.pt\.(\d+)\.[^.]+\.tmp$")


PARAMS_FORMAT = 2
"""``format`` in params/run.yaml: 2 since env.yaml and agent.yaml name every config's type
(they load back); runs before wrote no format and cannot be reloaded."""


@dataclasses.dataclass
class RunParams:
    """What a run folder's params/ says about how the run started."""

    run_dir: Path
    task: str
    env_cfg: Any
    """The env config the run started with (a ManagerBasedRLEnvCfg), engine resolved."""
    agent_cfg: AgentCfg
    overrides: list[str]
    """The overrides relative to the task's configs (a run started ``--from`` another
    records the other's first)."""
    imports: list[str]
    """The ``--import`` modules the run was started with."""
    import_path: list[str] = dataclasses.field(default_factory=list)
    """Folders the run's module names were found in, outside the import path (the working
    folder it was started from)."""
    algo: str | None = None
    """The learner that trained it (run.yaml's ``algo``; None in runs from before it was
    recorded, which were PPO's)."""
    fork: Fork | None = None
    """With ``train --from RUN --checkpoint FILE``: the checkpoint the new run's learner
    starts from."""


@dataclasses.dataclass
class Fork:
    """A checkpoint of a run that a new run (``--from`` that run) continues: its learner's
    state, iterations done included, with the new run's own configs and folder."""

    path: Path
    data: dict[str, Any]
    """The checkpoint as :func:`~robolearn.rl.checkpoint.load_checkpoint` read it."""

    def overrides_since(self, started: list[str]) -> list[str]:
        """The overrides the checkpoint was trained with beyond ``started`` (the run's
        params/): those a ``--resume`` with new overrides added."""
        trained = list(self.data.get("overrides", []))
        return trained[len(started) :] if trained[: len(started)] == started else trained


def read_run_params(run_dir: str | os.PathLike) -> RunParams:
    """The configs and choices of the run in ``run_dir``, loaded back from its params/.

    The run's ``--import`` modules are imported first (their functions and classes are
    named in the configs). A folder that is not a run, a file that is missing, corrupt or
    names an import path that no longer exists is a RobolearnError naming the file.
    """
    run_dir = Path(run_dir)
    params = run_dir / "params"
    if not run_dir.is_dir():
        raise RobolearnError(f"{run_dir} is not a folder")
    if not params.is_dir():
        if checkpoints(run_dir):
            raise RobolearnError(
                f"{run_dir} holds checkpoints but its params/ is missing (deleted?), and a "
                "run's configs are read from there: restore params/ from a copy, or start a "
                f"new run with --task (--resume --load_run {run_dir} continues this one from "
                "its checkpoint)"
            )
        raise RobolearnError(f"{run_dir} is not a run folder: it has no params/")
    for name in ("run.yaml", "env.yaml", "agent.yaml"):
        if not (params / name).is_file():
            raise RobolearnError(f"{params / name} is missing")
    run = load_yaml(params / "run.yaml")
    where = params / "run.yaml"
    if not isinstance(run, dict) or not isinstance(run.get("task"), str):
        raise RobolearnError(f"{where} does not name the run's task")
    if run.get("format") != PARAMS_FORMAT:
        raise RobolearnError(
            f"{where} is of params format {run.get('format')!r}, this robolearn reads "
            f"{PARAMS_FORMAT} (runs before typed params/ cannot be reloaded)"
        )
    lists = {}
    for key in ("overrides", "imports", "import_path"):
        value = run.get(key) or []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise RobolearnError(f"{where}: {key} must be a list of strings, got {value!r}")
        lists[key] = value
    _import_recorded(lists["imports"], lists["import_path"], where)
    from robolearn.env import ManagerBasedRLEnvCfg

    return RunParams(
        run_dir=run_dir,
        task=run["task"],
        env_cfg=load_config(params / "env.yaml", ManagerBasedRLEnvCfg, root="env"),
        agent_cfg=load_config(params / "agent.yaml", AgentCfg, root="agent"),
        overrides=lists["overrides"],
        imports=lists["imports"],
        import_path=lists["import_path"],
        algo=run.get("algo") if isinstance(run.get("algo"), str) else None,
    )


def _import_recorded(modules: list[str], search: list[str], where: Path) -> None:
    """Import a run's recorded ``--import`` modules; an error names the file recording them."""
    if not modules:
        return
    from robolearn.registry import import_tasks

    try:
        import_tasks(modules, search=search)
    except RobolearnError as exc:
        raise RobolearnError(f"{where}: {exc}") from exc


def recorded_imports(path: str | os.PathLike) -> tuple[list[str], list[str], Path] | None:
    """The ``--import`` modules and folders recorded for the run a policy comes from, and
    the file recording them; None when nothing is recorded.

    ``path``: a run folder, a checkpoint in one, or an exported file, whose policy.json
    (schema 3) records them, or whose run lies a folder above (``<run>/exported/``)."""
    path = Path(path).expanduser()
    folder = path if path.is_dir() else path.parent
    description = folder / "policy.json"
    if not path.is_dir() and description.is_file():
        recorded = load_yaml(description).get("imports") or {}
        if recorded.get("modules"):
            return list(recorded["modules"]), list(recorded.get("path") or []), description
    for run_dir in (folder, folder.parent):
        run_yaml = run_dir / "params" / "run.yaml"
        if run_yaml.is_file():
            run = load_yaml(run_yaml)
            if not isinstance(run, dict) or not run.get("imports"):
                return None
            return list(run["imports"]), list(run.get("import_path") or []), run_yaml
    return None


def import_for_policy(task: str | None, checkpoint: str | None, log_root: str | Path) -> None:
    """Make a task defined by an ``--import`` module known before a policy of it is played,
    viewed or exported, from what its run recorded: the run that ``checkpoint`` names (a
    path), else the task's newest run under ``log_root``. Nothing is imported when the task
    is known already, or nothing was recorded."""
    from robolearn.registry import task_names

    if task is not None and task in task_names():
        return
    candidates: list[Path] = []
    if checkpoint and checkpoint not in ("latest", "pretrained"):
        candidates.append(Path(checkpoint))
    if task is not None and (Path(log_root) / task).is_dir():
        candidates += sorted((Path(log_root) / task).iterdir(), key=_run_order, reverse=True)
    for candidate in candidates:
        recorded = recorded_imports(candidate) if candidate.exists() else None
        if recorded is not None:
            modules, search, where = recorded
            _import_recorded(modules, search, where)
            return


def check_name(name: str, what: str) -> str:
    """``name`` if it is a safe single folder name (no separator, not ``.``/``..``)."""
    if not _NAME_RE.fullmatch(name) or name in (".", ".."):
        raise RobolearnError(f"{what} {name!r} may only hold letters, digits, '.', '_' and '-'")
    return name


def create_run_dir(log_root: Path, experiment: str, run_name: str = "") -> Path:
    """Create and return a new run folder; this process is the only one that created it.

    The folder is made with an exclusive ``mkdir``: when another run took the same second's
    name, the next free ``.<k>`` is used instead, so concurrent runs never share a folder
    and an existing folder is never reused.
    """
    check_name(experiment, "experiment name")
    if run_name:
        check_name(run_name, "run name")
    stamp = _dt.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    parent = log_root / experiment
    parent.mkdir(parents=True, exist_ok=True)
    for k in range(1, 10_000):
        name = stamp if k == 1 else f"{stamp}.{k}"
        path = parent / (f"{name}_{run_name}" if run_name else name)
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path
    raise RobolearnError(f"cannot find a free run folder name under {parent}")


def _run_order(path: Path) -> tuple[str, int, str]:
    """Start time, then the same-second counter, then the name."""
    m = _RUN_RE.match(path.name)
    if not m:
        return (path.name, 0, "")
    return (m.group(1), int(m.group(2) or 1), m.group(3) or "")


def list_runs(log_root: Path, experiment: str) -> list[Path]:
    """Run folders of an experiment, oldest first (their names start with a timestamp)."""
    root = log_root / experiment
    if not root.is_dir():
        return []
    return sorted(
        (p for p in root.iterdir() if p.is_dir() and (p / "params").is_dir()), key=_run_order
    )


def find_run(
    log_root: Path, experiment: str, load_run: str | None = None, starting: bool = False
) -> Path | None:
    """The newest run folder of ``experiment`` that ``load_run`` names (a folder name, a
    regex or a run name; None: any), or None when there is none (yet).

    With ``starting``, the folder of a run that is still starting counts too: training
    creates its run folder, builds its envs, and only then writes params/ (a folder named
    as :func:`create_run_dir` names them, without params/).
    """
    root = log_root / experiment
    if not root.is_dir():
        return None
    runs = sorted(
        (
            p
            for p in root.iterdir()
            if p.is_dir() and ((p / "params").is_dir() or (starting and _RUN_RE.match(p.name)))
        ),
        key=_run_order,
    )
    if load_run:
        runs = [r for r in runs if _matches(load_run, r.name) or _run_order(r)[2] == load_run]
    return runs[-1] if runs else None


def checkpoints(run_dir: Path) -> list[Path]:
    """Checkpoints of a run, by iteration."""
    found = [
        (int(m.group(1)), p)
        for p in run_dir.glob("model_*.pt")
        if (m := CHECKPOINT_RE.match(p.name))
    ]
    return [p for _, p in sorted(found)]


def _matches(pattern: str, name: str) -> bool:
    """``name`` is ``pattern`` (a regex if it is one, else literal text)."""
    try:
        return re.fullmatch(pattern, name) is not None or name == pattern
    except re.error:
        return name == pattern


def resolve_run(
    log_root: Path, experiment: str, load_run: str | None, need_checkpoint: bool = False
) -> Path:
    """The run folder ``load_run`` names (a folder name, a regex, a run name, or a path),
    else the latest; with ``need_checkpoint``, the latest of those that holds a checkpoint."""
    if load_run and Path(load_run).is_dir():
        return Path(load_run)
    runs = list_runs(log_root, experiment)
    if not runs:
        _refuse_without_params(log_root, experiment, load_run)
        raise RobolearnError(f"no runs of {experiment!r} under {log_root / experiment}")
    if load_run:
        runs = [r for r in runs if _matches(load_run, r.name) or (_run_order(r)[2] == load_run)]
        if not runs:
            _refuse_without_params(log_root, experiment, load_run)
            names = ", ".join(r.name for r in list_runs(log_root, experiment)[-5:])
            raise RobolearnError(
                f"no run of {experiment!r} matches {load_run!r}; latest runs: {names}"
            )
    if need_checkpoint:
        saved = [r for r in runs if checkpoints(r)]
        if not saved:
            which = f"matching {load_run!r} " if load_run else ""
            raise RobolearnError(
                f"no run of {experiment!r} {which}has a checkpoint yet "
                f"(newest: {runs[-1]}); a run saves model_<iteration>.pt every save_interval "
                "iterations and when stopped"
            )
        return saved[-1]
    return runs[-1]


def _refuse_without_params(log_root: Path, experiment: str, load_run: str | None) -> None:
    """Where no run is found: a RobolearnError about the newest folder ``load_run`` names
    (any, without it) that holds checkpoints but no params/, which therefore was not
    counted as a run; nothing when there is none."""
    root = log_root / experiment
    orphans = sorted(
        (
            p
            for p in (root.iterdir() if root.is_dir() else ())
            if p.is_dir()
            and not (p / "params").is_dir()
            and checkpoints(p)
            and (not load_run or _matches(load_run, p.name) or _run_order(p)[2] == load_run)
        ),
        key=_run_order,
    )
    if orphans:
        run = orphans[-1]
        raise RobolearnError(
            f"{run} holds checkpoints but its params/ is missing (deleted?), so it does not "
            f"count as a run: restore params/ from a copy, or name the folder (--load_run "
            f"{run}) to use its checkpoints anyway; --from cannot start from it without params/"
        )


def resolve_checkpoint(run_dir: Path, checkpoint: str | None) -> Path:
    """The checkpoint file in ``run_dir`` named by ``checkpoint`` (file name, regex), else the
    latest."""
    found = checkpoints(run_dir)
    if checkpoint:
        path = Path(checkpoint)
        if path.is_file():
            return path
        matching = [p for p in found if _matches(checkpoint, p.name)]
        if not matching:
            raise RobolearnError(
                f"no checkpoint {checkpoint!r} in {run_dir}; there: "
                f"{', '.join(p.name for p in found) or 'none'}"
            )
        return matching[-1]
    if not found:
        if not (run_dir / "params").is_dir():
            raise RobolearnError(
                f"{run_dir} is a folder, not a checkpoint, and not a run folder (no params/ "
                "and no model_<iteration>.pt); give a checkpoint file or a run folder"
            )
        raise RobolearnError(f"run {run_dir} has no checkpoint (model_<iteration>.pt)")
    return found[-1]


def remove_stale_temp_files(folder: Path, pattern: re.Pattern[str] = _TEMP_RE) -> list[Path]:
    """Delete the temp files and folders in ``folder`` whose writing process is gone (killed
    mid-write); a live process's are left alone. ``pattern`` matches their names, its first
    group the writer's pid: by default the temp files of checkpoint writes (``robolearn
    export`` passes its own). Returns what was deleted."""
    return remove_orphans(folder, pattern)


def find_checkpoint(
    task: str, experiment: str, checkpoint: str | None, load_run: str | None, log_root: str | Path
) -> Path:
    """A checkpoint from ``--checkpoint`` (a file, a run folder for its latest checkpoint,
    a checkpoint's name or regex, ``latest`` or ``pretrained``) and ``--load_run``: by
    default the latest checkpoint of the latest run of the task."""
    if checkpoint == "pretrained":
        return pretrained_path(task)
    if checkpoint and checkpoint != "latest":
        path = Path(checkpoint).expanduser()
        if path.is_dir():  # a run folder, as load_policy takes it: its latest checkpoint
            return resolve_checkpoint(path, None)
        if path.suffix in (".pt", ".onnx") or "/" in checkpoint:
            if not path.exists():
                raise RobolearnError(f"checkpoint {checkpoint} does not exist")
            return path
    run = resolve_run(Path(log_root), experiment, load_run, need_checkpoint=True)
    return resolve_checkpoint(run, None if checkpoint in (None, "latest") else checkpoint)


def is_shipped(path: Path) -> bool:
    """Whether ``path`` lies inside robolearn's installed package (a pretrained checkpoint):
    nothing may be written beside it."""
    import robolearn

    package = Path(robolearn.__file__).resolve().parent
    from robolearn.assets import ASSETS_DIR

    resolved = path.resolve()
    return any(resolved.is_relative_to(p.resolve()) for p in (package, ASSETS_DIR))


def output_dir(checkpoint: Path, log_root: str | Path, experiment: str) -> Path:
    """Where outputs about ``checkpoint`` go (videos, exports): beside it in its run folder,
    or ``<log_root>/<experiment>/pretrained/`` for a checkpoint shipped with robolearn."""
    if is_shipped(checkpoint):
        return Path(log_root) / experiment / "pretrained"
    return checkpoint.parent
