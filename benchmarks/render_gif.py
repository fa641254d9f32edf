"""An animated GIF of a policy, for the docs: env 0 followed by the camera, with its markers.

python benchmarks/render_gif.py --task humanoid_walk --out docs/humanoid_walk.gif
"""

from __future__ import annotations

import argparse

import numpy as np
import torch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="humanoid_walk")
    parser.add_argument("--checkpoint", default="pretrained")
    parser.add_argument("--out", required=True)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--fps", type=float, default=10.0)
    parser.add_argument("--size", type=int, nargs=2, default=(400, 300))
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()

    import imageio.v2 as imageio

    from robolearn.app.runs import find_checkpoint
    from robolearn.render.markers import collect_markers
    from robolearn.render.video import EnvRenderer, track_body_of
    from robolearn.rl.checkpoint_policy import act, load_for_env
    from robolearn.wrappers import make_env

    torch.manual_seed(args.seed)
    env = make_env(args.task, num_envs=1, engine="cpu", play=True)
    path = find_checkpoint(args.task, args.task, args.checkpoint, None, "logs")
    policy, _ = load_for_env(env, path)
    renderer = EnvRenderer(
        env.scene.engine, *args.size, track_body=track_body_of(env), distance=2.6,
        shadows=True, reflections=True,
    )  # fmt: skip
    obs, _ = env.reset(seed=args.seed)
    every = max(1, round(1.0 / (args.fps * env.step_dt)))
    frames = []
    for step in range(int(args.seconds / env.step_dt)):
        obs, *_ = env.step(act(policy, obs, 1))
        if step % every == 0:
            frames.append(renderer.frame(0, markers=collect_markers(env, 0)))
    imageio.mimsave(
        args.out, [np.asarray(f) for f in frames], duration=1000 * every * env.step_dt, loop=0
    )
    print(f"{len(frames)} frames -> {args.out}")


if __name__ == "__main__":
    main()
