"""The web viewer following a training run: reloading its new checkpoints, standing still
until the first, and saying what it waits for."""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
from cli_helpers import progress

from .helpers import (
    START_S,
    STOP_S,
    WAIT_S,
    request,
    start_web_viewer,
    state,
    stream_frames,
    strict_json,
    wait_for_state,
)


@pytest.mark.timeout(1200)  # the deadlines below add up past the default 600 s under load
def test_web_viewer_follows_training_and_reloads_new_checkpoints(tmp_path):
    root = tmp_path / "logs"
    # training's output goes to files: an unread pipe fills up and blocks training, and then
    # no new checkpoint ever comes
    train_err = tmp_path / "train.err"
    train = _train_live(tmp_path, root, "--num_envs", "64", "--max_iterations", "100000",
                        "agent.save_interval=3")  # fmt: skip
    viewer = None
    try:
        deadline = time.time() + START_S
        while not list(root.glob("cartpole_balance/*_live/model_*.pt")):
            assert train.poll() is None, train_err.read_text()[-3000:]
            assert time.time() < deadline, f"no checkpoint in {START_S} s"
            time.sleep(0.2)
        run = next(root.glob("cartpole_balance/*_live"))
        viewer = _follow_live(tmp_path, root)
        url = viewer.url
        first = state(url)
        assert first["actions"] == "follow" and first["iteration"] >= 3
        later = wait_for_state(
            url,
            lambda s: s["iteration"] > first["iteration"],
            "the viewer did not reload a newer checkpoint",
            timeout=2 * WAIT_S,
        )
        assert later["checkpoint"].endswith(f"model_{later['iteration']}.pt")
        # the 3D mode goes on across reloads: the same scene, and poses that move
        from robolearn.viewer.scene3d import decode_poses

        status, body = request(url, "GET", "/scene3d.json")
        assert status == 200 and strict_json(body)["nbody"] == 3, body[:200]
        # 503 until the simulation has captured the envs asked for (the page asks again)
        poses = decode_poses(_poses_when_ready(url, "/poses.bin?envs=0,1"))
        deadline, moved = time.time() + WAIT_S, poses
        while moved["frame"] == poses["frame"] and time.time() < deadline:  # a newer one
            moved = decode_poses(
                _poses_when_ready(url, f"/poses.bin?envs=0,1&after={poses['frame']}")
            )
        assert moved["frame"] != poses["frame"] and moved["steps"] > poses["steps"]
        # what the page does: one open /poses.stream answer, each new frame pushed to it
        frames = stream_frames(url, "/poses.stream?envs=0,1", 3)
        assert [f["env_ids"].tolist() for f in frames] == [[0, 1]] * 3
        assert frames[0]["frame"] < frames[1]["frame"] < frames[2]["frame"]
        assert frames[0]["steps"] < frames[2]["steps"]
        assert request(url, "GET", "/poses.stream?envs=0,99")[0] == 400  # 4 envs here
        assert len(progress(run)) > first["iteration"]  # training carried on meanwhile
        assert train.poll() is None, train_err.read_text()[-3000:]
    finally:
        try:
            if viewer is not None:
                viewer.stop()
        finally:  # a viewer that fails to stop must not leave training running
            _stop(train)


def _stop(train: subprocess.Popen) -> None:
    """SIGTERM (training saves and exits), then a kill if it does not within STOP_S."""
    if train.poll() is None:
        os.kill(train.pid, signal.SIGCONT)  # a paused process takes no signal but this
        train.send_signal(signal.SIGTERM)
    try:
        train.wait(timeout=STOP_S)
    except subprocess.TimeoutExpired:
        train.kill()
        train.wait()


def _poses_when_ready(url: str, path: str) -> bytes:
    """``GET path`` once it answers 200 (503: the envs are not captured yet, as a viewer
    beside a busy training run may take a while to), under a deadline."""
    deadline = time.time() + WAIT_S
    while True:
        status, body = request(url, "GET", path)
        if status == 200:
            return body
        assert status == 503 and time.time() < deadline, (status, body[:200])
        time.sleep(0.2)


def _train_live(tmp_path, root, *args: str) -> subprocess.Popen:
    """cartpole_balance training as the run named ``live`` under ``root``; its output goes
    to train.out and train.err in ``tmp_path`` (an unread pipe fills up and blocks
    training, and then no new checkpoint ever comes)."""
    command = [sys.executable, "-m", "robolearn", "train", "--task", "cartpole_balance"]
    with (tmp_path / "train.out").open("w") as out, (tmp_path / "train.err").open("w") as err:
        return subprocess.Popen(
            [*command, "--log_root", str(root), "--run_name", "live", *args],
            stdout=out,
            stderr=err,
            text=True,
        )


def _follow_live(tmp_path, root, wait: bool = True):
    """A web viewer following cartpole_balance's run named ``live`` under ``root``."""
    return start_web_viewer(
        tmp_path / "viewer",
        *("--task", "cartpole_balance", "--follow", "live", "--log_root", str(root)),
        *("--max_seconds", "1200"),
        wait=wait,
    )


def actions_sent(url: str) -> list[float]:
    """Every action value in the watched env's history, as the plots get it."""
    status, body = request(url, "GET", "/telemetry.json?since=-1")
    assert status == 200, body
    chart = next(c for c in strict_json(body)["charts"] if c["id"] == "actions")
    return [v for series in chart["series"] for v in series["values"] if v is not None]


# slow: a whole run end to end (the default suite keeps under 10 minutes)
@pytest.mark.slow
@pytest.mark.timeout(1200)  # the deadlines below add up past the default 600 s under load
def test_web_viewer_beside_a_starting_run_stands_still_until_the_first_checkpoint(tmp_path):
    from robolearn.app.runs import pretrained_path

    root = tmp_path / "logs"
    # the viewer comes first, before the run exists, and says what it waits for
    viewer = _follow_live(tmp_path, root, wait=False)
    train, train_err = None, tmp_path / "train.err"
    try:
        deadline = time.time() + START_S
        while "waiting for a run named 'live'" not in viewer.stderr():
            assert viewer.proc.poll() is None, viewer.stderr()[-3000:]
            assert time.time() < deadline, f"no waiting line in {START_S} s: {viewer.stderr()}"
            time.sleep(0.2)
        # its one checkpoint is the last (save_interval 50)
        train = _train_live(tmp_path, root, "--num_envs", "16", "--max_iterations", "40")
        # paused as soon as params/ is written: the viewer finds a run with its params and
        # no checkpoint, however long it takes to build its envs
        deadline = time.time() + START_S
        while not list(root.glob("cartpole_balance/*_live/params/run.yaml")):
            assert train.poll() is None, train_err.read_text()[-3000:]
            assert time.time() < deadline, f"no params/run.yaml in {START_S} s"
            time.sleep(0.02)
        os.kill(train.pid, signal.SIGSTOP)
        run = next(root.glob("cartpole_balance/*_live"))
        assert not list(run.glob("model_*.pt")), "training saved before it was paused"
        url = viewer.wait_for_url()
        still = wait_for_state(url, lambda s: s["steps"] > 0, "the env did not step")
        assert still["actions"] == "follow", still
        assert still["checkpoint"] is None and still["iteration"] == 0, still
        assert still["run"] == str(run), still
        sent = actions_sent(url)
        assert sent and all(v == 0 for v in sent), sent
        os.kill(train.pid, signal.SIGCONT)
        loaded = wait_for_state(
            url,
            lambda s: s["checkpoint"] is not None,
            "the viewer did not load the first checkpoint",
            timeout=2 * WAIT_S,
        )
        assert loaded["checkpoint"] == str(run / "model_40.pt") and loaded["iteration"] == 40
        assert train.wait(timeout=WAIT_S) == 0, train_err.read_text()[-3000:]
        deadline = time.time() + WAIT_S
        while not any(v != 0 for v in actions_sent(url)):
            assert time.time() < deadline, "the loaded policy sent no action"
            time.sleep(0.2)
        # a newer checkpoint that does not load (another task's, written as training writes
        # them: a temp file renamed) is one line; the policy before it stays
        tmp = run / ".model_50.pt.tmp"
        shutil.copyfile(pretrained_path("humanoid_walk"), tmp)
        tmp.rename(run / "model_50.pt")
        deadline = time.time() + WAIT_S
        while "model_50.pt did not load" not in viewer.stderr():
            assert viewer.proc.poll() is None, viewer.stderr()[-3000:]
            assert time.time() < deadline, f"no line on model_50.pt: {viewer.stderr()}"
            time.sleep(0.2)
        [line] = [ln for ln in viewer.stderr().splitlines() if "did not load" in ln]
        assert "'humanoid_walk', not 'cartpole_balance'" in line, line
        assert "still following model_40.pt" in line, line
        kept = state(url)
        assert kept["checkpoint"] == str(run / "model_40.pt") and kept["iteration"] == 40
        assert "Traceback" not in viewer.stderr(), viewer.stderr()[-3000:]
    finally:
        try:
            viewer.stop()
        finally:  # a viewer that fails to stop must not leave training running
            if train is not None:
                _stop(train)


def test_follow_says_what_it_waits_for_and_max_seconds_ends_the_wait(tmp_path):
    from robolearn.errors import RobolearnError
    from robolearn.viewer.launch import ViewOptions, wait_for_run

    opts = ViewOptions(
        task="cartpole_balance", follow="latest", log_root=str(tmp_path), max_seconds=0.3
    )
    said: list[str] = []
    with pytest.raises(RobolearnError, match=r"gave up after --max_seconds 0.3: still waiting"):
        wait_for_run(opts, "cartpole_balance", say=said.append)
    assert len(said) == 1, said  # one line, however many times it looked
    assert f"waiting for a run of 'cartpole_balance' to start in {tmp_path}" in said[0]
    assert "robolearn train --task cartpole_balance" in said[0] and "Ctrl-C" in said[0]
    # a run being set up: training creates its folder, then writes params/ once its envs
    # are built; the viewer waits for that too
    starting = tmp_path / "cartpole_balance" / "2030-01-01_00-00-00_live"
    starting.mkdir(parents=True)
    for follow in ("latest", "live", str(starting)):
        said.clear()
        with pytest.raises(RobolearnError, match=r"still waiting for .*run\.yaml"):
            wait_for_run(dataclasses.replace(opts, follow=follow), "cartpole_balance", said.append)
        assert len(said) == 1 and str(starting / "params" / "run.yaml") in said[0], said
    said.clear()
    with pytest.raises(RobolearnError, match="still waiting for a run named 'other'"):
        wait_for_run(dataclasses.replace(opts, follow="other"), "cartpole_balance", said.append)
    assert "--run_name other" in said[0], said
    # a run of another task is an error, not a policy loaded into the wrong envs
    from robolearn.app.runs import pretrained_path

    shutil.copyfile(pretrained_path("humanoid_walk"), starting / "model_10.pt")
    with pytest.raises(RobolearnError, match="is a run of 'humanoid_walk', not 'cartpole_balance'"):
        wait_for_run(opts, "cartpole_balance", said.append)
