"""Evaluation: every env runs one whole episode under the policy; report what users compare.

Metrics (first episode of every env, from a common reset):

* ``mean_return``: the mean episode return (the sum of step rewards, as in training);
* ``fall_rate``: the share of episodes that ended by a failure termination (not a time-out);
* ``mean_episode_length_s``;
* for tasks with a velocity command, ``lin_vel_error`` (m/s): the mean over steps and envs of
  |commanded - actual| planar base velocity in the heading frame, and ``ang_vel_error``
  (rad/s): the mean |commanded - actual| yaw rate. Steps in which an env resets are left out;
* ``<command>/<metric>``: the mean over the same steps of what each command term reports in
  :meth:`~robolearn.managers.CommandTerm.step_metrics` (a task's own measures of success,
  e.g. a reaching task's distance to its target);
* on a generated terrain, ``terrain``: the mean level, and per sub-terrain type
  (``types``) and per level (``levels``) the envs, their fall rate and tracking errors.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from robolearn.managers import UniformVelocityCommand
from robolearn.math import quat_rotate_inverse, yaw_quat
from robolearn.rl.policy import act


def velocity_command(env) -> UniformVelocityCommand | None:
    for term in env.command_manager.terms.values():
        if isinstance(term, UniformVelocityCommand):
            return term
    return None


def evaluate(env, policy, on_step=None) -> dict[str, Any]:
    n, dev = env.num_envs, env.device
    obs, _ = env.reset()
    active = torch.ones(n, dtype=torch.bool, device=dev)
    returns = torch.zeros(n, device=dev)
    lengths = torch.zeros(n, device=dev)
    fell = torch.zeros(n, dtype=torch.bool, device=dev)
    cmd_term = velocity_command(env)
    # Per env, so that a terrain's envs can be grouped by type and level at the end.
    lin_err = torch.zeros(n, device=dev)
    ang_err = torch.zeros(n, device=dev)
    samples = torch.zeros(n, device=dev)
    step_sums: dict[str, torch.Tensor] = {}
    steps_counted = torch.zeros((), device=dev)
    for _ in range(env.max_episode_length):
        command = cmd_term.command.clone() if cmd_term is not None else None
        obs, reward, terminated, time_outs, _ = env.step(act(policy, obs, n))
        if on_step is not None:
            on_step()
        done = terminated | time_outs
        returns += reward * active
        lengths += active.float()
        fell |= active & terminated
        if cmd_term is not None:
            scene = env.scene
            vel = quat_rotate_inverse(yaw_quat(scene.root_quat_w), scene.root_lin_vel_w)[:, :2]
            counted = (active & ~done).float()
            lin_err += (command[:, :2] - vel).norm(dim=-1) * counted
            ang_err += (command[:, 2] - scene.root_ang_vel_w[:, 2]).abs() * counted
            samples += counted
        counted = (active & ~done).float()
        for name, term in env.command_manager.terms.items():
            for key, value in term.step_metrics().items():
                total = step_sums.setdefault(f"{name}/{key}", torch.zeros((), device=dev))
                total += (value.float() * counted).sum()
        steps_counted += counted.sum()
        active &= ~done
        if not active.any():
            break
    result: dict[str, Any] = {
        "task_envs": n,
        "episodes": n,
        "mean_return": float(returns.mean()),
        "fall_rate": float(fell.float().mean()),
        "mean_episode_length_s": float(lengths.mean()) * env.step_dt,
        "lin_vel_error": None,
        "ang_vel_error": None,
    }
    everyone = torch.ones(n, dtype=torch.bool, device=dev)
    if cmd_term is not None:
        result |= _tracking(everyone, lin_err, ang_err, samples)
    for key, total in step_sums.items():
        result[key] = float(total / steps_counted) if float(steps_counted) > 0 else None
    if env.scene.terrain is not None:
        result["terrain"] = _per_terrain(env.scene.terrain, fell, lin_err, ang_err, samples)
    return _no_nan(result)


def _tracking(envs, lin_err, ang_err, samples) -> dict[str, float | None]:
    """Mean tracking errors over the counted steps of ``envs`` (a (N,) bool mask)."""
    count = float(samples[envs].sum())
    if count <= 0:
        return {"lin_vel_error": None, "ang_vel_error": None}
    return {
        "lin_vel_error": float(lin_err[envs].sum()) / count,
        "ang_vel_error": float(ang_err[envs].sum()) / count,
    }


def _per_terrain(terrain, fell, lin_err, ang_err, samples) -> dict[str, Any]:
    """Falls and tracking errors of the envs of each sub-terrain type and of each level."""

    def group(envs: torch.Tensor) -> dict[str, Any]:
        stats: dict[str, Any] = {
            "envs": int(envs.sum()),
            "fall_rate": float(fell[envs].float().mean()),
            "mean_level": float(terrain.levels[envs].float().mean()),
        }
        return stats | _tracking(envs, lin_err, ang_err, samples)

    types = {
        name: group(terrain.env_types == k)
        for k, name in enumerate(terrain.type_names)
        if bool((terrain.env_types == k).any())
    }
    levels = {
        str(level): group(terrain.levels == level)
        for level in range(terrain.num_rows)
        if bool((terrain.levels == level).any())
    }
    return {"mean_level": float(terrain.mean_level()), "types": types, "levels": levels}


def _no_nan(value: Any) -> Any:
    """``value`` with every NaN float, at any depth, as None (strict JSON has no NaN)."""
    if isinstance(value, dict):
        return {k: _no_nan(v) for k, v in value.items()}
    return None if isinstance(value, float) and math.isnan(value) else value
