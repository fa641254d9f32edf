"""Fixtures of the term tests: real tasks on the cpu engine, their random events removed."""

from __future__ import annotations

import pytest
from conftest import slider_task_cfg

from robolearn.env import ManagerBasedRLEnv

from .truth import make

GEARED_SLIDER = """
<mujoco>
  <option gravity="0 0 0"/>
  <worldbody>
    <body name="box" pos="0 0 1">
      <freejoint/>
      <geom type="box" size="0.05 0.05 0.05" mass="1" contype="0" conaffinity="0"/>
    </body>
    <body name="cart">
      <joint name="slide" type="slide" axis="1 0 0"/>
      <geom type="box" size="0.1 0.1 0.1" mass="1" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
  <actuator>
    <motor name="slide" joint="slide" gear="3"/>
  </actuator>
</mujoco>
"""


@pytest.fixture(scope="module")
def humanoid_env() -> ManagerBasedRLEnv:
    return make("humanoid_walk", 3)


@pytest.fixture
def humanoid(humanoid_env) -> ManagerBasedRLEnv:
    """The module's humanoid, reset: each test starts from the standing keyframe."""
    humanoid_env.reset(seed=0)
    return humanoid_env


@pytest.fixture
def geared_slider(tmp_path) -> ManagerBasedRLEnv:
    """A free box, and a cart on a slide driven by a motor of gear 3; no gravity."""
    path = tmp_path / "geared_slider.xml"
    path.write_text(GEARED_SLIDER)
    return ManagerBasedRLEnv(slider_task_cfg(str(path), num_envs=2))


@pytest.fixture
def fresh_humanoid() -> ManagerBasedRLEnv:
    """A humanoid of its own: event tests change its model fields."""
    return make("humanoid_walk", 3)
