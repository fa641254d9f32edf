"""robolearn sweep on a local Ray (2 CPUs, one per trial): ASHA, PBT, Optuna, and the faults
a sweep survives (a worker killed, the command killed and resumed).

Every sweep runs as its own process, as a user runs it. Only the ASHA sweep is in the
default run (about a minute); the others are marked slow."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from cli_helpers import play_eval, progress, robolearn, robolearn_in_process

TASK = "cartpole_balance"
LR = "agent.algorithm.learning_rate"
LOCAL_RAY = ("--num_cpus", 2, "--cpus_per_trial", 1)
WAIT_S = 300
"""Deadline of each wait on a sweep's files or processes (a loaded 2-core machine)."""


def run_sweep(out: Path, *args) -> subprocess.CompletedProcess:
    """``robolearn sweep ... --out OUT`` to its end on a local Ray; it must exit 0."""
    result = robolearn("sweep", "--task", TASK, *LOCAL_RAY, "--out", out, *args, timeout=900)
    assert result.returncode == 0, (result.stdout[-3000:], result.stderr[-3000:])
    return result


def start_sweep(out: Path, *args) -> subprocess.Popen:
    """``robolearn sweep ... --out OUT`` started in the background, its output piped."""
    command = [sys.executable, "-m", "robolearn", "sweep", "--task", TASK, *LOCAL_RAY]
    command += ["--out", out, *args]
    return subprocess.Popen(
        [str(a) for a in command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def records(out: Path) -> dict[str, dict]:
    """Each trial's trial.json, by trial name."""
    found = {}
    for path in sorted((out / "trials").glob("t*/trial.json")):
        found[path.parent.name] = json.loads(path.read_text())
    return found


def wait_for(condition, what: str, timeout: float = WAIT_S):
    """Poll ``condition`` until it returns something true (returned), or fail naming ``what``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"{what}: not within {timeout:.0f} s")


def train_processes(out: Path) -> list[int]:
    """The pids of the live ``robolearn train`` processes of the sweep in ``out``."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:  # ended meanwhile
            continue
        if "robolearn" in args and "train" in args and any(str(out) in a for a in args):
            pids.append(int(entry.name))
    return pids


def parent_pid(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rpartition(")")[2].split()[1])  # after the command's (name): state, ppid


def finish(proc: subprocess.Popen) -> tuple[str, str]:
    """Wait for a sweep started by :func:`start_sweep`; it must exit 0."""
    try:
        stdout, stderr = proc.communicate(timeout=900)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, (stdout[-3000:], stderr[-3000:])
    return stdout, stderr


def merged_rows(run_dir: Path) -> dict[int, dict]:
    """progress.jsonl's rows by iteration, each with the latest value of every key so far
    (a key is left out of, or null in, an iteration in which no episode ended)."""
    rows, latest = {}, {}
    for row in progress(run_dir):
        latest = {**latest, **{k: v for k, v in row.items() if v is not None}}
        rows[row["iteration"]] = latest
    return rows


# ---- ASHA (default run) -------------------------------------------------------------------


def test_asha_stops_the_weak_learning_rates_and_ranks_the_rest(tmp_path, capsys):
    """Four fixed learning rates on cartpole, two that learn (1e-3, 3e-3: mean return about
    1.1 and 1.5 of 5 after 8 iterations, measured) and two that cannot (1e-6, 3e-7: about
    0.1, the untrained policy's). ASHA has one rung, at 8 iterations (a grace period above
    half the budget), where a trial below the median of those recorded before it stops.
    Learning and non-learning rates alternate in the grid, so that whichever of the two
    trials running at once reaches the rung first, a learning rate never meets a rung where
    only learning rates were recorded (where the lower would stop for no fault of its
    rate), and the last tiny rate always meets a learning rate's value above its own."""
    out = tmp_path / "lr"
    result = run_sweep(
        out, "--grid", f"{LR}=1e-3,1e-6,3e-3,3e-7", "--scheduler", "asha",
        "--grace_period", 8, "--max_iterations", 15, "--checkpoint_every", 8,
        "--eval_envs", 64, "--metric", "mean_return", "agent.algorithm.schedule=fixed",
    )  # fmt: skip
    trials = records(out)
    assert len(trials) == 4
    rate = {name: float(t["values"][LR]) for name, t in trials.items()}
    stopped = [name for name, t in trials.items() if t["status"] == "stopped"]
    assert stopped, {n: t["status"] for n, t in trials.items()}
    assert all(rate[name] < 1e-5 for name in stopped), {n: t["status"] for n, t in trials.items()}
    for name in stopped:
        assert trials[name]["iterations"] == 8
        assert f"{name} stopped: learning_rate=" in result.stdout
    learners = [name for name in trials if rate[name] >= 1e-3]
    assert all(trials[n]["status"] == "done" and trials[n]["iterations"] == 15 for n in learners)

    for name in ("results.csv", "results.json", "curves.png", "sweep.yaml", "ray.log"):
        assert (out / name).is_file(), name
    assert (out / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = json.loads((out / "results.json").read_text())
    assert table["metric"] == "mean_return" and table["mode"] == "max"
    rows = table["trials"]
    assert sorted(r["trial"] for r in rows) == sorted(trials)
    done = [r for r in rows if r["status"] == "done"]
    assert [r["metric"] for r in done] == sorted((r["metric"] for r in done), reverse=True)
    best = rows[0]
    assert best["status"] == "done" and float(best["values"][LR]) >= 1e-3
    assert best["metric"] > max(r["metric"] for r in rows if float(r["values"][LR]) < 1e-5)
    csv_lines = (out / "results.csv").read_text().splitlines()
    assert csv_lines[0] == f"trial,{LR},seed,mean_return,status,iterations,time_s"
    assert len(csv_lines) == 5 and csv_lines[1].startswith(f"{best['trial']},")

    show = robolearn_in_process(capsys, "sweep", "show", out)
    assert show.returncode == 0, show.stderr
    lines = show.stdout.splitlines()
    (at,) = [i for i, line in enumerate(lines) if line.startswith("best: ")]
    command = lines[at + 1].split()
    assert command[:4] == ["robolearn", "train", "--task", TASK]
    assert "agent.algorithm.schedule=fixed" in command
    (chosen,) = [arg for arg in command if arg.startswith(f"{LR}=")]
    assert float(chosen.partition("=")[2]) >= 1e-3

    # a trial's run folder is a normal run: it evaluates, and a new run forks from it
    (run,) = [Path(p) for p in best["run_dirs"]]
    assert run.parent.parent == (out / "trials" / best["trial"]).resolve()
    metrics = play_eval(
        "--task", TASK, "--num_envs", 16, "--checkpoint", run / "model_15.pt", capsys=capsys
    )
    assert metrics["episodes"] == 16 and metrics["mean_return"] > 0.5
    logs = tmp_path / "logs"
    forked = robolearn_in_process(
        capsys, "train", "--from", run, "--checkpoint", "model_15.pt", "--max_iterations", 16,
        "--log_root", logs,
    )  # fmt: skip
    assert forked.returncode == 0, forked.stderr[-3000:]
    (fork,) = (logs / TASK).iterdir()
    assert [r["iteration"] for r in progress(fork)] == [16]
    fork_params = yaml.safe_load((fork / "params" / "run.yaml").read_text())
    assert fork_params["from_run"] == str(run.resolve())


# ---- slow: PBT, Optuna, faults ------------------------------------------------------------


@pytest.mark.slow
def test_pbt_members_exploit_each_other_and_record_their_lineage(tmp_path, capsys):
    """Two members adapting the entropy coefficient, a checkpoint every 5 of 40 iterations:
    at each checkpoint the lower member takes the other's (measured: exploits in each of 9
    runs, the first at iteration 10 to 25)."""
    out = tmp_path / "pbt"
    run_sweep(
        out, "--scheduler", "pbt", "--pbt_members", 2,
        "--perturb", "agent.algorithm.entropy_coef=0.0001:0.05:log",
        "--metric", "Train/mean_reward", "--max_iterations", 40, "--checkpoint_every", 5,
    )  # fmt: skip
    trials = records(out)
    assert sorted(trials) == ["t000", "t001"]
    assert all(t["status"] == "done" and t["iterations"] == 40 for t in trials.values())
    exploits = [
        (name, segment)
        for name, t in trials.items()
        for segment in t["segments"]
        if segment["from_trial"] is not None
    ]
    assert exploits, {n: t["segments"] for n, t in trials.items()}
    for name, segment in exploits:
        donor = trials[segment["from_trial"]]
        assert segment["from_trial"] != name
        checkpoint = Path(segment["from_checkpoint"])
        assert str(checkpoint.parent) in [s["run_dir"] for s in donor["segments"]]
        assert checkpoint.name == f"model_{segment['at_iteration']}.pt"
        if segment["at_iteration"] == 40:
            # a finished member's last checkpoint (the other can finish first: 3 of 9
            # runs): nothing is left to train, and the member ends as that copy
            assert segment["run_dir"] is None
            continue
        run = Path(segment["run_dir"])
        assert run.parent.parent == (out / "trials" / name).resolve()
        params = yaml.safe_load((run / "params" / "run.yaml").read_text())
        assert params["from_checkpoint"] == str(checkpoint)
        ((path, value),) = segment["values"].items()
        assert f"{path}={value}" in params["overrides"]
        assert progress(run)[0]["iteration"] == segment["at_iteration"] + 1

    show = robolearn_in_process(capsys, "sweep", "show", out)
    assert show.returncode == 0, show.stderr
    name, segment = exploits[0]
    (line,) = [ln for ln in show.stdout.splitlines() if ln.startswith(f"{name} ")]
    assert f"{segment['from_trial']}@{segment['at_iteration']}" in line and "(from t" in line

    # each checkpoint's report carries its own iteration's progress, not a later row's
    for row in json.loads((out / "results.json").read_text())["trials"]:
        copied = [e["from_checkpoint"] for e in row["lineage"] if e["at_iteration"] == 40]
        runs = [merged_rows(Path(d)) for d in row["run_dirs"]]
        runs += [merged_rows(Path(c).parent) for c in copied]
        for iteration, value in row["curve"]:
            seen = [r[iteration].get("Train/mean_reward") for r in runs if iteration in r]
            assert value in seen, (row["trial"], iteration, value, seen)


@pytest.mark.slow
def test_a_killed_worker_restarts_its_trial_from_its_checkpoint(tmp_path):
    out = tmp_path / "kill"
    proc = start_sweep(
        out, "--max_iterations", 80, "--checkpoint_every", 10, "--metric", "Train/mean_reward"
    )
    try:
        trial = out / "trials" / "t000"
        wait_for(lambda: list(trial.glob(f"{TASK}/*/model_20.pt")), "t000's model_20.pt")
        (train,) = wait_for(lambda: train_processes(out), "t000's robolearn train process")
        worker = parent_pid(train)
        assert worker != proc.pid  # the Ray worker that runs the trial, not the command
        os.kill(worker, signal.SIGKILL)
        stdout, _ = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert "t000: its worker or training process died; it restarts" in stdout
    record = records(out)["t000"]
    assert record["status"] == "done" and record["iterations"] == 80
    assert record["restarts"] == 1  # the driver counts Tune's restarts after faults
    log = (trial / "train.log").read_text()
    starts = [line for line in log.splitlines() if line.startswith("$ ")]
    assert len(starts) >= 2 and "--resume" in starts[1]
    assert "stopped by SIGTERM" in log  # the killed worker's process saved on its way out
    (run,) = [Path(s["run_dir"]) for s in record["segments"]]
    assert f"resuming {run} from model_" in log
    assert [r["iteration"] for r in progress(run)] == list(range(1, 81))


@pytest.mark.slow
def test_a_killed_sweep_resumes_without_rerunning_a_finished_trial(tmp_path):
    """One trial at a time; the command is killed once t000 has finished and t001 has saved its
    first checkpoint: --resume leaves t000 alone, resumes t001 from its checkpoint and runs
    t002. t001's training process ends when its worker does, which went with the command's
    Ray within 5 s here (20 iterations): t001 has 57 left to train then (about 15 s)."""
    out = tmp_path / "resume"
    proc = start_sweep(
        out, "--grid", f"{LR}=1e-3,3e-4,1e-4", "--max_iterations", 60, "--checkpoint_every", 3,
        "--metric", "Train/mean_reward", "--max_concurrent", 1,
    )  # fmt: skip

    def t000_done_and_t001_saved():
        done = records(out).get("t000", {}).get("status") == "done"
        return done and list((out / "trials" / "t001").glob(f"{TASK}/*/model_*.pt"))

    try:
        wait_for(t000_done_and_t001_saved, "t000 finished and a checkpoint of t001")
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert records(out)["t001"]["status"] == "running"
    # the command's Ray goes with it, and each trial's training process with its worker
    wait_for(lambda: not train_processes(out), "the killed sweep's training processes to end")

    result = robolearn("sweep", "--resume", out, timeout=900)
    assert result.returncode == 0, (result.stdout[-3000:], result.stderr[-3000:])
    assert f"resuming the sweep in {out}" in result.stdout
    trials = records(out)
    assert sorted(trials) == ["t000", "t001", "t002"]
    assert all(t["status"] == "done" and t["iterations"] == 60 for t in trials.values())

    def starts(name: str) -> list[str]:
        log = (out / "trials" / name / "train.log").read_text()
        return [line for line in log.splitlines() if line.startswith("$ ")]

    assert len(starts("t000")) == 1
    assert len(starts("t001")) == 2 and "--resume" in starts("t001")[1]
    assert len(starts("t002")) == 1
    for name, t in trials.items():
        (run,) = [Path(s["run_dir"]) for s in t["segments"]]
        assert [r["iteration"] for r in progress(run)] == list(range(1, 61)), name
    table = json.loads((out / "results.json").read_text())
    assert sorted(r["trial"] for r in table["trials"]) == ["t000", "t001", "t002"]


@pytest.mark.slow
def test_optuna_runs_each_configuration_once_per_seed(tmp_path):
    out = tmp_path / "optuna"
    run_sweep(
        out, "--optuna", "--random", "agent.algorithm.entropy_coef=0.0001:0.05:log",
        "--samples", 2, "--seeds", 1, 2, "--max_iterations", 5, "--metric", "Train/mean_reward",
    )  # fmt: skip
    trials = records(out)
    assert sorted(trials) == ["t000", "t001", "t002", "t003"]  # in the order Optuna drew them
    assert all(t["status"] == "done" and t["iterations"] == 5 for t in trials.values())
    configurations: dict[str, list[int]] = {}
    for t in trials.values():
        (value,) = t["values"].values()
        assert 0.0001 <= float(value) <= 0.05
        configurations.setdefault(value, []).append(t["seed"])
    assert len(configurations) == 2, configurations
    assert all(sorted(seeds) == [1, 2] for seeds in configurations.values()), configurations


# ---- trials that fail, budgets in minutes (slow) -------------------------------------------


@pytest.mark.slow
def test_a_failing_trial_does_not_stop_the_others(tmp_path):
    """A trial whose training refuses its configuration (50M cartpole envs: more memory than
    the machine has, found when the env is built) is marked failed with that one line and
    not restarted; the other trial trains its budget and the sweep exits 0."""
    out = tmp_path / "fail"
    result = run_sweep(
        out, "--grid", "num_envs=64,50000000", "--max_iterations", 3,
        "--metric", "Train/mean_reward", "--max_failures", 2,
    )  # fmt: skip
    trials = records(out)
    by_envs = {t["values"]["num_envs"]: t for t in trials.values()}
    assert by_envs["64"]["status"] == "done" and by_envs["64"]["iterations"] == 3
    failed = by_envs["50000000"]
    assert failed["status"] == "failed" and failed["restarts"] == 0
    assert "envs need about" in failed["reason"], failed["reason"]
    name = next(n for n, t in trials.items() if t is failed)
    assert f"{name} failed: num_envs=50000000, seed 1: " in result.stdout
    assert "1 done, 0 stopped early, 1 failed" in result.stdout


@pytest.mark.slow
def test_a_budget_in_minutes_stops_a_trial_with_a_checkpoint(tmp_path):
    """--max_minutes ends a trial's training once its run has trained that long: it saves
    a checkpoint on the way out and counts as done, well before its iterations."""
    out = tmp_path / "minutes"
    run_sweep(
        out, "--max_iterations", 100000, "--max_minutes", 0.1,
        "--metric", "Train/mean_reward", "--checkpoint_every", 50,
    )  # fmt: skip
    (trial,) = records(out).values()
    assert trial["status"] == "done"
    assert 0 < trial["iterations"] < 100000
    run_dir = Path(trial["segments"][-1]["run_dir"])
    saved = sorted(int(p.stem.split("_")[1]) for p in run_dir.glob("model_*.pt"))
    assert saved and saved[-1] == progress(run_dir)[-1]["iteration"]
    assert 6 <= progress(run_dir)[-1]["wall_time"] < 60
