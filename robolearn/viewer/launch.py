"""``robolearn view`` and ``robolearn play --viewer``: a task in a native or web viewer."""

from __future__ import annotations

import contextlib
import dataclasses
import ipaddress
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from robolearn.errors import RobolearnError
from robolearn.viewer.live_state import (
    ActionSource,
    FollowRun,
    PolicyActions,
    RandomActions,
    ViewerSession,
)


@dataclasses.dataclass
class ViewOptions:
    """What ``robolearn view`` (or ``play --viewer``) was asked for, one field per option."""

    task: str
    viewer: str = "web"
    num_envs: int | None = None
    device: str = "auto"
    engine: str | None = None
    actions: str = "zero"
    checkpoint: str | None = None
    load_run: str | None = None
    log_root: str = "logs"
    follow: str | None = None
    host: str = "127.0.0.1"
    port: int = 8765
    max_steps: int | None = None
    max_seconds: float | None = None
    overrides: list[str] = dataclasses.field(default_factory=list)


def view(opts: ViewOptions, log: Callable[[str], None] = print) -> int:
    """Build the task's envs and the chosen action source, then run the chosen viewer until
    it is closed (or a limit is reached); returns the exit status."""
    from robolearn.app.configs import build_setup, resolve_device_engine
    from robolearn.app.runs import import_for_policy
    from robolearn.env import ManagerBasedRLEnv

    if opts.viewer not in ("web", "native"):
        raise RobolearnError(f"unknown viewer {opts.viewer!r}; valid: web, native")
    if opts.actions not in ("zero", "random", "policy"):
        raise RobolearnError(f"unknown action source {opts.actions!r}; valid: zero, random, policy")
    engine = resolve_device_engine(opts.device, opts.engine)
    import_for_policy(opts.task, opts.checkpoint, opts.log_root)
    experiment = build_setup(opts.task, []).agent_cfg.experiment_name
    source_path, trained = _policy_source(opts, experiment)
    overrides = list(opts.overrides)
    num_envs = opts.num_envs or (4 if opts.follow is not None else 16)
    if opts.follow is not None:
        # MuJoCo's worker threads would contend with the training run's for the cores (a
        # viewer's few envs step in about a millisecond on one thread)
        overrides = [*overrides, "env.sim.nthread=1"]
    setup = build_setup(
        opts.task, overrides, play=True, replayed=trained, num_envs=num_envs, engine=engine
    )
    env = ManagerBasedRLEnv(setup.env_cfg)
    source: ActionSource
    if opts.follow is not None:
        source = FollowRun(env, source_path, task=opts.task)
    elif source_path is not None:
        source = PolicyActions(env, source_path)
    else:
        source = RandomActions() if opts.actions == "random" else ActionSource()
    # the plots' history is only read by the web viewer's page
    session = ViewerSession(env, source, telemetry=opts.viewer == "web")
    if opts.viewer == "native":
        return _run_native(session, opts, log)
    return _run_web(session, opts, log)


WAIT_POLL_S = 0.5
"""How often ``--follow`` looks for the run it waits for (seconds)."""


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _policy_source(opts: ViewOptions, experiment: str) -> tuple[Path | None, list[str]]:
    """(the run folder followed or the checkpoint played, or None; the overrides the policy
    was trained with, which the env replays before the user's)."""
    from robolearn.app.play import check_trained_on
    from robolearn.app.runs import find_checkpoint
    from robolearn.rl.checkpoint import load_checkpoint

    if opts.follow is not None:
        return wait_for_run(opts, experiment)
    if opts.actions == "policy" or opts.checkpoint:
        path = find_checkpoint(opts.task, experiment, opts.checkpoint, opts.load_run, opts.log_root)
        data = load_checkpoint(path)
        check_trained_on(data, opts.task)  # as play does, before the env or the server
        return path, list(data.get("overrides", []))
    return None, []


def wait_for_run(
    opts: ViewOptions, experiment: str, say: Callable[[str], None] = _say
) -> tuple[Path, list[str]]:
    """The run folder ``--follow`` names and the overrides its envs were trained with.

    A viewer started beside ``robolearn train`` may come first, so this waits: for the run
    folder (the latest run of ``experiment``, one whose name or folder name matches
    ``opts.follow``, or the folder at that path), then, while the run has no checkpoint, for
    its params/run.yaml, which training writes once its envs are built. Each thing waited
    for is one line through ``say``; ``opts.max_seconds`` bounds the wait (a
    RobolearnError), and Ctrl-C ends it (KeyboardInterrupt). The overrides come from the
    newest checkpoint, else from params/run.yaml; a run of another task is a RobolearnError.
    """
    from robolearn.app.runs import checkpoints, find_run, read_run_params
    from robolearn.rl.checkpoint import load_checkpoint

    log_root = Path(opts.log_root)
    follow = None if opts.follow in (None, "latest") else opts.follow
    as_path = follow is not None and ("/" in follow or os.sep in follow or Path(follow).is_dir())
    deadline = None if opts.max_seconds is None else time.monotonic() + opts.max_seconds
    said = None
    while True:
        if as_path:
            run = Path(follow) if Path(follow).is_dir() else None
            waiting = f"waiting for the run folder {follow} to appear"
        else:
            run = find_run(log_root, experiment, follow, starting=True)
            what = f"a run named {follow!r}" if follow else "a run"
            waiting = (
                f"waiting for {what} of {experiment!r} to start in {log_root / experiment} "
                f"(robolearn train --task {opts.task}"
                + (f" --run_name {follow}" if follow else "")
                + (f" --log_root {opts.log_root}" if opts.log_root != "logs" else "")
                + ")"
            )
        if run is not None:
            found = checkpoints(run)
            if found:
                data = load_checkpoint(found[-1])
                _check_task(data.get("task"), opts.task, run)
                return run, list(data.get("overrides", []))
            if (run / "params" / "run.yaml").is_file():
                params = read_run_params(run)
                _check_task(params.task, opts.task, run)
                return run, list(params.overrides)
            waiting = (
                f"waiting for {run / 'params' / 'run.yaml'} (the run is starting: training "
                "writes it once its envs are built)"
            )
        if waiting != said:
            say(f"robolearn view: {waiting}; Ctrl-C to stop")
            said = waiting
        if deadline is not None and time.monotonic() >= deadline:
            raise RobolearnError(
                f"gave up after --max_seconds {opts.max_seconds:g}: still {waiting}"
            )
        time.sleep(WAIT_POLL_S)


def _check_task(trained: str | None, task: str, run: Path) -> None:
    if trained is not None and trained != task:
        raise RobolearnError(
            f"{run} is a run of {trained!r}, not {task!r}; follow a run of {task!r}, or "
            f"view --task {trained}"
        )


def _run_native(session: ViewerSession, opts: ViewOptions, log: Callable[[str], None]) -> int:
    from robolearn.viewer.native import exit_if_window_lingers, run_native

    frames = run_native(session, opts.max_steps, opts.max_seconds, _low_priority(session, opts))
    log(f"native viewer closed after {session.steps} env steps, {frames} frames")
    exit_if_window_lingers(0)
    return 0


def _run_web(session: ViewerSession, opts: ViewOptions, log: Callable[[str], None]) -> int:
    from robolearn.viewer.web import WebViewer

    _check_host(opts.host, log)
    viewer = WebViewer(session, opts.host, opts.port)
    what = f"{opts.task}, {session.env.num_envs} envs, {session.actions.label} actions"
    log(f"robolearn web viewer: {viewer.url}  ({what})")
    if viewer.host in ("127.0.0.1", "localhost", "::1"):
        log(
            f"from another machine: ssh -L {viewer.port}:localhost:{viewer.port} <this host>, "
            f"then open http://localhost:{viewer.port}/"
        )
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how a viewer is closed
        viewer.run(opts.max_steps, opts.max_seconds, _low_priority(session, opts))
    log(f"web viewer stopped after {session.steps} env steps, {viewer.frames} frames")
    return 0


def _low_priority(session: ViewerSession, opts: ViewOptions):
    """Beside a training run it follows, the viewer's simulation loop runs on the CPU time
    training leaves idle (:mod:`robolearn.viewer.priority`); None otherwise."""
    if opts.follow is None:
        return None
    from robolearn.viewer.priority import yield_cpu

    return yield_cpu


def _check_host(host: str, log: Callable[[str], None]) -> None:
    """Warn when the web viewer is served beyond this machine's loopback interface."""
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback:
        # The token and origin checks keep other web sites out, not people: anyone who can
        # reach the address can load the page, and the page holds the token.
        log(
            f"warning: serving on {host}: anyone who can reach this address can open the page "
            "and control the viewer"
        )
