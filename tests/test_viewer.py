"""The viewers, as users meet them: the web viewer in a real headless Chromium, the native
viewer in a real window under Xvfb, the grid video, and following a training run.

These tests run on loaded CI machines too: every wait is on a condition (a frame with
content, a state change, a reloaded checkpoint) with a generous deadline, never on a fixed
sleep that an idle machine happens to satisfy.
"""

from __future__ import annotations

import dataclasses
import http.client
import io
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import progress

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


def start_web_viewer(log_dir: Path, *args: str) -> ViewerProcess:
    log_dir.mkdir(parents=True, exist_ok=True)
    n = len(list(log_dir.glob("viewer*.out")))
    out, err = log_dir / f"viewer{n}.out", log_dir / f"viewer{n}.err"
    cmd = [sys.executable, "-m", "robolearn", "view", "--port", "0", *args]
    with out.open("w") as out_file, err.open("w") as err_file:
        proc = subprocess.Popen(
            cmd,
            stdout=out_file,
            stderr=err_file,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            preexec_fn=_ctrl_c_reaches_it,
        )
    deadline = time.time() + START_S
    while time.time() < deadline:
        match = re.search(r"robolearn web viewer: (http://\S+)", out.read_text())
        if match:
            return ViewerProcess(proc, match.group(1), out, err)
        if proc.poll() is not None:
            raise AssertionError(err.read_text())
        time.sleep(0.2)
    proc.kill()
    proc.wait()
    raise AssertionError(f"the web viewer did not start in {START_S} s: {err.read_text()[-3000:]}")


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


@pytest.fixture
def browser():
    if CHROMIUM is None:
        pytest.fail("chromium is not installed: the set-up command installs it (scripts/setup.sh)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(
            executable_path=CHROMIUM,
            timeout=START_S * 1000,
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


def new_page(browser, **kwargs):
    page = browser.new_page(**kwargs)
    page.set_default_timeout(WAIT_MS)  # Playwright's 30 s default is short on a loaded machine
    return page


def test_web_viewer_in_chromium_shows_the_robot_and_obeys_pause_and_step(browser, tmp_path):
    viewer = start_web_viewer(
        tmp_path, "--task", "humanoid_walk", "--num_envs", "4", "--max_seconds", "900"
    )
    url = viewer.url
    try:
        page = new_page(browser, viewport={"width": 1300, "height": 800})
        page.goto(url)
        page.wait_for_function("document.getElementById('frame').naturalWidth > 0")
        page.wait_for_function("parseInt(document.getElementById('steps').textContent) > 5")
        # the picture: retried until a frame shows the robot and its arrow (the first frames
        # of a loaded machine may still be on their way)
        deadline = time.time() + WAIT_S
        while True:
            shot = image(page.locator("#frame").screenshot())
            seen = (shot.std(), robot_pixels(shot), green_pixels(shot))
            if seen[0] > 10 and seen[1] > 400 and seen[2] > 30:
                break
            assert time.time() < deadline, f"no robot and arrow in the frame: {seen}"
            time.sleep(0.5)
        # the side panel: every reward term, the command and the velocity
        terms = state(url)["rewards"]
        assert len(terms) >= 10
        assert page.locator("#rewards tr").count() == len(terms) + 1
        assert "command" in page.locator("#velocity").inner_text()
        # pause: the step count stops; step: it moves by exactly one
        page.click("#pause")
        page.wait_for_function("document.getElementById('status').textContent === 'paused'")
        paused_at = state(url)["steps"]
        time.sleep(1.5)  # nothing to wait for: the count must merely stay put meanwhile
        assert state(url)["steps"] == paused_at
        page.click("#step")
        page.wait_for_function(
            f"parseInt(document.getElementById('steps').textContent) === {paused_at + 1}"
        )
        assert state(url)["steps"] == paused_at + 1
        page.click("#step")
        page.wait_for_function(
            f"parseInt(document.getElementById('steps').textContent) === {paused_at + 2}"
        )
        page.click("#pause")  # resume
        page.wait_for_function(
            f"parseInt(document.getElementById('steps').textContent) > {paused_at + 5}"
        )
        # env selector and reset
        page.select_option("#env", "2")
        wait_for_state(url, lambda s: s["env"] == 2, "the env selector")
        page.click("#reset")
        page.wait_for_function("parseFloat(document.getElementById('time').textContent) < 0.5")
        assert "Traceback" not in viewer.stderr()
    finally:
        viewer.stop()


def test_web_viewer_shows_the_termination_reason_of_the_last_reset(browser, tmp_path):
    viewer = start_web_viewer(
        tmp_path,
        "--task",
        "humanoid_walk",
        "--num_envs",
        "2",
        "--actions",
        "random",
        "--max_seconds",
        "900",
    )
    try:
        page = new_page(browser)
        page.goto(viewer.url)
        page.wait_for_function("document.getElementById('termination').textContent !== 'none yet'")
        reason = page.locator("#termination").inner_text()
        assert reason in {
            "base_contact",
            "base_too_low",
            "base_contact, base_too_low",
            "time_out",
        }
    finally:
        viewer.stop()


def test_web_viewer_binds_localhost_by_default(tmp_path):
    viewer = start_web_viewer(
        tmp_path, "--task", "cartpole_balance", "--num_envs", "2", "--max_seconds", "600"
    )
    try:
        url = viewer.url
        assert url.startswith("http://127.0.0.1:")
        port = int(url.rsplit(":", 1)[1].strip("/"))
        import socket

        addresses = {ip for *_, (ip, *_r) in socket.getaddrinfo(socket.gethostname(), None)}
        for ip in addresses - {"127.0.0.1", "::1"}:
            with socket.socket(socket.AF_INET6 if ":" in ip else socket.AF_INET) as s:
                s.settimeout(2)
                assert s.connect_ex((ip, port)) != 0, f"reachable on {ip}"
    finally:
        viewer.stop()


# ---- the web viewer's controls: validated in the HTTP thread, never fatal ----------------

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


def test_web_viewer_answers_bad_controls_with_400_and_keeps_running(tmp_path):
    viewer = start_web_viewer(
        tmp_path, "--task", "cartpole_balance", "--num_envs", "2", "--max_seconds", "600"
    )
    url = viewer.url
    try:
        token = page_token(url)
        for body, fragment in BAD_COMMANDS:
            status, answer = control(url, body, token)
            assert status == 400, (body[:60], status, answer)
            assert answer["ok"] is False and fragment in answer["error"], (body[:60], answer)
        # malformed framing: Content-Length that is not a number, negative, absent, too big
        ok_body = b'{"action": "pause"}'
        headers = {"Content-Type": "application/json", "X-Robolearn-Token": token}
        for length, expected in (("abc", 400), ("-5", 400), ("", 400), (None, 411)):
            sent = dict(headers)
            if length is not None:
                sent["Content-Length"] = length
            status, answer = request(url, "POST", "/control", ok_body, sent)
            assert status == expected, (length, status, answer)
            assert strict_json(answer)["ok"] is False
        status, answer = request(
            url, "POST", "/control", ok_body, {**headers, "Content-Length": "100000"}
        )
        assert status == 413, answer
        # the viewer is alive and unchanged: no command above reached the simulation
        assert viewer.proc.poll() is None, viewer.stderr()[-3000:]
        before = state(url)
        assert before["speed"] == 1.0 and before["env"] == 0 and not before["paused"]
        wait_for_state(url, lambda s: s["steps"] > before["steps"], "steps after bad commands")
        # good commands still work, the speeds the page offers and any speed in range
        assert control(url, {"action": "speed", "value": 0.3}, token) == (200, {"ok": True})
        assert control(url, {"action": "env", "value": 1}, token) == (200, {"ok": True})
        assert control(url, {"action": "camera", "value": False}, token)[0] == 200
        after = wait_for_state(url, lambda s: s["env"] == 1, "env 1")
        assert after["speed"] == 0.3 and after["follow_camera"] is False
        assert control(url, {"action": "speed", "value": 4}, token)[0] == 200
        wait_for_state(url, lambda s: s["speed"] == 4.0, "speed x4")
        assert viewer.proc.poll() is None
        assert "Traceback" not in viewer.stderr(), viewer.stderr()[-3000:]
    finally:
        viewer.stop()


@pytest.fixture
def other_site():
    """A second web server on another port: another origin, like any page the user has open
    in the same browser as the viewer."""

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"<!doctype html><title>some other site</title><p>hello"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def test_web_viewer_refuses_other_sites_foreign_hosts_and_missing_tokens(
    browser, other_site, tmp_path
):
    viewer = start_web_viewer(
        tmp_path, "--task", "cartpole_balance", "--num_envs", "2", "--max_seconds", "600"
    )
    url = viewer.url
    try:
        # another site in the user's browser: a simple (text/plain, no-cors) POST needs no
        # preflight and reached the old viewer; a JSON one needs a preflight
        page = new_page(browser)
        page.goto(other_site)
        results = page.evaluate(
            """async (target) => {
                const out = [];
                const tries = [
                  {method: 'POST', mode: 'no-cors', headers: {'Content-Type': 'text/plain'},
                   body: JSON.stringify({action: 'pause'})},
                  {method: 'POST', headers: {'Content-Type': 'application/json'},
                   body: JSON.stringify({action: 'reset_all'})},
                  {method: 'POST', headers: {'Content-Type': 'application/json',
                                             'X-Robolearn-Token': 'guessed'},
                   body: JSON.stringify({action: 'pause'})},
                ];
                for (const t of tries) {
                  try {
                    const r = await fetch(target + 'control', t);
                    out.push(r.type + ' ' + r.status);
                  } catch (e) { out.push('refused'); }
                }
                try { await (await fetch(target)).text(); out.push('read the page'); }
                catch (e) { out.push('could not read the page'); }
                return out;
            }""",
            url,
        )
        assert results[1:] == ["refused", "refused", "could not read the page"], results
        # commands run in order: once a later legitimate one shows, any earlier would have
        token = page_token(url)
        assert control(url, {"action": "speed", "value": 2.0}, token) == (200, {"ok": True})
        seen = wait_for_state(url, lambda s: s["speed"] == 2.0, "the legitimate command")
        assert not seen["paused"], "another site paused the viewer"

        # scripts: no token, a wrong one, a foreign Origin, a JSON body sent as text/plain
        pause = {"action": "pause"}
        assert control(url, pause, None)[0] == 403
        assert control(url, pause, "x" * len(token))[0] == 403
        assert control(url, pause, token, Origin="http://evil.example")[0] == 403
        assert control(url, pause, token, Origin="null")[0] == 403
        assert control(url, pause, token, content_type="text/plain")[0] == 415
        # DNS rebinding: a name that resolves to 127.0.0.1 but is not this server's
        port = url.rsplit(":", 1)[1].strip("/")
        for path in ("/", "/state.json", "/frame.jpg"):
            status, _ = request(url, "GET", path, headers={"Host": f"evil.example:{port}"})
            assert status == 403, path
        assert control(url, pause, token, Host=f"evil.example:{port}")[0] == 403
        # what the page itself does stays allowed: same origin, localhost or 127.0.0.1
        assert control(url, pause, token, Origin=url.rstrip("/"))[0] == 200
        assert control(url, {"action": "resume"}, token, Host=f"localhost:{port}")[0] == 200
        wait_for_state(url, lambda s: not s["paused"], "resume")
        status, page_html = request(url, "GET", "/")
        assert status == 200 and b"robolearn-token" in page_html
        assert viewer.proc.poll() is None
    finally:
        viewer.stop()


def test_state_json_never_carries_nan_or_infinity():
    from robolearn.viewer.web import state_json

    text = state_json(
        {"a": math.nan, "b": [math.inf, -math.inf, 1.5], "c": {"d": math.nan, "e": "ok"}}
    )
    assert strict_json(text) == {"a": None, "b": [None, None, 1.5], "c": {"d": None, "e": "ok"}}


# ---- the session: commands validated on submit, the loop never ended by one --------------


class FakeEnv:
    """Just what ViewerSession touches; enough to drive its loop without physics."""

    num_envs, num_actions, step_dt = 2, 2, 0.001
    device = "cpu"

    def __init__(self) -> None:
        self.steps = 0
        self.resets: list = []

    def step(self, actions) -> None:
        self.steps += 1

    def reset(self) -> None:
        raise RuntimeError("reset exploded")

    def reset_envs(self, ids) -> None:
        self.resets.append(ids.tolist())


def test_session_validates_commands_on_submit():
    from robolearn.viewer.session import (
        SPEEDS,
        ActionSource,
        InvalidCommandError,
        ViewerSession,
        validate_command,
    )

    session = ViewerSession(FakeEnv(), ActionSource())
    for body, fragment in BAD_COMMANDS:
        try:
            command = strict_json(body)
        except (ValueError, RecursionError):
            continue  # not JSON: the web viewer's parser answers these
        with pytest.raises(InvalidCommandError, match=re.escape(fragment)):
            session.submit(command)
    assert session._commands.empty()
    for speed in (*SPEEDS, 0.3, 3, 8.0):
        assert validate_command({"action": "speed", "value": speed}, 2)["value"] == float(speed)
    assert validate_command({"action": "env", "value": 1}, 2) == {"action": "env", "value": 1}
    assert validate_command({"action": "camera", "value": False}, 2)["value"] is False
    assert validate_command({"action": "step"}, 2) == {"action": "step", "value": None}
    with pytest.raises(InvalidCommandError, match="0 to 2"):
        validate_command({"action": "env", "value": 3}, 3)
    with pytest.raises(InvalidCommandError, match="did you mean 'reset'"):
        validate_command({"action": "rset"}, 2)


def test_session_loop_survives_a_failing_command(capsys):
    from robolearn.viewer.session import ActionSource, ViewerSession

    env = FakeEnv()
    session = ViewerSession(env, ActionSource())
    # straight onto the queue, past submit's checks: what the loop must survive regardless
    for bad in (
        {"action": "speed", "value": "abc"},
        {"action": "env", "value": None},
        {"action": "speed", "value": math.nan},
        {"action": "nonsense"},
        {"action": "reset_all"},  # the env raises
    ):
        session._commands.put(bad)
    session._commands.put({"action": "env", "value": 1})
    session._commands.put({"action": "reset"})
    session.tick()
    assert session.env_id == 1 and env.resets == [[1]]
    assert session.speed == 1.0 and math.isfinite(session.speed)
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(lines) == 5, lines
    assert all(ln.startswith("robolearn viewer: ignored command") for ln in lines), lines
    assert "reset exploded" in lines[-1]
    time.sleep(0.02)
    assert session.tick() > 0 and env.steps > 0  # and it carries on stepping


# ---- the native viewer (on conftest's xvfb display) --------------------------------------


def test_native_viewer_opens_a_window_and_renders_frames(xvfb, tmp_path):
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
        "900",  # a safety net only: the test closes the window with Ctrl-C once it has looked
    ]
    out, err = tmp_path / "native.out", tmp_path / "native.err"
    with out.open("w") as out_file, err.open("w") as err_file:
        proc = subprocess.Popen(
            cmd,
            stdout=out_file,
            stderr=err_file,
            text=True,
            env=env,
            preexec_fn=_ctrl_c_reaches_it,
        )
    import mss

    # Retried until the window shows the robot in two different pictures (it is drawing, not
    # frozen): how soon that is depends on the machine's load, so the wait is a condition.
    first, seen = None, (0.0, 0)
    deadline = time.time() + START_S
    try:
        with mss.MSS(display=xvfb) as grabber:
            while True:
                shot = np.asarray(grabber.grab(grabber.monitors[1]))[..., :3].astype(np.int16)
                seen = (float(shot.std()), robot_pixels(shot[:, :, ::-1]))
                if seen[0] > 10 and seen[1] > 200:
                    if first is None:
                        first = shot
                    elif (shot != first).any():
                        break
                assert proc.poll() is None, f"the viewer exited: {err.read_text()[-3000:]}"
                assert time.time() < deadline, (
                    f"no robot drawn in {START_S} s (std, robot pixels) = {seen}: "
                    f"{err.read_text()[-3000:]}"
                )
                time.sleep(0.5)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # Ctrl-C closes the native viewer cleanly
        try:
            proc.wait(timeout=STOP_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            pytest.fail(f"the native viewer did not exit: {err.read_text()[-3000:]}")
    # a stalled teardown ends the process after max_seconds + 60 s with every thread's stack
    assert proc.returncode == 0, err.read_text()[-3000:]
    match = re.search(r"native viewer closed after \d+ env steps, (\d+) frames", out.read_text())
    assert match, out.read_text()[-2000:]
    assert int(match.group(1)) >= 2  # two different pictures were seen above


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


@pytest.mark.timeout(1200)  # the deadlines below add up past the default 600 s under load
def test_web_viewer_follows_training_and_reloads_new_checkpoints(tmp_path):
    root = tmp_path / "logs"
    # training's output goes to files: an unread pipe fills up and blocks training, and then
    # no new checkpoint ever comes
    train_out, train_err = tmp_path / "train.out", tmp_path / "train.err"
    with train_out.open("w") as out_file, train_err.open("w") as err_file:
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
            stdout=out_file,
            stderr=err_file,
            text=True,
        )
    viewer = None
    try:
        deadline = time.time() + START_S
        while not list(root.glob("cartpole_balance/*_live/model_*.pt")):
            assert train.poll() is None, train_err.read_text()[-3000:]
            assert time.time() < deadline, f"no checkpoint in {START_S} s"
            time.sleep(0.2)
        run = next(root.glob("cartpole_balance/*_live"))
        viewer = start_web_viewer(
            tmp_path / "viewer",
            "--task",
            "cartpole_balance",
            "--follow",
            "live",
            "--log_root",
            str(root),
            "--max_seconds",
            "1200",
        )
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
        assert len(progress(run)) > first["iteration"]  # training carried on meanwhile
        assert train.poll() is None, train_err.read_text()[-3000:]
    finally:
        if viewer is not None:
            viewer.stop()
        train.send_signal(signal.SIGTERM)
        try:
            train.wait(timeout=STOP_S)
        except subprocess.TimeoutExpired:
            train.kill()
            train.wait()
