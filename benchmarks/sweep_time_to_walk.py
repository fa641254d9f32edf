"""Each trial's time to the walking thresholds, from the evaluations a sweep made.

    python benchmarks/sweep_time_to_walk.py /tmp/qcmp_default /tmp/qcmp_found

A sweep whose metric is an evaluation key (``--metric mean_return``) evaluates each
checkpoint as ``play --eval`` does and reports every key of it to Tune, which keeps them in
``tune/<trial>/result.json``. This reads them back and prints, per trial, the first
checkpoint that meets the walking thresholds of benchmarks/learning_curve.py (under 5%
falls, 0.25 m/s linear and 0.3 rad/s yaw-rate tracking error): its iteration, env steps and
training wall time, as a markdown table, then each sweep's mean.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

THRESHOLDS = {
    "fall_rate": 0.05,
    "base_velocity/lin_vel_error": 0.25,
    "base_velocity/ang_vel_error": 0.3,
}


def walks(result: dict) -> bool:
    return all(
        isinstance(result.get(key), int | float) and result[key] < limit
        for key, limit in THRESHOLDS.items()
    )


def first_walking(trial: Path) -> dict | None:
    for line in (trial / "result.json").read_text().splitlines():
        result = json.loads(line)
        if walks(result):
            return result
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweeps", nargs="+", help="sweep folders")
    args = parser.parse_args()
    print("| sweep | trial | seed | iteration | env steps | wall clock |")
    print("|---|---|---:|---:|---:|---:|")
    means = {}
    for sweep in map(Path, args.sweeps):
        found = []
        for trial in sorted(p for p in (sweep / "tune").glob("t*") if p.is_dir()):
            record = json.loads((sweep / "trials" / trial.name / "trial.json").read_text())
            result = first_walking(trial)
            if result is None:
                last = record.get("iterations")
                print(f"| {sweep.name} | {trial.name} | {record['seed']} | not by {last} | - | - |")
                continue
            found.append(result)
            print(
                f"| {sweep.name} | {trial.name} | {record['seed']} | {result['iteration']} | "
                f"{result['env_steps']:,} | {result['wall_time'] / 60:.1f} min |"
            )
        if found:
            means[sweep.name] = (
                sum(r["env_steps"] for r in found) / len(found),
                sum(r["wall_time"] for r in found) / len(found) / 60,
                len(found),
            )
    for name, (steps, minutes, count) in means.items():
        print(f"{name}: mean of {count}: {steps:,.0f} env steps, {minutes:.1f} min")


if __name__ == "__main__":
    main()
