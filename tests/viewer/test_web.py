"""The web viewer over HTTP: what it binds, the commands it refuses, the other sites and
hosts it keeps out, its strict JSON and the markers it serves."""

from __future__ import annotations

import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from .helpers import (
    BAD_COMMANDS,
    control,
    new_page,
    page_token,
    request,
    start_web_viewer,
    state,
    strict_json,
    wait_for_state,
)


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
        # good commands still work, the speeds the page offers and any speed in range; each
        # gets its number (the refused ones got none), and a state that has applied that
        # many shows its effect (the page ignores older states, which would undo a click)
        ok = 200, {"ok": True, "command": 1}
        assert control(url, {"action": "speed", "value": 0.3}, token) == ok
        ok = 200, {"ok": True, "command": 2}
        assert control(url, {"action": "env", "value": 1}, token) == ok
        ok = 200, {"ok": True, "command": 3}
        assert control(url, {"action": "camera", "value": False}, token) == ok
        after = wait_for_state(url, lambda s: s["commands_applied"] >= 3, "3 commands applied")
        assert after["env"] == 1 and after["speed"] == 0.3 and after["follow_camera"] is False
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
        status, answer = control(url, {"action": "speed", "value": 2.0}, token)
        assert status == 200 and answer["ok"] is True, answer
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
        for path in (
            "/",
            "/state.json",
            "/frame.jpg",
            "/scene3d.json",
            "/poses.bin?envs=0",
            "/poses.stream?envs=0",
        ):
            status, _ = request(url, "GET", path, headers={"Host": f"evil.example:{port}"})
            assert status == 403, path
            status, _ = request(url, "GET", path, headers={"Origin": "http://evil.example"})
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


def markers_json(url: str, query: str, **headers: str) -> tuple[int, object]:
    """GET /markers.json?<query>: the status and the strict-JSON answer."""
    status, body = request(url, "GET", f"/markers.json?{query}", headers=headers or None)
    return status, strict_json(body)


def test_web_viewer_serves_the_markers_of_several_envs_as_json(tmp_path):
    from robolearn.managers.markers import ACTUAL_RGBA, COMMAND_RGBA, CONTACT_RGBA

    viewer = start_web_viewer(
        tmp_path, "--task", "humanoid_walk", "--num_envs", "2", "--max_seconds", "600"
    )
    url = viewer.url
    try:
        status, found = markers_json(url, "envs=0,1")
        assert status == 200 and set(found) == {"0", "1"}, found
        colors = [pytest.approx(list(c), abs=1e-4) for c in (COMMAND_RGBA, ACTUAL_RGBA)]
        for env_id, markers in found.items():
            arrows = [m for m in markers if m["kind"] == "arrow" and m["rgba"] in colors]
            assert len(arrows) == 2, (env_id, markers)  # the commanded and actual velocity
            commanded, actual = arrows
            assert commanded["rgba"] == colors[0] and actual["rgba"] == colors[1]
            assert actual["start"][2] == pytest.approx(commanded["start"][2] + 0.05, abs=1e-4)
        # the forces on bodies (the feet on the ground) and the root's frame, on request
        status, found = markers_json(url, "envs=1&contacts=1&frame=1")
        assert status == 200 and set(found) == {"1"}
        kinds = [m["kind"] for m in found["1"]]
        assert kinds.count("frame") == 1, kinds
        assert any(m["rgba"] == pytest.approx(list(CONTACT_RGBA), abs=1e-4) for m in found["1"])
        # paused, the state does not move: every answer is the same
        token = page_token(url)
        assert control(url, {"action": "pause"}, token)[0] == 200
        wait_for_state(url, lambda s: s["paused"], "pause")
        first = markers_json(url, "envs=0,1")
        assert markers_json(url, "envs=0,1") == first
        # the watched env when none is named; bad requests are 400, foreign hosts 403
        assert set(markers_json(url, "")[1]) == {"0"}
        for query, fragment in (
            ("envs=2", "0 to 1"),
            ("envs=a,b", "comma list"),
            ("envs=-1", "comma list"),
            ("envs=0&scale=3", "unknown parameter"),
            ("envs=0&contacts=maybe", "contacts"),
        ):
            status, answer = markers_json(url, query)
            assert status == 400 and fragment in answer["error"], (query, answer)
        port = url.rsplit(":", 1)[1].strip("/")
        assert markers_json(url, "envs=0", Host=f"evil.example:{port}")[0] == 403
        assert markers_json(url, "envs=0", Origin="http://evil.example")[0] == 403
        assert viewer.proc.poll() is None
        assert "Traceback" not in viewer.stderr(), viewer.stderr()[-3000:]
    finally:
        viewer.stop()
