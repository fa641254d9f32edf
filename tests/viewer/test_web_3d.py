"""The web viewer's 3D mode in a real headless Chromium (three.js on SwiftShader): the
robots drawn, the watched env followed and picked, markers, more envs shown, and the
fallback to rendered frames without WebGL."""

from __future__ import annotations

import gzip
import json
import re
import time
import urllib.request

import numpy as np
import pytest

from .helpers import (
    CHROMIUM,
    FOLLOWS,
    START_S,
    WAIT_S,
    bright_pixels,
    humanoids_in_thread,
    image,
    magenta_pixels,
    new_frames,
    new_page,
    request,
    wait_for_state,
)


def test_web_viewer_3d_mode_draws_the_robots_follows_the_watched_env_and_picks_on_click(
    browser,
):
    viewer, stop = humanoids_in_thread(16)
    url = viewer.url
    try:
        page = new_page(browser, viewport={"width": 1300, "height": 800})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(url + "?shown=4")
        page.wait_for_function("window.robolearn3d && robolearn3d.stats.newFrames > 2")
        # WebGL2 works here (SwiftShader), so the page chose the 3D mode and renders no JPEG
        assert page.locator("#mode").input_value() == "3d"
        assert page.locator("#frame").is_hidden()
        assert page.locator("#shown").input_value() == "4"
        # the picture: not uniform, with robots in it; 4 envs spread on a flat task
        deadline = time.time() + WAIT_S
        while True:
            shot = image(page.locator("#view3d").screenshot())
            seen = (float(shot.std()), bright_pixels(shot))
            if seen[0] > 10 and seen[1] > 1000:
                break
            assert time.time() < deadline, f"no robots drawn (std, bright pixels) = {seen}"
            time.sleep(0.5)
        assert page.evaluate("[robolearn3d.view.spread, robolearn3d.poses.n]") == [True, 4]
        page.wait_for_function(FOLLOWS, arg=0)
        # another env chosen in the page: the camera follows it, the picture changes
        target = page.evaluate("robolearn3d.camera.target")
        page.select_option("#env", "2")
        wait_for_state(url, lambda s: s["env"] == 2, "the env selector")
        page.wait_for_function(FOLLOWS, arg=2)
        moved = np.subtract(page.evaluate("robolearn3d.camera.target"), target)
        assert np.hypot(*moved[:2]) > 1.0, moved  # a grid cell away (spread 2.4 m apart)
        new_frames(page)
        assert not np.array_equal(image(page.locator("#view3d").screenshot()), shot)
        # a click on another robot watches it (paused: robots that stand still are clicked
        # where they are drawn): the first env whose root is not hidden
        page.click("#pause")
        paused = wait_for_state(url, lambda s: s["paused"], "pause")
        page.wait_for_function(f"robolearn3d.poses.steps === {paused['steps']}")
        box = page.locator("#canvas3d").bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        distance = page.evaluate("robolearn3d.camera.distance")
        page.mouse.wheel(0, 600)  # the wheel zooms out: the other robots come into view
        page.wait_for_function(f"robolearn3d.camera.distance > 2 * {distance}")
        page.wait_for_function("!robolearn3d.dirty")
        for env in (3, 0, 1):
            xy = page.evaluate("(env) => robolearn3d.screenPosition(env)", env)
            if xy and page.evaluate("([x, y]) => robolearn3d.pickAt(x, y)", xy) == env:
                break
        else:
            pytest.fail("no other robot in sight to click")
        page.mouse.click(*xy)
        wait_for_state(url, lambda s: s["env"] == env, "the env clicked")
        page.wait_for_function(FOLLOWS, arg=env)
        # markers, as /markers.json lists them (a stub list here): shapes and a text label
        page.select_option("#markers", "none")  # no polling: the stub stays
        page.evaluate(
            """(env) => {
              const v = robolearn3d, k = v.slotOf(env), f = v.poses.floats;
              const o = (k * v.poses.nbody + v.anchor) * 7, p = [f[o], f[o + 1], f[o + 2] + 0.9];
              const up = [p[0], p[1], p[2] + 0.5], magenta = [1, 0, 1, 1];
              v.markers = {[env]: [
                {kind: 'sphere', start: p, end: null, size: 0.2, rgba: magenta},
                {kind: 'arrow', start: p, end: up, size: 0.03, rgba: [0, 1, 0, 1]},
                {kind: 'box', start: up, size: 0.05, rgba: magenta, quat: [0.9, 0, 0, 0.4],
                 half_extents: [0.1, 0.05, 0.05]},
                {kind: 'frame', start: p, size: 0.3, rgba: [1, 1, 1, 1], quat: null},
                {kind: 'line', start: p, end: [p[0] + 0.5, p[1], p[2]], size: 0.01,
                 rgba: [1, 1, 0, 1]},
                {kind: 'text', start: up, text: 'stub label', rgba: [1, 1, 1, 1]},
                {kind: 'sphere', start: [NaN, 0, 0], size: 1, rgba: magenta},  // skipped
              ]};
              v.dirty = true;
            }""",
            env,
        )
        page.wait_for_function("robolearn3d.stats.triangles > 0 && !robolearn3d.dirty")
        page.wait_for_function(
            "[...document.querySelectorAll('#labels3d .label3d')]"
            ".some((d) => !d.hidden && d.textContent === 'stub label')"
        )
        assert magenta_pixels(image(page.locator("#view3d").screenshot())) > 300
        assert errors == [], errors
    finally:
        stop()


def test_web_viewer_3d_mode_shows_more_robots_when_more_envs_are_shown(browser):
    viewer, stop = humanoids_in_thread(16)
    url = viewer.url
    try:
        page = new_page(browser, viewport={"width": 1300, "height": 800})
        page.goto(url + "?shown=1&markers=none")
        page.wait_for_function("window.robolearn3d && robolearn3d.stats.newFrames > 2")
        # a fixed camera over the grid of spread envs
        page.uncheck("#follow")
        wait_for_state(url, lambda s: not s["follow_camera"], "follow camera off")
        page.wait_for_function("robolearn3d.view.follow === false")
        page.evaluate(
            "Object.assign(robolearn3d.camera, {target: [0, 0, 0.5], distance: 13, "
            "elevation: -40}); robolearn3d.dirty = true"
        )
        deadline = time.time() + WAIT_S
        while True:  # until the moved camera's frame is on screen
            new_frames(page)
            one = bright_pixels(image(page.locator("#view3d").screenshot()))
            if one > 200 or time.time() > deadline:
                break
        calls_one = page.evaluate("robolearn3d.stats.drawCalls")
        page.select_option("#shown", "16")
        page.wait_for_function("robolearn3d.poses.n === 16")
        assert one > 200, one
        # retried until a frame with all 16 arrives (a loaded machine may be a few behind)
        deadline = time.time() + WAIT_S
        while True:
            new_frames(page)
            sixteen = bright_pixels(image(page.locator("#view3d").screenshot()))
            if sixteen > 6 * one or time.time() > deadline:
                break
        assert sixteen > 6 * one, (one, sixteen)
        # instanced: a draw call per detail level (robots of about the same size on screen
        # share one), never one per robot; a frame is the header, the env ids and 7 floats
        # a body
        stats = page.evaluate("robolearn3d.stats")
        assert stats["drawCalls"] < 16, (calls_one, stats)
        assert stats["lastPoseBytes"] == 32 + 16 * 4 + 16 * 23 * 7 * 4, stats
    finally:
        stop()


def test_markers_turned_off_stay_off_while_an_answer_is_in_flight(browser):
    """A markers answer asked for before the user chose "none" (here every answer is held
    back 400 ms) is dropped when it lands: before, it drew the markers again (and in the
    3D test it replaced the markers the test had put there, under load)."""
    viewer, stop = humanoids_in_thread(1)
    try:
        page = new_page(browser)
        page.add_init_script(
            "const plainFetch = window.fetch;"
            "window.fetch = async (what, opts) => {"
            "  const answer = await plainFetch(what, opts);"
            "  const late = String(what).includes('markers.json');"
            "  if (late) await new Promise((r) => setTimeout(r, 400));"
            "  return answer; };"
        )
        page.goto(viewer.url + "?mode=3d")
        page.wait_for_function("window.robolearn3d && robolearn3d.markersInFlight")
        answered = page.evaluate("robolearn3d.stats.markerAnswers")
        page.select_option("#markers", "none")
        page.evaluate("robolearn3d.markers = {0: [{kind: 'text', start: [0, 0, 1], text: 'kept'}]}")
        # the answer in flight landed, and the page took it in (its own count)
        page.wait_for_function(f"robolearn3d.stats.markerAnswers > {answered}")
        assert page.evaluate("robolearn3d.markers[0] && robolearn3d.markers[0][0].text") == "kept"
    finally:
        stop()


def test_web_viewer_without_webgl_falls_back_to_rendered_frames():
    if CHROMIUM is None:
        pytest.fail("chromium is not installed: the set-up command installs it (scripts/setup.sh)")
    from playwright.sync_api import sync_playwright

    viewer, stop = humanoids_in_thread(2)
    try:
        with sync_playwright() as pw:
            b = pw.chromium.launch(
                executable_path=CHROMIUM,
                timeout=START_S * 1000,
                args=["--no-sandbox", "--disable-gpu", "--disable-3d-apis"],
            )
            page = new_page(b)
            page.goto(viewer.url)
            page.wait_for_function("document.getElementById('frame').naturalWidth > 0")
            assert page.locator("#mode").input_value() == "rendered"
            assert page.locator("#view3d").is_hidden() and page.locator("#frame").is_visible()
            b.close()
    finally:
        stop()


def test_three_js_is_served_by_the_viewer_itself_behind_its_checks(browser):
    """three.js is vendored: the page's import map names the viewer's own copies, served as
    JavaScript (gzip-compressed when asked) behind the same Host and Origin checks as every
    other file, and the 3D page fetches nothing from anywhere else."""
    viewer, stop = humanoids_in_thread(1)
    url = viewer.url
    try:
        with urllib.request.urlopen(url, timeout=WAIT_S) as r:
            html = r.read().decode()
        found = re.search(r'<script type="importmap">(.*?)</script>', html, re.S)
        imports = json.loads(found.group(1))["imports"]
        assert imports["three"] == "/vendor/three/three.module.min.js", imports
        for path in (
            "/vendor/three/three.module.min.js",
            "/vendor/three/addons/controls/OrbitControls.js",
            "/vendor/three/addons/utils/BufferGeometryUtils.js",
            "/app.js",
            "/scene3d.js",
        ):
            with urllib.request.urlopen(url + path.lstrip("/"), timeout=WAIT_S) as r:
                assert r.headers["Content-Type"] == "text/javascript; charset=utf-8", path
                assert r.headers["X-Content-Type-Options"] == "nosniff", path
        asked = urllib.request.Request(
            url + "vendor/three/three.module.min.js", headers={"Accept-Encoding": "gzip"}
        )
        with urllib.request.urlopen(asked, timeout=WAIT_S) as r:
            assert r.headers["Content-Encoding"] == "gzip"
            assert b"Three.js Authors" in gzip.decompress(r.read())[:300]
        port = url.rsplit(":", 1)[1].strip("/")
        three = "/vendor/three/three.module.min.js"
        assert request(url, "GET", three, headers={"Host": f"evil.example:{port}"})[0] == 403
        assert request(url, "GET", three, headers={"Origin": "http://evil.example"})[0] == 403
        for path in ("/vendor/three/LICENSE", "/vendor/three/README.md", "/vendor/../web.py"):
            assert request(url, "GET", path)[0] == 404, path
        # the page in 3D mode: every request it makes goes to the viewer
        page = new_page(browser)
        fetched: list[str] = []
        page.on("request", lambda r: fetched.append(r.url))
        page.goto(url + "?mode=3d")
        page.wait_for_function("window.robolearn3d && robolearn3d.stats.newFrames > 2")
        assert any(u.endswith(three) for u in fetched), fetched
        assert all(u.startswith(url) for u in fetched), fetched
    finally:
        stop()
