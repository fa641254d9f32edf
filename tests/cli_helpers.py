"""Running the real command line in a subprocess, as a user would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import torch


def robolearn(
    *args: str, cwd: Path | None = None, timeout: float = 600, env: dict | None = None
) -> subprocess.CompletedProcess:
    """``python -m robolearn ARGS`` in a subprocess; ``env`` adds environment variables."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "robolearn", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
        env=env,
    )


def robolearn_in_process(capsys, *args: str) -> subprocess.CompletedProcess:
    """The real command line's ``main`` in this process, for errors raised before any work
    starts: the same status and stderr as :func:`robolearn` without starting an interpreter
    and importing torch (4 s a call on 2 cores). ``capsys`` is pytest's fixture."""
    from robolearn.cli import main

    capsys.readouterr()
    threads = torch.get_num_threads()
    try:
        status = main([str(a) for a in args])
    except SystemExit as exc:  # argparse's own usage errors
        status = exc.code
    finally:
        torch.set_num_threads(threads)
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(list(args), status, out, err)


def robolearn_here(*args: str) -> subprocess.CompletedProcess:
    """:func:`robolearn_in_process` where pytest's ``capsys`` cannot be had (a module's
    fixture): the output caught by redirecting ``sys.stdout`` and ``sys.stderr``."""
    import contextlib
    import io

    from robolearn.cli import main

    out, err = io.StringIO(), io.StringIO()
    threads = torch.get_num_threads()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main([str(a) for a in args])
    except SystemExit as exc:
        status = exc.code
    finally:
        torch.set_num_threads(threads)
    return subprocess.CompletedProcess(list(args), status, out.getvalue(), err.getvalue())


def cli_json(
    *args, capsys=None, cwd: Path | None = None, env: dict | None = None, timeout: float = 600
) -> dict:
    """The one JSON object a ``--json`` command (``play --eval``, ``export``, ``bench``)
    prints last; it must exit 0, else the assertion shows its stderr's tail. With
    ``capsys`` (pytest's fixture) the command runs in this process
    (:func:`robolearn_in_process`), else in a subprocess (:func:`robolearn`)."""
    if capsys is not None:
        out = robolearn_in_process(capsys, *args)
    else:
        out = robolearn(*args, cwd=cwd, timeout=timeout, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def play_eval(*args, **kwargs) -> dict:
    """``robolearn play --eval --json ARGS``: the evaluation's metrics (the JSON object it
    prints last); it must exit 0. ``kwargs`` as :func:`cli_json` takes them."""
    return cli_json("play", "--eval", "--json", *args, **kwargs)


def run_train(
    *args, cwd: Path | None = None, env: dict | None = None, timeout: float = 600
) -> subprocess.CompletedProcess:
    """``robolearn train ARGS`` in a subprocess, as a user runs it; it must exit 0, else
    the assertion shows its stderr's tail. Returns the finished process, for what it
    printed."""
    out = robolearn("train", *args, cwd=cwd, timeout=timeout, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    return out


def train_from_run(capsys, run: Path, log_root: Path) -> tuple[str, Path]:
    """``robolearn train --from RUN --max_iterations 1`` into ``log_root``, in this process:
    (its stdout, the new run's folder); a failure fails the calling test."""
    out = robolearn_in_process(
        capsys, "train", "--from", run, "--max_iterations", "1", "--log_root", log_root
    )
    assert out.returncode == 0, out.stderr[-3000:]
    (new,) = (log_root / run.parent.name).iterdir()
    return out.stdout, new


def train_here(*args) -> subprocess.CompletedProcess:
    """:func:`run_train` in this process (:func:`robolearn_here`): for runs whose outcome
    does not depend on a fresh interpreter, without one's 3-4 s of start-up."""
    out = robolearn_here("train", *args)
    assert out.returncode == 0, out.stderr[-3000:]
    return out


def run_script(script: Path, *args, timeout: float = 600) -> subprocess.CompletedProcess:
    """A standalone script (an example) run with this interpreter, its output captured."""
    return subprocess.run(
        [sys.executable, str(script), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def script_report(script: Path, *args) -> dict:
    """The one JSON object ``script ... --json`` prints last; it must exit 0."""
    out = run_script(script, *args, "--json")
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def walks(metrics: dict) -> bool:
    """``play --eval --json``'s metrics meet the learning curve's walking thresholds
    (benchmarks/learning_curve.py): under 5% falls, 0.25 m/s and 0.3 rad/s tracking."""
    return (
        metrics["fall_rate"] < 0.05
        and metrics["base_velocity/lin_vel_error"] < 0.25
        and metrics["base_velocity/ang_vel_error"] < 0.3
    )


def one_line_error(result: subprocess.CompletedProcess, fragment: str) -> None:
    """Exit status 2, one line on stderr naming the problem, no traceback."""
    assert result.returncode == 2, (result.returncode, result.stdout[-2000:], result.stderr[-2000:])
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, result.stderr
    assert fragment in lines[0], lines[0]
    assert "Traceback" not in result.stderr


def progress(run_dir: Path) -> list[dict]:
    path = run_dir / "progress.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def decode(path: Path) -> list:
    """Every frame of a video (numpy arrays), decoded by ffmpeg."""
    import imageio.v2 as imageio

    frames = []
    with imageio.get_reader(str(path), format="FFMPEG") as reader:
        for frame in reader:
            frames.append(frame)
    return frames


def shared_file(relative: str) -> Path:
    """A file of the shared folder beside the checkout (or the workplace's, for a clone
    elsewhere); the first candidate when neither has it."""
    candidates = [Path(__file__).resolve().parents[2] / "shared", Path("/work/shared")]
    for root in candidates:
        if (root / relative).exists():
            return root / relative
    return candidates[0] / relative


VENDOR_GO2 = shared_file("robots/unitree_mujoco/go2/go2.xml")
"""Unitree's own Go2 (BSD-3, beside the project, not in it): Menagerie's Go2 is in neither
test package, and the tests never download."""


def robot_model_overrides(task: str) -> list[str] | None:
    """Overrides that point a real robot's task at a model on this machine (Menagerie's G1
    from a test package, Unitree's Go2 beside the checkout); None where that model is not
    here."""
    if task.startswith("g1_"):
        from conftest import menagerie_roots

        return [f"env.scene.model={menagerie_roots()[0] / 'unitree_g1' / 'g1.xml'}"]
    if not task.startswith("go2_"):
        return []
    return [f"env.scene.model={VENDOR_GO2}"] if VENDOR_GO2.exists() else None


def local_robot_overrides(task: str) -> list[str]:
    """:func:`robot_model_overrides`, skipping the test where the model is not here."""
    overrides = robot_model_overrides(task)
    if overrides is None:
        import pytest

        pytest.skip(f"Unitree's go2.xml is not at {VENDOR_GO2}")
    return overrides


def runnable_tasks() -> list[tuple[str, list[str]]]:
    """Every registered task with the overrides that run it on this machine's models; a
    task whose model is not here is left out."""
    from robolearn.registry import task_names

    runs = ((name, robot_model_overrides(name)) for name in task_names())
    return [(name, overrides) for name, overrides in runs if overrides is not None]
