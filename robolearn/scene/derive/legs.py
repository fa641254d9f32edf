"""A legged robot's legs, read from its kinematic tree: the joints from the base to each
foot, and which of them a biped's posture terms name (hips, ankles, waist).

Names differ between vendors (``left_hip_yaw_joint``, ``l_hip_yaw``, ``LL_HIP_Y``); the
tree and the joints' axes do not. In the standing pose, seen from the base: a leg's first
three joints are its hip; those whose axis is not lateral (not along y: the hip's yaw and
roll, which walking should keep near their default) are the ones the hip posture term
holds; the joints after the fourth (the knee) are the ankle. The waist is the joints on the
centre line that carry jointed bodies on both sides (the arms): a biped's policy drives its
yaw joint, as humanoid_walk's does, and the rest hold the pose.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from robolearn.scene.derive.tree import chain, is_below

LATERAL = 0.7
"""|axis . y| above which a joint's axis counts as lateral (a pitch joint)."""
VERTICAL = 0.7
"""|axis . z| above which a joint's axis counts as vertical (a yaw joint)."""
CENTRE = 0.02
"""m: a joint this close to the base's x-z plane is on the centre line."""
"""m: a joint this close to the base's x-z plane is on the centre line."""
"""|axis . z| above which a joint's axis counts as vertical (a yaw joint)."""


@dataclass
class Legs:
    chains: list[list[int]]
    """Per foot, the moving joints from the base down to the foot."""
    bodies: list[list[int]]
    """Per foot, the bodies from the base's child down to the foot's body."""
    hips: list[int]
    ankles: list[int]
    waist: list[int]
    waist_yaw: list[int]
    length: float
    """The mean height of the hips' first joints above the feet, m."""
    width: float
    """The distance between the outermost feet across the base (y), m."""


def _joints_of(model: mujoco.MjModel, bodies: list[int], moving: set[int]) -> list[int]:
    return [
        j
        for b in bodies
        for j in range(int(model.body_jntadr[b]), int(model.body_jntadr[b] + model.body_jntnum[b]))
        if j in moving
    ]


def read_legs(
    model: mujoco.MjModel,
    data: mujoco.MjData,
    root: int,
    foot_bodies: list[int],
    foot_points: np.ndarray,
    moving: list[int],
) -> Legs:
    """The legs of the robot standing in ``data`` (kinematics computed)."""
    moving_set = set(moving)
    rot = data.xmat[root].reshape(3, 3)
    axes = data.xaxis @ rot  # each joint's axis in the base's frame

    def lateral(j: int) -> bool:
        return abs(axes[j, 1]) > LATERAL

    bodies = [path[path.index(root) + 1 :] for path in (chain(model, b) for b in foot_bodies)]
    chains = [_joints_of(model, path, moving_set) for path in bodies]
    # a joint on every leg's path (a waist between the base and the pelvis) is no leg's
    shared = set.intersection(*(set(c) for c in chains)) if len(chains) > 1 else set()
    chains = [[j for j in chain if j not in shared] for chain in chains]
    hips = [j for chain in chains for j in chain[:3] if not lateral(j)]
    ankles = [j for chain in chains for j in (chain[4:] if len(chain) >= 5 else chain[-1:])]
    in_legs = {j for chain in chains for j in chain}
    leg_bodies = {b for path in bodies for b in path}
    anchors = (data.xanchor - data.xpos[root]) @ rot
    carriers = []
    for j in moving:
        body = int(model.jnt_bodyid[j])
        if j in shared:
            carriers.append(j)
            continue
        if j in in_legs or body in leg_bodies or abs(anchors[j, 1]) > CENTRE:
            continue
        below = [k for k in moving if k != j and is_below(model, int(model.jnt_bodyid[k]), body)]
        sides = {float(np.sign(anchors[k, 1])) for k in below if abs(anchors[k, 1]) > CENTRE}
        if sides == {-1.0, 1.0}:
            carriers.append(j)
    yaw = [j for j in carriers if abs(axes[j, 2]) > VERTICAL][:1]
    tops = [data.xanchor[chain[0], 2] for chain in chains if chain]
    length = float(np.mean(tops) - np.mean(foot_points[:, 2])) if tops else 0.0
    local = (foot_points - data.xpos[root]) @ rot
    width = float(local[:, 1].max() - local[:, 1].min()) if len(local) else 0.0
    return Legs(chains, bodies, hips, ankles, carriers, yaw, length, width)
