"""What robolearn's own learners (SHAC, TD3, SAC) share as runs: the iteration loop with
its progress line, progress.jsonl, checkpoints at the save interval and at a stop, and the
training seconds of earlier sessions of a resumed run."""

from __future__ import annotations

import abc
import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from robolearn.errors import RobolearnError
from robolearn.files import json_safe, write_atomic
from robolearn.rl.checkpoint import save_checkpoint
from robolearn.rl.learner import RolloutCheck, StopRequest


def append_progress(run_dir: Path, record: dict[str, Any]) -> None:
    """One row of progress.jsonl (NaN written as null)."""
    line = json.dumps(json_safe(record), allow_nan=False) + "\n"
    path = run_dir / "progress.jsonl"
    try:
        with open(path, "a") as f:
            f.write(line)
    except OSError as exc:
        raise RobolearnError(f"cannot write {path}: {exc.strerror or exc}") from exc


def trim_progress(run_dir: Path, iterations: int) -> dict[str, Any] | None:
    """Keep only the progress rows of the iterations a resumed checkpoint holds (a run
    killed after its last checkpoint wrote rows that the resumed run writes again); the
    last row kept, or None."""
    path = run_dir / "progress.jsonl"
    if not path.is_file():
        return None
    kept, last = [], None
    text = path.read_text()
    for line in text.splitlines():
        try:
            row = json.loads(line)
        except ValueError:  # a line cut short by the kill
            continue
        it = row.get("iteration") if isinstance(row, dict) else None
        if isinstance(it, int) and it <= iterations:
            kept.append(line)
            last = row
    trimmed = "".join(line + "\n" for line in kept)
    if trimmed != text:
        write_atomic(path, trimmed.encode())
    return last


class IterationRun(abc.ABC):
    """A learner in a run folder, one iteration at a time; a subclass says what one
    iteration is (:meth:`iterate`).

    Args:
        learner: counts ``iteration`` and ``env_steps``, and has ``state_dict()`` and
            ``load_state_dict(state, training_state)`` (SHAC's, TD3's and SAC's learners).
        run_dir: where checkpoints and progress.jsonl go; None writes nothing.
        meta: what every checkpoint records besides the learned state.
        save_interval: iterations between checkpoints.
    """

    def __init__(
        self, learner: Any, run_dir: Path | None, meta: dict[str, Any], save_interval: int
    ) -> None:
        self.learner = learner
        self.run_dir = run_dir
        self.meta = meta
        self.save_interval = save_interval
        self.wall_before = 0.0
        """Training seconds of earlier sessions of this run."""
        self._start = time.perf_counter()
        self._shown = "-"

    @property
    def iterations(self) -> int:
        """Iterations done, resumed ones included."""
        return self.learner.iteration

    @property
    def env_steps(self) -> int:
        """Env steps trained on, resumed sessions included."""
        return self.learner.env_steps

    def state(self) -> dict[str, Any]:
        """The learned state a checkpoint's ``model`` holds."""
        return self.learner.state_dict()

    def restore(self, data: dict[str, Any], training_state: bool = True) -> None:
        """Load a checkpoint (with ``training_state``, the optimizers, counters and the
        training time of the run's earlier sessions too)."""
        self.learner.load_state_dict(data["model"], training_state)
        if training_state:
            self.wall_before = float(data.get("wall_time", 0.0))

    def wall_time(self) -> float:
        """Training seconds of this run, earlier sessions included."""
        return self.wall_before + time.perf_counter() - self._start

    def save(self) -> None:
        """``model_<iterations>.pt``, written atomically."""
        if self.run_dir is None:
            return
        data = {
            **self.meta,
            "iterations": self.iterations,
            "env_steps": self.env_steps,
            "model": self.state(),
            "wall_time": self.wall_time(),
        }
        save_checkpoint(self.run_dir / f"model_{self.iterations}.pt", data)

    def shown_return(self, mean_return: float, mean_length: float = math.nan) -> str:
        """The progress line's reward: the latest iteration's in which an episode ended,
        or a dash before the first."""
        if not math.isnan(mean_return):
            self._shown = f"{mean_return:.2f}"
            if not math.isnan(mean_length):
                self._shown += f"  ep_len {mean_length:.0f}"
        return self._shown

    @abc.abstractmethod
    def iterate(
        self, on_step: Callable[[int], None] | None, health: RolloutCheck | None
    ) -> tuple[dict[str, Any], str]:
        """One iteration: its progress.jsonl scalars and its part of the progress line."""

    def close(self) -> None:  # noqa: B027 (a default: most runs hold nothing)
        """Release what training holds (a collector thread) when it ends, however."""

    def learn(
        self,
        max_iterations: int,
        stop: StopRequest,
        log: Callable[[str], None],
        on_step: Callable[[int], None] | None = None,
        health: RolloutCheck | None = None,
    ) -> str:
        """Run :meth:`iterate` until ``max_iterations`` or a stop; ``"done"`` or
        ``"stopped"``."""
        try:
            return self._loop(max_iterations, stop, log, lambda: self.iterate(on_step, health))
        finally:
            self.close()

    def _loop(
        self,
        max_iterations: int,
        stop: StopRequest,
        log: Callable[[str], None],
        iterate: Callable[[], tuple[dict[str, Any], str]],
    ) -> str:
        self._start = time.perf_counter()
        if self.run_dir is not None and self.iterations > 0:
            trim_progress(self.run_dir, self.iterations)
        first = self.iterations
        while self.iterations < max_iterations:
            scalars, line = iterate()
            wall = self.wall_time()
            if self.run_dir is not None:
                record = {"iteration": self.iterations, "env_steps": self.env_steps}
                append_progress(self.run_dir, {**record, "wall_time": wall, **scalars})
            elapsed = time.perf_counter() - self._start
            eta = elapsed / max(self.iterations - first, 1) * (max_iterations - self.iterations)
            log(
                f"it {self.iterations}/{max_iterations}  {line}  "
                f"elapsed {hms(elapsed)}  ETA {hms(eta)}"
            )
            if self.iterations % self.save_interval == 0:
                self.save()
            if stop:
                self.save()
                log(f"{stop.signal_name}: saved model_{self.iterations}.pt; --resume continues")
                return "stopped"
        self.save()
        return "done"


def hms(seconds: float) -> str:
    """Seconds as h:mm:ss."""
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
