"""robolearn sweep without Ray: bad specs refused before anything runs, --dry_run and the
spec file, and the fork (train --from RUN --checkpoint FILE) that PBT's exploits start.

The sweeps that run on Ray are in test_sweep_ray.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from cli_helpers import one_line_error, progress, robolearn_in_process, train_here

from robolearn.rl.checkpoint import load_checkpoint
from robolearn.threads import available_cores

TASK = "cartpole_balance"
LR = "agent.algorithm.learning_rate"


def sweep(capsys, *args):
    """``robolearn sweep ARGS`` in this process (errors come before Ray could start)."""
    return robolearn_in_process(capsys, "sweep", *args)


# ---- bad specs: one line, exit status 2, nothing written ----------------------------------


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--grid", "agent.algorithm.nope=1,2"], "unknown config path 'agent.algorithm.nope'"),
        (["--grid", f"{LR}=abc,1e-3"], f"--grid {LR}=abc: {LR} is a float"),
        (["--grid", "num_envs=64,many"], "--grid num_envs: 'many' is not an integer"),
        (["--random", f"{LR}=1e-2:1e-4"], "an empty range (1e-2 to 1e-4)"),
        (["--grid", "x="], "--grid x: no values to try"),
        (["--metric", "nonsense"], "--metric nonsense: no trial of cartpole_balance reports it"),
        (["--metric", "success_rate"], "cartpole_balance declares no success"),
        (["--num_cpus", "2", "--cpus_per_trial", "64"], "this machine has 2 CPUs"),
        (["--scheduler", "pbt"], "--scheduler pbt needs --perturb"),
        (["--perturb", "agent.algorithm.entropy_coef=1e-4:1e-2"], "add --scheduler pbt"),
        (["--address", "127.0.0.1:1"], "--address 127.0.0.1:1: no Ray cluster answers there"),
    ],
    ids=[
        "unknown_path",
        "wrong_type",
        "num_envs_not_integer",
        "empty_range",
        "empty_values",
        "unknown_metric",
        "no_success",
        "too_many_cpus",
        "pbt_without_perturb",
        "perturb_without_pbt",
        "unreachable_cluster",
    ],
)
def test_a_bad_spec_is_one_line_and_writes_nothing(tmp_path, capsys, args, fragment):
    out = tmp_path / "sweep"
    result = sweep(capsys, "--task", TASK, "--max_iterations", 4, "--out", out, *args)
    one_line_error(result, fragment)
    assert not out.exists()


def test_more_cpus_per_trial_than_this_machine_has_is_refused_before_ray(tmp_path, capsys):
    """Without --num_cpus, the cores this process may use (the default local Ray's)."""
    out = tmp_path / "sweep"
    cores = available_cores()
    result = sweep(
        capsys, "--task", TASK, "--out", out, "--cpus_per_trial", cores + 1,
        "--grid", f"{LR}=1e-3,3e-4",
    )  # fmt: skip
    one_line_error(result, f"--cpus_per_trial {cores + 1}: this machine has {cores} CPUs")
    assert not out.exists()  # Ray's log would be there had it started


def test_a_spec_file_with_an_unknown_key_is_refused(tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"task": TASK, "learning_rate": 1e-3}))
    out = tmp_path / "sweep"
    one_line_error(sweep(capsys, "--spec", spec, "--out", out), "unknown key(s) learning_rate")
    assert not out.exists()


def fake_sweep(folder: Path) -> None:
    """A folder holding a sweep's spec file (what a sweep that started writes first)."""
    from robolearn.app.sweep.spec import SPEC_FILE, make_spec, spec_to_data
    from robolearn.config import save_yaml

    folder.mkdir(parents=True)
    save_yaml(spec_to_data(make_spec({"task": TASK, "out": str(folder)}, {})), folder / SPEC_FILE)


def test_out_at_an_existing_sweep_says_to_resume_it(tmp_path, capsys):
    out = tmp_path / "sweep"
    fake_sweep(out)
    before = sorted(p.name for p in out.iterdir())
    result = sweep(capsys, "--task", TASK, "--grid", f"{LR}=1e-3,3e-4", "--out", out)
    one_line_error(result, f"robolearn sweep --resume {out} continues it")
    assert sorted(p.name for p in out.iterdir()) == before


def test_resume_and_show_of_a_folder_that_is_not_a_sweep(tmp_path, capsys):
    folder = tmp_path / "not_a_sweep"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    for args in (["--resume", folder], ["show", folder], ["show", tmp_path / "nowhere"]):
        one_line_error(sweep(capsys, *args), "is not a sweep's folder (no sweep.yaml)")
    assert [p.name for p in folder.iterdir()] == ["notes.txt"]
    assert not (tmp_path / "nowhere").exists()


# ---- --dry_run and the spec file ----------------------------------------------------------

SIX_TRIALS = [
    "t000  learning_rate=1e-4  seed 1",
    "t001  learning_rate=1e-4  seed 2",
    "t002  learning_rate=3e-4  seed 1",
    "t003  learning_rate=3e-4  seed 2",
    "t004  learning_rate=1e-3  seed 1",
    "t005  learning_rate=1e-3  seed 2",
]


def dry_run(capsys, *args) -> list[str]:
    result = sweep(capsys, *args, "--dry_run")
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.splitlines()


def test_dry_run_prints_the_trials_and_creates_nothing(tmp_path, capsys):
    out = tmp_path / "sweep"
    lines = dry_run(
        capsys, "--task", TASK, "--grid", f"{LR}=1e-4,3e-4,1e-3", "--seeds", 1, 2,
        "--max_iterations", 15, "--out", out,
    )  # fmt: skip
    assert lines[0] == "6 trials of cartpole_balance (grid search):"
    assert [line.strip() for line in lines[1:7]] == SIX_TRIALS
    assert "each for 15 iterations, measured by mean_return (max)" in lines
    assert not out.exists()


def test_a_spec_file_gives_the_trials_of_the_flags_and_a_flag_wins(tmp_path, capsys):
    spec = tmp_path / "lr.yaml"
    spec.write_text(
        f"task: {TASK}\n"
        f"grid:\n  {LR}: [1e-4, 3e-4, 1e-3]\n"
        "seeds: [1, 2]\n"
        "max_iterations: 15\n"
        "metric: fall_rate\n"
        "mode: min\n"
    )
    out = tmp_path / "sweep"
    flags = dry_run(
        capsys, "--task", TASK, "--grid", f"{LR}=1e-4,3e-4,1e-3", "--seeds", 1, 2,
        "--max_iterations", 15, "--metric", "fall_rate", "--mode", "min", "--out", out,
    )  # fmt: skip
    from_file = dry_run(capsys, "--spec", spec, "--out", out)
    assert from_file == flags
    assert [line.strip() for line in from_file[1:7]] == SIX_TRIALS
    assert "each for 15 iterations, measured by fall_rate (min)" in from_file

    overridden = dry_run(capsys, "--spec", spec, "--out", out, "--seeds", 7, "--max_iterations", 9)
    assert overridden[0] == "3 trials of cartpole_balance (grid search):"
    assert [line.split()[-1] for line in overridden[1:4]] == ["7", "7", "7"]
    assert "each for 9 iterations, measured by fall_rate (min)" in overridden
    assert not out.exists()


# ---- the fork: train --from RUN --checkpoint FILE -----------------------------------------


def only_run(root: Path) -> Path:
    (run,) = (root / TASK).iterdir()
    return run


def train_source(root: Path, iterations: int, *overrides: str) -> Path:
    """A cartpole run of ``iterations`` with a checkpoint every 2; its folder."""
    train_here(
        "--task", TASK, "--num_envs", 64, "--max_iterations", iterations, "--log_root", root,
        "agent.save_interval=2", *overrides,
    )  # fmt: skip
    return only_run(root)


def folder_state(run: Path) -> dict[str, int]:
    return {str(p.relative_to(run)): p.stat().st_mtime_ns for p in run.rglob("*")}


def test_a_fork_continues_a_checkpoint_in_a_new_run(tmp_path, capsys):
    source = train_source(tmp_path / "source", 4)
    untouched = folder_state(source)
    rows_before = progress(source)
    fork_root = tmp_path / "fork"
    train_here(
        "--from", source, "--checkpoint", "model_2.pt", "--max_iterations", 6,
        "--log_root", fork_root, "agent.algorithm.entropy_coef=0.001",
    )  # fmt: skip
    fork = only_run(fork_root)
    rows = progress(fork)
    assert [r["iteration"] for r in rows] == [3, 4, 5, 6]
    assert rows[0]["env_steps"] == load_checkpoint(source / "model_2.pt")["env_steps"] + 64 * 16
    run = yaml.safe_load((fork / "params" / "run.yaml").read_text())
    assert run["from_run"] == str(source.resolve())
    assert run["from_checkpoint"] == str((source / "model_2.pt").resolve())
    assert run["overrides"][-1] == "agent.algorithm.entropy_coef=0.001"
    agent = yaml.safe_load((fork / "params" / "agent.yaml").read_text())
    assert agent["algorithm"]["entropy_coef"] == 0.001
    assert load_checkpoint(fork / "model_6.pt")["iterations"] == 6
    assert folder_state(source) == untouched and progress(source) == rows_before

    logs = tmp_path / "refused"
    missing = robolearn_in_process(
        capsys, "train", "--from", source, "--checkpoint", "model_9.pt", "--max_iterations", 6,
        "--log_root", logs,
    )  # fmt: skip
    one_line_error(missing, "no checkpoint 'model_9.pt'")
    done = robolearn_in_process(
        capsys, "train", "--from", source, "--checkpoint", "model_4.pt", "--max_iterations", 4,
        "--log_root", logs,
    )  # fmt: skip
    one_line_error(done, "the checkpoint has 4 iterations done, and max_iterations is 4")
    assert not logs.exists()


def fork_learning_rate(tmp_path: Path, *source_overrides: str) -> tuple[float, float]:
    """(the checkpoint's learning rate, the fork's in its first progress row) for a fork of
    model_2.pt asked for learning rate 1e-4."""
    source = train_source(tmp_path / "source", 2, *source_overrides)
    fork_root = tmp_path / "fork"
    train_here(
        "--from", source, "--checkpoint", "model_2.pt", "--max_iterations", 3,
        "--log_root", fork_root, f"{LR}=1e-4",
    )  # fmt: skip
    (row,) = progress(only_run(fork_root))
    assert row["iteration"] == 3
    return load_checkpoint(source / "model_2.pt")["learning_rate"], row["Loss/learning_rate"]


def test_a_fork_takes_a_fixed_learning_rate_from_its_configs(tmp_path):
    checkpoint, fork = fork_learning_rate(tmp_path, "agent.algorithm.schedule=fixed")
    assert checkpoint == 1e-3  # the task's
    assert fork == 1e-4


def test_a_fork_keeps_an_adaptive_learning_rate_from_its_checkpoint(tmp_path):
    """Two updates an iteration, and a KL target no update reaches: the second update of each
    iteration (the first measures no KL) raises the rate 1.5x, so the source's checkpoint
    after 2 iterations holds 1e-3 * 1.5**2, and the fork's first iteration raises that once
    more (from 1e-4 it would be 1.5e-4)."""
    checkpoint, fork = fork_learning_rate(
        tmp_path,
        "agent.algorithm.num_learning_epochs=2",
        "agent.algorithm.num_mini_batches=1",
        "agent.algorithm.desired_kl=1000",
    )
    assert checkpoint == pytest.approx(1e-3 * 1.5**2)
    assert fork == pytest.approx(checkpoint * 1.5)
