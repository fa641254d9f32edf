"""The viewers, as users meet them: the web viewer in a real headless Chromium, the native
viewer in a real window under Xvfb, the grid video, and following a training run."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

import numpy as np
import pytest
from cli_helpers import progress

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
XVFB = shutil.which("Xvfb")


def start_web_viewer(*args: str) -> tuple[subprocess.Popen, str]:
    cmd = [sys.executable, "-m", "robolearn", "view", "--port", "0", *args]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    deadline = time.time() + 120
    while time.time() < deadline:
        line = proc.stdout.readline()
        match = re.search(r"robolearn web viewer: (http://\S+)", line)
        if match:
            return proc, match.group(1)
        if proc.poll() is not None:
            raise AssertionError(proc.stderr.read())
    proc.kill()
    raise AssertionError("the web viewer did not start")


def state(url: str) -> dict:
    with urllib.request.urlopen(url + "state.json", timeout=10) as r:
        return json.loads(r.read())


def image(png_or_jpeg: bytes) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(png_or_jpeg)).convert("RGB")).astype(np.int16)


def robot_pixels(rgb: np.ndarray) -> int:
    """Light grey, unsaturated pixels (the robots' colour) in the middle of the frame."""
    h, w, _ = rgb.shape
    mid = rgb[int(0.35 * h) : int(0.9 * h), int(0.25 * w) : int(0.75 * w)]
    bright = mid.mean(-1) > 140
    grey = (mid.max(-1) - mid.min(-1)) < 40
    return int((bright & grey).sum())


def green_pixels(rgb: np.ndarray) -> int:
    """The commanded-velocity arrow's green."""
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    return int(((g > 120) & (g > r + 60) & (g > b + 60)).sum())


@pytest.fixture
def browser():
    if CHROMIUM is None:
        pytest.fail("chromium is not installed: the set-up command installs it (scripts/setup.sh)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--disable-background-networking",
                "--disable-component-update",
                "--no-first-run",
                "--disable-sync",
            ],
        )
        yield b
        b.close()


def test_web_viewer_in_chromium_shows_the_robot_and_obeys_pause_and_step(browser):
    proc, url = start_web_viewer(
        "--task", "humanoid_walk", "--num_envs", "4", "--max_seconds", "240"
    )
    try:
        page = browser.new_page(viewport={"width": 1300, "height": 800})
        page.goto(url)
        page.wait_for_function("document.getElementById('frame').naturalWidth > 0", timeout=60000)
        page.wait_for_function(
            "parseInt(document.getElementById('steps').textContent) > 5", timeout=60000
        )
        time.sleep(1.0)
        shot = image(page.locator("#frame").screenshot())
        assert shot.std() > 10, "the frame is blank"
        assert robot_pixels(shot) > 400, "no robot in the frame"
        assert green_pixels(shot) > 30, "no commanded-velocity arrow"
        # the side panel: every reward term, the command and the velocity
        terms = state(url)["rewards"]
        assert len(terms) >= 10
        assert page.locator("#rewards tr").count() == len(terms) + 1
        assert "command" in page.locator("#velocity").inner_text()
        # pause: the step count stops; step: it moves by exactly one
        page.click("#pause")
        page.wait_for_function("document.getElementById('status').textContent === 'paused'")
        paused_at = state(url)["steps"]
        time.sleep(1.5)
        assert state(url)["steps"] == paused_at
        page.click("#step")
        page.wait_for_function(
            f"parseInt(document.getElementById('steps').textContent) === {paused_at + 1}",
            timeout=10000,
        )
        assert state(url)["steps"] == paused_at + 1
        page.click("#step")
        page.wait_for_function(
            f"parseInt(document.getElementById('steps').textContent) === {paused_at + 2}",
            timeout=10000,
        )
        page.click("#pause")  # resume
        page.wait_for_function(
            f"parseInt(document.getElementById('steps').textContent) > {paused_at + 5}",
            timeout=20000,
        )
        # env selector and reset
        page.select_option("#env", "2")
        deadline = time.time() + 10
        while state(url)["env"] != 2 and time.time() < deadline:
            time.sleep(0.1)
        assert state(url)["env"] == 2
        page.click("#reset")
        page.wait_for_function("parseFloat(document.getElementById('time').textContent) < 0.5")
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)


def test_web_viewer_shows_the_termination_reason_of_the_last_reset(browser):
    proc, url = start_web_viewer(
        "--task", "humanoid_walk", "--num_envs", "2", "--actions", "random", "--max_seconds", "240"
    )
    try:
        page = browser.new_page()
        page.goto(url)
        page.wait_for_function(
            "document.getElementById('termination').textContent !== 'none yet'", timeout=120000
        )
        reason = page.locator("#termination").inner_text()
        assert reason in {
            "torso_contact",
            "base_too_low",
            "torso_contact, base_too_low",
            "time_out",
        }
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)


def test_web_viewer_binds_localhost_by_default():
    proc, url = start_web_viewer(
        "--task", "cartpole_balance", "--num_envs", "2", "--max_seconds", "60"
    )
    try:
        assert url.startswith("http://127.0.0.1:")
        port = int(url.rsplit(":", 1)[1].strip("/"))
        import socket

        addresses = {ip for *_, (ip, *_r) in socket.getaddrinfo(socket.gethostname(), None)}
        for ip in addresses - {"127.0.0.1", "::1"}:
            with socket.socket(socket.AF_INET6 if ":" in ip else socket.AF_INET) as s:
                s.settimeout(2)
                assert s.connect_ex((ip, port)) != 0, f"reachable on {ip}"
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)


@pytest.fixture
def xvfb():
    if XVFB is None:
        pytest.fail("Xvfb is not installed: the set-up command installs it (scripts/setup.sh)")
    display = ":97"
    proc = subprocess.Popen(
        [XVFB, display, "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(1.5)
    yield display
    proc.terminate()
    proc.wait(timeout=10)


def test_native_viewer_opens_a_window_and_renders_frames(xvfb):
    env = {k: v for k, v in os.environ.items() if k != "MUJOCO_GL"}
    env.update(DISPLAY=xvfb, PYTHONUNBUFFERED="1")
    cmd = [
        sys.executable,
        "-m",
        "robolearn",
        "view",
        "--viewer",
        "native",
        "--task",
        "humanoid_walk",
        "--num_envs",
        "2",
        "--max_seconds",
        "25",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    time.sleep(15)
    import mss

    with mss.MSS(display=xvfb) as grabber:
        shot = np.asarray(grabber.grab(grabber.monitors[1]))[..., :3].astype(np.int16)
    try:
        stdout, stderr = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
        pytest.fail(f"the native viewer did not exit: {stdout[-1000:]} {stderr[-3000:]}")
    # a stalled teardown ends the process after max_seconds + 60 s with every thread's stack
    assert proc.returncode == 0, stderr[-3000:]
    frames = int(
        re.search(r"native viewer closed after \d+ env steps, (\d+) frames", stdout).group(1)
    )
    assert frames > 10
    assert shot.std() > 10, "the window is blank"
    assert robot_pixels(shot[:, :, ::-1]) > 200, "no robot in the window"


def test_native_viewer_without_a_display_is_a_clear_error():
    from cli_helpers import one_line_error, robolearn

    env_backup = os.environ.pop("DISPLAY", None)
    try:
        out = robolearn(
            "view", "--viewer", "native", "--task", "cartpole_balance", "--max_steps", 1
        )
    finally:
        if env_backup is not None:
            os.environ["DISPLAY"] = env_backup
    one_line_error(out, "needs a display")


def test_bad_viewer_arguments_are_one_line_errors():
    from cli_helpers import one_line_error, robolearn

    one_line_error(
        robolearn("view", "--task", "cartpole_balance", "--port", 99999), "a port is 0 to 65535"
    )
    one_line_error(
        robolearn("view", "--task", "cartpole_balance", "--max_seconds", 0), "must be > 0"
    )


def test_play_video_grid_of_envs(tmp_path):
    from cli_helpers import robolearn
    from test_train_cli import decode

    root = tmp_path / "logs"
    out = robolearn(
        "train",
        "--task",
        "cartpole_balance",
        "--num_envs",
        64,
        "--max_iterations",
        2,
        "--log_root",
        root,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    video = tmp_path / "grid.mp4"
    out = robolearn(
        "play",
        "--task",
        "cartpole_balance",
        "--log_root",
        root,
        "--num_envs",
        4,
        "--video",
        "--video_length",
        12,
        "--video_envs",
        4,
        "--video_path",
        video,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    frames = decode(video)
    assert len(frames) == 12
    assert frames[0].shape[:2] == (720, 960)  # 2 x 2 tiles of 480 x 360


def test_web_viewer_follows_training_and_reloads_new_checkpoints(tmp_path):
    root = tmp_path / "logs"
    train = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "robolearn",
            "train",
            "--task",
            "cartpole_balance",
            "--num_envs",
            "64",
            "--max_iterations",
            "100000",
            "--log_root",
            str(root),
            "--run_name",
            "live",
            "agent.save_interval=3",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    viewer = None
    try:
        deadline = time.time() + 120
        while time.time() < deadline and not list(root.glob("cartpole_balance/*_live/model_*.pt")):
            time.sleep(0.2)
        run = next(root.glob("cartpole_balance/*_live"))
        viewer, url = start_web_viewer(
            "--task",
            "cartpole_balance",
            "--follow",
            "live",
            "--log_root",
            str(root),
            "--max_seconds",
            "240",
        )
        first = state(url)
        assert first["actions"] == "follow" and first["iteration"] >= 3
        deadline = time.time() + 120
        while time.time() < deadline and state(url)["iteration"] <= first["iteration"]:
            time.sleep(0.5)
        later = state(url)
        assert later["iteration"] > first["iteration"], "the viewer did not reload"
        assert later["checkpoint"].endswith(f"model_{later['iteration']}.pt")
        assert len(progress(run)) > first["iteration"]  # training carried on meanwhile
        assert train.poll() is None
    finally:
        if viewer is not None:
            viewer.send_signal(signal.SIGINT)
            viewer.wait(timeout=30)
        train.send_signal(signal.SIGTERM)
        train.wait(timeout=60)
