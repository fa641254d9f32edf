"""cartpole_balance_depth's depth observations through both camera renderers, side by side.

Two envs of the task, one drawing its camera with the batch renderer and one with OpenGL,
take the same random actions with the same random draws at every step (resets included);
each step prints how far their states and depth observations differ. The states must
agree exactly (the renderers change nothing in the physics); the images differ only at a
few edge pixels (the two rasterise a silhouette's edge differently).

    python benchmarks/camera_renderer_parity.py --num_envs 16 --steps 200
"""

from __future__ import annotations

import argparse
import dataclasses

import torch

from robolearn.env import ManagerBasedRLEnv
from robolearn.registry import get_task


def make_env(renderer: str, num_envs: int) -> ManagerBasedRLEnv:
    cfg = get_task("cartpole_balance_depth").env_cfg()
    camera = dataclasses.replace(cfg.scene.sensors["camera"], renderer=renderer)
    cfg.scene = dataclasses.replace(cfg.scene, num_envs=num_envs, sensors={"camera": camera})
    return ManagerBasedRLEnv(cfg)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num_envs", type=int, default=16)
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    envs = [make_env(r, args.num_envs) for r in ("batch", "opengl")]
    for env in envs:  # the same reset draws in both (the envs draw from torch's generator)
        torch.manual_seed(5)
        env.reset()
    actions = torch.Generator().manual_seed(0)
    worst_state, worst_frac, resets = 0.0, 0.0, 0
    for t in range(args.steps):
        action = torch.randn(args.num_envs, envs[0].num_actions, generator=actions)
        out = []
        for env in envs:
            torch.manual_seed(100 + t)
            out.append(env.step(action))
        (obs_b, _, done, *_), (obs_g, *_) = out
        state = float((obs_b["critic"] - obs_g["critic"]).abs().max())
        diff = (obs_b["depth"] - obs_g["depth"]).abs()
        frac = float((diff > 0.02).float().mean())
        worst_state, worst_frac = max(worst_state, state), max(worst_frac, frac)
        resets += int(done.sum())
    print(
        f"{args.steps} steps x {args.num_envs} envs, {resets} resets: state max diff "
        f"{worst_state:.3g}; depth observations differing by > 0.02 (nearness): at most "
        f"{worst_frac:.4%} of pixels in a step"
    )


if __name__ == "__main__":
    main()
