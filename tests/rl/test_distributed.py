"""Multi-process training on this CPU: 2 gloo ranks under torchrun."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from cli_helpers import progress, robolearn, run_train

from robolearn.rl.checkpoint import load_checkpoint

TASK = "cartpole_balance"


def test_two_gloo_ranks_train_one_policy(tmp_path):
    out = run_train(
        "--task",
        TASK,
        "--num_envs",
        64,
        "--max_iterations",
        4,
        "--nproc",
        2,
        "--log_root",
        tmp_path,
        "--run_name",
        "ddp",
        timeout=300,
    )
    runs = list((tmp_path / TASK).iterdir())
    assert len(runs) == 1  # one run folder, written by rank 0
    run = runs[0]
    # rank 0 alone logs: one progress line per iteration, not one per rank
    assert out.stdout.count("it 3/4 ") == 1 and out.stdout.count("training cartpole_balance") == 1
    assert "64 envs x 2 ranks (gloo)" in out.stdout
    assert "policy parameters identical on all 2 ranks" in out.stdout
    rows = progress(run)
    assert [r["iteration"] for r in rows] == [1, 2, 3, 4]
    assert rows[-1]["env_steps"] == 4 * 16 * 64 * 2  # both ranks' samples are counted
    data = load_checkpoint(run / "model_4.pt")
    assert data["world_size"] == 2
    # the normalizer saw both ranks' observations (all-reduced)
    assert int(data["model"]["actor_state_dict"]["obs_normalizer.count"]) == 4 * 16 * 64 * 2


def _workers(parent: int) -> list[int]:
    """PIDs of the training ranks under a launcher process (its descendants running train)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            status = (entry / "status").read_text()
        except OSError:
            continue
        if b"--distributed" in cmdline and b"torch.distributed.run" not in cmdline:
            ppid = int(next(ln for ln in status.splitlines() if ln.startswith("PPid:")).split()[1])
            chain, seen = ppid, 0
            while chain > 1 and seen < 10:
                if chain == parent:
                    pids.append(int(entry.name))
                    break
                try:
                    st = Path(f"/proc/{chain}/status").read_text()
                except OSError:
                    break
                chain = int(next(ln for ln in st.splitlines() if ln.startswith("PPid:")).split()[1])
                seen += 1
    return sorted(pids)


def _start(tmp_path: Path, run_name: str, extra: tuple[str, ...] = ()) -> subprocess.Popen:
    cmd = [
        sys.executable,
        "-m",
        "robolearn",
        "train",
        "--task",
        TASK,
        "--num_envs",
        "64",
        "--max_iterations",
        "100000",
        "--nproc",
        "2",
        "--log_root",
        str(tmp_path),
        "--run_name",
        run_name,
        *extra,
    ]
    return subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        start_new_session=True,
    )


def _wait_for_iterations(tmp_path: Path, run_name: str, n: int, timeout: float = 180) -> Path:
    deadline = time.time() + timeout
    while time.time() < deadline:
        runs = list((tmp_path / TASK).glob(f"*_{run_name}"))
        if runs and len(progress(runs[0])) >= n:
            return runs[0]
        time.sleep(0.2)
    raise AssertionError("training did not get going")


def _rank_of(pid: int) -> int:
    """The rank torchrun gave the process ``pid`` (its RANK environment variable)."""
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return int(next(v for v in environ if v.startswith(b"RANK=")).split(b"=")[1])


def test_a_killed_rank_ends_the_job_nonzero_within_the_bound(tmp_path):
    proc = _start(tmp_path, "kill")
    try:
        _wait_for_iterations(tmp_path, "kill", 2)
        workers = _workers(proc.pid)
        assert len(workers) == 2, workers
        victim = workers[-1]
        rank = _rank_of(victim)
        os.kill(victim, signal.SIGKILL)
        killed_at = time.time()
        _stdout, stderr = proc.communicate(timeout=90)
        elapsed = time.time() - killed_at
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 1, stderr[-3000:]
    assert elapsed < 60, elapsed
    # the dead rank named in one line, last; no torchrun traceback or failure report (the
    # survivor's own line, that the job cannot continue, may come before it)
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert lines[-1] == (
        f"robolearn: error: rank {rank} (pid {victim}) was killed by SIGKILL (out of memory, "
        "or kill -9); the job stopped its other ranks"
    ), stderr[-3000:]
    assert len(lines) <= 2 and "Traceback" not in stderr, stderr[-3000:]


def test_a_failed_rank_is_one_line_naming_it():
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError, ProcessFailure

    from robolearn.app.launch import failure_line

    def failed(**exits: tuple[int, int]) -> ChildFailedError:
        """A torchrun job whose ranks (rank<i>=(exit code, seconds)) ended thus."""
        failures = {}
        for name, (code, when) in exits.items():
            rank = int(name.removeprefix("rank"))
            failures[rank] = ProcessFailure(rank, 1000 + rank, code, "<N/A>")
            failures[rank].timestamp = when
        return ChildFailedError("robolearn", failures)

    # the first rank to fail is named, not the ranks the job stopped after it
    assert failure_line(failed(rank0=(-15, 11), rank1=(-9, 10))) == (
        "rank 1 (pid 1001) was killed by SIGKILL (out of memory, or kill -9); "
        "the job stopped its other ranks"
    )
    assert failure_line(failed(rank0=(1, 10), rank1=(-15, 11))) == (
        "rank 0 (pid 1000) exited with status 1; the job stopped its other ranks"
    )
    assert failure_line(failed(rank1=(-6, 10))).startswith(
        "rank 1 (pid 1001) was killed by SIGABRT;"
    )
    # a rank that printed a user's mistake (status 2) said it itself: nothing to add
    assert failure_line(failed(rank0=(2, 10), rank1=(-15, 11))) is None


def test_mistakes_under_nproc_are_one_line_before_any_rank_starts(tmp_path, capsys):
    from cli_helpers import one_line_error, robolearn_in_process

    base = ("train", "--task", TASK, "--nproc", 2, "--log_root", tmp_path)
    one_line_error(robolearn_in_process(capsys, *base, "env.bogus=1"), "'env.bogus'")
    one_line_error(robolearn_in_process(capsys, *base, "--resume"), "no runs of 'cartpole_balance'")
    assert not any(tmp_path.iterdir())


@pytest.mark.slow  # about a minute: the barrier's timeout, then torchrun's teardown
def test_a_hung_rank_ends_the_job_within_the_timeout(tmp_path):
    proc = _start(tmp_path, "hang", ("--dist_timeout", "10"))
    stopped = []
    try:
        _wait_for_iterations(tmp_path, "hang", 2)
        workers = _workers(proc.pid)
        os.kill(workers[-1], signal.SIGSTOP)  # a rank that hangs
        stopped.append(workers[-1])
        hung_at = time.time()
        _stdout, stderr = proc.communicate(timeout=120)
        elapsed = time.time() - hung_at
    finally:
        for pid in stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode != 0
    assert elapsed < 90, elapsed
    assert "rank 0: the job cannot continue" in stderr
    assert "Ranks 1 failed to pass monitoredBarrier" in stderr  # the hung rank, named


# slow: a whole run end to end (the default suite keeps under 10 minutes)
@pytest.mark.slow
def test_sigterm_saves_then_resume_continues(tmp_path):
    proc = _start(tmp_path, "pre")
    try:
        run = _wait_for_iterations(tmp_path, "pre", 2)
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert "stopped by SIGTERM" in stdout, (stdout[-2000:], stderr[-2000:])
    done = len(progress(run))
    saved = load_checkpoint(run / f"model_{done}.pt")
    assert saved["iterations"] == done
    out = run_train(
        "--task",
        TASK,
        "--num_envs",
        64,
        "--nproc",
        2,
        "--resume",
        "--load_run",
        "pre",
        "--max_iterations",
        done + 2,
        "--log_root",
        tmp_path,
        timeout=300,
    )
    assert f"({done} iterations done)" in out.stdout
    assert [r["iteration"] for r in progress(run)] == list(range(1, done + 3))
    after = load_checkpoint(run / f"model_{done + 2}.pt")
    assert torch.is_tensor(after["model"]["actor_state_dict"]["obs_normalizer.count"])


@pytest.mark.parametrize("extra", [("--distributed",)])
def test_distributed_without_torchrun_is_a_clear_error(tmp_path, extra):
    from cli_helpers import one_line_error

    out = robolearn("train", "--task", TASK, *extra, "--log_root", tmp_path)
    one_line_error(out, "needs torchrun's environment")
