"""A training run's folder and what it writes there, whichever learner trains it: the run
folder (new, or the one to resume), the params/ it writes, and the signal handling that
turns Ctrl-C or SIGTERM into a checkpoint and a clean exit (:mod:`robolearn.app.train`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import signal
from pathlib import Path
from typing import Any

from robolearn.app.configs import Setup, versions
from robolearn.app.runs import (
    create_run_dir,
    remove_stale_temp_files,
    resolve_checkpoint,
    resolve_run,
)
from robolearn.config import save_config, save_yaml
from robolearn.errors import RobolearnError
from robolearn.rl.learner import StopRequest


def check_resume_flags(opts: Any) -> None:
    """``--load_run`` and ``--checkpoint`` choose what ``--resume`` continues: given alone,
    an error rather than a fresh run while the user believes it resumed."""
    if (opts.load_run or opts.checkpoint) and not opts.resume:
        raise RobolearnError(
            "--load_run and --checkpoint choose what --resume continues; add --resume"
        )


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


@dataclasses.dataclass
class RunFolder:
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


def pick_run_folder(opts: Any, experiment: str, tidy: bool = True) -> RunFolder:
    """A new run folder (created now, by this process only), or the run to resume, where
    (with ``tidy``) the temp files of killed checkpoint writes are removed."""
    log_root = Path(opts.log_root)
    if not opts.resume:
        parents = [p for p in (log_root / experiment, log_root) if not p.exists()]
        path = create_run_dir(log_root, experiment, opts.run_name)
        return RunFolder(path, created=[path, *parents])
    newest = resolve_run(log_root, experiment, opts.load_run)
    run_dir = resolve_run(log_root, experiment, opts.load_run, need_checkpoint=True)
    note = ""
    if run_dir != newest:
        note = f"the newest run {newest.name} has no checkpoint; "
    removed = remove_stale_temp_files(run_dir) if tidy else []
    if removed:
        note += f"removed {len(removed)} unfinished checkpoint write(s) of a killed run; "
    return RunFolder(run_dir, resolve_checkpoint(run_dir, opts.checkpoint), note=note)


def engine_that_ran(env) -> str:
    """The engine as ``env.sim.engine`` names it, never ``auto``: ``cpu``, ``warp-cpu`` or
    the GPU it ran on (``cuda:0``), so that a run started ``--from`` this one runs there."""
    name = env.scene.engine.name
    return str(env.device) if name == "cuda" else name


def write_params(params: Path, setup: Setup, run: dict[str, Any], engine: str) -> None:
    """The configs as the run started (typed: ``--from`` loads them back equal), how it
    started, and the versions it ran with."""
    env_cfg = setup.env_cfg
    env_cfg.sim.engine = engine  # what ran, not "auto"
    save_config(env_cfg, params / "env.yaml")
    save_config(setup.agent_cfg, params / "agent.yaml")
    save_yaml(run, params / "run.yaml")
    save_yaml(versions(), params / "versions.yaml")


def check_wandb() -> None:
    try:
        import wandb  # noqa: F401
    except ImportError as exc:
        raise RobolearnError("--logger wandb needs the wandb package: pip install wandb") from exc
