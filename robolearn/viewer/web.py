"""The browser viewer: frames rendered on the server, controls in the page.

A small HTTP server (Python's standard library) on localhost by default: ``GET /`` is the
page, ``GET /frame.jpg`` the latest frame of the watched env, ``GET /state.json`` the
viewer's state and the numbers beside the picture, ``POST /control`` a command. The page
is plain HTML and JavaScript with no outside resources, so it works offline and through an
SSH tunnel (``ssh -L 8765:localhost:8765 server``): nothing but this one port is needed.

Why not viser or a WebRTC stream: frames rendered by MuJoCo on the server look exactly like
the videos, need no WebGL in the browser and no mesh export, and travel over plain HTTP,
which every bastion host forwards.

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

import io
import ipaddress
import json
import re
import secrets
import socket
import sys
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from robolearn.errors import RobolearnError
from robolearn.files import json_safe
from robolearn.render.overlays import contact_option
from robolearn.render.video import EnvRenderer, track_body_of
from robolearn.viewer.session import SPEEDS, InvalidCommandError, ViewerSession

TOKEN_HEADER = "X-Robolearn-Token"
"""The request header that carries the per-launch secret with each command."""
MAX_BODY = 4096
"""The largest command body accepted, in bytes (a command is a few dozen)."""
_TOKEN_SLOT = "__ROBOLEARN_TOKEN__"  # where the page template takes the secret
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

    def _render(self) -> None:
        s = self.session
        import mujoco

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
        with self._lock:
            self._jpeg, self._state = jpeg, state
            self.frames += 1

    def snapshot(self) -> tuple[bytes, dict[str, Any]]:
        """The latest JPEG frame and state (a copy), as the HTTP threads serve them."""
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
    class Handler(BaseHTTPRequestHandler):
        server_version = "robolearn-viewer"
        timeout = 30  # a client that stops sending mid-request frees its thread

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

        def _answer(self, status: HTTPStatus, error: str | None = None) -> None:
            body = {"ok": True} if error is None else {"ok": False, "error": error}
            if error is not None:
                self.close_connection = True  # the body may be unread: start afresh
            self._send(status, json.dumps(body).encode(), "application/json")

        def _check_origin(self) -> None:
            """Refuse (403) a Host that is not this server's (DNS rebinding) and an Origin
            that is not the page's own (another site in the user's browser)."""
            host = self.headers.get("Host")
            if host is None:
                if self.headers.get("Origin") is not None:
                    raise _RefusedError(HTTPStatus.FORBIDDEN, "a request with Origin needs Host")
                return  # not a browser: browsers always send Host
            name = host_name(host)
            if name is None or not (_is_ip(name) or name in viewer.host_names):
                raise _RefusedError(
                    HTTPStatus.FORBIDDEN,
                    "unknown Host; open the viewer by the address it printed",
                )
            origin = self.headers.get("Origin")
            if origin is not None and not _same_origin(origin, host):
                raise _RefusedError(HTTPStatus.FORBIDDEN, "cross-origin requests are refused")

        def do_GET(self) -> None:
            try:
                self._check_origin()
            except _RefusedError as exc:
                self._answer(exc.status, str(exc))
                return
            path = self.path.split("?", 1)[0]
            if path in ("/", "/index.html"):
                self._send(
                    HTTPStatus.OK,
                    viewer.page,
                    "text/html; charset=utf-8",
                    {"Content-Security-Policy": _PAGE_POLICY, "X-Frame-Options": "DENY"},
                )
            elif path == "/frame.jpg":
                jpeg, _ = viewer.snapshot()
                self._send(HTTPStatus.OK, jpeg, "image/jpeg")
            elif path == "/state.json":
                _, state = viewer.snapshot()
                state["speeds"] = list(SPEEDS)
                self._send(HTTPStatus.OK, state_json(state), "application/json")
            else:
                self._answer(HTTPStatus.NOT_FOUND, "not found")

        def do_POST(self) -> None:
            try:
                if self.path.split("?", 1)[0] != "/control":
                    raise _RefusedError(HTTPStatus.NOT_FOUND, "not found; commands go to /control")
                self._check_origin()
                self._check_token()
                command = self._read_command()
                viewer.session.submit(command)  # validates; raises InvalidCommandError
            except _RefusedError as exc:
                self._answer(exc.status, str(exc))
            except InvalidCommandError as exc:
                self._answer(HTTPStatus.BAD_REQUEST, str(exc))
            else:
                self._answer(HTTPStatus.OK)

        def _check_token(self) -> None:
            sent = self.headers.get(TOKEN_HEADER, "")
            # header values are Latin-1 text; compare_digest wants bytes for anything else
            if not secrets.compare_digest(sent.encode("latin-1", "replace"), viewer.token.encode()):
                raise _RefusedError(
                    HTTPStatus.FORBIDDEN,
                    f"missing or wrong {TOKEN_HEADER}; send the one in the page served by GET /",
                )

        def _read_command(self) -> Any:
            if self.headers.get_content_type() != "application/json":
                raise _RefusedError(
                    HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "a command is sent as application/json"
                )
            lengths = self.headers.get_all("Content-Length") or []
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
            body = self.rfile.read(length)
            if len(body) != length:
                raise _RefusedError(HTTPStatus.BAD_REQUEST, "the body is shorter than its length")
            try:
                return json.loads(body, parse_constant=_refuse_constant)
            except (ValueError, RecursionError) as exc:
                raise _RefusedError(
                    HTTPStatus.BAD_REQUEST, f"the body is not valid JSON ({str(exc)[:80]})"
                ) from None

    return Handler


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
