"""Training throughput with no viewer, and with a web viewer following the run.

The training loop has no viewer hooks, so with no viewer attached its throughput is what
training_throughput.py reports. This measures what attaching ``robolearn view --follow``
(its own 4 envs, the default when following, at the lowest priority, SCHED_IDLE) costs
training on this machine, side by side: alone; with the viewer and a client in the 3D mode
(what a browser on the user's own machine asks the server for: the stream of its 4 envs'
poses, every new frame, and the watched env's markers); with the viewer and a client of the
rendered mode (JPEG frames rendered by the server); alone again. The clients are Python
threads of this process: a browser would draw on another machine, so its drawing is not
the server's cost. Each viewer run also prints the real-time factor its simulation reached.

    python benchmarks/viewer_overhead.py [--task humanoid_walk] [--num_envs 1024]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from train_command import train_command


def poll(url: str, mode: str, stop: threading.Event, counts: dict) -> None:
    """What the page asks for, paced as the page paces it: in 3D one open /poses.stream
    answer of its 4 envs (the server pushes each new frame as the simulation takes it) and
    the watched env's markers at most 15 times a second; rendered, the next JPEG frame 30 ms
    after the last arrived."""
    while not stop.is_set():
        try:
            if mode == "3d":
                stream_3d(url, stop, counts)
            else:
                with urllib.request.urlopen(f"{url}frame.jpg") as r:
                    body = r.read()
                time.sleep(0.03)
                counts["frames"] += 1
                counts["bytes"] += len(body)
        except OSError:
            time.sleep(0.2)  # the viewer is still starting


def stream_3d(url: str, stop: threading.Event, counts: dict) -> None:
    markers_due = 0.0
    with urllib.request.urlopen(f"{url}poses.stream?envs=0-3") as stream:
        while not stop.is_set():
            head = stream.read(4)
            if len(head) < 4:
                return  # the viewer hung up
            body = stream.read(int.from_bytes(head, "little"))
            counts["frames"] += 1
            counts["bytes"] += len(body)
            if time.monotonic() >= markers_due:
                markers_due = time.monotonic() + 1 / 15
                with urllib.request.urlopen(f"{url}markers.json?envs=0") as r:
                    r.read()


def train(
    task: str, num_envs: int, iterations: int, root: Path, name: str, client: str | None
) -> float:
    cmd = train_command(
        task, num_envs, iterations, root, "--run_name", name, "agent.save_interval=1"
    )
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    watcher, stop, counts, thread = None, threading.Event(), {"frames": 0, "bytes": 0}, None
    if client is not None:
        while not list(root.glob(f"{task}/*_{name}/model_*.pt")):
            time.sleep(0.2)
        watcher = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "robolearn",
                "view",
                "--task",
                task,
                "--follow",
                name,
                "--log_root",
                str(root),
                "--port",
                "0",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        line = watcher.stdout.readline()
        url = line.split("viewer: ", 1)[1].split()[0]
        thread = threading.Thread(target=poll, args=(url, client, stop, counts), daemon=True)
        thread.start()
    start = time.monotonic()
    proc.wait()
    if watcher is not None:
        with urllib.request.urlopen(f"{url}state.json") as r:
            reached = json.loads(r.read()).get("realtime_factor")
        stop.set()
        thread.join(10)
        watcher.terminate()
        watcher.wait()
        seconds = time.monotonic() - start
        print(
            f"  {client} client: {counts['frames'] / seconds:.1f} frames/s, "
            f"{counts['bytes'] / max(counts['frames'], 1):,.0f} bytes per frame, "
            f"the viewer's simulation at x{reached} of real time",
            file=sys.stderr,
        )
    (progress,) = root.glob(f"{task}/*_{name}/progress.jsonl")
    rows = [json.loads(x) for x in progress.read_text().splitlines()][2:]  # skip warm-up
    return statistics.median(r["Perf/env_steps_per_s"] for r in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="humanoid_walk")
    parser.add_argument("--num_envs", type=int, default=1024)
    parser.add_argument("--iterations", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        runs = [
            ("no viewer", "a", None),
            ("web viewer following, 3D client (SCHED_IDLE)", "b", "3d"),
            ("web viewer following, rendered client (SCHED_IDLE)", "c", "rendered"),
            ("no viewer, again", "d", None),
        ]
        results = [
            (label, train(args.task, args.num_envs, args.iterations, root, name, client))
            for label, name, client in runs
        ]
    base = statistics.mean([results[0][1], results[-1][1]])
    print(f"{args.task}, {args.num_envs} envs, cpu engine, training env steps/s (median)")
    print("| training | env steps/s | vs no viewer |")
    print("|---|---:|---:|")
    for label, fps in results:
        print(f"| {label} | {fps:,.0f} | {fps / base:.2f} |")


if __name__ == "__main__":
    main()
