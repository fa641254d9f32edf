"""The browser viewer: a 3D view the page draws, or frames rendered on the server.

A small HTTP server (Python's standard library) on localhost by default: ``GET /`` is the
page, ``GET /frame.jpg`` the latest frame of the watched env, ``GET /state.json`` the
viewer's state and the numbers beside the picture, ``POST /control`` a command. The page
is plain HTML and JavaScript with no outside resources, so it works offline and through an
SSH tunnel (``ssh -L 8765:localhost:8765 server``): nothing but this one port is needed.
``GET /telemetry.json?since=<n>`` is the watched env's recent history for the page's plots
(``plots.js``, one of the STATIC_FILES), only the samples after number ``n``;
``/state.json`` also says how fast the simulation really runs (``realtime_factor``,
``steps_per_s``) and how many new frames the pages got a second (``frames_per_s``).

The page's 3D mode (its default where WebGL2 works) draws the scene itself with three.js
(``scene3d.js``; three.js vendored under ``static/vendor/three`` and served here like the
page's other scripts, so nothing is fetched from elsewhere): ``GET /scene3d.json`` once
(geoms, meshes, height fields: robolearn.viewer.scene3d), then
``GET /poses.bin?envs=<ids>&after=<frame>`` per frame (the bodies' poses of the envs
shown, ~0.65 KB a humanoid), which the simulation thread snapshots between steps
(:class:`~robolearn.viewer.scene3d.PoseSnapshots`), and the markers of
``GET /markers.json``. MuJoCo renders frames (``/frame.jpg``) only while a page
fetches them: the "rendered" mode, and the fallback without WebGL2.

Why not viser or a WebRTC stream: viser's websocket cannot require our per-launch token and
moves to another port when its own is taken; frames rendered by MuJoCo on the server (the
"rendered" mode) look exactly like the videos and need no WebGL; both modes travel over
plain HTTP on one port, which every bastion host forwards.

Security: binding 127.0.0.1 keeps other machines out but not other web pages open in the
user's browser, which can send requests to localhost (a ``text/plain`` POST needs no CORS
preflight), nor DNS rebinding (a foreign name that resolves to 127.0.0.1). So every request
must name an accepted host in ``Host`` and, where a browser sends ``Origin``, come from the
viewer's own origin; a command must also carry the per-launch secret that only the page
served by ``GET /`` holds (in ``X-Robolearn-Token``) and be ``application/json``. Commands
are validated here, in the HTTP thread, and refused with a short JSON error; nothing a
request sends can end the simulation loop.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import ipaddress
import json
import re
import secrets
import select
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from robolearn.errors import RobolearnError
from robolearn.files import json_safe
from robolearn.render.overlays import contact_option
from robolearn.render.video import EnvRenderer, track_body_of
from robolearn.viewer.live_state import SPEEDS, InvalidCommandError, ViewerSession
from robolearn.viewer.scene3d import PoseSnapshots, parse_env_list, scene_description
from robolearn.viewer.telemetry import InvalidQueryError, Rate

TOKEN_HEADER = "X-Robolearn-Token"
"""The request header that carries the per-launch secret with each command."""
MAX_BODY = 4096
"""The largest command body accepted, in bytes (a command is a few dozen)."""
MAX_MARKER_ENVS = 64
"""The most envs one ``GET /markers.json`` may ask for."""
MARKER_WAIT_S = 5.0
"""How long ``GET /markers.json`` waits for the simulation thread to read the markers."""
MAX_SLEEP_S = 0.02
"""The longest the simulation loop sleeps between turns (a command waits at most this)."""
_MARKER_KEEP_S = 10.0  # a request's markers are refreshed this long after it was last made
_MARKER_REQUESTS = 16  # the most different requests refreshed at once
POSES_WAIT_S = 1.0
"""How long ``GET /poses.bin?after=<frame>`` waits for a newer snapshot of the poses."""
_FRAME_LENGTH = struct.Struct("<I")  # before each frame of /poses.stream: its byte count
JPEG_KEEP_S = 3.0
"""Frames are rendered (MuJoCo, JPEG) only while a page fetched ``/frame.jpg`` this
recently: the 3D mode draws in the browser and needs none."""
_TOKEN_SLOT = "__ROBOLEARN_TOKEN__"  # where the page template takes the secret
STATIC_DIR = Path(__file__).parent / "static"
STATIC_FILES = {
    "/" + p.relative_to(STATIC_DIR).as_posix(): "text/javascript; charset=utf-8"
    for p in sorted(STATIC_DIR.rglob("*.js"))
}
"""The files of STATIC_DIR served as they are (besides the page), with their content type:
every script there (the page's modules, three.js vendored under vendor/three), listed once
at import, so no request names any other file."""
_WILDCARD = ("", "0.0.0.0", "::")
# No other site may frame the page: a framed viewer could be clicked through by the framer.
_PAGE_POLICY = "frame-ancestors 'none'"


def encode_jpeg(rgb, quality: int = 80) -> bytes:
    """An RGB array as JPEG bytes."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(rgb).save(buffer, format="JPEG", quality=quality)
    return buffer.getvalue()


def state_json(state: dict[str, Any]) -> bytes:
    """The viewer's state as strict JSON: never NaN or Infinity."""
    return json.dumps(json_safe(state), allow_nan=False).encode()


def host_name(host_header: str) -> str | None:
    """The lower-case host name (or IP, without brackets) in a ``Host`` header value, or
    None for one that does not parse."""
    try:
        parts = urlsplit("//" + host_header)
        parts.port  # noqa: B018  (raises ValueError for a port that is not a number)
    except ValueError:
        return None
    return parts.hostname or None


def accepted_host_names(bound: str) -> set[str]:
    """Host names (besides IP addresses, always accepted) that a request may name for a
    server bound to ``bound``.

    DNS rebinding always names the attacker's domain, so refusing unknown names is the
    defence; any IP address is fine (no rebinding goes through one), and so is any port,
    since the port a browser names is the local end of an SSH tunnel, not ours.
    """
    names = {"localhost"}
    bound = bound.strip("[]").lower()
    if bound not in _WILDCARD:
        names.add(bound)
    try:
        loopback = ipaddress.ip_address(bound).is_loopback
    except ValueError:
        loopback = bound == "localhost"
    if not loopback:  # served to the network: the machine's own name is how it is reached
        names.add(socket.gethostname().lower())
    return names


class WebViewer:
    """Serves a :class:`ViewerSession` to browsers; the simulation runs in :meth:`run`."""

    def __init__(
        self,
        session: ViewerSession,
        host: str = "127.0.0.1",
        port: int = 8765,
        width: int = 800,
        height: int = 600,
        max_fps: float = 15.0,
    ) -> None:
        self.session = session
        # a new secret each launch: a page from an earlier viewer, or any other page, lacks it
        self.token = secrets.token_urlsafe(32)
        self.page = PAGE.replace(_TOKEN_SLOT, self.token).encode()
        # tells a page's snapshots of this launch from an earlier one's (not a secret)
        self.launch = secrets.token_hex(4)
        env = session.env
        # MuJoCo's own look, shadows and floor reflections included, as its native viewer
        self.renderer = EnvRenderer(
            env.scene.engine, width, height, track_body=track_body_of(env), shadows=True,
            reflections=True,
        )  # fmt: skip
        self._free_camera = self.renderer.camera.type
        self.max_fps = max_fps
        self._lock = threading.Lock()
        self._jpeg = b""
        self._state: dict[str, Any] = {}
        self.frames = 0
        self.served = Rate(2.0)
        """New frames the pages fetched (``/frame.jpg``, the 3D mode's ``/poses.bin``), per
        second over the last 2 s: what a user actually sees, whatever the server renders."""
        self._last_served: object = None
        # GET /markers.json: what was asked (envs, contacts, root frame) and when, and the
        # answers, read by the simulation thread (the env is only read there), with the
        # frame count they were read at; guarded by the frame lock.
        self._markers_ready = threading.Condition(self._lock)
        self._marker_asks: dict[tuple, float] = {}
        self._marker_answers: dict[tuple, tuple[int, int, bytes]] = {}
        self._wake = threading.Event()  # set by a request the simulation thread must answer
        # the 3D mode: the scene, sent once (built here, on the simulation thread), and the
        # latest body poses of the envs pages show (robolearn.viewer.scene3d)
        self.poses = PoseSnapshots(env.num_envs)
        self.scene3d = json.dumps(
            scene_description(
                env.scene.engine.model,
                env.scene.env_origins.detach().cpu().numpy(),
                env.scene.root_body_id,
                env.num_envs,
            ),
            separators=(",", ":"),
        ).encode()
        self._scene3d = _Compressible(self.scene3d)
        self.closing = threading.Event()
        """Set when :meth:`run` ends: the open pose streams finish."""
        self._jpeg_asked = 0.0  # when a page last fetched /frame.jpg (monotonic)
        self._jpeg_stale = False  # a state was rendered without its frame
        handler = _handler_for(self)
        try:
            self.server = _Server((host, port), handler)
        except OSError as exc:
            raise RobolearnError(
                f"cannot serve the web viewer on {host}:{port}: {exc.strerror}"
            ) from exc
        self.host, self.port = self.server.server_address[:2]
        self.host_names = accepted_host_names(host)
        self._render()  # the first frame and state exist before anyone is told the URL

    @property
    def url(self) -> str:
        """The address to open in a browser (a wildcard bind is shown as 127.0.0.1)."""
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        return f"http://{host}:{self.port}/"

    def _jpeg_wanted(self, now: float | None = None) -> bool:
        """Whether to render frames: always the first, then while a page fetches them."""
        now = time.monotonic() if now is None else now
        return not self._jpeg or now - self._jpeg_asked < JPEG_KEEP_S

    def jpeg_asked(self) -> None:
        """A page fetched ``/frame.jpg`` (any thread): render frames for a while."""
        self._jpeg_asked = time.monotonic()

    def scene3d_body(self, gzip_ok: bool) -> tuple[bytes, dict[str, str]]:
        """``/scene3d.json``'s body and extra headers: gzip-compressed (once, then kept)
        for a client that accepts it, as a terrain's height field is megabytes."""
        return self._scene3d.body(gzip_ok)

    def _render(self) -> None:
        s = self.session
        import mujoco

        jpeg = None
        if self._jpeg_wanted():
            cam = self.renderer.camera
            if s.follow_camera and track_body_of(s.env) is not None:
                cam.type = mujoco.mjtCamera.mjCAMERA_TRACKING
            else:
                cam.type = mujoco.mjtCamera.mjCAMERA_FREE
            rgb = self.renderer.frame(
                s.env_id, option=contact_option(s.show_contacts), markers=s.markers()
            )
            jpeg = encode_jpeg(rgb)
        state = s.status()
        state["frames"] = self.frames + 1
        state["launch"] = self.launch
        with self._lock:
            if jpeg is not None:
                self._jpeg = jpeg
            self._jpeg_stale = jpeg is None
            self._state = state
            self.frames += 1

    def _capture_poses(self, taken: int, now: float) -> None:
        """On the simulation thread: snapshot the poses pages ask for, when they moved."""
        if taken or self.session.changed:
            self.poses.changed()
        if self.poses.due(now):
            s = self.session
            self.poses.capture(s.env.scene.engine, s.steps, s.steps * s.env.step_dt)

    def wake(self) -> None:
        """Wake the simulation loop from its sleep between steps (any thread): a request
        waits for something only that thread reads."""
        self._wake.set()

    def snapshot(self) -> tuple[bytes, dict[str, Any]]:
        """The latest JPEG frame and state (a copy), as the HTTP threads serve them."""
        with self._lock:
            return self._jpeg, dict(self._state)

    def frame_served(self, frame: object = None) -> None:
        """Count a frame sent to a page; every route that sends frames calls this (any
        thread). ``frame`` names it (e.g. its frame number): the same frame sent again, as
        a page polling faster than the simulation gets, is not counted twice in a row."""
        with self._lock:
            if frame is not None and frame == self._last_served:
                return
            self._last_served = frame
        self.served.add()

    def markers(self, key: tuple, timeout: float = MARKER_WAIT_S) -> tuple[int, bytes] | None:
        """``GET /markers.json``'s (status, body) for ``key`` = (env ids, contacts, root
        frame), read by the simulation thread no earlier than the latest frame; None if it
        did not come within ``timeout`` seconds. Called from the HTTP threads."""
        with self._markers_ready:
            self._marker_asks[key] = time.monotonic()
            if len(self._marker_asks) > _MARKER_REQUESTS:  # forget the oldest request
                oldest = min(self._marker_asks, key=self._marker_asks.__getitem__)
                self._marker_asks.pop(oldest)
                self._marker_answers.pop(oldest, None)
            frame = self.frames
            self.wake()

            def ready() -> bool:
                answer = self._marker_answers.get(key)
                return answer is not None and answer[0] >= frame

            self._markers_ready.wait_for(ready, timeout)
            answer = self._marker_answers.get(key)
            return None if answer is None else answer[1:]

    def _read_markers(self) -> None:
        """On the simulation thread: read the markers of every recent request whose answer
        is older than the latest frame, and wake the requests waiting for them."""
        now = time.monotonic()
        with self._lock:
            for key, asked in list(self._marker_asks.items()):
                if now - asked > _MARKER_KEEP_S:
                    self._marker_asks.pop(key)
                    self._marker_answers.pop(key, None)
            frame = self.frames
            due = [
                key for key in self._marker_asks if self._marker_answers.get(key, (-1,))[0] < frame
            ]
        if not due:
            return
        answers = {}
        for key in due:
            env_ids, contacts, root_frame = key
            try:
                found = self.session.markers_for(list(env_ids), contacts, root_frame)
                answers[key] = (frame, HTTPStatus.OK, state_json(found))
            except Exception as exc:  # a term that fails to draw must not end the viewer
                error = f"drawing the markers failed: {' '.join(str(exc).split())[:200]}"
                if self._marker_answers.get(key, (0, HTTPStatus.OK))[1] == HTTPStatus.OK:
                    self.session.log(f"robolearn viewer: {error}")  # once, not per frame
                body = json.dumps({"ok": False, "error": error}).encode()
                answers[key] = (frame, HTTPStatus.INTERNAL_SERVER_ERROR, body)
        with self._markers_ready:
            self._marker_answers.update(answers)
            self._markers_ready.notify_all()

    def run(
        self,
        max_steps: int | None = None,
        max_seconds: float | None = None,
        low_priority: Callable[[], contextlib.AbstractContextManager] | None = None,
    ) -> None:
        """Serve until interrupted (or a limit is reached): HTTP in a thread, simulation here.

        ``low_priority``: a context the simulation loop and the HTTP thread run in
        (:func:`robolearn.viewer.priority.yield_cpu` beside a training run)."""
        started, serving = time.monotonic(), False
        try:
            with low_priority() if low_priority is not None else contextlib.nullcontext():
                threading.Thread(target=self.server.serve_forever, daemon=True).start()
                serving = True
                self._loop(started, max_steps, max_seconds)
        finally:
            self.closing.set()
            if serving:  # shutdown() waits for a serve_forever that never ran, for ever
                self.server.shutdown()
            self.server.server_close()
            self.renderer.close()

    def _loop(self, started: float, max_steps: int | None, max_seconds: float | None) -> None:
        """Step, capture poses, render what pages want, sleep until the next step is due."""
        last_frame = 0.0
        while True:
            taken = self.session.tick()
            now = time.monotonic()
            self._capture_poses(taken, now)
            stale = self._jpeg_stale and self._jpeg_wanted(now)
            if (self.session.changed or stale) and now - last_frame >= 1.0 / self.max_fps:
                self.session.changed = False
                self._render()
                last_frame = now
            elif not taken:
                # until the next step is due (a page's request for markers wakes it):
                # a followed training run's cores see ~50 wake-ups a second, not 200
                self._wake.wait(min(self.session.due_in(), MAX_SLEEP_S))
                self._wake.clear()
            self._read_markers()
            if max_steps is not None and self.session.steps >= max_steps:
                break
            if max_seconds is not None and now - started >= max_seconds:
                break


class _Compressible:
    """A body sent as it is, or gzip-compressed (once, then kept) to a client that accepts
    it; one under 4 KB is always sent as it is."""

    def __init__(self, body: bytes) -> None:
        self.plain = body
        self._gzip: bytes | None = None
        self._lock = threading.Lock()  # not the frame lock: gzip takes a while

    def body(self, gzip_ok: bool) -> tuple[bytes, dict[str, str]]:
        """The body and its extra headers."""
        if not gzip_ok or len(self.plain) < 4096:
            return self.plain, {}
        with self._lock:
            if self._gzip is None:
                self._gzip = gzip.compress(self.plain, compresslevel=6)
        return self._gzip, {"Content-Encoding": "gzip", "Vary": "Accept-Encoding"}


_static_bodies: dict[str, _Compressible] = {}


def _static_body(path: str, gzip_ok: bool) -> tuple[bytes, dict[str, str]]:
    """The body of one of STATIC_FILES and its extra headers, read at its first request."""
    if path not in _static_bodies:  # two threads may both read it: the same bytes
        _static_bodies[path] = _Compressible((STATIC_DIR / path.lstrip("/")).read_bytes())
    return _static_bodies[path].body(gzip_ok)


class _RefusedError(Exception):
    """A request answered with an error status and a short message."""

    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        # The default prints a traceback per failed request. A client that hung up is not
        # news; anything else gets one line, and the viewer serves on.
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            return
        print(f"robolearn viewer: a request failed: {exc!r}"[:300], file=sys.stderr, flush=True)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _handler_for(viewer: WebViewer) -> type[BaseHTTPRequestHandler]:
    """The request handler class of one viewer."""
    return type("Handler", (_Handler,), {"viewer": viewer})


class _Handler(BaseHTTPRequestHandler):
    """Answers the routes of the module docstring for ``viewer`` (set by _handler_for)."""

    server_version = "robolearn-viewer"
    timeout = 30  # a client that stops sending mid-request frees its thread
    viewer: WebViewer

    def log_message(self, *args) -> None:  # quiet: no line per request
        pass

    def _send(
        self, status: int, body: bytes, kind: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _answer(self, status: HTTPStatus, error: str | None = None, **fields: Any) -> None:
        body = {"ok": True, **fields} if error is None else {"ok": False, "error": error}
        if error is not None:
            self.close_connection = True  # the body may be unread: start afresh
        self._send(status, json.dumps(body).encode(), "application/json")

    def _gzip_ok(self) -> bool:
        return "gzip" in self.headers.get("Accept-Encoding", "")

    def _check_origin(self) -> None:
        """Refuse (403) a Host that is not this server's (DNS rebinding) and an Origin
        that is not the page's own (another site in the user's browser)."""
        host = self.headers.get("Host")
        if host is None:
            if self.headers.get("Origin") is not None:
                raise _RefusedError(HTTPStatus.FORBIDDEN, "a request with Origin needs Host")
            return  # not a browser: browsers always send Host
        name = host_name(host)
        if name is None or not (_is_ip(name) or name in self.viewer.host_names):
            raise _RefusedError(
                HTTPStatus.FORBIDDEN,
                "unknown Host; open the viewer by the address it printed",
            )
        origin = self.headers.get("Origin")
        if origin is not None and not _same_origin(origin, host):
            raise _RefusedError(HTTPStatus.FORBIDDEN, "cross-origin requests are refused")

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        try:
            self._check_origin()
            if path in STATIC_FILES:
                self._static(path)
                return
            route = _GET_ROUTES.get(path)
            if route is None:
                raise _RefusedError(HTTPStatus.NOT_FOUND, "not found")
            getattr(self, route)()
        except _RefusedError as exc:
            self._answer(exc.status, str(exc))

    def _page(self) -> None:
        self._send(
            HTTPStatus.OK,
            self.viewer.page,
            "text/html; charset=utf-8",
            {"Content-Security-Policy": _PAGE_POLICY, "X-Frame-Options": "DENY"},
        )

    def _frame(self) -> None:
        viewer = self.viewer
        viewer.jpeg_asked()
        jpeg, shown = viewer.snapshot()
        self._send(HTTPStatus.OK, jpeg, "image/jpeg")
        viewer.frame_served(("jpeg", shown.get("frames")))

    def _state(self) -> None:
        _, state = self.viewer.snapshot()
        state["speeds"] = list(SPEEDS)
        state["frames_per_s"] = round(self.viewer.served.per_second() or 0.0, 2)
        self._send(HTTPStatus.OK, state_json(state), "application/json")

    def _scene3d(self) -> None:
        body, headers = self.viewer.scene3d_body(self._gzip_ok())
        self._send(HTTPStatus.OK, body, "application/json", headers)

    def _static(self, path: str) -> None:
        """One of STATIC_FILES (the page's scripts and vendored three.js), read once and
        kept, gzip-compressed for a client that accepts it (three.js is 690 KB, 180 KB so)."""
        try:
            body, headers = _static_body(path, self._gzip_ok())
        except FileNotFoundError:
            raise _RefusedError(HTTPStatus.NOT_FOUND, "not found") from None
        self._send(HTTPStatus.OK, body, STATIC_FILES[path], headers)

    def _markers(self) -> None:
        key = _marker_request(self.path, self.viewer.session)
        answer = self.viewer.markers(key)
        if answer is None:
            self._answer(HTTPStatus.SERVICE_UNAVAILABLE, "the simulation did not answer")
        else:
            self._send(answer[0], answer[1], "application/json")

    def _poses(self) -> None:
        """``GET /poses.bin?envs=<ids>&after=<frame>``: the latest body poses of those
        envs (robolearn.viewer.scene3d.POSES_HEADER), waiting up to POSES_WAIT_S for a
        snapshot newer than ``after`` (the frame the page has)."""
        viewer = self.viewer
        env_ids, after = _poses_query(self.path, viewer.session)
        viewer.wake()  # envs not captured yet are read at the loop's next turn
        try:
            frame, body = viewer.poses.request(env_ids, after, POSES_WAIT_S)
        except TimeoutError as exc:
            self._answer(HTTPStatus.SERVICE_UNAVAILABLE, str(exc))
        else:
            self._send(HTTPStatus.OK, body, "application/octet-stream")
            viewer.frame_served(("poses", frame))

    def _pose_stream(self) -> None:
        """``GET /poses.stream?envs=<ids>``: every new snapshot of those envs' poses, as
        it is taken, on one open response (each a uint32 byte count, then a
        ``/poses.bin`` body), until the page hangs up or the viewer stops: no request
        and no round trip per frame. The snapshot already taken comes first."""
        viewer = self.viewer
        env_ids, after = _poses_query(self.path, viewer.session, "poses.stream")
        self.close_connection = True  # the body ends when the connection does
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        sent = after
        viewer.wake()
        while not viewer.closing.is_set() and not _hung_up(self.connection):
            try:  # waits up to POSES_WAIT_S, keeping these envs wanted meanwhile
                frame, body = viewer.poses.request(env_ids, sent, POSES_WAIT_S)
            except TimeoutError:
                continue  # not captured yet (the simulation is busy or starting)
            if frame == sent:
                continue  # nothing moved (paused): wait again
            self.wfile.write(_FRAME_LENGTH.pack(len(body)) + body)
            sent = frame
            viewer.frame_served(("poses", frame))

    def _telemetry(self) -> None:
        """``GET /telemetry.json?since=<seq>&obs=<term>,<term>``: the watched env's
        history newer than sample ``since`` (default -1: all kept), with the named
        observation terms; read from the copy the simulation thread publishes."""
        telemetry = self.viewer.session.telemetry
        if telemetry is None:
            raise _RefusedError(HTTPStatus.NOT_FOUND, "this viewer records no telemetry")
        since, observations = _telemetry_query(self.path)
        try:
            answer = telemetry.answer(since, observations)
        except InvalidQueryError as exc:
            raise _RefusedError(HTTPStatus.BAD_REQUEST, str(exc)) from None
        self._send(HTTPStatus.OK, state_json(answer), "application/json")

    def do_POST(self) -> None:
        try:
            if self.path.split("?", 1)[0] != "/control":
                raise _RefusedError(HTTPStatus.NOT_FOUND, "not found; commands go to /control")
            self._check_origin()
            self._check_token()
            command = self._read_command()
            number = self.viewer.session.submit(command)  # raises InvalidCommandError
        except _RefusedError as exc:
            self._answer(exc.status, str(exc))
        except InvalidCommandError as exc:
            self._answer(HTTPStatus.BAD_REQUEST, str(exc))
        else:
            self._answer(HTTPStatus.OK, command=number)

    def _check_token(self) -> None:
        sent = self.headers.get(TOKEN_HEADER, "")
        # header values are Latin-1 text; compare_digest wants bytes for anything else
        if not secrets.compare_digest(
            sent.encode("latin-1", "replace"), self.viewer.token.encode()
        ):
            raise _RefusedError(
                HTTPStatus.FORBIDDEN,
                f"missing or wrong {TOKEN_HEADER}; send the one in the page served by GET /",
            )

    def _read_command(self) -> Any:
        if self.headers.get_content_type() != "application/json":
            raise _RefusedError(
                HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "a command is sent as application/json"
            )
        length = _content_length(self.headers.get_all("Content-Length") or [])
        body = self.rfile.read(length)
        if len(body) != length:
            raise _RefusedError(HTTPStatus.BAD_REQUEST, "the body is shorter than its length")
        try:
            return json.loads(body, parse_constant=_refuse_constant)
        except (ValueError, RecursionError) as exc:
            raise _RefusedError(
                HTTPStatus.BAD_REQUEST, f"the body is not valid JSON ({str(exc)[:80]})"
            ) from None


_GET_ROUTES = {
    "/": "_page",
    "/index.html": "_page",
    "/frame.jpg": "_frame",
    "/state.json": "_state",
    "/telemetry.json": "_telemetry",
    "/scene3d.json": "_scene3d",
    "/poses.bin": "_poses",
    "/poses.stream": "_pose_stream",
    "/markers.json": "_markers",
}
"""GET's routes besides STATIC_FILES: the _Handler method that answers each."""


def _content_length(lengths: list[str]) -> int:
    """A command's byte count from its Content-Length headers; _RefusedError for none, for
    several that differ, for one that is not a byte count, or for more than MAX_BODY."""
    if not lengths:
        raise _RefusedError(HTTPStatus.LENGTH_REQUIRED, "Content-Length is required")
    text = lengths[0].strip()
    if len(set(lengths)) != 1 or not re.fullmatch(r"[0-9]{1,9}", text):
        raise _RefusedError(HTTPStatus.BAD_REQUEST, "Content-Length must be a byte count")
    length = int(text)
    if length > MAX_BODY:
        raise _RefusedError(
            HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"a command is at most {MAX_BODY} bytes"
        )
    return length


def _query(path: str, route: str, allowed: tuple[str, ...]) -> dict[str, list[str]]:
    """The query parameters of ``path``; _RefusedError (400) naming ``route``'s parameters
    for any other."""
    query = parse_qs(urlsplit(path).query, keep_blank_values=True)
    unknown = sorted(set(query) - set(allowed))
    if unknown:
        raise _RefusedError(
            HTTPStatus.BAD_REQUEST,
            f"unknown parameter {unknown[0][:40]!r}; {route} takes {', '.join(allowed)}",
        )
    return query


def _marker_request(path: str, session: ViewerSession) -> tuple:
    """(env ids, contacts, root frame) from ``/markers.json?envs=0,3&contacts=1&frame=1``:
    ``envs`` a comma list of env ids (default: the watched env), ``contacts`` whether to
    draw the forces on bodies (default: as the viewer shows contacts), ``frame`` whether to
    draw the root's frame (default: no). Raises _RefusedError (400) for anything else."""
    query = _query(
        path,
        "markers.json",
        (
            "envs",
            "contacts",
            "frame",
        ),
    )
    num_envs = session.env.num_envs
    text = query.get("envs", [""])[-1].strip()
    if not text:
        env_ids: tuple[int, ...] = (session.env_id,)
    else:
        parts = text.split(",")
        if len(parts) > MAX_MARKER_ENVS:
            raise _RefusedError(
                HTTPStatus.BAD_REQUEST, f"at most {MAX_MARKER_ENVS} envs per request"
            )
        if not all(re.fullmatch(r"[0-9]{1,9}", p.strip()) for p in parts):
            raise _RefusedError(
                HTTPStatus.BAD_REQUEST, "envs is a comma list of env ids, e.g. envs=0,1"
            )
        env_ids = tuple(dict.fromkeys(int(p) for p in parts))
        bad = [i for i in env_ids if i >= num_envs]
        if bad:
            raise _RefusedError(
                HTTPStatus.BAD_REQUEST,
                f"env {bad[0]} does not exist; env ids go from 0 to {num_envs - 1}",
            )
    flags: list[bool | None] = []
    for name in ("contacts", "frame"):
        value = query.get(name, [""])[-1].strip().lower()
        if value in ("", "default"):
            flags.append(None)
        elif value in ("1", "true", "on"):
            flags.append(True)
        elif value in ("0", "false", "off"):
            flags.append(False)
        else:
            raise _RefusedError(HTTPStatus.BAD_REQUEST, f"{name} is 1 or 0, not {value[:20]!r}")
    contacts, frame = flags
    return env_ids, contacts, bool(frame)


def _telemetry_query(path: str) -> tuple[int, list[str]]:
    """(since, observation terms) from ``/telemetry.json?since=41&obs=joint_pos,actions``;
    raises _RefusedError (400) for a query that does not parse."""
    query = _query(
        path,
        "telemetry.json",
        (
            "since",
            "obs",
        ),
    )
    text = query.get("since", ["-1"])[-1].strip()
    if not re.fullmatch(r"-1|[0-9]{1,15}", text):
        raise _RefusedError(
            HTTPStatus.BAD_REQUEST, "since is a sample number (-1 or more), e.g. since=41"
        )
    names = [n.strip() for n in query.get("obs", [""])[-1].split(",") if n.strip()]
    if len(names) > 64:
        raise _RefusedError(HTTPStatus.BAD_REQUEST, "at most 64 observation terms")
    return int(text), names


def _poses_query(
    path: str, session: ViewerSession, route: str = "poses.bin"
) -> tuple[list[int], int | None]:
    """(env ids, after) from ``/poses.bin?envs=0,1,2&after=41`` (or ``/poses.stream``):
    ``envs`` a comma list of env ids or ranges (``0-15``; default: the watched env),
    ``after`` the frame the page already has (default: none). Raises _RefusedError (400)
    for anything else."""
    query = _query(
        path,
        route,
        (
            "envs",
            "after",
        ),
    )
    text = query.get("envs", [""])[-1]
    try:
        env_ids = parse_env_list(text, session.env.num_envs) if text else [session.env_id]
    except ValueError as exc:
        raise _RefusedError(HTTPStatus.BAD_REQUEST, str(exc)) from None
    after_text = query.get("after", [""])[-1].strip()
    if after_text and not re.fullmatch(r"[0-9]{1,10}", after_text):
        raise _RefusedError(HTTPStatus.BAD_REQUEST, "after is a frame number")
    return env_ids, int(after_text) if after_text else None


def _hung_up(connection: socket.socket) -> bool:
    """Whether the client closed a connection we only write to (it sends nothing more, so
    a readable socket that yields no byte is an orderly close; an error, a reset)."""
    try:
        readable, _, _ = select.select([connection], [], [], 0)
        return bool(readable) and connection.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _same_origin(origin: str, host: str) -> bool:
    """Whether an ``Origin`` header names the same http host and port as ``Host``."""
    try:
        o, h = urlsplit(origin), urlsplit("//" + host)
        return (
            o.scheme == "http"
            and o.hostname is not None
            and o.hostname == h.hostname
            and (o.port or 80) == (h.port or 80)
            and o.path in ("", "/")
        )
    except ValueError:
        return False


PAGE = (Path(__file__).parent / "static" / "index.html").read_text()
"""The viewer page: plain HTML and JavaScript, no outside resources."""
