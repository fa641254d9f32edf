"""Write robolearn's own motion clips into assets/motions (see robolearn.tasks.tracking.motions).

    python scripts/make_motions.py            # all four
    python scripts/make_motions.py g1_squat   # one

The squats are authored from keyframes on each robot's model; the walks are recorded from
the shipped walking policies (``robolearn motion record``). Needs the G1's model (Menagerie,
through MENAGERIE_ROOT or the mujoco-menagerie package).
"""

from __future__ import annotations

import sys
from pathlib import Path

from robolearn.tasks.tracking.motions import SQUATS, WALK_COMMAND, WALKS, squat_keyframes

from robolearn.app.motion import RecordOptions, record, robot_scene
from robolearn.motion import clip_from_keyframes, plausibility_problems, save_clip
from robolearn.registry import load_tasks

OUT = Path(__file__).resolve().parent.parent / "assets" / "motions"


def make_squat(name: str) -> None:
    task, joints, planted, elbow = SQUATS[name]
    scene, robot = robot_scene(task, [])
    default = dict(zip(scene.joint_names, scene.default_joint_pos[0].tolist(), strict=True))
    clip = clip_from_keyframes(robot, squat_keyframes(joints, elbow), default, planted, 50.0, name)
    problems = plausibility_problems(robot, clip)
    if problems:
        raise SystemExit(f"{name}: {'; '.join(problems)}")
    save_clip(clip, OUT / f"{name}.npz")
    print(f"wrote {OUT / name}.npz: {clip.num_frames} frames")


def make_walk(name: str) -> None:
    record(
        RecordOptions(
            task=WALKS[name],
            out=str(OUT / f"{name}.npz"),
            checkpoint="pretrained",
            seconds=10.0,
            overrides=list(WALK_COMMAND),
        )
    )


def main(names: list[str]) -> None:
    load_tasks()
    for name in names or [*SQUATS, *WALKS]:
        if name in SQUATS:
            make_squat(name)
        elif name in WALKS:
            make_walk(name)
        else:
            raise SystemExit(f"unknown clip {name!r}; clips: {', '.join([*SQUATS, *WALKS])}")


if __name__ == "__main__":
    main(sys.argv[1:])
