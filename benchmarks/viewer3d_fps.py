"""The web viewer's 3D mode in headless Chromium: frames shown per second and bytes a frame.

Starts ``robolearn view`` (a task, a policy, --num_envs envs) as a user does, opens the page
in the system Chromium (headless; WebGL2 on SwiftShader, the CPU rasterizer, when there is
no GPU), and for each count of envs shown reads the page's own counters (robolearn3d.stats)
over a window: frames drawn with new poses per second, the bytes of one /poses.bin answer
and of one /markers.json answer (markers of the watched env, the page's default), the
triangles and draw calls of a frame. Then ``draw_ceiling_per_s``: frames the renderer
draws per second when it redraws every animation frame with no new poses (the page's other
work and the simulation still running): what the browser could show if poses came faster.
For comparison, ``rendered_frames_per_s``: the "rendered" mode's JPEG frames (MuJoCo on
the server) the page shows a second. The server's steps per second come from
/state.json; ``server_poses_per_s`` is what /poses.bin delivers to a script with no
browser (the ceiling the simulation sets). Prints one JSON line.

    python benchmarks/viewer3d_fps.py [--task humanoid_walk] [--checkpoint pretrained]
        [--num_envs 64] [--shown 1,16,64] [--seconds 15]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--no-first-run",
    # No GPU here: the page composited in software, WebGL2 alone on SwiftShader (the CPU
    # rasterizer). Compositing on SwiftShader too (these two flags without --disable-gpu)
    # spends ~170 ms a frame presenting the page: 2 to 5 frames/s whatever is drawn.
    "--disable-gpu",
    "--use-angle=swiftshader",
    "--enable-unsafe-swiftshader",
]


def start_viewer(args, log: Path) -> tuple[subprocess.Popen, str]:
    cmd = [sys.executable, "-m", "robolearn", "view", "--task", args.task, "--port", "0"]
    cmd += ["--num_envs", str(args.num_envs), "--max_seconds", "3600"]
    if args.checkpoint:
        cmd += ["--checkpoint", args.checkpoint]
    out = log / "viewer.out"
    with out.open("w") as stdout, (log / "viewer.err").open("w") as stderr:
        proc = subprocess.Popen(
            cmd, stdout=stdout, stderr=stderr, env={**os.environ, "PYTHONUNBUFFERED": "1"}
        )
    deadline = time.time() + 300
    while time.time() < deadline:
        match = re.search(r"robolearn web viewer: (http://\S+)", out.read_text())
        if match:
            return proc, match.group(1)
        if proc.poll() is not None:
            raise SystemExit((log / "viewer.err").read_text()[-2000:])
        time.sleep(0.2)
    proc.kill()
    raise SystemExit("the viewer did not start in 300 s")


# redraw at every animation frame for `seconds`, no new poses: the renderer's own ceiling
CEILING = """async (seconds) => {
  const v = robolearn3d;
  v.stop();
  let n = 0;
  const t0 = performance.now();
  await new Promise((done) => {
    function frame() {
      v.draw();
      n += 1;
      if (performance.now() - t0 < 1000 * seconds) requestAnimationFrame(frame); else done();
    }
    requestAnimationFrame(frame);
  });
  const rate = n * 1000 / (performance.now() - t0);
  v.start();
  return rate;
}"""


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=60) as r:
        return r.read()


def server_poses_per_s(url: str, envs: int, seconds: float) -> float:
    """Distinct frames /poses.bin gives a script that asks for the next one as soon as it
    has one (what the simulation thread captures: at most one per env step)."""
    from robolearn.viewer.scene3d import decode_poses

    ids = ",".join(map(str, range(envs)))
    frame, count, started = None, 0, time.monotonic()
    while time.monotonic() - started < seconds:
        after = "" if frame is None else f"&after={frame}"
        got = decode_poses(get(f"{url}poses.bin?envs={ids}{after}"))["frame"]
        count += got != frame
        frame = got
    return round(count / seconds, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", default="humanoid_walk")
    parser.add_argument("--checkpoint", default="pretrained")
    parser.add_argument("--num_envs", type=int, default=64)
    parser.add_argument("--shown", default="1,16,64")
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--width", type=int, default=1300, help="browser viewport width")
    args = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("needs the system chromium (scripts/setup.sh installs it)")
    from playwright.sync_api import sync_playwright

    result: dict = {
        "task": args.task,
        "checkpoint": args.checkpoint,
        "num_envs": args.num_envs,
        "window_s": args.seconds,
        "load_before": os.getloadavg()[0],
        "cores": os.cpu_count(),
    }
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = start_viewer(args, Path(tmp))
        try:
            scene = get(url + "scene3d.json")
            result["scene_bytes"] = len(scene)
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
                page = browser.new_page(viewport={"width": args.width, "height": 800})
                page.set_default_timeout(300_000)
                result["renderer"] = page.evaluate(
                    """() => { const gl = document.createElement('canvas').getContext('webgl2');
                    const i = gl && gl.getExtension('WEBGL_debug_renderer_info');
                    return gl ? gl.getParameter(i ? i.UNMASKED_RENDERER_WEBGL : gl.RENDERER)
                              : 'none'; }"""
                )
                runs = []
                for shown in [int(n) for n in args.shown.split(",")]:
                    page.goto(f"{url}?shown={shown}")
                    page.wait_for_function(
                        "window.robolearn3d && robolearn3d.stats.newFrames > 5 && "
                        f"robolearn3d.poses.n === {min(shown, args.num_envs)}"
                    )
                    time.sleep(2)  # past the first frames (shader compilation, buffers)
                    read = "({...robolearn3d.stats, now: performance.now()})"
                    a = page.evaluate(read)
                    steps_a = json.loads(get(url + "state.json"))["steps"]
                    time.sleep(args.seconds)
                    b = page.evaluate(read)
                    steps_b = json.loads(get(url + "state.json"))["steps"]
                    dt = (b["now"] - a["now"]) / 1000
                    ceiling = page.evaluate(CEILING, 5)
                    answers = max(b["markerAnswers"] - a["markerAnswers"], 1)
                    runs.append(
                        {
                            "shown": shown,
                            "frames_per_s": round((b["newFrames"] - a["newFrames"]) / dt, 2),
                            "sim_steps_per_s": round((steps_b - steps_a) / dt, 1),
                            "pose_bytes_per_frame": b["lastPoseBytes"],
                            "marker_bytes_per_answer": round(
                                (b["markerBytes"] - a["markerBytes"]) / answers
                            ),
                            "marker_answers_per_s": round(answers / dt, 2),
                            "draw_ceiling_per_s": round(ceiling, 1),
                            "triangles": b["triangles"],
                            "draw_calls": b["drawCalls"],
                            "draw_cpu_ms": round(b["drawMs"], 2),
                            "canvas": page.evaluate(
                                "[robolearn3d.canvas.width, robolearn3d.canvas.height]"
                            ),
                        }
                    )
                page.goto(f"{url}?mode=rendered")
                page.wait_for_function("document.getElementById('frame').naturalWidth > 0")
                time.sleep(2)
                # distinct frames the server sent a second (the page fetches faster than
                # MuJoCo renders and gets the same frame again), sampled across the window
                samples, started = [], time.monotonic()
                while time.monotonic() - started < args.seconds:
                    time.sleep(1.0)
                    samples.append(json.loads(get(url + "state.json"))["frames_per_s"] or 0.0)
                result["rendered_frames_per_s"] = round(sum(samples) / len(samples), 2)
                browser.close()
            result["runs"] = runs
            result["server_poses_per_s_64_envs"] = server_poses_per_s(
                url, min(64, args.num_envs), 5.0
            )
        finally:
            proc.terminate()
            proc.wait(timeout=120)
    result["load_after"] = os.getloadavg()[0]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
