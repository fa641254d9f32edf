"""The tracking command and its terms on the real engine: the reference it follows, the
state it starts episodes in, how episodes end, adaptive sampling, the tasks and the CLI."""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest
import torch
from robolearn.assets import ASSETS_DIR

from robolearn.env import ManagerBasedRLEnv
from robolearn.errors import RobolearnError
from robolearn.managers import EnvRows
from robolearn.motion import MotionClip, load_clip, save_clip
from robolearn.registry import get_task, load_tasks
from tests.cli_helpers import one_line_error, play_eval, robolearn_in_process, run_train

load_tasks()


def _env(task: str = "humanoid_track", num_envs: int = 4, play: bool = True, **command):
    spec = get_task(task)
    cfg = spec.play_env_cfg() if play else spec.env_cfg()
    cfg.scene.num_envs = num_envs
    for key, value in command.items():
        setattr(cfg.commands["motion"], key, value)
    return ManagerBasedRLEnv(cfg)


def test_an_episode_starts_in_the_clips_state_and_follows_it_frame_by_frame():
    env = _env(sampling="uniform")
    env.reset()
    cmd = env.command_manager.terms["motion"]
    # the robot is in the start frame's state; the command is the next frame
    assert (cmd.frame == cmd.start_frame + 1).all()
    start = cmd.start_frame
    torch.testing.assert_close(env.scene.joint_pos, cmd.table["joint_pos"][start])
    # put the robot in the frame to reach: the tracking errors vanish
    mask = torch.ones(env.num_envs, dtype=torch.bool)
    cmd._write_state(EnvRows(env, mask), cmd.frame)
    env.scene.forward(mask)
    errors = cmd.errors()
    for key in ("body_pos_error", "anchor_pos_error", "joint_pos_error"):
        assert float(errors[key].max()) < 1e-5, (key, errors[key])
    assert float(errors["anchor_ori_error"].max()) < 1e-3
    # the robot's body velocities there agree with the clip's (differences of its poses)
    lin, _ = cmd.robot_body_vel_w()
    assert float((lin - cmd.ref_body_lin_vel_w).norm(dim=-1).max()) < 0.05
    first = cmd.frame.clone()
    for k in range(1, 4):
        env.step(torch.zeros(env.num_envs, env.num_actions))
        alive = env.episode_length_buf == k
        assert (cmd.frame[alive] == first[alive] + k).all()


def test_an_episode_ends_with_its_clip_as_a_time_out_having_tracked_all_of_it():
    env = _env(num_envs=2, sampling="uniform")
    env.reset()
    cmd = env.command_manager.terms["motion"]
    # start both envs three frames before their clip ends
    last = cmd.clip_ends[0]
    cmd.start_frame[:] = last - 3
    cmd.frame[:] = last - 2
    cmd._update_command()
    ended_at = None
    for k in range(1, 6):
        _, _, terminated, time_outs, _ = env.step(torch.zeros(2, env.num_actions))
        if bool(time_outs.all()):
            ended_at = k
            break
        assert not bool(terminated.any())
    assert ended_at == 3
    done = env.termination_manager.last_episode_dones
    assert bool(done[:, env.termination_manager.term_names.index("clip_ended")].all())
    torch.testing.assert_close(cmd.last_episode["tracked_fraction"], torch.ones(2))


def test_adaptive_sampling_starts_episodes_where_they_fail():
    env = _env(num_envs=512, play=False)
    cmd = env.command_manager.terms["motion"]
    assert cmd.cfg.sampling == "adaptive" and cmd.num_bins == 10  # a 10 s clip, 1 s bins
    uniform = cmd.sampling_probabilities()
    torch.testing.assert_close(uniform, torch.full((10,), 0.1))
    cmd.bin_failure[6] = 1.0  # episodes fail in the seventh second
    p = cmd.sampling_probabilities()
    assert float(p[6]) > 0.85
    starts = cmd._draw_starts(4000, env.device)
    in_bin = (starts >= 300) & (starts < 350)
    assert float(in_bin.float().mean()) > 0.8


def test_failures_raise_their_bins_rate():
    env = _env(num_envs=64, play=False, adaptive_alpha=0.5)
    env.reset()
    cmd = env.command_manager.terms["motion"]
    before = cmd.bin_failure.clone()
    for _ in range(40):
        # all-out actions: the humanoid falls and its episodes fail
        env.step(torch.ones(env.num_envs, env.num_actions))
    assert float(cmd.bin_failure.sum()) > float(before.sum())


def test_the_terms_and_tasks_observe_and_reward_the_reference():
    env = _env(num_envs=8)
    obs, _ = env.reset()
    cmd = env.command_manager.terms["motion"]
    j = len(env.scene.joint_names)
    assert obs["policy"].shape[1] == 2 * j + 3 + 6 + 3 + 3 + j + j + env.num_actions
    assert obs["critic"].shape[1] > obs["policy"].shape[1]
    _, reward, *_ = env.step(torch.zeros(env.num_envs, env.num_actions))
    assert bool(torch.isfinite(reward).all())
    # an untrained robot one step in is near its reference: each kernel near 1
    rm = env.reward_manager
    for name in ("anchor_pos", "body_pos", "body_ori"):
        value = rm.step_reward[:, rm.term_names.index(name)] / (env.step_dt * rm.cfg[name].weight)
        assert float(value.min()) > 0.8, name
    assert set(cmd.step_metrics()) == {
        "body_pos_error",
        "anchor_pos_error",
        "anchor_ori_error",
        "joint_pos_error",
    }


def test_a_reference_body_the_model_lacks_is_refused():
    with pytest.raises(RobolearnError, match="the robot has no body 'left_hand'"):
        _env(body_names=["pelvis", "left_hand"])


def test_a_clip_of_another_robot_names_the_joints_that_differ(tmp_path):
    clip = load_clip(ASSETS_DIR / "motions" / "g1_walk.npz")
    save_clip(clip, tmp_path / "g1.npz")
    with pytest.raises(RobolearnError, match=r"has 29 joints and the robot 21: it lacks"):
        _env(motion_files=[str(tmp_path / "g1.npz")])


def test_a_clip_shorter_than_one_control_step_is_refused(tmp_path):
    clip = load_clip(ASSETS_DIR / "motions" / "humanoid_walk.npz")
    short = MotionClip(
        200.0, clip.joint_names, clip.root_pos[:3], clip.root_quat[:3], clip.joint_pos[:3]
    )
    save_clip(short, tmp_path / "short.npz")
    with pytest.raises(RobolearnError, match="shorter than one control step"):
        _env(motion_files=[str(tmp_path / "short.npz")])


def test_a_sampling_that_does_not_exist_is_refused():
    with pytest.raises(RobolearnError, match="sampling 'random' is not one of adaptive"):
        _env(sampling="random")


def test_several_clips_are_tracked_side_by_side():
    env = _env(
        num_envs=64,
        sampling="start",
        motion_files=["motions/humanoid_walk.npz", "motions/humanoid_squat.npz"],
    )
    env.reset()
    cmd = env.command_manager.terms["motion"]
    clips = cmd.clip_of_frame[cmd.frame]
    assert set(clips.tolist()) == {0, 1}
    assert (cmd.start_frame == cmd.clip_starts[clips]).all()


# ---- the command line -------------------------------------------------------------------


def _csv_of(clip: MotionClip, path, frames: int | None = None) -> None:
    """The clip as a retargeting tool's CSV (its first ``frames`` frames, or all)."""
    quat = clip.root_quat[:, [1, 2, 3, 0]]
    rows = np.concatenate((clip.root_pos, quat, clip.joint_pos), axis=1)[:frames]
    path.write_text("\n".join(",".join(f"{v:.10f}" for v in row) for row in rows) + "\n")


def test_motion_convert_then_info_and_play(capsys, tmp_path):
    robolearn = functools.partial(robolearn_in_process, capsys)  # one interpreter for three
    clip = load_clip(ASSETS_DIR / "motions" / "humanoid_squat.npz")
    _csv_of(clip, tmp_path / "squat.csv", frames=40)  # the squat's first 0.8 s
    out = robolearn(
        "motion", "convert", tmp_path / "squat.csv", tmp_path / "squat.npz",
        "--task", "humanoid_track", "--fps", "50",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    back = load_clip(tmp_path / "squat.npz")
    np.testing.assert_allclose(back.joint_pos, clip.joint_pos[:40], atol=1e-8)
    assert back.joint_names == clip.joint_names
    out = robolearn("motion", "info", tmp_path / "squat.npz", "--task", "humanoid_track")
    assert out.returncode == 0 and "plausible" in out.stdout, out.stdout + out.stderr
    video = tmp_path / "squat.mp4"
    out = robolearn(
        "motion", "play", tmp_path / "squat.npz", "--task", "humanoid_track",
        "--video", video, "--width", "160", "--height", "120",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    import imageio.v3 as iio

    frames = iio.imread(video)
    assert frames.shape[0] == back.num_frames == 40 and frames.shape[1:3] == (120, 160)
    assert frames[0].std() > 1.0  # a picture, not a blank


def test_motion_convert_refuses_a_wrong_csv_in_one_line(capsys, tmp_path):
    (tmp_path / "bad.csv").write_text("0,0,0.7,0,0,0,1\n")
    out = robolearn_in_process(
        capsys, "motion", "convert", tmp_path / "bad.csv", tmp_path / "bad.npz",
        "--task", "humanoid_track",
    )  # fmt: skip
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "7 columns; this robot's clips have 28" in out.stderr
    assert not (tmp_path / "bad.npz").exists()


@pytest.mark.parametrize(
    "frames, flags, message",
    [
        (20, ["--fps", "1e-9"], "a frame rate (--fps) of 1e-09 Hz is outside the 1 to 10,000 Hz"),
        (1, [], "has one row: a clip takes two frames at least"),
    ],
)
def test_motion_convert_refuses_an_absurd_rate_or_a_single_frame(
    capsys, tmp_path, frames, flags, message
):
    """Before: both were written; the first then asked training for terabytes (its 20
    frames last 600 years), the second was refused only at training."""
    _csv_of(load_clip(ASSETS_DIR / "motions" / "humanoid_walk.npz"), tmp_path / "w.csv", frames)
    out = robolearn_in_process(
        capsys, "motion", "convert", tmp_path / "w.csv", tmp_path / "w.npz",
        "--task", "humanoid_track", *flags,
    )  # fmt: skip
    one_line_error(out, message)
    assert not (tmp_path / "w.npz").exists()


def test_training_refuses_clips_whose_frames_do_not_fit_naming_the_clip(capsys, tmp_path):
    """A clip saved at 1e-9 Hz (by an older convert) lasts 19e9 s: at the control rate its
    frames (and adaptive sampling's bins) need terabytes. Before: numpy's MemoryError
    traceback when it was resampled."""
    walk = load_clip(ASSETS_DIR / "motions" / "humanoid_walk.npz")
    slow = MotionClip(
        1e-9, walk.joint_names, walk.root_pos[:20], walk.root_quat[:20], walk.joint_pos[:20]
    )
    save_clip(slow, tmp_path / "slow.npz")
    out = robolearn_in_process(
        capsys, "train", "--task", "humanoid_track", "--num_envs", 4, "--log_root",
        tmp_path / "logs", f"env.commands.motion.motion_files=[{tmp_path / 'slow.npz'}]",
    )  # fmt: skip
    one_line_error(
        out,
        f"commands.motion: {tmp_path / 'slow.npz'}'s 950,000,000,001 frames at the control "
        "rate (50 Hz; 20 at 1e-09 Hz in its file, 19,000,000,000 s) need about ",
    )
    assert "TiB of memory" in out.stderr and "robolearn motion convert --fps" in out.stderr
    assert not (tmp_path / "logs").exists()


def test_motion_play_refuses_a_video_larger_than_the_models_offscreen_buffer(capsys, tmp_path):
    """Before: 100000x100000 was shrunk to the buffer's 1280x720 without a word."""
    out = robolearn_in_process(
        capsys, "motion", "play", ASSETS_DIR / "motions" / "humanoid_walk.npz",
        "--task", "humanoid_track", "--video", tmp_path / "big.mp4",
        "--width", 100000, "--height", 100000,
    )  # fmt: skip
    one_line_error(
        out,
        "a 100000x100000 video is larger than the model's offscreen buffer (1280x720), which "
        "MuJoCo's renderer draws into: ask for at most that",
    )
    assert not any(tmp_path.iterdir())


def test_motion_record_and_eval_report_the_tracking_metrics(capsys, tmp_path):
    # a clip recorded from the shipped walking policy
    out = robolearn_in_process(
        capsys,
        "motion", "record", tmp_path / "walk.npz", "--task", "humanoid_walk",
        "--checkpoint", "pretrained", "--seconds", "2",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    clip = load_clip(tmp_path / "walk.npz")
    assert clip.num_frames == 101 and clip.fps == 50.0
    # an untrained tracking policy on it, evaluated
    logs = tmp_path / "logs"
    clips = f"env.commands.motion.motion_files=[{tmp_path / 'walk.npz'}]"
    out = robolearn_in_process(
        capsys, "train", "--task", "humanoid_track", "--num_envs", "32", "--max_iterations",
        "1", "--log_root", logs, clips,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    result = play_eval(
        "--task", "humanoid_track", "--log_root", logs, "--num_envs", "8", capsys=capsys,
    )  # fmt: skip
    for key in ("body_pos_error", "anchor_pos_error", "anchor_ori_error", "joint_pos_error"):
        assert result[f"motion/{key}"] >= 0.0
    assert 0.0 < result["motion/tracked_fraction"] <= 1.0
    assert 0.0 <= result["fall_rate"] <= 1.0


@pytest.mark.slow
def test_humanoid_track_learns_to_follow_its_squat(tmp_path):
    """60 iterations of 256 envs (about 100 s on 2 cores). Measured (seed 3): the
    training return 0.50 -> 0.94 and the episode length 23 -> 38 steps over the first and
    last five iterations, the anchor-height failures 3.9 -> 0.07 per iteration; asserted
    with margins."""
    run_train(
        "--task", "humanoid_track_squat", "--num_envs", "256",
        "--max_iterations", "60", "--log_root", tmp_path, "--seed", "3",
    )  # fmt: skip
    (progress,) = tmp_path.glob("humanoid_track_squat/*/progress.jsonl")
    rows = [json.loads(line) for line in progress.read_text().splitlines()]

    def change(key: str) -> tuple[float, float]:
        values = [r[key] for r in rows if r.get(key) is not None]
        return float(np.mean(values[:5])), float(np.mean(values[-5:]))

    first, last = change("Train/mean_reward")
    assert last > 1.5 * first, (first, last)
    first, last = change("Train/mean_episode_length")
    assert last > 1.4 * first, (first, last)
    first, last = change("Episode_Termination/anchor_height")
    assert last < 0.2 * first, (first, last)


@pytest.mark.warp
def test_tracking_runs_the_same_on_the_warp_code_path():
    """The command, its reset writes and its terms on MuJoCo Warp (warp's CPU device): the
    same start frames and, five steps in, the same tracking errors and reward as on cpu."""
    results = {}
    for engine in ("cpu", "warp-cpu"):
        cfg = get_task("humanoid_track").play_env_cfg()
        cfg.scene.num_envs = 4
        cfg.sim.engine = engine
        cfg.commands["motion"].sampling = "uniform"
        env = ManagerBasedRLEnv(cfg)
        env.reset(seed=0)
        cmd = env.command_manager.terms["motion"]
        starts = cmd.start_frame.tolist()
        for _ in range(5):
            _, reward, *_ = env.step(torch.zeros(4, env.num_actions))
        results[engine] = (starts, {k: v.clone() for k, v in cmd.errors().items()}, reward)
    (s_cpu, e_cpu, r_cpu), (s_warp, e_warp, r_warp) = results["cpu"], results["warp-cpu"]
    assert s_cpu == s_warp
    for key in e_cpu:
        torch.testing.assert_close(e_warp[key], e_cpu[key], atol=1e-4, rtol=1e-3)
    torch.testing.assert_close(r_warp, r_cpu, atol=1e-5, rtol=1e-3)


def test_the_pretrained_g1_track_policy_follows_the_walk(capsys):
    """The shipped g1_track checkpoint, evaluated as a user would (the play variant: each
    env from the clip's first frame, one episode), follows the recorded walk to its end:
    measured, no falls, the bodies 2.4 cm and the torso 8.8 cm from the reference on
    average (assets/pretrained/g1_track/README.md)."""
    metrics = play_eval(
        "--task", "g1_track", "--checkpoint", "pretrained", "--num_envs", "16", "--engine", "cpu",
        capsys=capsys,
    )  # fmt: skip
    assert metrics["fall_rate"] == 0.0, metrics
    assert metrics["motion/tracked_fraction"] == 1.0, metrics
    assert metrics["motion/body_pos_error"] < 0.04, metrics
    assert metrics["motion/anchor_pos_error"] < 0.2, metrics  # it keeps up with the walk
