"""``robolearn train --algo shac``: a run of the differentiable learner.

The same run folder as a PPO run (params/, ``model_<iteration>.pt`` checkpoints written
atomically, progress.jsonl with the same keys where they mean the same), the same
overrides, resume and signal handling; one process (SHAC's rollout is one differentiable
program: no torchrun ranks). The engine is Newton's, built for gradients: ``newton`` on a
GPU machine, else ``newton-cpu``, with the Featherstone solver unless an override names a
solver.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import sys
import time
from typing import Any

import torch

from robolearn.app.runs import PARAMS_FORMAT
from robolearn.app.session import Setup, resolve_device_engine, versions
from robolearn.app.train_run import (
    check_resume_flags,
    engine_that_ran,
    pick_run_folder,
    setup_for,
    stop_on_signals,
    write_params,
)
from robolearn.errors import RobolearnError
from robolearn.files import json_safe
from robolearn.rl.checkpoint import load_checkpoint, save_checkpoint
from robolearn.rl.runner import StopRequest

ALGO = "shac"


def shac_overrides(overrides: list[str]) -> list[str]:
    """The run's overrides: Newton's model built for gradients, on Featherstone unless the
    user's overrides name a solver (theirs come last, so theirs hold)."""
    ours = ["env.sim.newton.differentiable=true"]
    if not any(o.startswith("env.sim.newton.solver=") for o in overrides):
        ours.append("env.sim.newton.solver=featherstone")
    return [*ours, *(o for o in overrides if o not in ours)]


def shac_engine(device: str, engine: str | None) -> str:
    """``--engine`` for SHAC: a Newton engine (``newton`` where CUDA is, else
    ``newton-cpu`` when not given); any other is refused."""
    if engine is None and device == "auto":
        return "newton" if torch.cuda.is_available() else "newton-cpu"
    name = resolve_device_engine(device, engine)
    if not str(name).startswith("newton"):
        raise RobolearnError(
            f"--algo shac trains through Newton's differentiable solvers; engine {name!r} "
            "has none: use --engine newton-cpu (or newton on a GPU)"
        )
    return name


def _refuse_flags(opts) -> None:
    for flag, given in (
        ("--distributed", opts.distributed),
        ("--video", opts.video),
        ("--from", opts.from_run is not None),
    ):
        if given:
            raise RobolearnError(f"--algo shac does not take {flag} (PPO's runs do)")
    if opts.logger == "wandb":
        raise RobolearnError("--algo shac logs to progress.jsonl only; leave out --logger wandb")


def train_shac(opts, log=print) -> int:
    """Train ``opts.task`` with SHAC; returns the exit status."""
    _refuse_flags(opts)
    if not opts.task:
        raise RobolearnError("--task is required")
    check_resume_flags(opts)
    engine = shac_engine(opts.device, opts.engine)
    opts = dataclasses.replace(opts, engine=engine, overrides=shac_overrides(opts.overrides))
    # every flag and override checked before a file is written
    checked = setup_for(opts, engine, None, None)
    checked.agent_cfg.shac.validate()
    experiment = checked.agent_cfg.experiment_name
    folder = pick_run_folder(opts, experiment) if opts.resume else None
    resume = _load_resume(opts, folder) if folder is not None else None
    setup = setup_for(opts, engine, resume, folder)
    setup.agent_cfg.shac.validate()
    # params/ gets the configs as the run started: building the env may change live ones
    started = Setup(
        setup.spec, copy.deepcopy(setup.env_cfg), copy.deepcopy(setup.agent_cfg), setup.overrides
    )
    from robolearn.env import ManagerBasedRLEnv
    from robolearn.rl.shac import ShacLearner

    env = ManagerBasedRLEnv(setup.env_cfg)
    env.reset()
    agent = setup.agent_cfg
    learner = ShacLearner(env, agent.shac, agent.max_iterations)
    if folder is None:
        folder = pick_run_folder(opts, experiment)
    try:
        return _run(opts, setup, started, env, learner, folder, resume, log)
    except BaseException:
        folder.discard_if_empty()
        raise


def _load_resume(opts, folder) -> dict[str, Any]:
    data = load_checkpoint(folder.checkpoint)
    if data.get("algo") != ALGO:
        raise RobolearnError(
            f"{folder.checkpoint} is a PPO checkpoint; resume it without --algo shac"
        )
    if data.get("task") != opts.task:
        raise RobolearnError(
            f"{folder.checkpoint} is a checkpoint of {data.get('task')!r}, not {opts.task!r}"
        )
    return data


def _run(opts, setup, started, env, learner, folder, resume, log) -> int:
    agent = setup.agent_cfg
    meta = {
        "task": opts.task,
        "algo": ALGO,
        "overrides": setup.overrides,
        "seed": started.env_cfg.seed,
        "num_envs": env.num_envs,
        "world_size": 1,
        "robolearn_version": versions().get("robolearn"),
        "agent": dataclasses.asdict(agent),
    }
    wall_before = 0.0
    if resume is not None:
        learner.load_state_dict(resume["model"])
        wall_before = float(resume.get("wall_time", 0.0))
        log(f"{folder.note}resuming {folder.path} from {folder.checkpoint.name} "
            f"({learner.iteration} iterations done)")  # fmt: skip
    else:
        run_info = {k: meta[k] for k in ("task", "overrides", "seed", "num_envs", "world_size")}
        ran_on = engine_that_ran(env)
        params = {"format": PARAMS_FORMAT, **run_info, "algo": ALGO, "engine": ran_on}
        params["device"] = str(env.device)
        write_params(folder.path / "params", started, params, ran_on)
    engine = env.scene.engine
    log(
        f"training {opts.task} with SHAC: {env.num_envs} envs on {engine.name} "
        f"({engine.solver_name}, {engine.substeps} solver steps per physics step), run "
        f"folder {folder.path}"
    )
    stop = StopRequest()
    start = time.perf_counter()

    def save() -> None:
        data = {
            **meta,
            "iterations": learner.iteration,
            "env_steps": learner.env_steps,
            "model": learner.state_dict(),
            "wall_time": wall_before + time.perf_counter() - start,
        }
        save_checkpoint(folder.path / f"model_{learner.iteration}.pt", data)

    shown, hinted = "-", False
    with stop_on_signals(stop):
        while learner.iteration < agent.max_iterations:
            tick = time.perf_counter()
            figures = learner.learn_iteration()
            seconds = time.perf_counter() - tick
            if not math.isnan(figures["mean_return"]):
                shown = f"{figures['mean_return']:.2f}"
            _append_progress(folder.path, learner, figures, seconds, wall_before + tick - start)
            log(
                f"it {learner.iteration}/{agent.max_iterations}  "
                f"{agent.shac.horizon * env.num_envs / seconds / 1000:.2f}k steps/s  "
                f"reward {shown}  grad {figures['grad_norm']:.2g}"
            )
            hinted = hinted or _hint_if_capped(figures["capped_share"], setup.env_cfg)
            if learner.iteration % agent.save_interval == 0:
                save()
            if stop.signal_name is not None:
                save()
                log(f"{stop.signal_name}: saved model_{learner.iteration}.pt; --resume continues")
                return 0
    save()
    log(
        f"done: {learner.iteration} iterations, {learner.env_steps:,} env steps; "
        f"checkpoints in {folder.path}"
    )
    return 0


def _hint_if_capped(share: float, env_cfg) -> bool:
    """Say once, on stderr, when most steps' gradients hit ``max_step_gain``: stiff
    friction, which a softer coefficient cures (docs/differentiable.md)."""
    if share <= 0.5:
        return False
    tip = ""
    if env_cfg.sim.newton.friction_stiffness is None:
        tip = (
            "; Newton's stiff default friction does this: try env.sim.newton.friction_stiffness=100"
        )
    print(
        f"note: the gradients of {share:.0%} of this iteration's env steps were capped by "
        f"agent.shac.max_step_gain{tip} (docs/differentiable.md)",
        file=sys.stderr,
        flush=True,
    )
    return True


def _append_progress(run_dir, learner, figures: dict[str, float], seconds: float, wall: float):
    record = {
        "iteration": learner.iteration,
        "env_steps": learner.env_steps,
        "wall_time": wall + seconds,
        "Train/mean_reward": figures["mean_return"],
        "Train/mean_episode_length": figures["mean_episode_length"],
        "Train/mean_step_reward": figures["mean_step_reward"],
        "Perf/env_steps_per_s": learner.cfg.horizon * learner.env.num_envs / max(seconds, 1e-9),
        "Loss/actor": figures["actor_loss"],
        "Loss/value_function": figures["value_loss"],
        "Loss/actor_grad_norm": figures["grad_norm"],
        "Loss/capped_step_share": figures["capped_share"],
        "Policy/mean_std": figures["noise_std"],
    }
    line = json.dumps(json_safe(record), allow_nan=False) + "\n"
    try:
        with open(run_dir / "progress.jsonl", "a") as f:
            f.write(line)
    except OSError as exc:
        raise RobolearnError(
            f"cannot write {run_dir / 'progress.jsonl'}: {exc.strerror or exc}"
        ) from exc
