"""A sweep's progress the way a robolearn user reads it: Tune's events as one line per
trial that ends, stops, fails or restarts, and a summary line when the counts change. Tune
keeps this callback in its experiment state, so it carries no handles, only settings."""

from __future__ import annotations

import time
from pathlib import Path

from ray.tune import Callback

from robolearn.app.sweep import results
from robolearn.app.sweep.trial import read_record, trial_name, write_record

SUMMARY_EVERY_S = 10.0
"""Seconds between summary lines while nothing finishes (a trial's end prints at once)."""


def trial_label(trial) -> str:
    """A Tune trial's short name (``t007``): its folder under ``trials/``."""
    return trial_name(trial.trial_id, trial.experiment_tag)


class SweepProgress(Callback):
    """Tune's events as robolearn's lines: one per trial that finishes, stops or fails, and
    a summary (running, finished, best so far) when it changes, at most every
    :data:`SUMMARY_EVERY_S` seconds unless a trial ended."""

    def __init__(
        self, out: str, metric: str, mode: str, max_iterations: int, max_failures: int
    ) -> None:
        self.out, self.metric, self.mode = out, metric, mode
        self.max_iterations, self.max_failures = max_iterations, max_failures
        self._last_summary = ""
        self._last_time = 0.0

    def on_trial_complete(self, iteration, trials, trial, **info) -> None:
        folder = Path(self.out) / "trials" / trial_label(trial)
        record = read_record(folder)
        if record is not None and record["status"] in ("running", "pending"):
            # Tune ends a trial at the report that completes its budget, or a scheduler
            # stops it early: either way its process was still running
            done = record.get("iterations", 0) >= self.max_iterations
            record["status"] = "done" if done else "stopped"
            write_record(folder, record)
        print(results.trial_line(record, trial.last_result, self.metric), flush=True)
        self._summary(trials, force=True)

    def on_trial_error(self, iteration, trials, trial, **info) -> None:
        folder = Path(self.out) / "trials" / trial_label(trial)
        record = read_record(folder) or {"name": trial_label(trial), "values": {}}
        reason = record.get("reason") or _tune_error(trial)
        record.update(status="failed", reason=reason)
        write_record(folder, record)
        print(results.trial_line(record, trial.last_result, self.metric), flush=True)
        self._summary(trials, force=True)

    def on_trial_recover(self, iteration, trials, trial, **info) -> None:
        # Tune restarts the trial after a fault (not a PBT pause): its record counts them
        folder = Path(self.out) / "trials" / trial_label(trial)
        record = read_record(folder)
        if record is not None:
            record["restarts"] = record.get("restarts", 0) + 1
            write_record(folder, record)
        print(
            f"{trial_label(trial)}: its worker or training process died; it restarts "
            f"from its latest checkpoint (restart {trial.num_failures} of at most "
            f"{self.max_failures})",
            flush=True,
        )

    def on_step_end(self, iteration, trials, **info) -> None:
        self._summary(trials)

    def _summary(self, trials, force: bool = False) -> None:
        counts: dict[str, int] = {}
        for t in trials:
            counts[t.status] = counts.get(t.status, 0) + 1
        best, best_trial = None, None
        for t in trials:
            value = (t.last_result or {}).get(self.metric)
            if isinstance(value, int | float) and (
                best is None or (value > best if self.mode == "max" else value < best)
            ):
                best, best_trial = value, t
        text = (
            f"sweep: {counts.get('RUNNING', 0)} running, {counts.get('PENDING', 0)} waiting, "
            f"{counts.get('TERMINATED', 0)} finished, {counts.get('ERROR', 0)} failed"
        )
        if best_trial is not None:
            text += f"; best {self.metric} {best:.4g} ({trial_label(best_trial)})"
        now = time.monotonic()
        if text != self._last_summary and (force or now - self._last_time >= SUMMARY_EVERY_S):
            print(text, flush=True)
            self._last_summary, self._last_time = text, now


def _tune_error(trial) -> str:
    path = getattr(trial, "error_file", None) or ""
    try:
        lines = [line for line in Path(path).read_text().splitlines() if line.strip()]
        return lines[-1][:300] if lines else "failed"
    except OSError:
        return "failed (its worker died)"
