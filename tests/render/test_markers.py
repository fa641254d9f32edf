"""Debug drawings (robolearn.managers.markers): every kind's JSON form, terms of any manager
drawing through one collector, contact forces and the root frame as markers, and every kind
reaching the rendered frames."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import slider_task_cfg

from robolearn.env import ManagerBasedRLEnv
from robolearn.errors import RobolearnError
from robolearn.managers import ManagerTerm, Marker, RewardTermCfg
from robolearn.managers.markers import COMMAND_RGBA, KINDS
from robolearn.render.markers import collect_markers, contact_force_markers, root_frame_markers

REACH = Path(__file__).parents[2] / "examples" / "reach" / "reach.py"

# A free box with no gravity and no contacts (forces on it are only those a test applies),
# and a cart on a slide for the slider task's effort action.
FREE_BOX = """
<mujoco>
  <option gravity="0 0 0"/>
  <worldbody>
    <light pos="0 0 3"/>
    <geom type="plane" size="3 3 0.1" rgba="0.3 0.3 0.3 1"/>
    <body name="box" pos="0 0 1">
      <freejoint/>
      <geom type="box" size="0.05 0.05 0.05" mass="1" contype="0" conaffinity="0"/>
    </body>
    <body name="cart" pos="0 0 0.5">
      <joint name="slide" type="slide" axis="1 0 0"/>
      <geom type="box" size="0.05 0.05 0.05" mass="1" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
  <actuator>
    <motor name="slide" joint="slide"/>
  </actuator>
</mujoco>
"""


class Beacon(ManagerTerm):
    """A reward term that pays nothing and draws a box above each env's box."""

    def __call__(self, env: ManagerBasedRLEnv) -> torch.Tensor:
        return torch.zeros(env.num_envs, device=env.device)

    def debug_markers(self, env_id: int) -> list[Marker]:
        x, y, z = self.env.scene.root_pos_w[env_id].tolist()
        return [Marker("box", (x, y, z + 0.5), half_extents=(0.1, 0.2, 0.05), text="beacon")]


@pytest.fixture
def box_env(tmp_path) -> ManagerBasedRLEnv:
    path = tmp_path / "free_box.xml"
    path.write_text(FREE_BOX)
    cfg = slider_task_cfg(str(path), num_envs=2)
    cfg.scene.robot.root_body = "box"
    cfg.rewards["beacon"] = RewardTermCfg(func=Beacon, weight=1.0)
    return ManagerBasedRLEnv(cfg)


def strict(value) -> object:
    """Through strict JSON and back, as a browser's JSON.parse reads it."""
    return json.loads(json.dumps(value, allow_nan=False))


def test_every_kind_has_a_json_form():
    quat = (math.cos(0.3), 0.0, 0.0, math.sin(0.3))
    markers = {
        "arrow": Marker("arrow", (0, 0, 1), (1, 0, 1), (0.1, 0.8, 0.2, 0.9), size=0.02),
        "sphere": Marker("sphere", (1, 2, 3), size=0.05),
        "box": Marker("box", (0, 0, 0.5), quat=quat, half_extents=(0.1, 0.2, 0.3)),
        "frame": Marker("frame", (0, 0, 1), quat=quat, size=0.3),
        "line": Marker("line", (0, 0, 0), (0, 1, 0), size=0.01),
        "text": Marker("text", (0, 0, 2), text="flat, level 1/4"),
    }
    assert set(markers) == set(KINDS)
    keys = {"kind", "start", "end", "size", "rgba", "text", "quat", "half_extents"}
    for kind, marker in markers.items():
        form = marker.to_json()
        assert set(form) == keys and form["kind"] == kind
        assert strict(form) == form  # lists, numbers, strings and None only
        assert len(form["start"]) == 3 and len(form["rgba"]) == 4
    assert markers["arrow"].to_json()["end"] == [1.0, 0.0, 1.0]
    assert markers["arrow"].to_json()["rgba"] == [0.1, 0.8, 0.2, 0.9]
    assert markers["box"].to_json()["half_extents"] == [0.1, 0.2, 0.3]
    assert markers["box"].to_json()["quat"] == pytest.approx(list(quat), abs=1e-5)
    assert markers["frame"].to_json()["size"] == 0.3
    assert markers["text"].to_json()["text"] == "flat, level 1/4"
    assert markers["sphere"].to_json()["end"] is None
    assert markers["sphere"].to_json()["quat"] is None
    # numbers a browser cannot parse become null
    odd = Marker("line", (math.nan, 0, 0), (math.inf, 0, 0), size=-math.inf).to_json()
    assert strict(odd)["start"] == [None, 0.0, 0.0] and odd["end"][0] is None
    assert odd["size"] is None
    with pytest.raises(RobolearnError, match="cylinder"):
        Marker("cylinder", (0, 0, 0))
    with pytest.raises(RobolearnError, match="end"):
        Marker("arrow", (0, 0, 0))


def test_a_reward_term_of_a_class_draws_through_collect_markers(box_env):
    env = box_env
    for env_id in (0, 1):
        boxes = [m for m in collect_markers(env, env_id) if m.kind == "box"]
        assert len(boxes) == 1 and boxes[0].text == "beacon"
        root = env.scene.root_pos_w[env_id].tolist()
        assert boxes[0].start == pytest.approx((root[0], root[1], root[2] + 0.5))
    # the reward manager hands out its terms' markers; the function term draws nothing
    assert [m.text for m in env.reward_manager.debug_markers(0)] == ["beacon"]
    assert env.termination_manager.debug_markers(0) == []


def test_forces_on_bodies_are_arrows_along_their_line_of_action(box_env):
    env, engine = box_env, box_env.scene.engine
    box = env.scene.index("body", "box")[0]
    # a force of 20 N along +y applied at a point 0.1 m beside the box's centre of mass
    # (as a force and a torque at the centre of mass, which is what xfrc_applied is)
    force = torch.tensor([0.0, 20.0, 0.0], dtype=engine.dtype)
    com = engine.xpos[1, box].clone()  # the box's frame is at its centre of mass
    point = com + torch.tensor([0.1, 0.0, 0.0], dtype=engine.dtype)
    engine.xfrc_applied[1, box] = torch.cat((force, torch.linalg.cross(point - com, force)))
    env.scene.forward(torch.ones(env.num_envs, dtype=torch.bool))
    (arrow,) = contact_force_markers(env, 1, scale=0.01)
    assert arrow.kind == "arrow"
    # the arrow starts on the line of action, at its point nearest the body's origin
    assert arrow.start == pytest.approx(point.tolist(), abs=1e-6)
    assert np.subtract(arrow.end, arrow.start) == pytest.approx([0.0, 0.2, 0.0], abs=1e-6)
    assert contact_force_markers(env, 0) == []  # env 0: no force on any body
    # drawn only on request
    assert not any(m.kind == "arrow" for m in collect_markers(env, 1))
    assert any(m.kind == "arrow" for m in collect_markers(env, 1, contacts=True))


def test_the_root_frame_is_a_frame_marker(box_env):
    env = box_env
    (frame,) = root_frame_markers(env, 1, length=0.25)
    assert frame.kind == "frame" and frame.size == 0.25
    assert frame.start == pytest.approx(tuple(env.scene.root_pos_w[1].tolist()))
    assert frame.quat == pytest.approx(tuple(env.scene.root_quat_w[1].tolist()))
    assert [m.kind for m in collect_markers(env, 1, root_frame=True)][-1] == "frame"


def test_boxes_frames_and_lines_are_drawn_in_rendered_frames(box_env):
    from robolearn.render.video import EnvRenderer

    env = box_env
    renderer = EnvRenderer(env.scene.engine, 320, 240)
    try:
        centre = tuple(float(c) for c in env.scene.engine.model.stat.center)
        shifted = (centre[0] + 0.3, centre[1], centre[2])
        plain = renderer.frame(0)
        for marker in (
            Marker("box", centre, rgba=(0.9, 0.1, 0.9, 1.0), half_extents=(0.15, 0.1, 0.1)),
            Marker("frame", centre, quat=(0.92388, 0.0, 0.0, 0.38268), size=0.4),
            Marker("line", centre, shifted, rgba=(0.9, 0.9, 0.1, 1.0), size=0.02),
        ):
            drawn = renderer.frame(0, markers=[marker])
            changed = int((plain != drawn).any(axis=-1).sum())
            assert changed > 100, (marker.kind, changed)
        # a frame's three axes in their own colors: red, green and blue pixels
        drawn = renderer.frame(0, markers=[Marker("frame", centre, size=0.5)]).astype(int)
        r, g, b = drawn[..., 0], drawn[..., 1], drawn[..., 2]
        assert ((r > 120) & (r > g + 60) & (r > b + 60)).sum() > 20
        assert ((g > 120) & (g > r + 60) & (g > b + 60)).sum() > 20
        assert ((b > 120) & (b > r + 40) & (b > g + 40)).sum() > 20
    finally:
        renderer.close()


def test_the_reach_target_is_a_sphere_in_the_video_and_follows_debug_vis():
    from robolearn.registry import get_task, import_tasks
    from robolearn.render.video import EnvRenderer

    import_tasks([str(REACH)])
    cfg = get_task("reach_target").env_cfg()
    cfg.scene.num_envs = 2
    cfg.sim.engine = "cpu"
    env = ManagerBasedRLEnv(cfg)
    markers = collect_markers(env, 1)
    target = env.command_manager.get_command("target")[1].tolist()
    assert markers[0].kind == "sphere" and markers[0].start == pytest.approx(tuple(target))
    renderer = EnvRenderer(env.scene.engine, 320, 240)
    try:
        with_markers = renderer.frame(1, markers=markers).astype(int)
        without = renderer.frame(1).astype(int)
    finally:
        renderer.close()

    def red(img):
        r, g, b = img[..., 0], img[..., 1], img[..., 2]
        return ((r > 80) & (r > 2 * g) & (r > 2 * b)).sum()

    assert red(with_markers) > red(without) + 20, "no red target sphere in the frame"
    env.command_manager.get_term_cfg("target").debug_vis = False
    assert collect_markers(env, 1) == []


@pytest.fixture(scope="module")
def humanoid() -> ManagerBasedRLEnv:
    """humanoid_walk after 20 steps of its default pose: standing on its feet."""
    from robolearn.registry import get_task

    cfg = get_task("humanoid_walk").env_cfg()
    cfg.scene.num_envs = 3
    cfg.sim.engine = "cpu"
    env = ManagerBasedRLEnv(cfg)
    for _ in range(20):
        env.step(torch.zeros(env.num_envs, env.num_actions))
    return env


def test_velocity_arrows_of_one_env_are_read_in_one_piece(humanoid):
    env = humanoid
    term = next(iter(env.command_manager.terms.values()))
    for env_id in range(3):
        commanded, actual = term.debug_markers(env_id)
        origin, cmd, vel = (t[env_id] for t in term.debug_arrows())
        assert commanded.rgba == COMMAND_RGBA
        assert commanded.start == pytest.approx(tuple(origin.tolist()), abs=1e-5)
        assert commanded.end == pytest.approx(tuple((origin + cmd).tolist()), abs=1e-5)
        assert actual.end[2] == pytest.approx(origin[2].item() + 0.05, abs=1e-5)
        assert actual.end[:2] == pytest.approx(tuple((origin + vel)[:2].tolist()), abs=1e-5)


def test_a_standing_humanoid_s_ground_forces_rise_from_its_feet(humanoid):
    """A foot's force is taken about the whole body's centre of mass (its tree's root is
    the torso): its arrow must still start at the foot, not there."""
    env = humanoid
    feet = env.scene.feet_pos_w[0, :, :2].double()
    arrows = contact_force_markers(env, 0)
    assert 1 <= len(arrows) <= 4, arrows
    weight = 0.0
    for arrow in arrows:
        start, end = torch.tensor(arrow.start), torch.tensor(arrow.end)
        assert float((feet - start[:2]).norm(dim=-1).min()) < 0.12, (arrow, feet)
        assert 0.0 < float(start[2]) < 0.15  # at the foot's height
        assert float(end[2] - start[2]) > 0.05  # pushed up by the ground
        weight += float(end[2] - start[2])
    assert weight == pytest.approx(0.5, rel=0.3)  # the whole weight is 0.5 m long
