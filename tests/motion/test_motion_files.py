"""The motion files users hand robolearn, as the command line meets them: CSVs that are not
UTF-8 or not CSVs, npz files that are truncated or not npz files, a convert killed while it
writes, overrides anywhere on the line, a clip of another robot."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from robolearn.assets import ASSETS_DIR

from robolearn.motion import load_clip
from tests.cli_helpers import one_line_error, robolearn_in_process

SQUAT = ASSETS_DIR / "motions" / "humanoid_squat.npz"
TASK = "humanoid_track"


def _csv(path, frames: int = 10) -> bytes:
    """The squat's first ``frames`` frames as a retargeting tool's CSV (x y z w
    quaternions), written to ``path``; returns its bytes."""
    clip = load_clip(SQUAT)
    quat = clip.root_quat[:, [1, 2, 3, 0]]
    rows = np.concatenate((clip.root_pos, quat, clip.joint_pos), axis=1)[:frames]
    data = ("\n".join(",".join(f"{v:.10f}" for v in row) for row in rows) + "\n").encode()
    path.write_bytes(data)
    return data


def _no_internals(stderr: str) -> None:
    """The message speaks of the user's file, not of numpy's readers."""
    for word in ("BadZipFile", "pickle", "UnicodeDecodeError", "Traceback"):
        assert word not in stderr, stderr


# ---- CSVs -------------------------------------------------------------------------------


def test_a_csv_that_is_not_utf8_is_refused_naming_its_line(capsys, tmp_path):
    lines = _csv(tmp_path / "walk.csv").splitlines(keepends=True)
    lines[1] = lines[1].replace(b",", b",\xe9", 1)  # one Latin-1 byte on line 2
    (tmp_path / "walk.csv").write_bytes(b"".join(lines))
    out = robolearn_in_process(
        capsys, "motion", "convert", tmp_path / "walk.csv", tmp_path / "walk.npz", "--task", TASK
    )
    one_line_error(out, f"{tmp_path / 'walk.csv'}, line 2: byte 0xe9 is not UTF-8 text")
    _no_internals(out.stderr)
    assert not (tmp_path / "walk.npz").exists()


def test_convert_given_an_npz_says_it_needs_no_converting(capsys, tmp_path):
    shutil.copy(SQUAT, tmp_path / "squat.npz")
    out = robolearn_in_process(
        capsys, "motion", "convert", tmp_path / "squat.npz", tmp_path / "out.npz", "--task", TASK
    )
    one_line_error(out, f"{tmp_path / 'squat.npz'} is an npz, not a CSV")
    _no_internals(out.stderr)
    assert not (tmp_path / "out.npz").exists()


# ---- npz files --------------------------------------------------------------------------


def _damaged(kind: str, path) -> str:
    """Write an npz of ``kind`` to ``path``; returns what the error is to say of it."""
    if kind == "truncated":  # a copy cut short
        path.write_bytes(SQUAT.read_bytes()[:20000])
        return "is a truncated npz"
    if kind == "garbage":
        path.write_bytes(b"\x00not a clip\xff" * 40)
        return "is not an npz file"
    if kind == "empty":
        path.write_bytes(b"")
        return "is not an npz file"
    # an npz whose joint names were saved as Python objects
    with np.load(SQUAT) as data:
        arrays = dict(data)
    arrays["joint_names"] = arrays["joint_names"].astype(object)
    np.savez(path, **arrays)
    return "its array 'joint_names' holds Python objects"


@pytest.mark.parametrize("kind", ["truncated", "garbage", "empty", "objects"])
def test_motion_info_refuses_a_damaged_npz_in_one_line_naming_it(capsys, tmp_path, kind):
    path = tmp_path / "clip.npz"
    what = _damaged(kind, path)
    out = robolearn_in_process(capsys, "motion", "info", path)
    one_line_error(out, f"{path} {what}" if kind != "objects" else what)
    assert str(path) in out.stderr
    _no_internals(out.stderr)


def test_motion_play_and_training_refuse_a_truncated_clip_in_one_line(capsys, tmp_path):
    path = tmp_path / "clip.npz"
    what = _damaged("truncated", path)
    out = robolearn_in_process(
        capsys, "motion", "play", path, "--task", TASK, "--video", tmp_path / "clip.mp4"
    )
    one_line_error(out, f"{path} {what}")
    assert not list(tmp_path.glob("*.mp4"))
    out = robolearn_in_process(
        capsys, "train", "--task", TASK, "--num_envs", "2", "--max_iterations", "1",
        "--log_root", tmp_path / "logs", f"env.commands.motion.motion_files=[{path}]",
    )  # fmt: skip
    one_line_error(out, f"{path} {what}")
    _no_internals(out.stderr)
    assert not (tmp_path / "logs").exists()


# ---- a convert killed while it writes -----------------------------------------------------

# The real command line, held (by an audit hook, Python's own) once it has written its temp
# file and is about to rename it over the target, so that the test kills it mid-write
# every time.
_HELD_CONVERT = """
import os, sys, time

def hold(event, args):
    if event == "os.rename" and str(args[1]).endswith(os.sep + "clip.npz"):
        time.sleep(600)

sys.addaudithook(hold)
from robolearn.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_convert_killed_mid_write_leaves_a_temp_file_the_next_convert_removes(capsys, tmp_path):
    _csv(tmp_path / "walk.csv")
    convert = ("motion", "convert", tmp_path / "walk.csv", tmp_path / "clip.npz", "--task", TASK)
    child = subprocess.Popen(
        [sys.executable, "-c", _HELD_CONVERT, *map(str, convert)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 300
    try:
        while not list(tmp_path.glob(".clip.npz.*.tmp")) and child.poll() is None:
            assert time.monotonic() < deadline, "the convert never started writing"
            time.sleep(0.05)
    finally:
        child.send_signal(signal.SIGKILL)
        _, stderr = child.communicate(timeout=60)
    assert child.returncode == -signal.SIGKILL, stderr
    (stale,) = tmp_path.glob(".clip.npz.*.tmp")
    assert not (tmp_path / "clip.npz").exists()
    # a live writer's temp file (this process's) is not the next convert's to delete
    live = tmp_path / f".clip.npz.{os.getpid()}.abcd1234.tmp"
    live.write_bytes(b"being written")

    out = robolearn_in_process(capsys, *convert)
    assert out.returncode == 0, out.stderr
    assert load_clip(tmp_path / "clip.npz").num_frames == 10
    assert not stale.exists() and live.exists()
    assert sorted(tmp_path.glob(".clip.npz.*")) == [live]


# ---- overrides anywhere ------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ["convert", "{csv}", "--task", TASK, "{override}", "{out}", "--fps", "50"],
        ["play", "--task", TASK, "{override}", "{clip}", "--video", "{video}"],
        ["info", "--task", TASK, "{override}", "{clip}"],
        ["record", "--task", "humanoid_walk", "{override}", "{out}", "--checkpoint", "pretrained"],
    ],
    ids=lambda c: c[0],
)
def test_motion_commands_take_overrides_anywhere_on_the_line(capsys, tmp_path, command):
    """An override between flags and before a positional reaches the task's config (this
    one names a field there is not, and its error says so), the positionals stay theirs."""
    _csv(tmp_path / "walk.csv")
    words = {
        "{csv}": tmp_path / "walk.csv",
        "{out}": tmp_path / "out.npz",
        "{clip}": SQUAT,
        "{video}": tmp_path / "clip.mp4",
        "{override}": "env.no_such_field=1",
    }
    out = robolearn_in_process(capsys, "motion", *(words.get(w, w) for w in command))
    one_line_error(out, "unknown config path 'env.no_such_field'")
    assert not list(tmp_path.glob("out.npz")) and not list(tmp_path.glob("*.mp4"))


def test_convert_with_an_override_between_its_words_converts(capsys, tmp_path):
    _csv(tmp_path / "walk.csv")
    out = robolearn_in_process(
        capsys, "motion", "convert", tmp_path / "walk.csv", "--task", TASK,
        "env.episode_length_s=5", tmp_path / "walk.npz", "--fps", "50",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert load_clip(tmp_path / "walk.npz").fps == 50.0


# ---- a clip of another robot --------------------------------------------------------------


def test_a_clip_of_another_robot_names_the_robot_and_the_joints(capsys):
    clip = ASSETS_DIR / "motions" / "g1_walk.npz"
    out = robolearn_in_process(capsys, "motion", "info", clip, "--task", TASK)
    one_line_error(out, f"has 29 joints and {TASK}'s robot 21: it lacks ['left_hip_yaw'")
    assert f"{TASK}'s robot has no joint ['left_hip_pitch_joint'" in out.stderr
