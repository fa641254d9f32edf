"""``robolearn view`` and ``robolearn play --viewer``: a task in a native or web viewer."""

from __future__ import annotations

import contextlib
import dataclasses
import ipaddress
import os
from collections.abc import Callable
from pathlib import Path

from robolearn.errors import RobolearnError
from robolearn.viewer.session import (
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
    from robolearn.env import ManagerBasedRLEnv
    from robolearn.rl.session import build_setup, resolve_device_engine

    if opts.viewer not in ("web", "native"):
        raise RobolearnError(f"unknown viewer {opts.viewer!r}; valid: web, native")
    if opts.actions not in ("zero", "random", "policy"):
        raise RobolearnError(f"unknown action source {opts.actions!r}; valid: zero, random, policy")
    engine = resolve_device_engine(opts.device, opts.engine)
    experiment = build_setup(opts.task, []).agent_cfg.experiment_name
    source_path, trained = _policy_source(opts, experiment)
    overrides = list(opts.overrides)
    if opts.follow is not None:
        _yield_to_training()
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
        source = FollowRun(env, source_path)
    elif source_path is not None:
        source = PolicyActions(env, source_path)
    else:
        source = RandomActions() if opts.actions == "random" else ActionSource()
    # the plots' history is only read by the web viewer's page
    session = ViewerSession(env, source, telemetry=opts.viewer == "web")
    if opts.viewer == "native":
        return _run_native(session, opts, log)
    return _run_web(session, opts, log)


def _yield_to_training() -> None:
    """Run this viewer only on CPU time a training run leaves idle.

    ``nice 10`` alone still took a fifth of a 2-core machine's training throughput: each
    slice the viewer got stalled one of MuJoCo's barrier-synchronised workers, and the
    other waited. Linux's SCHED_IDLE class runs a process only when a core has nothing else
    to run (the training's workers waiting at a barrier, the learner's quieter moments);
    elsewhere, ``nice 19``.
    """
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        os.nice(19)


def _policy_source(opts: ViewOptions, experiment: str) -> tuple[Path | None, list[str]]:
    """(the run folder followed or the checkpoint played, or None; the overrides the policy
    was trained with, which the env replays before the user's)."""
    from robolearn.rl.checkpoint import load_checkpoint
    from robolearn.rl.policy import find_checkpoint
    from robolearn.rl.runs import checkpoints, resolve_run

    if opts.follow is not None:
        follow = None if opts.follow == "latest" else opts.follow
        run = resolve_run(Path(opts.log_root), experiment, follow)
        found = checkpoints(run)
        trained = load_checkpoint(found[-1]).get("overrides", []) if found else []
        return run, list(trained)
    if opts.actions == "policy" or opts.checkpoint:
        path = find_checkpoint(opts.task, experiment, opts.checkpoint, opts.load_run, opts.log_root)
        return path, list(load_checkpoint(path).get("overrides", []))
    return None, []


def _run_native(session: ViewerSession, opts: ViewOptions, log: Callable[[str], None]) -> int:
    from robolearn.viewer.native import exit_if_window_lingers, run_native

    frames = run_native(session, opts.max_steps, opts.max_seconds)
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
        viewer.run(opts.max_steps, opts.max_seconds)
    log(f"web viewer stopped after {session.steps} env steps, {viewer.frames} frames")
    return 0


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
