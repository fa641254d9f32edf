"""The browser's 3D mode, server side: the scene sent once and the poses sent per frame
(robolearn/viewer/scene3d.py), without a browser; tests/viewer/test_web_3d.py drives the page."""

from __future__ import annotations

import json
import threading
import time

import mujoco
import numpy as np
import pytest
import torch

from robolearn.viewer.scene3d import (
    POSES_HEADER,
    PoseSnapshots,
    decode_b64,
    decode_poses,
    encode_poses,
    parse_env_list,
    scene_description,
)


def make_env(task: str, num_envs: int = 2):
    from robolearn.app.configs import build_setup
    from robolearn.env import ManagerBasedRLEnv

    return ManagerBasedRLEnv(
        build_setup(task, [], play=True, num_envs=num_envs, engine="cpu").env_cfg
    )


def describe(env) -> dict:
    scene = scene_description(
        env.scene.engine.model,
        env.scene.env_origins.cpu().numpy(),
        env.scene.root_body_id,
        env.num_envs,
    )
    # what the server sends: strict JSON (no NaN), and it survives the trip
    return json.loads(json.dumps(scene, allow_nan=False))


def test_humanoid_scene_lists_every_visible_geom_as_the_model_has_it():
    env = make_env("humanoid_walk")
    m = env.scene.engine.model
    scene = describe(env)
    visible = [g for g in range(m.ngeom) if m.geom_group[g] <= 2]
    assert [g["id"] for g in scene["geoms"]] == visible
    assert scene["nbody"] == m.nbody and scene["num_envs"] == 2
    for g in scene["geoms"]:
        i = g["id"]
        assert g["type"] == mujoco.mjtGeom(m.geom_type[i]).name.removeprefix("mjGEOM_").lower()
        assert g["body"] == m.geom_bodyid[i]
        np.testing.assert_allclose(g["size"], m.geom_size[i], atol=1e-6)
        np.testing.assert_allclose(g["pos"], m.geom_pos[i], atol=1e-6)
        np.testing.assert_allclose(g["quat"], m.geom_quat[i], atol=1e-6)
        mat = m.geom_matid[i]
        np.testing.assert_allclose(g["rgba"], m.mat_rgba[mat] if mat >= 0 else m.geom_rgba[i])
        assert g["static"] == (g["body"] == 0)
    floor = next(g for g in scene["geoms"] if g["type"] == "plane")
    assert floor["static"] and floor["texture_rgb"] is not None  # the checker's mean colour
    assert max(floor["texture_rgb"]) < 0.5
    assert scene["static_bodies"] == [0] and scene["bodies"][0]["static"]
    assert scene["root_body"] == scene["anchor_body"] == env.scene.root_body_id
    assert 0.5 < scene["robot_radius"] < 1.5  # the humanoid, from its pelvis
    assert scene["spread"]["default"] is True  # a flat task: every env starts at one place
    assert scene["spread"]["spacing"] == pytest.approx(1.5 * m.stat.extent)
    assert scene["meshes"] == [] and scene["hfields"] == []


def test_rough_scene_sends_the_terrain_height_field():
    env = make_env("humanoid_walk_rough")
    m = env.scene.engine.model
    scene = describe(env)
    terrain = [g for g in scene["geoms"] if g["type"] == "hfield"]
    assert len(terrain) == 1 and terrain[0]["static"]
    (hf,) = scene["hfields"]
    assert hf["id"] == terrain[0]["hfield"]
    n = hf["nrow"] * hf["ncol"]
    assert (hf["nrow"], hf["ncol"]) == (m.hfield_nrow[0], m.hfield_ncol[0])
    data = decode_b64(hf["data"], "<f4")
    np.testing.assert_array_equal(data, m.hfield_data[:n].astype(np.float32))
    np.testing.assert_allclose(hf["size"], m.hfield_size[0], atol=1e-6)
    # envs stand on their tiles, spread by the terrain: the page does not spread them again
    assert scene["spread"]["default"] is False
    np.testing.assert_allclose(scene["env_origins"], env.scene.env_origins.numpy(), atol=1e-4)


def test_a_mesh_geom_is_sent_with_its_vertices_faces_and_normals():
    xml = """<mujoco><asset><mesh name="tet" vertex="0 0 0 1 0 0 0 1 0 0 0 1"/></asset>
      <worldbody><body name="b"><freejoint/><geom type="mesh" mesh="tet" rgba="1 0 0 1"/>
      <geom type="box" size=".1 .1 .1" group="3"/></body></worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    scene = scene_description(m, root_body=1)
    assert [g["type"] for g in scene["geoms"]] == ["mesh"]  # group 3 is not shown
    (mesh,) = scene["meshes"]
    vertices = decode_b64(mesh["vertices"], "<f4").reshape(-1, 3)
    faces = decode_b64(mesh["faces"], "<u4").reshape(-1, 3)
    np.testing.assert_allclose(vertices, m.mesh_vert, atol=1e-6)
    np.testing.assert_array_equal(faces, m.mesh_face)
    assert decode_b64(mesh["face_normals"], "<u4").size == faces.size
    assert decode_b64(mesh["normals"], "<f4").size == 3 * m.mesh_normalnum[0]


def test_poses_bin_round_trips_with_numpy():
    rng = np.random.default_rng(0)
    poses = rng.normal(size=(3, 23, 7)).astype(np.float32)
    body = encode_poses(41, 1234, 24.68, [5, 6, 9], poses)
    assert len(body) == POSES_HEADER.size + 3 * 4 + poses.nbytes
    # the layout the page reads: magic, uint32 frame, n, nbody, float64 steps and time
    assert body[:4] == b"RLP1"
    assert np.frombuffer(body, "<u4", 3, 4).tolist() == [41, 3, 23]
    assert np.frombuffer(body, "<f8", 2, 16).tolist() == [1234.0, 24.68]
    out = decode_poses(body)
    assert (out["frame"], out["steps"], out["sim_time"]) == (41, 1234, 24.68)
    assert out["env_ids"].tolist() == [5, 6, 9]
    np.testing.assert_array_equal(out["poses"], poses)
    with pytest.raises(ValueError, match="wrong length"):
        decode_poses(body[:-4])


def test_env_lists_are_parsed_strictly():
    assert parse_env_list("3,1,2", 8) == [3, 1, 2]
    assert parse_env_list("0-3,2,7", 8) == [0, 1, 2, 3, 7]
    for bad, message in (
        ("", "comma list"),
        ("a", "comma list"),
        ("1,,2", "comma list"),
        ("-1", "comma list"),
        ("8", "0 to 7"),
        ("3-1", "empty"),
        ("0-999999999", "does not exist"),
    ):
        with pytest.raises(ValueError, match=message):
            parse_env_list(bad, 8)
    with pytest.raises(ValueError, match="at most 4"):
        parse_env_list("0-4", 8, limit=4)


class FakeEngine:
    """Just the tensors PoseSnapshots reads."""

    def __init__(self, num_envs: int = 4, nbody: int = 3) -> None:
        self.xpos = torch.zeros(num_envs, nbody, 3, dtype=torch.float64)
        self.xquat = torch.zeros(num_envs, nbody, 4, dtype=torch.float64)
        self.xquat[..., 0] = 1


def test_pose_snapshots_serve_what_the_simulation_thread_captured():
    engine = FakeEngine()
    snaps = PoseSnapshots(num_envs=4, max_fps=1000)
    assert not snaps.due()  # nobody asked: nothing is read
    with pytest.raises(TimeoutError):
        snaps.request([1, 2], timeout=0.01)
    assert snaps.wanted() == [1, 2] and snaps.due()
    engine.xpos[:, :, 0] = torch.arange(4, dtype=torch.float64)[:, None]
    snaps.capture(engine, steps=10, sim_time=0.2)
    frame, body = snaps.request([2, 1])
    out = decode_poses(body)
    assert frame == out["frame"] == 1 and out["steps"] == 10
    assert out["env_ids"].tolist() == [2, 1]
    assert out["poses"][:, :, 0].tolist() == [[2, 2, 2], [1, 1, 1]]
    assert out["poses"][0, 0, 3:].tolist() == [1, 0, 0, 0]
    # nothing moved: no new frame, and a page waiting for a newer one gets the same again
    snaps.changed()
    snaps.capture(engine, steps=11, sim_time=0.22)
    started = time.monotonic()
    assert snaps.request([1, 2], after=1, timeout=0.2)[0] == 1
    assert time.monotonic() - started >= 0.15
    # a page waiting for a newer frame is woken by the capture that makes it
    answers = []
    waiting = threading.Thread(target=lambda: answers.append(snaps.request([1], after=1)))
    waiting.start()
    time.sleep(0.05)
    engine.xpos[1] += 1
    snaps.changed()
    snaps.capture(engine, steps=12, sim_time=0.24)
    waiting.join(timeout=5)
    frame, body = answers[0]
    assert frame == 2 and decode_poses(body)["poses"][0, 0, 0] == 2
    # envs asked long ago are no longer read
    assert snaps.wanted(now=time.monotonic() + 60) == []
