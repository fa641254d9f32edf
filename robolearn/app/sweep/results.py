"""A sweep's results: the table (``results.csv``, ``results.json``), the trials' curves
(``curves.png``) and what ``robolearn sweep show`` prints, read back from the trials'
records and Tune's per-trial results, so that they hold for an interrupted sweep too."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any

from robolearn.app.sweep.spec import SweepSpec, as_arguments, describe
from robolearn.app.sweep.trial import read_record
from robolearn.errors import RobolearnError
from robolearn.files import write_atomic

FINAL = ("done", "stopped", "failed")
"""A trial's statuses after which it does not run again: its budget done, stopped early by
the scheduler, failed (a robolearn error, or its restarts used up)."""


def _curve(out: Path, name: str, metric: str) -> list[tuple[int, float]]:
    """(iteration, metric) of each of the trial's reports, from Tune's result.json."""
    points: list[tuple[int, float]] = []
    path = out / "tune" / name / "result.json"
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return points
    for line in lines:
        try:
            result = json.loads(line)
        except ValueError:
            continue  # a line cut short by a kill
        value = result.get(metric)
        if isinstance(value, int | float) and "iteration" in result:
            points.append((int(result["iteration"]), float(value)))
    return points


def collect(out: Path, metric: str | None = None) -> list[dict[str, Any]]:
    """A row per trial: configuration, seed, status, the metric's last value, time, the run
    folders and the lineage."""
    rows = []
    for folder in sorted((out / "trials").glob("t*")):
        record = read_record(folder)
        if record is None:
            continue
        result = record.get("result") or {}
        value = result.get(metric) if metric else None
        segments = record.get("segments", [])
        rows.append(
            {
                "trial": record["name"],
                "values": record.get("values", {}),
                "seed": record.get("seed"),
                "status": record.get("status"),
                "metric": value if isinstance(value, int | float) else None,
                "iterations": record.get("iterations", 0),
                "time_s": result.get("wall_time"),
                "restarts": record.get("restarts", 0),
                "reason": record.get("reason"),
                "run_dirs": [s["run_dir"] for s in segments if s.get("run_dir")],
                "lineage": [
                    {
                        "at_iteration": s["at_iteration"],
                        "from_trial": s["from_trial"],
                        "from_checkpoint": s["from_checkpoint"],
                        "values": s.get("values", {}),
                    }
                    for s in segments
                    if s.get("from_trial")
                ],
                "curve": _curve(out, record["name"], metric) if metric else [],
            }
        )
    return rows


def ranked(rows: list[dict[str, Any]], mode: str) -> list[dict[str, Any]]:
    """Rows with a metric best first, then the rest in trial order."""
    measured = [r for r in rows if r["metric"] is not None and math.isfinite(r["metric"])]
    measured.sort(key=lambda r: r["metric"], reverse=mode == "max")
    return measured + [r for r in rows if r not in measured]


def best_configuration(rows: list[dict[str, Any]], mode: str) -> tuple[dict, float, int] | None:
    """(the configuration with the best mean over its seeds, that mean, how many seeds)."""
    groups: dict[str, list[float]] = {}
    # a trial stopped early measured less training: configurations compare by their
    # trials that ran the whole budget, where any did
    finished = [r for r in rows if r["status"] == "done"]
    for row in finished or rows:
        if row["metric"] is not None and math.isfinite(row["metric"]):
            key = json.dumps(row["values"], sort_keys=True)
            groups.setdefault(key, []).append(row["metric"])
    if not groups:
        return None
    pick = max if mode == "max" else min
    key = pick(groups, key=lambda k: sum(groups[k]) / len(groups[k]))
    values = groups[key]
    return json.loads(key), sum(values) / len(values), len(values)


def write_results(out: Path, spec: SweepSpec) -> list[dict[str, Any]]:
    """results.json, results.csv and curves.png from the trials as they stand; the rows."""
    rows = ranked(collect(out, spec.metric), spec.mode)
    data = {"task": spec.task, "metric": spec.metric, "mode": spec.mode, "trials": rows}
    write_atomic(out / "results.json", json.dumps(data, indent=1).encode())
    text = io.StringIO()
    paths = sorted({p for r in rows for p in r["values"]})
    writer = csv.writer(text)
    writer.writerow(["trial", *paths, "seed", spec.metric, "status", "iterations", "time_s"])
    for r in rows:
        values = [r["values"].get(p, "") for p in paths]
        writer.writerow(
            [r["trial"], *values, r["seed"], r["metric"], r["status"], r["iterations"], r["time_s"]]
        )
    write_atomic(out / "results.csv", text.getvalue().encode())
    _plot(out / "curves.png", rows, spec)
    return rows


def _plot(path: Path, rows: list[dict[str, Any]], spec: SweepSpec) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # the table still stands; the plot needs robolearn[sweep]
        return
    fig, ax = plt.subplots(figsize=(8, 5))
    for r in rows:
        if r["curve"]:
            x, y = zip(*r["curve"], strict=True)
            label = f"{r['trial']} {describe(r['values'])} s{r['seed']}"
            ax.plot(x, y, marker="." if len(x) < 30 else None, label=label[:60])
    ax.set_xlabel("iteration")
    ax.set_ylabel(spec.metric)
    ax.set_title(f"{spec.task}: {len(rows)} trials")
    if len(rows) <= 16:
        ax.legend(fontsize=7)
    fig.tight_layout()
    with io.BytesIO() as buffer:
        fig.savefig(buffer, format="png", dpi=100)
        write_atomic(path, buffer.getvalue())
    plt.close(fig)


def trial_line(record: dict[str, Any] | None, result: dict[str, Any] | None, metric: str) -> str:
    """One line for a trial that ended."""
    if record is None:
        return "trial ended before it wrote its record"
    values = record.get("values", {})
    head = f"{record['name']} {record.get('status', '?')}: "
    head += (
        f"{describe(values)}, seed {record.get('seed')}" if values else f"seed {record.get('seed')}"
    )
    if record.get("status") == "failed":
        return f"{head}: {record.get('reason') or 'failed'}"
    result = result or record.get("result") or {}
    value = result.get(metric)
    shown = f"{value:.4g}" if isinstance(value, int | float) else "not measured"
    wall = result.get("wall_time")
    took = f", {wall:.0f} s" if isinstance(wall, int | float) else ""
    return f"{head}: {metric} {shown} at iteration {result.get('iteration', '?')}{took}"


def table_lines(rows: list[dict[str, Any]], spec: SweepSpec) -> list[str]:
    """The ranked table and the best configuration as the command that reproduces it."""
    width = max(11, len(spec.metric))
    lines = [f"{'trial':6} {spec.metric:>{width}}  {'status':8} {'iters':>5} {'time':>6}  config"]
    for r in rows:
        value = f"{r['metric']:.4g}" if r["metric"] is not None else "-"
        took = f"{r['time_s']:.0f}s" if isinstance(r["time_s"], int | float) else "-"
        exploits = [f"{e['from_trial']}@{e['at_iteration']}" for e in r["lineage"]]
        lineage = f" (from {', '.join(exploits)})" if exploits else ""
        lines.append(
            f"{r['trial']:6} {value:>{width}}  {r['status']:8} {r['iterations']:>5} {took:>6}  "
            f"{describe(r['values'])} seed {r['seed']}{lineage}"
        )
    best = best_configuration(rows, spec.mode)
    if best is None:
        lines.append("no trial measured " + spec.metric)
        return lines
    values, mean, count = best
    flags, overrides = as_arguments({k: str(v) for k, v in values.items()})
    command = ["robolearn", "train", "--task", spec.task]
    if spec.algo:
        command += ["--algo", spec.algo]
    if spec.num_envs and "num_envs" not in values:
        command += ["--num_envs", str(spec.num_envs)]
    command += ["--max_iterations", str(spec.max_iterations), *flags, *spec.overrides, *overrides]
    lines.append(
        f"best: {describe(values)} ({spec.metric} {mean:.4g}, mean of {count} trial(s)); "
        "to reproduce it:"
    )
    lines.append("  " + " ".join(command))
    return lines


def show(folder: str) -> list[str]:
    """``robolearn sweep show DIR``: the table ranked and the best configuration."""
    from robolearn.app.sweep.spec import SPEC_FILE, make_spec
    from robolearn.config import load_yaml

    out = Path(folder)
    if not (out / SPEC_FILE).is_file():
        raise RobolearnError(f"{out} is not a sweep's folder (no {SPEC_FILE})")
    spec = make_spec(load_yaml(out / SPEC_FILE), {})
    rows = ranked(collect(out, spec.metric), spec.mode)
    unfinished = [r["trial"] for r in rows if r["status"] not in FINAL]
    lines = table_lines(rows, spec)
    if unfinished:
        lines.append(
            f"unfinished: {', '.join(unfinished)}; robolearn sweep --resume {out} continues them"
        )
    return lines
