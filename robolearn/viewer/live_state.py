"""The live state an interactive viewer drives: a live env, its action source and the
viewer's state (:class:`ViewerSession`). Named for what it holds, not ``session``: a run's
session is the application's (:mod:`robolearn.app.configs`), set up before any viewer.

Native and web viewers share this: pause, single step, reset one env or all, speed, the env
being watched, the follow camera, and the numbers shown beside the picture (per-term
rewards, command and actual velocity, the termination reason of the last reset), the speed
really reached (:meth:`ViewerSession.rates`) and the watched env's recent history, for the
plots (:class:`~robolearn.viewer.telemetry.Telemetry`). All env calls happen on the thread
that calls :meth:`ViewerSession.tick`; other threads (a web request, a key press) only
:meth:`submit` commands.

A command comes from outside (a browser, a script), so :func:`validate_command` checks it on
the submitting thread, where the sender can still be told what was wrong; the loop checks it
again and logs and skips any command that still fails, so no command can end it.
"""

from __future__ import annotations

import math
import queue
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from robolearn.errors import RobolearnError, did_you_mean
from robolearn.mdp import UniformVelocityCommand
from robolearn.render.markers import collect_markers
from robolearn.viewer.telemetry import Rate, Telemetry

SPEEDS = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0)
"""The speeds the viewers offer (x real time); any finite speed in [MIN_SPEED, MAX_SPEED]
is accepted from scripts."""
MIN_SPEED, MAX_SPEED = 0.05, 8.0
REACHED_TOLERANCE = 0.1
"""A speed counts as reached when the measured real-time factor is within this fraction of
it; otherwise the viewers say what was requested and what was reached."""
RATE_WINDOW_S = 2.0
"""The sliding window (wall seconds) over which the reached speed and steps/s are measured."""
PUBLISH_S = 0.1
"""How often the loop copies the watched env's new history rows to the host (seconds)."""

# action -> the kind of value it takes
ACTIONS: dict[str, str] = {
    "pause": "none",
    "resume": "none",
    "toggle": "none",
    "step": "none",
    "reset": "none",
    "reset_all": "none",
    "speed": "speed",
    "env": "env id",
    "camera": "bool",
    "contacts": "bool",
}


class InvalidCommandError(RobolearnError):
    """A viewer command that is not one :class:`ViewerSession` can apply; the message says
    what is wrong and what is valid."""


def validate_command(command: Any, num_envs: int) -> dict[str, Any]:
    """Check a command from outside and return it normalised to ``{"action", "value"}``.

    Raises :class:`InvalidCommandError` for anything but a JSON-like object with a known action
    and the value that action takes: no value for pause, resume, toggle, step, reset and
    reset_all; a finite number from MIN_SPEED to MAX_SPEED for speed; an integer env id in
    [0, num_envs) for env; true or false for camera and contacts.
    """
    if not isinstance(command, dict):
        raise InvalidCommandError(f"a command is a JSON object, not {type(command).__name__}")
    extra = ", ".join(sorted(str(k) for k in command if k not in ("action", "value")))
    if extra:
        raise InvalidCommandError(f"a command has only 'action' and 'value', not {extra[:60]}")
    action, value = command.get("action"), command.get("value")
    valid = ", ".join(ACTIONS)
    if not isinstance(action, str):
        raise InvalidCommandError(f"a command needs an action, one of: {valid}")
    kind = ACTIONS.get(action)
    if kind is None:
        raise InvalidCommandError(
            f"unknown action {action[:40]!r}{did_you_mean(action, ACTIONS)}; valid: {valid}"
        )
    if kind == "none":
        if value is not None:
            raise InvalidCommandError(f"{action} takes no value, got {_short(value)}")
        return {"action": action, "value": None}
    if kind == "speed":
        # bool is an int to Python, never a speed; NaN and inf would freeze the loop's clock
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
            or not MIN_SPEED <= value <= MAX_SPEED
        ):
            raise InvalidCommandError(
                f"speed needs a finite number from {MIN_SPEED} to {MAX_SPEED} "
                f"(the viewers offer {', '.join(map(str, SPEEDS))}), got {_short(value)}"
            )
        return {"action": action, "value": float(value)}
    if kind == "env id":
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < num_envs:
            raise InvalidCommandError(
                f"env needs an env id, an integer from 0 to {num_envs - 1}, got {_short(value)}"
            )
        return {"action": action, "value": value}
    if not isinstance(value, bool):
        raise InvalidCommandError(f"{action} needs true or false, got {_short(value)}")
    return {"action": action, "value": value}


def _short(value: Any, limit: int = 40) -> str:
    """A value as an error message shows it: repr, cut short (it came from outside)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def speed_text(status: dict[str, Any]) -> str:
    """The speed as the viewers show it, from :meth:`ViewerSession.status`: ``running x4``
    only when the reached real-time factor is within REACHED_TOLERANCE of the requested
    one, else ``x4 requested, x0.12 reached`` (``paused``; ``x4 requested`` while the first
    measurement is under way)."""
    if status["paused"]:
        return "paused"
    want, got = status["speed"], status.get("realtime_factor")
    if got is None:
        return f"x{want:g} requested"
    if abs(got - want) <= REACHED_TOLERANCE * want:
        return f"running x{want:g}"
    return f"x{want:g} requested, x{got:.2g} reached"


def _log_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class ActionSource:
    """Zero actions (the default pose held by position actuators)."""

    label = "zero"

    def __call__(self, env) -> torch.Tensor:
        return torch.zeros(env.num_envs, env.num_actions, device=env.device)

    def poll(self) -> None:
        """Look for a newer policy (only a followed run has one)."""

    def info(self) -> dict[str, Any]:
        return {"actions": self.label}


class RandomActions(ActionSource):
    """Uniform random actions in [-scale, scale]."""

    label = "random"

    def __init__(self, scale: float = 0.5) -> None:
        self.scale = scale

    def __call__(self, env) -> torch.Tensor:
        return self.scale * (2 * torch.rand(env.num_envs, env.num_actions, device=env.device) - 1)


class PolicyActions(ActionSource):
    """A trained policy from a checkpoint; with ``task``, a checkpoint of another task is a
    RobolearnError."""

    label = "policy"

    def __init__(self, env, checkpoint: Path, task: str | None = None) -> None:
        from robolearn.rl.checkpoint import load_checkpoint
        from robolearn.rl.checkpoint_policy import policy_of

        self.checkpoint = Path(checkpoint)
        data = load_checkpoint(self.checkpoint, map_location=env.device)
        trained = data.get("task")
        if task is not None and trained is not None and trained != task:
            raise RobolearnError(f"{self.checkpoint} is a checkpoint of {trained!r}, not {task!r}")
        self.policy = policy_of(env, data)
        self.iteration = int(data.get("iterations", 0))

    def __call__(self, env) -> torch.Tensor:
        from robolearn.rl.checkpoint_policy import act, start_episodes
        from robolearn.threads import single_threaded

        # A viewer's batch is a few envs: on more threads, torch's workers spin against
        # MuJoCo's (and a training run's) for a forward pass of microseconds (measured: 2 ms
        # per step on 2 threads for 16 humanoids, a third of the viewer's CPU time)
        with single_threaded(env.device):
            start_episodes(self.policy, env)
            return act(self.policy, env.obs_buf, env.num_envs)

    def info(self) -> dict[str, Any]:
        return {
            "actions": self.label,
            "checkpoint": str(self.checkpoint),
            "iteration": self.iteration,
        }


class FollowRun(ActionSource):
    """The newest checkpoint of a training run, reloaded when training saves a newer one.

    Until the run's first checkpoint the robots get zero actions (they stand still) and the
    run folder is polled every ``poll_s`` seconds; the first checkpoint that appears is
    loaded, and so is each newer one. Training writes checkpoints atomically, so a file that
    appears is complete; one that still does not load (another task's, a policy that does
    not fit these envs) is one line through ``log``, and the policy before it stays. This
    only reads files and never talks to the training process, which runs undisturbed.
    """

    label = "follow"

    def __init__(
        self,
        env,
        run_dir: Path,
        poll_s: float = 2.0,
        task: str | None = None,
        log: Callable[[str], None] = _log_stderr,
    ) -> None:
        from robolearn.app.runs import checkpoints

        self.env, self.run_dir, self.poll_s = env, Path(run_dir), poll_s
        self.task, self.log = task, log
        self._checkpoints = checkpoints
        self._last_poll = time.monotonic()
        self._skipped: Path | None = None  # the newest checkpoint, when it did not load
        self._gone = False
        self.policy: PolicyActions | None = None
        """The loaded policy; None until the run's first checkpoint."""
        found = checkpoints(self.run_dir)
        if found:  # one that does not load now is an error: there is no policy to keep
            self.policy = PolicyActions(env, found[-1], task=task)
        else:
            self.log(
                f"robolearn viewer: {self.run_dir} has no checkpoint yet: zero actions until "
                f"training saves its first (looking every {poll_s:g} s)"
            )

    @property
    def checkpoint(self) -> Path | None:
        """The checkpoint the robots follow (None before the first)."""
        return None if self.policy is None else self.policy.checkpoint

    @property
    def iteration(self) -> int:
        """The iterations the followed policy was trained for (0 before the first)."""
        return 0 if self.policy is None else self.policy.iteration

    def __call__(self, env) -> torch.Tensor:
        if self.policy is None:
            return super().__call__(env)
        return self.policy(env)

    def poll(self) -> None:
        now = time.monotonic()
        if now - self._last_poll < self.poll_s:
            return
        self._last_poll = now
        found = self._checkpoints(self.run_dir)
        if not found:
            if not self._gone and not self.run_dir.is_dir():
                self._gone = True
                self.log(
                    f"robolearn viewer: {self.run_dir} was removed (its training ended before "
                    "the first save?); start the viewer again to follow another run"
                )
            return
        newest = found[-1]
        if newest in (self.checkpoint, self._skipped):
            return
        try:
            policy = PolicyActions(self.env, newest, task=self.task)
        except Exception as exc:  # a checkpoint must never end the viewer: log and go on
            self._skipped = newest
            kept = (
                f"still following {self.checkpoint.name}"
                if self.checkpoint is not None
                else "still zero actions"
            )
            self.log(f"robolearn viewer: {newest} did not load: {_one_line(exc)}; {kept}")
            return
        if self.policy is None:
            self.log(f"robolearn viewer: following {newest} (iteration {policy.iteration})")
        self.policy = policy

    def info(self) -> dict[str, Any]:
        return {
            "actions": self.label,
            "run": str(self.run_dir),
            "checkpoint": None if self.checkpoint is None else str(self.checkpoint),
            "iteration": self.iteration,
        }


class ViewerSession:
    """A live env under a viewer's control."""

    def __init__(
        self,
        env,
        actions: ActionSource,
        log: Callable[[str], None] = _log_stderr,
        telemetry: bool = True,
    ) -> None:
        self.env = env
        self.actions = actions
        self.log = log
        self.paused = False
        self.speed = 1.0
        self.env_id = 0
        self.follow_camera = True
        self.show_contacts = True
        self.steps = 0
        self._pending_steps = 0
        self._debt = 0.0
        self._last_tick = time.monotonic()
        self._commands: queue.Queue[dict[str, Any]] = queue.Queue()
        self._submitting = threading.Lock()
        self._submitted = 0  # commands queued by submit: each one's number is the count after it
        self.commands_applied = 0
        """Commands the loop has taken off the queue (applied, or ignored as failing)."""
        self.changed = True
        # the speed reached: env steps taken while running, over a sliding window that
        # starts afresh when the requested speed or the pause changes
        self._step_rate = Rate(RATE_WINDOW_S)
        self._rate_key: tuple[bool, float] = (self.paused, self.speed)
        self.telemetry: Telemetry | None = Telemetry(env) if telemetry else None
        """The watched env's recent history (None when the session was made without)."""
        self._published_at = 0.0

    # ---- commands (any thread) ---------------------------------------------------------

    def submit(self, command: Any) -> int:
        """Check and queue a command: {"action": pause|resume|toggle|step|reset|reset_all|
        speed|env|camera|contacts, "value": ...}; raises :class:`InvalidCommandError` (and queues
        nothing) for one that :func:`validate_command` refuses. Returns the command's number:
        a :meth:`status` whose ``commands_applied`` has reached it shows its effect (a page
        that sets a control ignores older snapshots, which would set the old value back)."""
        cmd = validate_command(command, self.env.num_envs)
        with self._submitting:  # numbers in queue order
            self._submitted += 1
            self._commands.put(cmd)
            return self._submitted

    def _apply(self, cmd: Any) -> None:
        # checked again here: the queue is reachable without submit, and a bad value must
        # fail here, before it changes anything, not later inside a step or the renderer
        cmd = validate_command(cmd, self.env.num_envs)
        action, value = cmd["action"], cmd["value"]
        env = self.env
        if action == "pause":
            self.paused = True
        elif action == "resume":
            self.paused = False
        elif action == "toggle":
            self.paused = not self.paused
        elif action == "step":
            self.paused = True
            self._pending_steps += 1
        elif action == "reset":
            env.reset_envs(torch.tensor([self.env_id], device=env.device))
            if self.telemetry is not None:
                self.telemetry.note_reset()
        elif action == "reset_all":
            env.reset()
            if self.telemetry is not None:
                self.telemetry.note_reset()
        elif action == "speed":
            self.speed = value
        elif action == "env":
            if value != self.env_id and self.telemetry is not None:
                self.telemetry.clear(value)  # the plots show one env's history
            self.env_id = value
        elif action == "camera":
            self.follow_camera = value
        elif action == "contacts":
            self.show_contacts = value
        self.changed = True

    # ---- the loop (one thread) -------------------------------------------------------

    def step(self) -> None:
        self.env.step(self.actions(self.env))
        if self.telemetry is not None:
            self.telemetry.record(self.env_id)
        self.steps += 1
        self.changed = True

    def tick(self, max_steps_per_tick: int = 8) -> int:
        """Apply queued commands, then step as far as real time x speed asks; returns the
        number of env steps taken."""
        while True:
            try:
                cmd = self._commands.get_nowait()
            except queue.Empty:
                break
            try:
                self._apply(cmd)
            except Exception as exc:  # a command must never end the viewer: log and go on
                self.log(f"robolearn viewer: ignored command {_short(cmd, 100)}: {_one_line(exc)}")
            self.commands_applied += 1
        self.actions.poll()
        now = time.monotonic()
        elapsed, self._last_tick = now - self._last_tick, now
        if (self.paused, self.speed) != self._rate_key:
            self._rate_key = (self.paused, self.speed)
            self._step_rate.clear()
        taken = 0
        if self.paused:
            self._debt = 0.0
            while self._pending_steps > 0:
                self._pending_steps -= 1
                self.step()
                taken += 1
        else:
            self._debt = min(
                self._debt + elapsed * self.speed, max_steps_per_tick * self.env.step_dt
            )
            while self._debt >= self.env.step_dt and taken < max_steps_per_tick:
                self._debt -= self.env.step_dt
                self.step()
                taken += 1
            if taken:
                self._step_rate.add(taken)
        if self.telemetry is not None and now - self._published_at >= PUBLISH_S:
            self._published_at = now
            self.telemetry.publish()
        return taken

    def due_in(self) -> float:
        """Seconds until :meth:`tick` has a step to take (0 when one is due now, infinite
        while paused with no single step asked for): how long the loop may sleep."""
        if self.paused:
            return 0.0 if self._pending_steps or not self._commands.empty() else math.inf
        if not self._commands.empty():
            return 0.0
        return max(0.0, (self.env.step_dt - self._debt) / self.speed)

    def rates(self) -> dict[str, float | None]:
        """What the loop reached over the last RATE_WINDOW_S seconds: ``steps_per_s`` (env
        steps a second, every env stepping at once) and ``realtime_factor`` (simulated
        seconds per wall second); None while paused or just after a change of speed."""
        rate = None if self.paused else self._step_rate.per_second(min_span_s=0.5)
        if rate is None:
            return {"steps_per_s": None, "realtime_factor": None}
        return {
            "steps_per_s": round(rate, 2),
            "realtime_factor": round(rate * self.env.step_dt, 4),
        }

    # ---- what is shown ---------------------------------------------------------------

    def markers(self) -> list:
        """What the watched env's command terms draw (velocity arrows, targets...)."""
        return collect_markers(self.env, self.env_id)

    def markers_for(
        self, env_ids: list[int], contacts: bool | None = None, root_frame: bool = False
    ) -> dict[str, list[dict[str, Any]]]:
        """What envs ``env_ids`` draw, as the browser's 3D mode reads it: ``{"<env id>":
        [marker.to_json(), ...]}``, every term's markers and the terrain label, the forces
        on bodies as arrows when ``contacts`` (None: when the viewer shows contacts) and
        the root's frame when ``root_frame``. Call it on the thread that calls
        :meth:`tick`, as every env read."""
        show = self.show_contacts if contacts is None else contacts
        return {
            str(i): [
                m.to_json()
                for m in collect_markers(self.env, i, contacts=show, root_frame=root_frame)
            ]
            for i in env_ids
        }

    def status(self) -> dict[str, Any]:
        env, i = self.env, self.env_id
        rm = env.reward_manager
        per_second = (rm.step_reward[i] / env.step_dt).tolist()
        out: dict[str, Any] = {
            "steps": self.steps,
            "paused": self.paused,
            "speed": self.speed,
            "env": i,
            "num_envs": env.num_envs,
            "episode_time_s": round(int(env.episode_length_buf[i]) * env.step_dt, 2),
            "follow_camera": self.follow_camera,
            "contacts": self.show_contacts,
            "commands_applied": self.commands_applied,
            "rewards": dict(zip(rm.term_names, per_second, strict=True)),
            "reward_total": float(sum(per_second)),
            "last_termination": env.termination_manager.last_reason(i),
            **self.rates(),
            **self.actions.info(),
        }
        terrain = env.scene.terrain
        if terrain is not None:
            out["terrain"] = {
                "type": terrain.column_types[int(terrain.env_cols[i])],
                "level": int(terrain.levels[i]),
                "levels": terrain.num_rows,
            }
        for name, term in env.command_manager.terms.items():
            if isinstance(term, UniformVelocityCommand):
                cmd = term.command[i].tolist()
                vx, vy = env.scene.root_lin_vel_b[i, :2].tolist()
                wz = float(env.scene.root_ang_vel_b[i, 2])
                out["command"] = {"name": name, "vx": cmd[0], "vy": cmd[1], "wz": cmd[2]}
                out["velocity"] = {"vx": vx, "vy": vy, "wz": wz}
        return out
