"""What a Ray worker runs for one trial of a sweep: ``robolearn train`` as a process of its
own, followed through its run folder and reported to Tune.

A trial's folder, ``<sweep>/trials/<name>/``, is the ``--log_root`` of its runs and holds
``trial.json`` (its configuration, seed, status and lineage) and ``train.log`` (what the
training process printed). It is the truth a restarted trial goes by:

* a trial whose worker or process died (a crash, ``kill -9``, a lost node) restarts on a
  worker, finds its run folder's latest checkpoint and continues it (``--resume``);
* a PBT member told to exploit is given a better member's checkpoint by Tune: it starts a
  new run of its own from that checkpoint with its own (perturbed) configuration
  (``train --from RUN --checkpoint FILE``), and its lineage records where it came from;
* a trial that finished before the sweep was interrupted reports its result again and does
  not train.

Reports to Tune carry ``iteration`` (the run's, which the schedulers count in) and the
metric: each iteration for a progress.jsonl key; at each checkpoint, by evaluating it
(``play --eval``), for a key of the evaluation. Each checkpoint goes to Tune as a small
folder naming the run and the file (``meta.json``), which is what PBT hands on.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from robolearn.files import CHECKPOINT_RE, write_atomic

TRIAL_FILE = "trial.json"
LOG_FILE = "train.log"
META_FILE = "meta.json"
POLL_S = 0.25
LOCK_WAIT_S = 300.0
"""How long a restarted trial waits for the killed process before it to let go of the run
(it saves a checkpoint on its way out)."""

_RUN_LINE = re.compile(r"(?:run folder|resuming) (\S+)")
_ERROR_PREFIX = "robolearn: error: "


@dataclasses.dataclass
class TrialPlan:
    """What every trial of a sweep shares (a plain dict on its way to the workers)."""

    task: str
    out: str
    metric: str
    mode: str
    source: str
    """``eval`` or ``progress``: where the metric is read (:func:`.spec.metric_source`)."""
    search: str
    """``grid``, ``random``, ``optuna`` or ``pbt``: the shape of a trial's config."""
    seeds: list[int]
    max_iterations: int
    checkpoint_every: int
    eval_envs: int
    cpus: float
    max_minutes: float | None = None
    nproc: int = 1
    """Ranks of each trial's training (``train --nproc``)."""
    algo: str | None = None
    num_envs: int | None = None
    device: str = "auto"
    engine: str | None = None
    overrides: list[str] = dataclasses.field(default_factory=list)
    imports: list[str] = dataclasses.field(default_factory=list)

    @property
    def threads(self) -> int:
        """Cores the trial's processes use: the CPUs Ray gave it (at least one)."""
        return max(1, math.floor(self.cpus))


def trial_name(trial_id: str, experiment_tag: str = "") -> str:
    """A trial's short name, stable across restarts and in the order trials were made: the
    index in Tune's id of a grid or PBT trial (``8c1e2_00007`` -> ``t007``), else the count
    that opens the experiment tag of a search algorithm's trial, whose id is random
    (Optuna's third: ``3_values=...`` -> ``t002``)."""
    head, _, index = trial_id.rpartition("_")
    if head and index.isdigit():
        return f"t{int(index):03d}"
    count = experiment_tag.partition("_")[0]
    return f"t{int(count) - 1:03d}" if count.isdigit() else f"t{trial_id}"


def trial_settings(config: dict[str, Any], plan: TrialPlan, index: int) -> tuple[dict, int]:
    """(search path -> value as override text, seed) of a trial from its Tune config."""
    from robolearn.app.sweep.spec import format_value

    if plan.search in ("grid", "random"):
        point = config["point"]
        return dict(point["values"]), int(point["seed"])
    values = {p: format_value(v) for p, v in config["values"].items()}
    if plan.search == "optuna":  # Tune's Repeater numbers the repeats of a configuration
        return values, plan.seeds[int(config.get("__trial_index__", 0)) % len(plan.seeds)]
    return values, plan.seeds[index % len(plan.seeds)]  # a PBT member keeps its seed


def read_record(folder: Path) -> dict[str, Any] | None:
    """A trial's ``trial.json``, or None before it first started."""
    try:
        return json.loads((folder / TRIAL_FILE).read_text())
    except (OSError, ValueError):
        return None


def write_record(folder: Path, record: dict[str, Any]) -> None:
    write_atomic(folder / TRIAL_FILE, json.dumps(record, indent=1).encode())


def run_trial(config: dict[str, Any], plan: dict[str, Any]) -> None:
    """The trainable Tune runs on a worker for each trial (see the module docstring)."""
    from ray import tune

    context = tune.get_context()  # the trial's name is the driver's trial_name
    trial = _Trial(TrialPlan(**plan), context.get_trial_id(), context.get_trial_name(), config)
    trial.run(tune.get_checkpoint())


class _Trial:
    """One trial on its worker: its record, its training process, its reports."""

    def __init__(self, plan: TrialPlan, trial_id: str, name: str, config: dict[str, Any]) -> None:
        self.plan = plan
        self.name = name
        self.folder = Path(plan.out) / "trials" / self.name
        self.folder.mkdir(parents=True, exist_ok=True)
        index = int(name[1:]) if name[1:].isdigit() else 0
        self.values, self.seed = trial_settings(config, plan, index)
        self.record = read_record(self.folder) or {
            "name": self.name,
            "trial_id": trial_id,
            "values": self.values,
            "seed": self.seed,
            "status": "pending",
            "segments": [],
            "restarts": 0,
        }
        self.reported_checkpoint = 0
        self.progress_offset = 0
        # PBT decides at a report whether to exploit, and hands on the checkpoint of that
        # report: its members report at their checkpoints only
        self.reports_rows = plan.source == "progress" and plan.search != "pbt"
        self.last_row: dict[str, Any] = {}
        self.rows: dict[int, dict[str, Any]] = {}
        """The latest values as they stood at each iteration not yet reported at a
        checkpoint: a checkpoint's report carries its own iteration's row."""
        self.last_eval: dict[str, Any] = {}
        os.environ["ROBOLEARN_THREADS"] = str(plan.threads)

    # ---- the trial ---------------------------------------------------------------------

    def run(self, checkpoint: Any) -> None:
        from ray import tune

        record = self.record
        if record["status"] == "done":  # finished before the sweep was resumed
            tune.report(dict(record["result"]))
            return
        donor = _checkpoint_meta(checkpoint)
        exploit = donor is not None and donor["trial"] != self.name
        if exploit and donor["iteration"] >= self.plan.max_iterations:
            # PBT handed on a checkpoint of a member that trained its whole budget: nothing
            # is left to train, and this member ends as that copy, with its values
            other = read_record(Path(self.plan.out) / "trials" / donor["trial"]) or {}
            values = other.get("values", self.values)
            record["segments"].append(_exploit_segment(donor, values))
            record.update(values=values)
            self._report_finished(Path(donor["run_dir"]))
            return
        own = _latest_run_with_checkpoint(record["segments"])
        if (donor is None or donor["trial"] == self.name) and own is not None:
            _wait_for_lock(own)
            if _latest_iteration(Path(own)) >= self.plan.max_iterations:
                # its process finished the budget after Tune last heard from it
                self._report_finished(Path(own))
                return
        command = self._command(donor)
        record.update(status="running", values=self.values, seed=self.seed)
        write_record(self.folder, record)
        self._follow(command)

    def _report_finished(self, run_dir: Path) -> None:
        """Report a run that trained its whole budget, from its folder, and end as done."""
        self._read_progress(run_dir, 0, report=False)
        self.reported_checkpoint = _latest_iteration(run_dir) - 1
        self._report_checkpoints(run_dir)
        self.record["status"] = "done"
        write_record(self.folder, self.record)

    def _command(self, donor: dict[str, Any] | None) -> list[str]:
        """The ``robolearn train`` line of this start: a PBT exploit's fork, the resume of
        the trial's own run, or a new run."""
        plan, segments = self.plan, self.record["segments"]
        base = [sys.executable, "-m", "robolearn", "train", "--log_root", str(self.folder)]
        for module in plan.imports:
            base += ["--import", module]
        budget = ["--max_iterations", str(plan.max_iterations)]
        if plan.nproc > 1:
            budget += ["--nproc", str(plan.nproc)]
        flags, overrides = _as_arguments(self.values)
        if donor is not None and donor["trial"] != self.name:
            segments.append(_exploit_segment(donor, self.values))
            return [
                *base,
                *("--from", donor["run_dir"], "--checkpoint", donor["checkpoint"]),
                *("--run_name", self.name, "--seed", str(self.seed), *budget),
                *flags,
                *overrides,
            ]
        run_dir = _latest_run_with_checkpoint(segments)
        if run_dir is not None:
            # what the run wrote before was reported then: follow it from its checkpoint,
            # whose rows set the latest values. The rows a killed process wrote past its
            # checkpoint go first, as the resumed run itself drops them.
            from robolearn.rl.iteration_run import trim_progress

            self.reported_checkpoint = _latest_iteration(Path(run_dir))
            trim_progress(Path(run_dir), self.reported_checkpoint)
            self.progress_offset = self._read_progress(Path(run_dir), 0, report=False)
            return [*base, "--task", plan.task, "--resume", "--load_run", run_dir, *budget]
        segments.append({"run_dir": None, "from_trial": None, "values": self.values})
        start = ["--task", plan.task, "--run_name", self.name, "--seed", str(self.seed)]
        start += ["--device", plan.device]
        for flag, value in (("--algo", plan.algo), ("--engine", plan.engine)):
            if value is not None:
                start += [flag, value]
        if plan.num_envs is not None and "num_envs" not in self.values:
            start += ["--num_envs", str(plan.num_envs)]
        every = f"agent.save_interval={plan.checkpoint_every}"
        return [*base, *start, *budget, *flags, *plan.overrides, *overrides, every]

    def _follow(self, command: list[str]) -> None:
        """Run the training process to its end, reporting as it goes."""
        env = dict(os.environ, ROBOLEARN_PARENT_PID=str(os.getpid()))
        env["OMP_NUM_THREADS"] = str(self.plan.threads)
        log_path = self.folder / LOG_FILE
        with open(log_path, "a") as log:
            start = log.tell()
            log.write(f"$ {' '.join(command)}\n")
            log.flush()
            proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            self._watch(proc, log_path, start)
        finally:
            if proc.poll() is None:  # Tune stopped the trial: save and go
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=120)
                except subprocess.TimeoutExpired:
                    proc.kill()

    def _watch(self, proc: subprocess.Popen, log_path: Path, start: int) -> None:
        run_dir: Path | None = None
        progress_at = self.progress_offset
        asked_to_stop = False
        while True:
            code = proc.poll()
            if run_dir is None:
                run_dir = self._run_dir(log_path, start)
            if run_dir is not None:
                progress_at = self._read_progress(run_dir, progress_at)
                self._report_checkpoints(run_dir)
            if code is not None:
                break
            minutes = self.plan.max_minutes
            wall = self.last_row.get("wall_time")
            if minutes and wall is not None and wall >= minutes * 60 and not asked_to_stop:
                proc.send_signal(signal.SIGTERM)  # the budget: it saves a checkpoint
                asked_to_stop = True
            time.sleep(POLL_S)
        self._finish(code, log_path, start, run_dir)

    def _run_dir(self, log_path: Path, start: int) -> Path | None:
        """The run folder the process trains in, once it has said (its first lines)."""
        with open(log_path) as log:
            log.seek(start)
            for line in log:
                match = _RUN_LINE.search(line)
                if match:
                    path = Path(match[1])
                    segment = self.record["segments"][-1]
                    if segment.get("run_dir") != str(path):
                        segment["run_dir"] = str(path)
                        write_record(self.folder, self.record)
                    return path
        return None

    def _read_progress(self, run_dir: Path, offset: int, report: bool = True) -> int:
        """Take in the progress.jsonl rows written since ``offset`` (reporting them, where
        this trial reports rows, unless ``report`` is false: catching up on a run's past);
        returns the new offset."""

        path = run_dir / "progress.jsonl"
        try:
            with open(path, "rb") as file:
                file.seek(offset)
                chunk = file.read()
        except FileNotFoundError:
            return offset
        end = chunk.rfind(b"\n") + 1  # a row still being written waits for the next look
        for line in chunk[:end].splitlines():
            try:
                row = json.loads(line)
            except ValueError:  # a row cut short by a killed process, then resumed
                continue
            # a key is missing from a row, or null, when no episode ended in that
            # iteration: the latest value of each stands
            self.last_row = {**self.last_row, **{k: v for k, v in row.items() if v is not None}}
            iteration = row.get("iteration")
            if isinstance(iteration, int) and iteration > self.reported_checkpoint:
                self.rows[iteration] = self.last_row
            if report and self.reports_rows and row.get(self.plan.metric) is not None:
                self._report(self._metrics(self.last_row, {}))
        return offset + end

    def _report_checkpoints(self, run_dir: Path) -> None:
        """Report each checkpoint newer than the last reported, with its evaluation when the
        metric is one, as a Tune checkpoint PBT can hand to another member."""
        from ray import tune

        for path in _checkpoints_after(run_dir, self.reported_checkpoint):
            iteration = int(CHECKPOINT_RE.match(path.name)[1])
            self.reported_checkpoint = iteration
            row = self.rows.get(iteration, self.last_row)
            self.rows = {i: r for i, r in self.rows.items() if i > iteration}
            evaluation = self._evaluate(path) if self.plan.source == "eval" else {}
            metrics = self._metrics({**row, "iteration": iteration}, evaluation)
            if metrics.get(self.plan.metric) is None:
                continue  # nothing measured yet (no episode has ended)
            meta = {
                "trial": self.name,
                "run_dir": str(run_dir),
                "checkpoint": str(path),
                "iteration": iteration,
            }
            with tempfile.TemporaryDirectory(prefix="robolearn-ckpt-") as folder:
                (Path(folder) / META_FILE).write_text(json.dumps(meta))
                self._report(metrics, tune.Checkpoint.from_directory(folder))

    def _metrics(self, row: dict[str, Any], evaluation: dict[str, Any]) -> dict[str, Any]:
        """A report: the iteration and time, the progress row's numbers, the evaluation's."""
        metrics = {k: v for k, v in row.items() if isinstance(v, int | float)}
        metrics.update(evaluation or self.last_eval)
        metrics["iteration"] = int(row.get("iteration", self.reported_checkpoint))
        return metrics

    def _report(self, metrics: dict[str, Any], checkpoint: Any = None) -> None:
        from ray import tune

        # recorded before Tune hears of it: a scheduler may stop the trial at this report
        self.record["result"] = metrics
        self.record["iterations"] = metrics["iteration"]
        write_record(self.folder, self.record)
        tune.report(metrics, checkpoint=checkpoint)

    def _evaluate(self, path: Path) -> dict[str, Any]:
        """``play --eval`` of a checkpoint in this worker, its keys flattened (``a/b``)."""
        import torch

        from robolearn.app.play import evaluate_checkpoint

        torch.set_num_threads(self.plan.threads)
        result = evaluate_checkpoint(path, self.plan.task, self.plan.eval_envs, self.plan.engine)
        self.last_eval = {k: v for k, v in _flatten(result).items() if isinstance(v, int | float)}
        return self.last_eval

    def _finish(self, code: int, log_path: Path, start: int, run_dir: Path | None) -> None:
        """The process has ended: done, failed for good (a robolearn error: the same start
        would fail again), or crashed (raised, so that Tune restarts the trial)."""
        record = self.record
        if code == 0:
            record["status"] = "done"
            write_record(self.folder, record)
            if self.plan.source == "eval" and "result" not in record:
                raise RuntimeError(f"trial {self.name}: training ended without a checkpoint")
            return
        reason = _failure_reason(log_path, start, code)
        if code == 2:
            record.update(status="failed", reason=reason)
            write_record(self.folder, record)
            return
        record.update(status="crashed", reason=reason)
        write_record(self.folder, record)
        raise RuntimeError(f"trial {self.name}: {reason}")


def _as_arguments(values: dict[str, str]) -> tuple[list[str], list[str]]:
    from robolearn.app.sweep.spec import as_arguments

    return as_arguments(values)


def _exploit_segment(donor: dict[str, Any], values: dict[str, str]) -> dict[str, Any]:
    """A PBT exploit in a trial's lineage: the checkpoint taken (its run folder comes when
    the fork starts; none where the checkpoint had trained the whole budget)."""
    return {
        "run_dir": None,
        "from_trial": donor["trial"],
        "from_checkpoint": donor["checkpoint"],
        "at_iteration": donor["iteration"],
        "values": values,
    }


def _checkpoint_meta(checkpoint: Any) -> dict[str, Any] | None:
    """What a Tune checkpoint of a trial names (its meta.json), or None."""
    if checkpoint is None:
        return None
    with checkpoint.as_directory() as folder:
        return json.loads((Path(folder) / META_FILE).read_text())


def _latest_run_with_checkpoint(segments: list[dict[str, Any]]) -> str | None:
    """The trial's newest run folder that holds a checkpoint (the one to continue)."""
    for segment in reversed(segments):
        run_dir = segment.get("run_dir")
        if run_dir and _checkpoints_after(Path(run_dir), -1):
            return run_dir
    return None


def _latest_iteration(run_dir: Path) -> int:
    found = _checkpoints_after(run_dir, -1)
    return int(CHECKPOINT_RE.match(found[-1].name)[1]) if found else 0


def _checkpoints_after(run_dir: Path, iteration: int) -> list[Path]:
    """The run's checkpoints past ``iteration``, oldest first."""
    found = []
    for path in run_dir.glob("model_*.pt"):
        match = CHECKPOINT_RE.match(path.name)
        if match and int(match[1]) > iteration:
            found.append((int(match[1]), path))
    return [path for _, path in sorted(found)]


def _wait_for_lock(run_dir: str) -> None:
    """Wait until no process holds the run (a killed worker's training process saves its
    checkpoint first, then lets go), at most :data:`LOCK_WAIT_S`."""
    lock = Path(run_dir) / ".lock"
    if not lock.exists():
        return
    deadline = time.monotonic() + LOCK_WAIT_S
    while time.monotonic() < deadline:
        with _try_lock(lock) as held:
            if held:
                return
        time.sleep(POLL_S)


@contextlib.contextmanager
def _try_lock(path: Path) -> Iterator[bool]:
    with open(path, "a") as file:
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(file, fcntl.LOCK_UN)


def _failure_reason(log_path: Path, start: int, code: int) -> str:
    """The training process's error line, else its last line and how it ended."""
    with open(log_path) as log:
        log.seek(start)
        lines = [line.rstrip() for line in log if line.strip()]
    errors = [line for line in lines if line.startswith(_ERROR_PREFIX)]
    if errors:
        return errors[-1].removeprefix(_ERROR_PREFIX)
    how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
    last = lines[-1] if lines else "no output"
    return f"robolearn train ended ({how}): {last[:300]}"


def _flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flatten(value, f"{name}/"))
        else:
            out[name] = value
    return out
