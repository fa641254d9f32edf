"""``robolearn play``: a trained policy in its task."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from robolearn.app.configs import build_setup, resolve_device_engine
from robolearn.app.runs import (
    find_checkpoint,
    import_for_policy,
    output_dir,
)
from robolearn.errors import RobolearnError
from robolearn.files import require_file_path
from robolearn.rl.checkpoint import load_checkpoint
from robolearn.rl.checkpoint_policy import load_for_env


@dataclasses.dataclass
class PlayOptions:
    task: str
    checkpoint: str | None = None
    load_run: str | None = None
    log_root: str = "logs"
    num_envs: int | None = None
    device: str = "auto"
    engine: str | None = None
    seed: int | None = None
    eval: bool = False
    json: bool = False
    video: bool = False
    video_length: int = 500
    video_path: str | None = None
    video_envs: int = 1
    overrides: list[str] = dataclasses.field(default_factory=list)


def check_trained_on(data: dict, task: str) -> None:
    """A checkpoint's ``data`` (:func:`~robolearn.rl.checkpoint.load_checkpoint`) trained on
    another task than ``task`` is a RobolearnError: play and view refuse it before they
    build anything."""
    trained_on = data.get("task")
    if trained_on not in (None, task):
        raise RobolearnError(f"the policy was trained on {trained_on!r}, not {task!r}")


def env_for_checkpoint(task: str, data: dict, overrides: list[str], other_task: bool = False, **kw):
    """The play variant of the task, with the overrides the checkpoint was trained with;
    ``other_task``: the policy may come from another task (an exported one, whose inputs
    and outputs are checked against the env), whose overrides are then not replayed."""
    from robolearn.env import ManagerBasedRLEnv

    if not other_task:
        check_trained_on(data, task)
    trained_on = data.get("task")
    replayed = data.get("overrides", []) if trained_on in (None, task) else []
    setup = build_setup(task, overrides, play=True, replayed=replayed, **kw)
    return ManagerBasedRLEnv(setup.env_cfg), setup


def _exported_policy(path: Path, env, task: str, trained_on: str | None = None):
    """An exported policy (ONNX, TorchScript) as play's policy, after checking that it reads
    what ``env`` observes and writes its actions; ``trained_on``, the task its policy.json
    names, is said when the sizes differ on another task."""
    from robolearn.app.load_policy import load_policy

    policy = load_policy(path, device=env.device)
    dims = env.observation_manager.group_dims
    missing = [g for g in policy.obs_groups if g not in dims]
    if missing:
        raise RobolearnError(f"{path} reads observation group(s) {missing} the task lacks")
    width = sum(dims[g] for g in policy.obs_groups)
    if (width, env.num_actions) != (policy.obs_dim, policy.action_dim):
        why = "trained with other overrides?"
        if trained_on not in (None, task):
            why = f"the policy was trained on {trained_on!r}"
        raise RobolearnError(
            f"{path} maps {policy.obs_dim} observations to {policy.action_dim} actions; the "
            f"task has {width} and {env.num_actions} ({why})"
        )
    return policy


def evaluate_checkpoint(
    path: Path, task: str, num_envs: int = 256, engine: str | None = None
) -> dict[str, Any]:
    """``robolearn play --eval`` of one checkpoint of ``task``, as its JSON object."""
    from robolearn.app.evaluate import evaluate

    data = load_checkpoint(path)
    env, _ = env_for_checkpoint(task, data, [], num_envs=num_envs, engine=engine)
    try:
        return evaluate(env, load_for_env(env, path)[0])
    finally:
        env.close()


def play(opts: PlayOptions, log=print) -> int:
    from robolearn.app.load_policy import policy_kind, read_description

    engine = resolve_device_engine(opts.device, opts.engine)
    import_for_policy(opts.task, opts.checkpoint, opts.log_root)
    experiment = build_setup(opts.task, []).agent_cfg.experiment_name
    path = find_checkpoint(opts.task, experiment, opts.checkpoint, opts.load_run, opts.log_root)
    exported = policy_kind(path) != "checkpoint"
    if exported:  # ONNX or TorchScript from robolearn export: policy.json names the task
        desc_path = path.parent / "policy.json"
        if not desc_path.is_file():
            raise RobolearnError(f"{path}: policy.json is missing beside it (robolearn export)")
        data = read_description(desc_path)
    else:
        data = load_checkpoint(path)
    # a video alone steps only its envs for its frames: no evaluation, no whole episodes
    only_video = opts.video and not opts.eval
    num_envs = opts.num_envs
    if num_envs is None and opts.eval:
        num_envs = 256
    elif num_envs is None and only_video:
        num_envs = opts.video_envs
    # an exported policy plays on any task that observes what it reads (a variant of its
    # own, for transfer: the rough policy among obstacles); a checkpoint on its own task
    env, _ = env_for_checkpoint(
        opts.task, data, opts.overrides, other_task=exported, num_envs=num_envs,
        engine=engine, seed=opts.seed,
    )  # fmt: skip
    if exported:
        policy = _exported_policy(path, env, opts.task, data.get("task"))
    else:
        policy = load_for_env(env, path)[0]
    if not opts.json:
        trained_on = data.get("task")
        other = f" (trained on {trained_on})" if trained_on not in (None, opts.task) else ""
        log(f"playing {path}{other} on {opts.task}: {env.num_envs} envs on {env.scene.engine.name}")
    recorder = None
    if opts.video:
        from robolearn.render.video import EnvRenderer, require_video_memory, track_body_of

        if not 1 <= opts.video_envs <= env.num_envs:
            raise RobolearnError(f"--video_envs must be between 1 and --num_envs ({env.num_envs})")
        size = (640, 480) if opts.video_envs == 1 else (480, 360)
        require_video_memory(opts.video_length, *size, tiles=opts.video_envs)
        if opts.video_path:
            require_file_path(opts.video_path)  # before the frames are drawn
        renderer = EnvRenderer(env.scene.engine, *size, track_body=track_body_of(env))
        recorder = _Clip(env, renderer, opts.video_length, opts.video_envs)
    from robolearn.app.evaluate import evaluate, run_policy

    if only_video:
        metrics: dict[str, Any] = {}
        run_policy(env, policy, opts.video_length, recorder)
    else:
        metrics = evaluate(env, policy, on_step=recorder)
        while recorder is not None and not recorder.full:  # a clip longer than one episode
            evaluate(env, policy, on_step=recorder)
    if recorder is not None:
        from robolearn.render.video import write_mp4

        out = (
            Path(opts.video_path)
            if opts.video_path
            else output_dir(path, opts.log_root, experiment)
            / "videos"
            / "play"
            / f"{path.stem}.mp4"
        )
        write_mp4(out, recorder.frames, fps=1.0 / env.step_dt)
        metrics["video"] = str(out)
        metrics["video_frames"] = len(recorder.frames)
    metrics["checkpoint"] = str(path)
    if opts.json:
        print(json.dumps(metrics))
    else:
        for line in format_evaluation(metrics):
            log(line)
    return 0


def format_evaluation(metrics: dict[str, Any]) -> list[str]:
    """The lines ``robolearn play --eval`` prints for :func:`~robolearn.app.evaluate.evaluate`'s
    result (plus play's ``checkpoint`` and ``video``): one line per number, then the reward
    terms, the endings, the task's metrics and the terrain in a few wrapped lines each, and
    the files last."""
    nested = ("schema_version", "reward_terms", "terminations", "metrics", "terrain")
    files = ("checkpoint", "video", "video_frames")

    def scalar(key: str, value: Any) -> str:
        return f"  {key:22s} {value:.4f}" if isinstance(value, float) else f"  {key:22s} {value}"

    lines = [scalar(k, v) for k, v in metrics.items() if k not in nested + files]
    if "reward_terms" in metrics:
        lines += _wrapped("rewards (mean episode sum):", metrics["reward_terms"], "{:.4g}")
    if "terminations" in metrics:
        ends = metrics["terminations"]
        lines += _wrapped("ended by time-out:", ends["time_outs"], "{:.1%}")
        lines += _wrapped("ended by failure:", ends["failures"], "{:.1%}")
    if metrics.get("metrics"):
        lines += _wrapped("task metrics (mean over steps):", metrics["metrics"], "{:.4f}")
    terrain = metrics.get("terrain")
    if terrain is not None:
        lines.append(f"  terrain: mean level {terrain['mean_level']:.2f}")
        lines += [f"    {name:20s} " + _terrain_stats(s) for name, s in terrain["types"].items()]
    return lines + [scalar(k, metrics[k]) for k in files if k in metrics]


def _wrapped(title: str, values: dict[str, Any], fmt: str, width: int = 96) -> list[str]:
    """``title`` and ``name value`` pairs, as many to a line as fit in ``width``."""
    items = [f"{k} {'-' if v is None else fmt.format(v)}" for k, v in values.items()]
    lines, line = [], f"  {title}"
    for item in items:
        if len(line) + 2 + len(item) > width and line.strip() != title:
            lines.append(line)
            line = "      "
        line += f"  {item}" if line.strip() else item
    return [*lines, line]


def _terrain_stats(stats: dict) -> str:
    """One line of a terrain type's evaluation."""

    def num(value) -> str:
        return "-" if value is None else f"{value:.3f}"

    steps = "  ".join(
        f"{key} {num(value)}"
        for key, value in stats.items()
        if key not in ("envs", "mean_level", "fall_rate")
    )
    return (
        f"envs {stats['envs']:4d}  level {stats['mean_level']:.1f}  falls "
        f"{stats['fall_rate']:.2f}  {steps}"
    )


class _Clip:
    """Frames of env 0 (or a grid of the first ``envs`` envs) with the commands' markers, one
    per env step, up to ``length``."""

    def __init__(self, env, renderer, length: int, envs: int = 1) -> None:
        from robolearn.render.video import FrameProgress

        self.env, self.renderer, self.length, self.envs = env, renderer, length, envs
        self.frames: list = []
        self.progress = FrameProgress(length)

    @property
    def full(self) -> bool:
        return len(self.frames) >= self.length

    def __call__(self) -> None:
        from robolearn.render.markers import collect_markers

        if self.full:
            return
        markers = lambda i: collect_markers(self.env, i)  # noqa: E731
        if self.envs == 1:
            self.frames.append(self.renderer.frame(0, markers=markers(0)))
        else:
            self.frames.append(self.renderer.grid(list(range(self.envs)), markers_of=markers))
        self.progress.step()
