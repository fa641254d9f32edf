"""``robolearn motion``: clips in and out of robolearn.

* ``convert``: a retargeted CSV to robolearn's npz, its joints named after the task's robot;
* ``play``: a clip shown kinematically on the task's robot, as a video;
* ``record``: a clip recorded from a policy playing its task (the simulator's state of one
  env, every env step);
* ``info``: what a clip holds, and whether it is plausible on the task's robot.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from robolearn.app.configs import build_setup, resolve_device_engine
from robolearn.errors import RobolearnError
from robolearn.motion import (
    MotionClip,
    RobotModel,
    load_clip,
    plausibility_problems,
    read_csv,
    save_clip,
)


def robot_scene(task: str, overrides: list[str]):
    """The task's scene (one env, on the cpu engine) and its robot as clips see it."""
    from robolearn.scene import Scene

    setup = build_setup(task, overrides, num_envs=1, engine="cpu")
    cfg = setup.env_cfg
    scene = Scene(cfg.scene, cfg.sim)
    scene.require_floating_base()
    root = scene.model.body(scene.root_body_id).name
    return scene, RobotModel.of(scene.model, root, scene.joint_names, name=f"{task}'s robot")


def convert(
    source: str,
    out: str,
    task: str,
    fps: float,
    quat_order: str = "xyzw",
    overrides: list[str] | None = None,
    log=print,
) -> MotionClip:
    """A CSV clip for ``task``'s robot saved as ``out`` (npz); its plausibility problems,
    if any, are reported (retargeted clips often graze the floor), not refused."""
    if not out.endswith(".npz"):
        raise RobolearnError(f"{out}: the converted clip is written as .npz")
    _, robot = robot_scene(task, overrides or [])
    clip = read_csv(source, robot.joint_names, fps, quat_order)
    for problem in plausibility_problems(robot, clip):
        log(f"warning: {problem}")
    save_clip(clip, out)
    log(
        f"wrote {out}: {clip.num_frames} frames at {clip.fps:g} Hz ({clip.duration:.2f} s), "
        f"{len(clip.joint_names)} joints"
    )
    return clip


def info(path: str, task: str | None, overrides: list[str] | None = None, log=print) -> int:
    """Print what the clip holds; with a task, its problems on the task's robot. Returns 1
    when it has problems there."""
    clip = load_clip(path)
    log(
        f"{path}: {clip.num_frames} frames at {clip.fps:g} Hz ({clip.duration:.2f} s), "
        f"{len(clip.joint_names)} joints"
    )
    if task is None:
        return 0
    _, robot = robot_scene(task, overrides or [])
    problems = plausibility_problems(robot, clip)
    for problem in problems:
        log(f"problem: {problem}")
    if not problems:
        log(f"plausible on {task}'s robot: no geom through the floor, every joint in range")
    return 1 if problems else 0


@dataclass
class PlayClipOptions:
    clip: str
    task: str
    out: str
    width: int = 640
    height: int = 480
    overrides: list[str] | None = None


def play_clip(opts: PlayClipOptions, log=print) -> Path:
    """Render the clip on the task's robot, frame by frame (kinematics only: no physics), to
    the mp4 ``opts.out`` at the clip's own rate."""
    from robolearn.render.video import EnvRenderer, FrameProgress, write_mp4

    if not opts.out.endswith(".mp4"):
        raise RobolearnError(f"{opts.out}: the video is written as .mp4")
    clip = load_clip(opts.clip)  # a bad file is refused before the scene is built
    scene, robot = robot_scene(opts.task, opts.overrides or [])
    qpos = robot.qpos(clip)
    engine = scene.engine
    renderer = EnvRenderer(
        engine, opts.width, opts.height, track_body=scene.root_body_id, fit=False
    )
    frames = []
    progress = FrameProgress(len(qpos))
    try:
        for q in qpos:
            engine.qpos[0] = _tensor(q, engine.qpos)
            frames.append(renderer.frame(0))
            progress.step()
    finally:
        renderer.close()
    path = write_mp4(opts.out, frames, fps=clip.fps)
    log(f"wrote {path}: {len(frames)} frames of {opts.clip} on {opts.task}'s robot")
    return path


def _tensor(values: np.ndarray, like):
    import torch

    return torch.as_tensor(values, dtype=like.dtype, device=like.device)


@dataclass
class RecordOptions:
    task: str
    out: str
    checkpoint: str | None = None
    load_run: str | None = None
    log_root: str = "logs"
    seconds: float = 10.0
    env_id: int = 0
    seed: int | None = None
    overrides: list[str] | None = None


def record(opts: RecordOptions, log=print) -> MotionClip:
    """Play the policy in its task's play variant and record env ``env_id``'s root pose and
    joint positions at every env step for ``seconds``; refused if that env's episode ends
    (a fall, a time-out) before then."""
    import torch

    from robolearn.app.play import env_for_checkpoint
    from robolearn.app.runs import find_checkpoint, import_for_policy
    from robolearn.rl.checkpoint import load_checkpoint
    from robolearn.rl.checkpoint_policy import act, load_for_env, start_episodes

    if not opts.out.endswith(".npz"):
        raise RobolearnError(f"{opts.out}: a clip is written as .npz")
    if not opts.seconds > 0:
        raise RobolearnError(f"--seconds must be positive, got {opts.seconds}")
    resolve_device_engine("cpu", "cpu")
    import_for_policy(opts.task, opts.checkpoint, opts.log_root)
    experiment = build_setup(opts.task, []).agent_cfg.experiment_name
    path = find_checkpoint(opts.task, experiment, opts.checkpoint, opts.load_run, opts.log_root)
    data = load_checkpoint(path)
    env, _ = env_for_checkpoint(
        opts.task,
        data,
        opts.overrides or [],
        num_envs=max(opts.env_id + 1, 1),
        engine="cpu",
        seed=opts.seed,
    )
    if not 0 <= opts.env_id < env.num_envs:
        raise RobolearnError(f"--env_id must be in [0, {env.num_envs})")
    policy = load_for_env(env, path)[0]
    scene = env.scene
    scene.require_floating_base()
    steps = round(opts.seconds / env.step_dt)
    if steps > env.max_episode_length - 1:
        raise RobolearnError(
            f"--seconds {opts.seconds} is longer than one episode of {opts.task} "
            f"({env.max_episode_length_s} s)"
        )
    q0 = scene.root_qpos_adr
    cols = scene.joint_columns(list(scene.joint_names)).qpos
    e, i = scene.engine, opts.env_id
    frames = []

    def grab() -> None:
        q = e.qpos[i].detach().to("cpu", torch.float64, copy=True)
        frames.append((q[q0 : q0 + 3].numpy(), q[q0 + 3 : q0 + 7].numpy(), q[cols].numpy()))

    obs, _ = env.reset()
    grab()
    for _ in range(steps):
        start_episodes(policy, env)
        obs, _, terminated, time_outs, _ = env.step(act(policy, obs, env.num_envs))
        if bool(terminated[i] | time_outs[i]):
            raise RobolearnError(
                f"env {i}'s episode ended after {len(frames) * env.step_dt:.2f} s, before "
                f"{opts.seconds} s: record a shorter clip or another env"
            )
        grab()
    pos, quat, joints = (np.array(x) for x in zip(*frames, strict=True))
    clip = MotionClip(
        fps=1.0 / env.step_dt,
        joint_names=tuple(scene.joint_names),
        root_pos=pos - scene.env_origins[i].cpu().double().numpy(),
        root_quat=quat,
        joint_pos=joints,
        name=Path(opts.out).stem,
    )
    save_clip(clip, opts.out)
    log(f"wrote {opts.out}: {clip.num_frames} frames at {clip.fps:g} Hz from {path}")
    return clip
