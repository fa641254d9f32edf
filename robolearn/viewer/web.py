"""The browser viewer: frames rendered on the server, controls in the page.

A small HTTP server (Python's standard library) on localhost by default: ``GET /`` is the
page, ``GET /frame.jpg`` the latest frame of the watched env, ``GET /state.json`` the
viewer's state and the numbers beside the picture, ``POST /control`` a command. The page
is plain HTML and JavaScript with no outside resources, so it works offline and through an
SSH tunnel (``ssh -L 8765:localhost:8765 server``): nothing but this one port is needed.

Why not viser or a WebRTC stream: frames rendered by MuJoCo on the server look exactly like
the videos, need no WebGL in the browser and no mesh export, and travel over plain HTTP,
which every bastion host forwards.
"""

from __future__ import annotations

import io
import json
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from robolearn.errors import RobolearnError
from robolearn.viewer.overlays import contact_option
from robolearn.viewer.session import SPEEDS, ViewerSession
from robolearn.viewer.video import EnvRenderer, track_body_of


def encode_jpeg(rgb, quality: int = 80) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(rgb).save(buffer, format="JPEG", quality=quality)
    return buffer.getvalue()


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
        env = session.env
        self.renderer = EnvRenderer(env.engine, width, height, track_body=track_body_of(env))
        self._free_camera = self.renderer.camera.type
        self.max_fps = max_fps
        self._lock = threading.Lock()
        self._jpeg = b""
        self._state: dict[str, Any] = {}
        self.frames = 0
        handler = _handler_for(self)
        try:
            self.server = ThreadingHTTPServer((host, port), handler)
        except OSError as exc:
            raise RobolearnError(
                f"cannot serve the web viewer on {host}:{port}: {exc.strerror}"
            ) from exc
        self.server.daemon_threads = True
        self.host, self.port = self.server.server_address[:2]
        self._render()  # the first frame and state exist before anyone is told the URL

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        return f"http://{host}:{self.port}/"

    def _render(self) -> None:
        s = self.session
        import mujoco

        cam = self.renderer.camera
        if s.follow_camera and track_body_of(s.env) is not None:
            cam.type = mujoco.mjtCamera.mjCAMERA_TRACKING
        else:
            cam.type = mujoco.mjtCamera.mjCAMERA_FREE
        rgb = self.renderer.frame(
            s.env_id, option=contact_option(s.show_contacts), arrows=s.arrows()
        )
        jpeg = encode_jpeg(rgb)
        state = s.status()
        state["frames"] = self.frames + 1
        with self._lock:
            self._jpeg, self._state = jpeg, state
            self.frames += 1

    def snapshot(self) -> tuple[bytes, dict[str, Any]]:
        with self._lock:
            return self._jpeg, dict(self._state)

    def run(self, max_steps: int | None = None, max_seconds: float | None = None) -> None:
        """Serve until interrupted (or a limit is reached): HTTP in a thread, simulation here."""
        thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        thread.start()
        started, last_frame = time.monotonic(), 0.0
        try:
            while True:
                taken = self.session.tick()
                now = time.monotonic()
                if self.session.changed and now - last_frame >= 1.0 / self.max_fps:
                    self.session.changed = False
                    self._render()
                    last_frame = now
                elif not taken:
                    time.sleep(0.005)
                if max_steps is not None and self.session.steps >= max_steps:
                    break
                if max_seconds is not None and now - started >= max_seconds:
                    break
        finally:
            self.server.shutdown()
            self.server.server_close()
            self.renderer.close()


def _handler_for(viewer: WebViewer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "robolearn-viewer"

        def log_message(self, *args) -> None:  # quiet: no line per request
            pass

        def _send(self, status: int, body: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path in ("/", "/index.html"):
                self._send(HTTPStatus.OK, PAGE.encode(), "text/html; charset=utf-8")
            elif path == "/frame.jpg":
                jpeg, _ = viewer.snapshot()
                self._send(HTTPStatus.OK, jpeg, "image/jpeg")
            elif path == "/state.json":
                _, state = viewer.snapshot()
                state["speeds"] = list(SPEEDS)
                self._send(HTTPStatus.OK, json.dumps(state).encode(), "application/json")
            else:
                self._send(HTTPStatus.NOT_FOUND, b"not found", "text/plain")

        def do_POST(self) -> None:
            if self.path != "/control":
                self._send(HTTPStatus.NOT_FOUND, b"not found", "text/plain")
                return
            length = min(int(self.headers.get("Content-Length", 0)), 4096)
            try:
                command = json.loads(self.rfile.read(length) or b"{}")
                if not isinstance(command, dict):
                    raise ValueError("a command is a JSON object")
            except ValueError as exc:
                self._send(HTTPStatus.BAD_REQUEST, str(exc).encode(), "text/plain")
                return
            viewer.session.submit(command)
            self._send(HTTPStatus.OK, b'{"ok": true}', "application/json")

    return Handler


PAGE = (Path(__file__).parent / "static" / "index.html").read_text()
"""The viewer page: plain HTML and JavaScript, no outside resources."""
