#!/usr/bin/env python
"""Evaluate a UniLab 1.5.2 G1WalkFlat checkpoint (PPO or APPO) on robolearn's walking criteria.

Mirrors `robolearn play --eval`: every env runs ONE episode from a common reset under the
deterministic policy (the Gaussian's mean), observation noise off by default, commands sampled
by UniLab's own twist command exactly as in training (one command per 20 s episode). Reports:

  fall_rate       share of episodes ended by a failure term (tilt > 25 deg or pelvis < 0.55 m),
                  not by the time-out
  lin_vel_error   mean over steps of |cmd_xy - v_xy|, v in the heading (yaw-only) frame, m/s
  yaw_rate_error  mean over steps of |cmd_wz - world yaw rate|, rad/s
                  ("mean over steps" pools every step of every env's first episode except the
                  step in which it ends, as robolearn does)
  walking         fall_rate < 0.05 and lin_vel_error < 0.25 and yaw_rate_error < 0.3

It runs in UniLab's own virtual environment (benchmarks/peer_unilab_g1.py says how to make
it, and the G1 scene with local meshes that ``--model-file`` names):

  <unilab venv>/bin/python benchmarks/peer_unilab_eval.py --model-file <folder>/scene_flat.xml \
      --checkpoint <run>/model_<it>.pt [--algo ppo|appo] [--num-envs 256] [--json]

``--zero-actions`` holds the default pose instead (how long UniLab's resets stay up
untrained: 0.65 s on average, BENCHMARKS.md section 36).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
from torch import nn


def _parse() -> tuple[argparse.Namespace, list[str]]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--checkpoint", required=True, help="model_<it>.pt of a PPO or APPO run")
    p.add_argument(
        "--algo",
        choices=("ppo", "appo"),
        default=None,
        help="config tree to compose the task from (default: guessed from the ckpt)",
    )
    p.add_argument("--num-envs", type=int, default=256)
    p.add_argument(
        "--episode-s", type=float, default=None, help="episode length (default: task's 20 s)"
    )
    p.add_argument("--model-file", required=True, help="the G1 scene_flat.xml, meshes local")
    p.add_argument("--obs-noise", action="store_true", help="keep the training observation noise")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    p.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    p.add_argument(
        "--zero-actions",
        action="store_true",
        help="sanity check: hold the default pose instead of running the policy",
    )
    p.add_argument(
        "--check-velocity",
        action="store_true",
        help="sanity check: compare read-plan velocities with the backend's host state",
    )
    return p.parse_known_args()


def _actor_from_state_dict(sd: dict[str, torch.Tensor]) -> nn.Module:
    """Rebuild rsl_rl's MLPModel actor (Linear/ELU stack, identity or empirical normalizer)."""
    idx = sorted(
        {int(k.split(".")[1]) for k in sd if k.startswith("mlp.") and k.endswith(".weight")}
    )
    layers: list[nn.Module] = []
    for n, i in enumerate(idx):
        w = sd[f"mlp.{i}.weight"]
        lin = nn.Linear(w.shape[1], w.shape[0])
        lin.weight.data.copy_(w)
        lin.bias.data.copy_(sd[f"mlp.{i}.bias"])
        layers.append(lin)
        if n < len(idx) - 1:
            layers.append(nn.ELU())
    mlp = nn.Sequential(*layers)
    mean = sd.get("obs_normalizer._mean")
    std = sd.get("obs_normalizer._std")

    class Actor(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if mean is not None and std is not None:
                x = (x - mean) / (std + 1e-2)
            return mlp(x)

    return Actor().eval()


def _yaw_from_wxyz(q: torch.Tensor) -> torch.Tensor:
    w, x, y, z = q.unbind(-1)
    return torch.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def main() -> int:
    args, hydra_overrides = _parse()
    if args.threads:
        torch.set_num_threads(args.threads)
    ckpt = torch.load(args.checkpoint, map_location="cpu", weights_only=True)
    actor_sd = ckpt.get("actor_state_dict", ckpt.get("actor"))
    if actor_sd is None:
        raise SystemExit(f"{args.checkpoint}: no 'actor_state_dict' (PPO) or 'actor' (APPO) key")
    algo = args.algo or ("ppo" if "actor_state_dict" in ckpt else "appo")
    actor = _actor_from_state_dict(actor_sd)

    import unilab
    from hydra import compose, initialize_config_dir
    from unilab.base.config_adapter import EnvConfigAdapter, create_env
    from unilab.base.process_device import (
        apply_backend_env_device_override,
        apply_collector_tensor_device_override,
    )
    from unilab.rl import RslRlVecEnvAdapter
    from unilab.training import ensure_registries
    from unilab.training.tensor_runtime import select_collector_tensor_device
    from unisim.backend.mujoco.xml import materialize_scene_visual_override

    overrides = [
        "task=g1_walk_flat/mujoco",
        f"env.scene.model_file={args.model_file}",
        "training.device=cpu",
        "training.play_only=true",
        f"algo.seed={args.seed}",
    ]
    if not args.obs_noise:
        overrides.append("env.observations.policy.enable_corruption=false")
    if args.episode_s is not None:
        overrides.append(f"env.max_episode_seconds={args.episode_s}")
    overrides += hydra_overrides
    conf_dir = str(Path(unilab.__file__).parent / "conf" / algo)
    with initialize_config_dir(config_dir=conf_dir, version_base="1.3"):
        cfg = compose(config_name="config", overrides=overrides)

    ensure_registries()
    torch.manual_seed(args.seed)
    override = EnvConfigAdapter(
        cfg,
        root_dir=Path.cwd(),
        algo_name=algo,
        scene_materializer=materialize_scene_visual_override,
    ).build_task_env_cfg_override()
    override = apply_backend_env_device_override(override, "mujoco", learner_device="cpu")
    override = apply_collector_tensor_device_override(
        override,
        "mujoco",
        collector_tensor_device=select_collector_tensor_device(cfg),
        learner_device="cpu",
    )
    t0 = time.time()
    env = create_env(cfg, num_envs=args.num_envs, env_cfg_override=override)
    venv = RslRlVecEnvAdapter(env, device="cpu")  # its __init__ resets every env (common reset)
    n = venv.num_envs
    horizon = venv.max_episode_length
    obs = venv.get_observations()["actor"]
    if obs.shape[1] != actor_sd["mlp.0.weight"].shape[1]:
        raise SystemExit(
            f"actor expects {actor_sd['mlp.0.weight'].shape[1]} obs, env gives {obs.shape[1]}"
        )

    running = torch.ones(n, dtype=torch.bool)
    fell = torch.zeros(n, dtype=torch.bool)
    length = torch.zeros(n)
    lin_sum = torch.zeros(n)
    yaw_sum = torch.zeros(n)
    counted = torch.zeros(n)
    ret = torch.zeros(n)
    body_view_ok = None
    for _ in range(horizon + 2):
        cmd = env.command_manager.get_command("twist").detach().to("cpu", torch.float32).clone()
        with torch.inference_mode():
            action = torch.zeros_like(actor(obs)) if args.zero_actions else actor(obs)
        td, rew, dones, infos = venv.step(action)
        obs = td["actor"]
        dones = dones.cpu()
        ret += torch.where(running, rew.cpu(), torch.zeros_like(rew.cpu()))
        length += running.float()
        # velocities after the step (not meaningful for envs that just reset: skipped below)
        view = env.scene.read_plan.body_tensor_view("robot", ("pelvis",))
        if body_view_ok is None:
            body_view_ok = view.lin_vel_w is not None and view.ang_vel_w is not None
        if body_view_ok:
            q, v, w = (
                t[:, 0].detach().to("cpu", torch.float32)
                for t in (view.quat_w, view.lin_vel_w, view.ang_vel_w)
            )
        else:  # host fallback (adapter internals)
            data = env.scene["robot"].data
            q = torch.as_tensor(data._host_root_link_quat_w, dtype=torch.float32).reshape(n, 4)
            v = torch.as_tensor(data._host_root_link_lin_vel_w, dtype=torch.float32).reshape(n, 3)
            w = torch.as_tensor(data._host_root_link_ang_vel_w, dtype=torch.float32).reshape(n, 3)
        if args.check_velocity and body_view_ok:
            data = env.scene["robot"].data
            hv = torch.as_tensor(data._host_root_link_lin_vel_w, dtype=torch.float32).reshape(n, 3)
            hw = torch.as_tensor(data._host_root_link_ang_vel_w, dtype=torch.float32).reshape(n, 3)
            print(
                f"velocity check: max |v - host| {float((v - hv).abs().max()):.2e}, "
                f"|w - host| {float((w - hw).abs().max()):.2e}, |v| {float(v.abs().max()):.2f}"
            )
        yaw = _yaw_from_wxyz(q)
        c, s = torch.cos(yaw), torch.sin(yaw)
        v_h = torch.stack((c * v[:, 0] + s * v[:, 1], -s * v[:, 0] + c * v[:, 1]), dim=1)
        lin_err = torch.linalg.vector_norm(cmd[:, :2] - v_h, dim=1)
        yaw_err = (cmd[:, 2] - w[:, 2]).abs()
        measure = running & ~dones
        lin_sum += torch.where(measure, lin_err, torch.zeros_like(lin_err))
        yaw_sum += torch.where(measure, yaw_err, torch.zeros_like(yaw_err))
        counted += measure.float()
        ended = running & dones
        if bool(ended.any()):
            to = infos.get("time_outs")
            to = to.cpu() if to is not None else torch.zeros(n, dtype=torch.bool)
            fell |= ended & ~to
            running &= ~ended
        if not bool(running.any()):
            break
    venv.close()
    unfinished = int(running.sum())  # still running after the horizon: counted as time-outs
    steps = counted.sum().clamp(min=1)
    dt = float(env.cfg.ctrl_dt) if hasattr(env, "cfg") else 0.02
    report = {
        "checkpoint": str(args.checkpoint),
        "algo": algo,
        "episodes": n,
        "episode_s": horizon * dt,
        "obs_noise": bool(args.obs_noise),
        "fall_rate": float(fell.float().mean()),
        "lin_vel_error": float(lin_sum.sum() / steps),
        "yaw_rate_error": float(yaw_sum.sum() / steps),
        "mean_episode_length_s": float(length.mean() * dt),
        "mean_return": float(ret.mean()),
        "unfinished": unfinished,
        "velocity_source": "read_plan" if body_view_ok else "host",
        "wall_s": round(time.time() - t0, 1),
    }
    report["walking"] = bool(
        report["fall_rate"] < 0.05
        and report["lin_vel_error"] < 0.25
        and report["yaw_rate_error"] < 0.3
    )
    for k in (
        "fall_rate",
        "lin_vel_error",
        "yaw_rate_error",
        "mean_episode_length_s",
        "mean_return",
        "walking",
    ):
        print(f"  {k:24s} {report[k]}")
    if args.json:
        print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
