"""What the viewer tests share: a `robolearn view` process, an in-process web viewer, requests
with and without the page's token, and pixel counts of what a page shows.

These tests run on loaded CI machines too: every wait is on a condition (a frame with
content, a state change, a reloaded checkpoint) with a generous deadline, never on a fixed
sleep that an idle machine happens to satisfy.
"""

from __future__ import annotations

import dataclasses
import http.client
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


# Deadlines for things that take seconds on an idle machine and minutes on a loaded one.
START_S = 240  # a viewer process imports torch and MuJoCo and builds its envs


WAIT_S = 180  # a state change, a frame, a reload


WAIT_MS = WAIT_S * 1000  # the same, for Playwright


STOP_S = 120  # a process ending after SIGINT (a niced viewer under load is slow to go)


@dataclasses.dataclass
class ViewerProcess:
    """A `robolearn view` subprocess; its output goes to files, so no pipe ever fills up."""

    proc: subprocess.Popen
    url: str
    out: Path
    err: Path

    def stderr(self) -> str:
        return self.err.read_text(errors="replace")

    def wait_for_url(self) -> str:
        """Wait until the viewer says where it serves; fail with its output if it exits."""
        deadline = time.time() + START_S
        while time.time() < deadline:
            match = re.search(r"robolearn web viewer: (http://\S+)", self.out.read_text())
            if match:
                self.url = match.group(1)
                return self.url
            if self.proc.poll() is not None:
                raise AssertionError(self.stderr())
            time.sleep(0.2)
        self.proc.kill()
        self.proc.wait()
        raise AssertionError(
            f"the web viewer did not start in {START_S} s: {self.stderr()[-3000:]}"
        )

    def stop(self) -> None:
        """Ctrl-C, as a user closes the viewer; fail with its output if it does not end."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=STOP_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            pytest.fail(f"the viewer did not stop after SIGINT: {self.stderr()[-3000:]}")


def _ctrl_c_reaches_it() -> None:
    """Run in the child before exec: SIGINT as a terminal delivers it. A suite started in
    the background by a non-interactive shell (``pytest ... &``) ignores SIGINT, and a
    child inherits that, so the Ctrl-C these tests send would never arrive."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def spawn(cmd: list[str], out: Path, err: Path, env: dict[str, str]) -> subprocess.Popen:
    """``cmd`` started with its output in the files ``out`` and ``err`` (no pipe to fill up)
    and Ctrl-C reaching it."""
    with out.open("w") as out_file, err.open("w") as err_file:
        return subprocess.Popen(
            cmd,
            stdout=out_file,
            stderr=err_file,
            text=True,
            env=env,
            preexec_fn=_ctrl_c_reaches_it,
        )


def start_web_viewer(log_dir: Path, *args: str, wait: bool = True) -> ViewerProcess:
    """``robolearn view --port 0 ARGS``; with ``wait``, once it serves (else ``url`` is
    empty until :meth:`ViewerProcess.wait_for_url`)."""
    log_dir.mkdir(parents=True, exist_ok=True)
    n = len(list(log_dir.glob("viewer*.out")))
    out, err = log_dir / f"viewer{n}.out", log_dir / f"viewer{n}.err"
    cmd = [sys.executable, "-m", "robolearn", "view", "--port", "0", *args]
    proc = spawn(cmd, out, err, {**os.environ, "PYTHONUNBUFFERED": "1"})
    viewer = ViewerProcess(proc, "", out, err)
    if wait:
        viewer.wait_for_url()
    return viewer


def strict_json(text: str | bytes):
    """json.loads that refuses NaN and Infinity, as a browser's JSON.parse does."""

    def refuse(name: str):
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


def state(url: str) -> dict:
    with urllib.request.urlopen(url + "state.json", timeout=WAIT_S) as r:
        return strict_json(r.read())


def wait_for_state(url: str, condition, what: str, timeout: float = WAIT_S) -> dict:
    deadline = time.time() + timeout
    while True:
        s = state(url)
        if condition(s):
            return s
        if time.time() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s; last state {s}")
        time.sleep(0.2)


def page_token(url: str) -> str:
    """The per-launch secret that the page sends back with each command."""
    with urllib.request.urlopen(url, timeout=WAIT_S) as r:
        page = r.read().decode()
    match = re.search(r'<meta name="robolearn-token" content="([^"]+)"', page)
    assert match, "the page carries no token"
    return match.group(1)


def request(
    url: str,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, bytes]:
    """A raw HTTP request with exactly these headers (Host and Content-Length included when
    given), so that malformed and foreign requests can be sent."""
    host, port = url.split("//", 1)[1].strip("/").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=WAIT_S)
    try:
        headers = dict(headers or {})
        conn.putrequest(method, path, skip_host="Host" in headers, skip_accept_encoding=True)
        if "Host" not in headers:
            conn.putheader("Host", f"{host}:{port}")
        for name, value in headers.items():
            conn.putheader(name, value)
        conn.endheaders(body)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def stream_frames(url: str, path: str, count: int) -> list[dict]:
    """The first ``count`` frames of a ``/poses.stream`` answer, decoded."""
    from robolearn.viewer.scene3d import decode_poses

    host, port = url.split("//", 1)[1].strip("/").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=WAIT_S)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        assert response.status == 200, response.read()
        frames = []
        for _ in range(count):
            size = int.from_bytes(response.read(4), "little")
            frames.append(decode_poses(response.read(size)))
        return frames
    finally:
        conn.close()


def control(
    url: str,
    body: bytes | dict,
    token: str | None,
    content_type: str = "application/json",
    **headers: str,
) -> tuple[int, dict]:
    """POST /control as a script would; returns the status and the JSON answer."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    sent = {"Content-Type": content_type, "Content-Length": str(len(data))}
    if token is not None:
        sent["X-Robolearn-Token"] = token
    sent.update({k.replace("_", "-"): v for k, v in headers.items()})
    status, answer = request(url, "POST", "/control", data, sent)
    return status, strict_json(answer)


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


def new_page(browser, **kwargs):
    page = browser.new_page(**kwargs)
    page.set_default_timeout(WAIT_MS)  # Playwright's 30 s default is short on a loaded machine
    return page


class _StopViewerError(Exception):
    """Raised in an in-process viewer's loop to end it."""


def web_viewer_in_thread(session):
    """Start a WebViewer of ``session`` serving from a thread of this process (its renderer
    made and used there, as GL wants); returns (viewer, stop), stop() ending its loop."""
    import queue

    from robolearn.viewer.web import WebViewer

    made: queue.Queue = queue.Queue()
    failed: list = []
    ending = threading.Event()
    tick = session.tick

    def tick_until_stopped(*args, **kwargs):
        if ending.is_set():
            raise _StopViewerError
        return tick(*args, **kwargs)

    session.tick = tick_until_stopped

    def serve() -> None:
        try:
            viewer = WebViewer(session, port=0)
        except BaseException as exc:
            made.put(exc)
            return
        made.put(viewer)
        try:
            viewer.run(max_seconds=1200)
        except _StopViewerError:
            pass
        except BaseException as exc:
            failed.append(exc)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    viewer = made.get(timeout=START_S)
    if isinstance(viewer, BaseException):
        raise viewer

    def stop() -> None:
        ending.set()
        thread.join(STOP_S)
        assert not thread.is_alive(), "the viewer's loop did not end"
        assert not failed, failed

    return viewer, stop


def colour_pixels(rgb: np.ndarray) -> int:
    """Saturated pixels: the plots' lines (their background and grid are grey)."""
    return int(((rgb.max(-1) - rgb.min(-1)) > 60).sum())


def bright_pixels(rgb: np.ndarray) -> int:
    """Pixels lighter than the 3D view's sky (bluish grey, mean 104) and ground (darker):
    the robots, grey or tinted when selected."""
    return int((rgb.mean(-1) > 130).sum())


def magenta_pixels(rgb: np.ndarray) -> int:
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    return int(((r > 150) & (b > 150) & (g < 90)).sum())


def new_frames(page, count: int = 2) -> None:
    """Wait until the 3D view has drawn ``count`` more frames with new poses."""
    seen = page.evaluate("robolearn3d.stats.newFrames")
    page.wait_for_function(f"robolearn3d.stats.newFrames >= {seen + count}")


# the camera looks at (follows) env `env`'s root body: the check the page's follow makes
FOLLOWS = """(env) => {
  const v = robolearn3d, k = v.slotOf(env);
  if (k < 0) return false;
  const root = v.bodyPose(k, v.anchor)[0], t = v.camera.target;
  return Math.hypot(root[0] - t[0], root[1] - t[1], root[2] - t[2]) < 1e-3;
}"""


def humanoids_in_thread(num_envs: int):
    from robolearn.app.configs import build_setup
    from robolearn.env import ManagerBasedRLEnv
    from robolearn.viewer.live_state import ActionSource, ViewerSession

    setup = build_setup("humanoid_walk", [], play=True, num_envs=num_envs, engine="cpu")
    session = ViewerSession(ManagerBasedRLEnv(setup.env_cfg), ActionSource())
    return web_viewer_in_thread(session)


# (body, a fragment the 400 answer's error names)
BAD_COMMANDS = [
    (b'{"action": "speed", "value": "abc"}', "speed"),
    (b'{"action": "speed", "value": null}', "speed"),
    (b'{"action": "speed", "value": NaN}', "JSON"),
    (b'{"action": "speed", "value": Infinity}', "JSON"),
    (b'{"action": "speed", "value": 1e999}', "finite"),
    (b'{"action": "speed", "value": 0}', "speed"),
    (b'{"action": "speed", "value": -1}', "speed"),
    (b'{"action": "speed", "value": 1000}', "speed"),
    (b'{"action": "speed", "value": true}', "speed"),
    (b'{"action": "env", "value": null}', "env"),
    (b'{"action": "env", "value": 99}', "0 to 1"),
    (b'{"action": "env", "value": -1}', "0 to 1"),
    (b'{"action": "env", "value": 1.5}', "env"),
    (b'{"action": "env", "value": "1"}', "env"),
    (b'{"action": "env", "value": false}', "env"),
    (b'{"action": "camera", "value": "yes"}', "true or false"),
    (b'{"action": "contacts", "value": 1}', "true or false"),
    (b'{"action": "pause", "value": 3}', "no value"),
    (b'{"action": "explode"}', "reset_all"),
    (b'{"action": 7}', "action"),
    (b'{"value": 1}', "action"),
    (b'{"action": "pause", "extra": 1}', "extra"),
    (b"[1, 2]", "object"),
    (b"{", "JSON"),
    (b"", "JSON"),
    (b"\xff\xfe{", "JSON"),
    (b"[" * 2000 + b"]" * 2000, "JSON"),
]
