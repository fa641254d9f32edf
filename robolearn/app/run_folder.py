"""A training run's folder and what it writes there, whichever learner trains it: the run
folder (new, or the one to resume) and the lock that keeps it to one process, the params/
it writes, and the signal handling that turns Ctrl-C or SIGTERM into a checkpoint and a
clean exit (:mod:`robolearn.app.train`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import os
import shutil
import signal
import socket
from pathlib import Path
from typing import IO, Any

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


LOCK_FILE = ".lock"
"""The file in a run folder that the process training the run holds locked (``flock``), with
its pid and host written in it."""

# flock on a file system that does not lock (Lustre mounted without -o flock, some NFS)
_NO_LOCKS = (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL)


def lock_run(path: Path) -> IO[bytes] | None:
    """Hold the run folder ``path`` for this process: the open lock file, whose lock the
    kernel drops when it is closed or the process ends, however (kill -9 too). A run held
    by another process is a RobolearnError naming that process; None where the file system
    cannot lock (the run is then unprotected)."""
    lock = open(os.open(path / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644), "r+b")  # noqa: SIM115
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        holder = lock.read(200).decode(errors="replace").split()
        lock.close()
        if exc.errno in _NO_LOCKS:
            return None
        if exc.errno != errno.EWOULDBLOCK:
            raise
        raise RobolearnError(
            f"run {path} is being trained by {_process(holder)}, which holds "
            f"{path / LOCK_FILE}: two processes would interleave its checkpoints and logs; "
            "wait for it to end (or stop it), then --resume again"
        ) from None
    lock.truncate(0)
    lock.write(f"{os.getpid()} {socket.gethostname()}\n".encode())
    lock.flush()
    return lock


def _process(holder: list[str]) -> str:
    """The process a lock file names (pid, host), as a message says it."""
    if not holder:
        return "another process"  # locked, its pid not yet written
    pid, host = holder[0], holder[1] if len(holder) > 1 else ""
    return f"process {pid}" + (f" on {host}" if host and host != socket.gethostname() else "")


@dataclasses.dataclass
class RunFolder:
    """The folder a run writes to, and what this process created (and alone may delete)."""

    path: Path
    checkpoint: Path | None = None
    created: list[Path] = dataclasses.field(default_factory=list)
    note: str = ""
    lock: IO[bytes] | None = None
    """The held lock file (:func:`lock_run`): rank 0's alone, never sent to other ranks."""

    def release(self) -> None:
        """Let another process train the run (the process's end does it too)."""
        if self.lock is not None:
            self.lock.close()
            self.lock = None

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
    """A new run folder (created now, by this process only), or the run to resume; either
    locked for this process (:func:`lock_run`). With ``tidy`` false a run to resume is only
    looked at (a check before the ranks start): its lock is tried, so that a run another
    process holds is refused, and let go again, and no temp file is removed."""
    log_root = Path(opts.log_root)
    if not opts.resume:
        parents = [p for p in (log_root / experiment, log_root) if not p.exists()]
        path = create_run_dir(log_root, experiment, opts.run_name)
        folder = RunFolder(path, created=[path, *parents])
        try:
            folder.lock = lock_run(path)
        except BaseException:
            folder.discard_if_empty()
            raise
        return folder
    newest = resolve_run(log_root, experiment, opts.load_run)
    run_dir = resolve_run(log_root, experiment, opts.load_run, need_checkpoint=True)
    checkpoint = resolve_checkpoint(run_dir, opts.checkpoint)
    lock = lock_run(run_dir)  # before anything in it changes
    if not tidy and lock is not None:
        lock.close()
        lock = None
    note = ""
    if run_dir != newest:
        note = f"the newest run {newest.name} has no checkpoint; "
    removed = remove_stale_temp_files(run_dir) if tidy else []
    if removed:
        note += f"removed {len(removed)} unfinished checkpoint write(s) of a killed run; "
    return RunFolder(run_dir, checkpoint, note=note, lock=lock)


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
