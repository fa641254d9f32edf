"""The web viewer's page in a real headless Chromium, rendered mode: the robot, pause and
step, the last reset, the plots and the speed reached, controls that stay set."""

from __future__ import annotations

import re
import time

import numpy as np

from .helpers import (
    WAIT_S,
    colour_pixels,
    green_pixels,
    humanoids_in_thread,
    image,
    new_page,
    request,
    robot_pixels,
    start_web_viewer,
    state,
    strict_json,
    wait_for_state,
    web_viewer_in_thread,
)


def test_web_viewer_in_chromium_shows_the_robot_and_obeys_pause_and_step(browser, tmp_path):
    viewer = start_web_viewer(
        tmp_path, "--task", "humanoid_walk", "--num_envs", "4", "--max_seconds", "900"
    )
    url = viewer.url
    try:
        page = new_page(browser, viewport={"width": 1300, "height": 800})
        page.goto(url + "?mode=rendered")  # MuJoCo's frames (the 3D mode is the default)
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


def test_web_viewer_plots_the_watched_env_and_says_the_speed_reached(browser, monkeypatch):
    from robolearn.app.configs import build_setup
    from robolearn.env import ManagerBasedRLEnv
    from robolearn.viewer.live_state import RandomActions, ViewerSession

    setup = build_setup("humanoid_walk", [], play=True, num_envs=2, engine="cpu")
    env = ManagerBasedRLEnv(setup.env_cfg)
    step = env.step

    def slow_step(actions):  # at most 20 steps a second: 0.4x real time with 0.02 s steps
        time.sleep(0.05)
        return step(actions)

    monkeypatch.setattr(env, "step", slow_step)
    # random actions: the humanoid falls, so episodes end and the plots move
    session = ViewerSession(env, RandomActions(scale=1.0))
    viewer, stop = web_viewer_in_thread(session)
    url = viewer.url
    try:
        page = new_page(browser, viewport={"width": 1300, "height": 1600})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(url)
        # the speed: x4 asked, 0.4x at most reached, and the header says both
        page.select_option("#speed", "4")
        page.wait_for_function(
            "/^x4 requested, x[0-9.]+ reached$/.test(document.getElementById('status').textContent)"
        )
        status = page.locator("#status").inner_text()
        assert 0 < float(re.search(r"x([0-9.]+) reached", status).group(1)) <= 0.42, status
        seen = wait_for_state(
            url,
            lambda s: s["speed"] == 4.0 and s["realtime_factor"] and s["frames_per_s"] > 0,
            "the speed reached and the frames served",
        )
        assert seen["realtime_factor"] <= 0.42 and seen["steps_per_s"] <= 21, seen
        page.wait_for_function(
            "/steps\\/s .* frames\\/s/.test(document.getElementById('rates').textContent)"
        )
        # the plots: drawn, and moving as the env steps
        rewards = page.locator('#plots [data-chart="rewards"] canvas')
        rewards.wait_for()
        deadline = time.time() + WAIT_S
        while colour_pixels(first := image(rewards.screenshot())) < 200:
            assert time.time() < deadline, "the rewards chart draws no lines"
            time.sleep(0.5)
        steps = state(url)["steps"]
        wait_for_state(url, lambda s: s["steps"] > steps + 10, "steps")
        deadline = time.time() + WAIT_S
        while np.array_equal(image(rewards.screenshot()), first):
            assert time.time() < deadline, "the rewards chart does not move"
            time.sleep(0.5)
        for chart in ("command:base_velocity", "command:gait", "actions"):
            assert page.locator(f'#plots [data-chart="{chart}"] canvas').count() == 1, chart
        legend = page.locator('#plots [data-chart="rewards"] .plot-legend').inner_text()
        assert all(name in legend for name in env.reward_manager.term_names), legend
        # an observation term, ticked in the chooser, gets its chart
        page.check('#plot-terms input[value="joint_pos"]')
        joint_pos = page.locator('#plots [data-chart="obs:joint_pos"] canvas')
        joint_pos.wait_for()
        page.wait_for_function(
            "document.querySelectorAll('#plots [data-chart=\"obs:joint_pos\"] .plot-key')"
            ".length === 21"
        )
        # what ended the episodes, as text
        page.wait_for_function(
            "/base_too_low|base_contact|time_out/"
            ".test(document.getElementById('plot-terminations').textContent)"
        )
        # another env watched: its own history
        page.select_option("#env", "1")
        page.wait_for_function("/^env 1,/.test(document.getElementById('plot-env').textContent)")
        # GET /telemetry.json as a script reads it, with the checks every GET has
        status_code, body = request(url, "GET", "/telemetry.json?since=-1&obs=base_lin_vel")
        answer = strict_json(body)
        assert status_code == 200 and answer["env"] == 1, answer
        assert [c["id"] for c in answer["charts"]][-1] == "obs:base_lin_vel"
        status_code, body = request(url, "GET", f"/telemetry.json?since={answer['last']}")
        assert status_code == 200 and strict_json(body)["from"] == answer["last"] + 1
        for query, fragment in (
            ("since=abc", "since"),
            ("since=-5", "since"),
            ("obs=joint_poss", "did you mean"),
            ("every=1", "unknown parameter"),
        ):
            status_code, body = request(url, "GET", f"/telemetry.json?{query}")
            assert status_code == 400 and fragment in strict_json(body)["error"], (query, body)
        port = url.rsplit(":", 1)[1].strip("/")
        for path in ("/telemetry.json", "/plots.js"):
            assert request(url, "GET", path, headers={"Host": f"evil.example:{port}"})[0] == 403
        status_code, body = request(url, "GET", "/plots.js")
        assert status_code == 200 and b"RobolearnPlots" in body
        assert request(url, "GET", "/index.js")[0] == 404
        assert errors == [], errors
    finally:
        stop()


def test_a_control_the_user_sets_stays_set_while_older_state_is_in_flight(browser):
    """The page polls /state.json and shows its values in the controls. An answer asked for
    before a click (here every answer is held back 400 ms, a slow network) must not put
    the old value back: the checkbox once clicked never flicks back to checked."""
    viewer, stop = humanoids_in_thread(1)
    url = viewer.url
    try:
        page = new_page(browser)
        page.add_init_script(
            "const plainFetch = window.fetch; window.stateAnswers = 0;"
            "window.fetch = async (what, opts) => {"
            "  const answer = await plainFetch(what, opts);"
            "  if (!String(what).includes('state.json')) return answer;"
            "  await new Promise((r) => setTimeout(r, 400));"
            "  window.stateAnswers++;"
            "  return answer; };"
        )
        page.goto(url + "?mode=rendered")
        page.wait_for_function("document.getElementById('steps').textContent !== '0'")
        assert page.is_checked("#follow")
        page.uncheck("#follow")
        page.evaluate(
            "window.flicks = 0;"
            "setInterval(() => { if (document.getElementById('follow').checked) flicks++; }, 5)"
        )
        wait_for_state(url, lambda s: not s["follow_camera"], "follow camera off")
        # answers to polls asked for after the viewer took the click (each is 400 ms late)
        taken = page.evaluate("stateAnswers")
        page.wait_for_function(f"stateAnswers >= {taken + 4}")
        assert page.evaluate("flicks") == 0
        assert not page.is_checked("#follow")
    finally:
        stop()
