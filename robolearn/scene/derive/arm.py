"""A fixed arm's parts, read from its kinematic tree: the tool its joints end at, the
joints from the base to it, and a box of goals around the tool's default position sized by
the arm's reach.

The tool is the last body of the joints' chain; where the chain branches at its end (a
hand's fingers), the body where it branches. The goals' box is centred on the tool in the
default pose, its half sizes a fifth of the reach along x and z and a quarter along y
(panda_reach's box for the Panda's 0.8 m), kept above the base.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from robolearn.errors import RobolearnError
from robolearn.scene.derive.tree import chain

REACH_SHARE = (0.2, 0.25, 0.2)
"""The goals' box's half sizes as shares of the arm's reach."""


@dataclass
class Arm:
    base: int
    """The body fixed to the world at the chain's top."""
    tool: int
    joints: list[int]
    """The moving joints from the base to the tool."""
    reach: float
    """m, from the first joint's anchor to the tool in the default pose."""
    centre: tuple[float, float, float]
    half: tuple[float, float, float]


def read_arm(model: mujoco.MjModel, data: mujoco.MjData, moving: list[int]) -> Arm:
    """The arm of ``model`` posed in ``data`` (kinematics computed)."""
    jointed = {int(model.jnt_bodyid[j]) for j in moving}
    paths = [chain(model, b) for b in jointed]
    # the last jointed bodies: none of the others hangs below them
    ends = [p[-1] for p in paths if not any(q != p and p[-1] in q for q in paths)]
    common = chain(model, ends[0])
    for end in ends[1:]:
        path = chain(model, end)
        n = 0
        while n < min(len(common), len(path)) and common[n] == path[n]:
            n += 1
        common = common[:n]
    if not common:
        roots = sorted({model.body(int(model.body_rootid[e])).name for e in ends})
        raise RobolearnError(
            f"the model holds {len(roots)} separate arms ({', '.join(roots)}); new robot "
            "writes a reach task for one arm: give a file of one"
        )
    # with one end, the tool is that body; with several (fingers), where they branch
    tool = common[-1] if len(ends) > 1 else ends[0]
    path = chain(model, tool)
    base = path[0]
    joints = [j for j in moving if int(model.jnt_bodyid[j]) in path]
    rot = data.xmat[base].reshape(3, 3)
    tool_local = (data.xpos[tool] - data.xpos[base]) @ rot
    reach = float(np.linalg.norm(data.xpos[tool] - data.xanchor[joints[0]])) if joints else 0.0
    half = tuple(round(s * reach, 3) for s in REACH_SHARE)
    centre = [round(float(c), 3) for c in tool_local]
    centre[2] = max(centre[2], half[2] + 0.05)  # the box above the base
    return Arm(base, tool, joints, reach, tuple(centre), half)
