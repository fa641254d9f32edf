"""What the viewers measure and plot: rates (env steps, frames) and the watched env's history.

:class:`Rate` counts events over a sliding window (env steps in the simulation loop,
frames served to a page); the achieved real-time factor is the step rate times the env's
step duration.

:class:`Telemetry` keeps the last ~10 s of one env, one row per env step: its reward terms
(weighted, per second), its commands (a velocity command beside the measured velocity),
its actions, the current value of each observation term of the policy group, and what
ended its last few episodes. Recording is cheap and never waits for the device: each step
gathers the watched env's numbers into one row of a ring buffer on the env's device (a few
small tensor ops, no host read); :meth:`Telemetry.publish` copies the rows that are new
since the previous call to the host, a few times a second, and the HTTP threads read only
that host copy, under a lock. Rows are numbered by a sequence number that only grows, so a
page asks for what is newer than the last one it has (``since``).
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from robolearn.errors import RobolearnError, did_you_mean
from robolearn.mdp import UniformVelocityCommand

WINDOW_S = 10.0
"""How much of the watched env's history is kept, in simulated seconds."""
MAX_ROWS = 4096
"""The most rows kept (a task with a very short step keeps less than WINDOW_S)."""
EPISODES_KEPT = 10
"""How many of the watched env's latest episode ends are listed."""
VIEWER_RESET = "reset by the viewer"
"""The reason listed for an episode that a viewer's reset button ended."""


class InvalidQueryError(RobolearnError):
    """A telemetry query that cannot be answered; the message says what is valid."""


class Rate:
    """How many events per second, over the last ``window_s`` seconds (any thread).

    Counted since :meth:`clear` (or creation) until the window is full, so a rate is right
    from the start; :meth:`per_second` is None until ``min_span_s`` has passed.
    """

    def __init__(self, window_s: float = 2.0, clock: Callable[[], float] = time.monotonic):
        self.window_s = window_s
        self._clock = clock
        self._lock = threading.Lock()
        self._events: deque[tuple[float, int]] = deque()
        self._count = 0
        self._since = clock()

    def clear(self) -> None:
        """Forget every event; the window starts now."""
        with self._lock:
            self._events.clear()
            self._count = 0
            self._since = self._clock()

    def add(self, n: int = 1) -> None:
        """Count ``n`` events happening now."""
        now = self._clock()
        with self._lock:
            self._events.append((now, n))
            self._count += n
            self._trim(now)

    def per_second(self, min_span_s: float = 0.0) -> float | None:
        """Events per second over the window (or since :meth:`clear`, if that is shorter);
        None while less than ``min_span_s`` has been measured."""
        now = self._clock()
        with self._lock:
            self._trim(now)
            span = min(self.window_s, now - self._since)
            if span <= 0 or span < min_span_s:
                return None
            return self._count / span

    def _trim(self, now: float) -> None:
        while self._events and self._events[0][0] < now - self.window_s:
            self._count -= self._events.popleft()[1]


@dataclass
class _Series:
    name: str
    column: int
    color: int
    dashed: bool = False


@dataclass
class _Chart:
    id: str
    title: str
    series: list[_Series]


class Telemetry:
    """The watched env's recent history, recorded at each env step (see the module doc)."""

    def __init__(self, env, window_s: float = WINDOW_S, group: str | None = None) -> None:
        self.env = env
        self.step_dt = float(env.step_dt)
        self.capacity = max(2, min(MAX_ROWS, math.ceil(window_s / self.step_dt)))
        self.window_s = self.capacity * self.step_dt
        obs = env.observation_manager
        self.group = group or ("policy" if "policy" in obs.term_dims else next(iter(obs.term_dims)))
        self._parts: list[Callable[[int], torch.Tensor]] = []
        self._width = 0
        self.charts: list[_Chart] = []
        self.observation_charts: dict[str, _Chart] = {}
        self._build()
        dev = env.device
        self._ring = torch.zeros(self.capacity, self._width, dtype=torch.float32, device=dev)
        self._recorded = 0  # sequence number of the next row
        self._published = 0  # rows before this one are on the host (or were dropped)
        self._start = 0  # the first row of the current history (a clear moves it)
        self._ep_steps: int | None = None  # the watched env's episode length, last row seen
        self._last_seq = -1
        # the host side, read by any thread under the lock
        self._lock = threading.Lock()
        self._host = np.full((self.capacity, self._width), np.nan, dtype=np.float32)
        self._host_next = 0
        self._host_start = 0
        self._episodes: deque[dict[str, Any]] = deque(maxlen=EPISODES_KEPT)
        self.env_id = 0
        self.clear(0)

    # ---- the row's layout --------------------------------------------------------------

    def _columns(self, fn: Callable[[int], torch.Tensor], width: int) -> list[int]:
        """Add ``fn`` (env id -> (width,) tensor) to the row; returns its columns."""
        self._parts.append(fn)
        first, self._width = self._width, self._width + width
        return list(range(first, self._width))

    def _build(self) -> None:
        env, dt = self.env, self.step_dt
        rm = env.reward_manager
        cols = self._columns(lambda i: rm.step_reward[i] / dt, len(rm.term_names))
        self.charts.append(
            _Chart(
                "rewards",
                "reward terms (weighted, per second)",
                _numbered(rm.term_names, cols),
            )
        )
        scene = env.scene
        for name, term in env.command_manager.terms.items():
            width = int(term.command.shape[-1])
            cmd = self._columns(lambda i, term=term: term.command[i], width)
            if isinstance(term, UniformVelocityCommand):
                measured = self._columns(
                    lambda i: torch.cat((scene.root_lin_vel_b[i, :2], scene.root_ang_vel_b[i, 2:])),
                    3,
                )
                series = []
                for k, axis in enumerate(("vx", "vy", "wz")):
                    series.append(_Series(f"{axis} command", cmd[k], k, dashed=True))
                    series.append(_Series(f"{axis} measured", measured[k], k))
                title = f"command {name}: commanded (dashed) and measured velocity"
            else:
                series = [_Series(_label(name, k, width), c, k) for k, c in enumerate(cmd)]
                title = f"command {name}"
            self.charts.append(_Chart(f"command:{name}", title, series))
        am = env.action_manager
        cols = self._columns(lambda i: am.action[i], am.total_action_dim)
        self.charts.append(
            _Chart(
                "actions",
                "actions (as the policy sent them)",
                _numbered(_action_names(env), cols),
            )
        )
        # each observation term's current value (the newest of its history, if it keeps one)
        obs = env.observation_manager
        group_cfg = obs.cfg[self.group]
        picked: list[int] = []
        for name, sl in obs.term_slices(self.group).items():
            length = group_cfg.history_length
            if length is None:
                length = group_cfg.terms[name].history_length
            dim = (sl.stop - sl.start) // max(1, length)
            picked += range(sl.stop - dim, sl.stop)
            first = self._width + len(picked) - dim
            self.observation_charts[name] = _Chart(
                f"obs:{name}",
                f"observation {self.group}.{name}",
                [_Series(_label(name, k, dim), first + k, k) for k in range(dim)],
            )
        index = torch.tensor(picked, dtype=torch.long, device=env.device)
        group = self.group
        self._columns(lambda i: env.obs_buf[group][i].index_select(0, index), len(picked))
        # what tells an episode's end: its length after the step (0: it reset in the step),
        # the terms that ended it, and whether its physics diverged
        tm = env.termination_manager
        self._term_names = list(tm.term_names)
        self._len_col = self._columns(lambda i: env.episode_length_buf[i : i + 1], 1)[0]
        self._done_cols = self._columns(lambda i: tm.last_episode_dones[i], len(self._term_names))
        self._diverged_col = self._columns(lambda i: env.diverged[i : i + 1], 1)[0]

    @property
    def observation_terms(self) -> list[str]:
        """The observation terms that can be plotted (the group's, in order)."""
        return list(self.observation_charts)

    # ---- the simulation thread -----------------------------------------------------------

    def record(self, env_id: int) -> None:
        """Keep env ``env_id``'s numbers of the step just taken (on the device, no wait)."""
        row = self._ring[self._recorded % self.capacity]
        parts = [fn(env_id).to(torch.float32) for fn in self._parts]
        torch.cat(parts, out=row)
        self._recorded += 1

    def clear(self, env_id: int) -> None:
        """Start a new history, of env ``env_id``; the episode list starts with what ended
        its previous episode, if any (a read of the device: a switch is rare)."""
        self._start = self._published = self._recorded
        self._ep_steps, self._last_seq = None, -1
        reason = self.env.termination_manager.last_reason(env_id)
        with self._lock:
            self.env_id = env_id
            self._host_start = self._host_next = self._recorded
            self._episodes.clear()
            if reason is not None:
                self._episodes.append({"t": None, "reason": reason, "length_s": None})

    def note_reset(self, reason: str = VIEWER_RESET) -> None:
        """The watched env was reset between steps (a viewer's reset button)."""
        self.publish()  # the episode list stays in order
        length = None if self._ep_steps is None else round(self._ep_steps * self.step_dt, 3)
        with self._lock:
            t = self._t(self._recorded - 1)
            self._episodes.append({"t": t, "reason": reason, "length_s": length})
        self._ep_steps = 0

    def publish(self) -> None:
        """Copy the rows recorded since the last call to the host, where the HTTP threads
        read them (one read of the device)."""
        first = max(self._published, self._start, self._recorded - self.capacity)
        if first >= self._recorded:
            return
        seqs = np.arange(first, self._recorded)
        index = torch.as_tensor(seqs % self.capacity, device=self._ring.device)
        rows = self._ring.index_select(0, index).cpu().numpy()
        ended = self._episode_ends(seqs, rows)
        with self._lock:
            self._host[seqs % self.capacity] = rows
            self._host_next = self._recorded
            self._episodes.extend(ended)
        self._published = self._recorded

    def _episode_ends(self, seqs: np.ndarray, rows: np.ndarray) -> list[dict[str, Any]]:
        ended = []
        for seq, row in zip(seqs.tolist(), rows, strict=True):
            steps = int(row[self._len_col])
            if steps == 0:
                if row[self._diverged_col] > 0.5:
                    reason = "nonfinite"
                else:
                    hit = row[self._done_cols] > 0.5
                    reason = ", ".join(n for n, h in zip(self._term_names, hit, strict=True) if h)
                known = self._ep_steps is not None and seq == self._last_seq + 1
                length = round((self._ep_steps + 1) * self.step_dt, 3) if known else None
                ended.append({"t": self._t(seq), "reason": reason or "unknown", "length_s": length})
            self._ep_steps, self._last_seq = steps, seq
        return ended

    def _t(self, seq: int) -> float:
        """Simulated seconds at the end of step ``seq`` (steps taken in the viewer, so
        paused time does not count)."""
        return round((seq + 1) * self.step_dt, 6)

    # ---- any thread ------------------------------------------------------------------------

    def answer(self, since: int = -1, observations: Iterable[str] = ()) -> dict[str, Any]:
        """The samples newer than ``since`` (a sequence number; -1: all kept) of every chart,
        and of the observation terms named in ``observations``, as plain JSON-able data.

        ``start`` is the first sample kept: a page holding older ones drops them (the
        history was cleared, or they left the window); ``last`` is the newest, the ``since``
        of the next query.
        """
        if isinstance(since, bool) or not isinstance(since, int) or since < -1:
            raise InvalidQueryError(f"since is a sequence number (-1 or more), got {since!r}")
        charts = list(self.charts)
        for name in dict.fromkeys(observations):
            chart = self.observation_charts.get(name)
            if chart is None:
                valid = ", ".join(self.observation_charts)
                raise InvalidQueryError(
                    f"no observation term {name[:40]!r} in {self.group}"
                    f"{did_you_mean(name, self.observation_charts)}; valid: {valid}"
                )
            charts.append(chart)
        with self._lock:
            start = max(self._host_start, self._host_next - self.capacity)
            first = max(start, since + 1)
            seqs = np.arange(first, max(first, self._host_next))
            rows = self._host[seqs % self.capacity]
            last = self._host_next - 1
            env_id = self.env_id
            episodes = list(self._episodes)
        return {
            "env": env_id,
            "step_dt": self.step_dt,
            "window_s": self.window_s,
            "start": start,
            "from": first,
            "last": max(last, start - 1),
            "t": [self._t(s) for s in seqs.tolist()],
            "charts": [
                {
                    "id": chart.id,
                    "title": chart.title,
                    "series": [
                        {
                            "name": s.name,
                            "color": s.color,
                            "dashed": s.dashed,
                            "values": _rounded(rows[:, s.column]),
                        }
                        for s in chart.series
                    ],
                }
                for chart in charts
            ],
            "observation_group": self.group,
            "observation_terms": self.observation_terms,
            "terminations": episodes,
        }


def _numbered(names: list[str], columns: list[int]) -> list[_Series]:
    """One series per name, in its column, each its own colour."""
    return [_Series(n, c, k) for k, (n, c) in enumerate(zip(names, columns, strict=True))]


def _label(name: str, k: int, width: int) -> str:
    return name if width == 1 else f"{name}[{k}]"


def _action_names(env) -> list[str]:
    """One name per action column: the actuator it drives (its term's name and index where
    the model leaves the actuator unnamed)."""
    model = env.scene.engine.model
    names = []
    for term_name, term in env.action_manager.terms.items():
        for k, actuator in enumerate(term.actuator_ids.tolist()):
            try:
                name = model.actuator(int(actuator)).name
            except (AttributeError, KeyError, IndexError):
                name = ""
            names.append(name or _label(term_name, k, term.action_dim))
    return names


def _rounded(values: np.ndarray) -> list[float | None]:
    """Five significant digits (enough for a plot, a fraction of the JSON); None for NaN
    and infinities, which JSON does not have."""
    return [float(f"{v:.5g}") if math.isfinite(v) else None for v in values.tolist()]
