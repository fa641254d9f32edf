"""Shared fixtures: real models from robolearn's assets, real engines."""

from __future__ import annotations

import os

import pytest
import torch

os.environ.setdefault("MUJOCO_GL", "egl")

from robolearn.assets import asset_path

HUMANOID_SCENE = asset_path("humanoid/scene.xml")

# A box that slides on a plane: friction and mass changes show up in how far it goes.
SLIDER_XML = """
<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" friction="1 0.005 0.0001"/>
    <body name="box" pos="0 0 0.05">
      <freejoint/>
      <geom name="box" type="box" size="0.05 0.05 0.05" mass="1" friction="1 0.005 0.0001"/>
    </body>
  </worldbody>
</mujoco>
"""


@pytest.fixture(scope="session")
def humanoid_scene() -> str:
    return str(HUMANOID_SCENE)


def stand_state(engine) -> tuple[torch.Tensor, torch.Tensor]:
    """The humanoid's standing keyframe as (qpos, ctrl) rows in the engine's dtype."""
    key = engine.model.key("stand")
    return (
        torch.as_tensor(key.qpos, dtype=engine.dtype, device=engine.device),
        torch.as_tensor(key.ctrl, dtype=engine.dtype, device=engine.device),
    )
