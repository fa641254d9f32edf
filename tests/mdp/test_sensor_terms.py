"""Terms over the scene's sensors in a running env: the ray-cast height scan against the
height-field one on a generated terrain, a box that only the rays see, contact-sensor
rewards, the sensors' debug drawings, and a step that never waits for the device."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from robolearn import mdp
from robolearn.env import ManagerBasedRLEnv
from robolearn.errors import RobolearnError
from robolearn.managers import ObservationTermCfg, RewardTermCfg
from robolearn.registry import get_task
from robolearn.render.markers import collect_markers
from robolearn.scene import (
    BodyContactSensorCfg,
    CameraCfg,
    EntityCfg,
    GridPattern,
    RayCasterCfg,
)
from robolearn.sim.host_sync import forbid_host_syncs
from robolearn.terrain import SubTerrainCfg, TerrainCfg

TYPES = ("flat", "random_rough", "pyramid_slope", "pyramid_stairs")


def rough_env(
    engine: str = "cpu",
    box: bool = False,
    types: tuple[str, ...] = TYPES,
    rewards: bool = False,
    sensors: dict | None = None,
    **terms,
) -> ManagerBasedRLEnv:
    """quadruped_walk_rough on a small terrain, with a ray-cast scan beside the height
    field's, a contact sensor on the feet and the thighs, and ``terms`` in the policy."""
    cfg = get_task("quadruped_walk_rough").play_env_cfg()
    cfg.scene.num_envs = 4
    cfg.scene.terrain = TerrainCfg(
        num_rows=2, num_cols=4, tile_size=(4.0, 4.0), border_width=2.0, level=1,
        sub_terrains={t: SubTerrainCfg(t) for t in types},
    )  # fmt: skip
    cfg.scene.sensors = {
        "scan": RayCasterCfg(pattern=GridPattern((1.6, 1.0), 0.1), debug_vis=True),
        "touch": BodyContactSensorCfg(bodies=(".*_foot", ".*_thigh"), debug_vis=True),
        **(sensors or {}),
    }
    if box:  # a heavy 10 cm box ahead of every robot (a free body: placed at each env's origin)
        cfg.scene.entities["box"] = EntityCfg(
            box=(0.22, 0.17, 0.05), mass=50.0, pos=(0.57, 0, 0.05)
        )
    # the play config's policy group has no noise: the scan over the rays, with the task's
    # own scan's offset, clip and scale
    policy = cfg.observations["policy"]
    field = policy.terms["height_scan"]
    policy.terms["ray_scan"] = dataclasses.replace(field, params={**field.params, "sensor": "scan"})
    policy.terms.update(terms)
    if rewards:  # Isaac Lab's air time and undesired contacts, over the contact sensor
        cfg.rewards["air_time"] = RewardTermCfg(
            mdp.contact_air_time,
            weight=1.0,
            params={"sensor": "touch", "command_name": "base_velocity", "threshold": 0.3},
        )
        cfg.rewards["contacts"] = RewardTermCfg(
            mdp.contact_count, weight=-1.0, params={"sensor": "touch"}
        )
    cfg.sim.engine = engine
    cfg.events = {k: v for k, v in cfg.events.items() if v.mode == "startup"}
    return ManagerBasedRLEnv(cfg)


def policy_terms(env: ManagerBasedRLEnv, *names: str) -> list[torch.Tensor]:
    obs = env.observation_manager.compute(update_history=False)["policy"]
    slices = env.observation_manager.term_slices("policy")
    return [obs[:, slices[name]] for name in names]


def test_the_ray_cast_scan_reads_the_terrain_as_the_height_field_scan_does():
    env = rough_env()
    for _ in range(5):
        env.step(torch.zeros(env.num_envs, env.num_actions))
    field, rays = policy_terms(env, "height_scan", "ray_scan")  # scaled by 5
    assert float(field.abs().max()) > 0.1  # the terrain's relief is in the scans
    # the same points (the base's yaw frame), the same ground: MuJoCo's height-field
    # triangles under the rays, the height map's interpolation under the field scan
    assert torch.allclose(field, rays, atol=5 * 4e-3)
    assert float((field - rays).abs().mean()) < 5 * 1e-3


def test_a_box_on_the_ground_is_seen_by_the_rays_alone():
    env = rough_env(box=True, types=("flat",))
    env.step(torch.zeros(env.num_envs, env.num_actions))
    field, rays = policy_terms(env, "height_scan", "ray_scan")
    scan = env.scene.sensors["scan"]
    on_box = scan.geom == env.scene.model.geom("box/box").id
    assert int(on_box.sum()) >= 4 * 6  # a 44 x 34 cm top under 0.1 m spacing, in each env
    # over the box the rays read 10 cm less clearance than the height field does (x 5)
    assert torch.allclose((field - rays)[on_box], torch.tensor(0.5), atol=5 * 4e-3)
    assert torch.allclose(field[~on_box], rays[~on_box], atol=5 * 4e-3)


def test_contact_terms_count_thighs_on_the_ground_and_reward_flights():
    env = rough_env(
        touching=ObservationTermCfg(mdp.contact_states, params={"sensor": "touch"}),
        ranges=ObservationTermCfg(mdp.ray_distances, params={"sensor": "scan"}),
    )
    touch = env.scene.sensors["touch"]
    names = [n.split("/")[-1] for n in touch.body_names]
    assert names == ["FL_thigh", "FL_foot", "FR_thigh", "FR_foot", "RL_thigh", "RL_foot",
                     "RR_thigh", "RR_foot"]  # fmt: skip
    for _ in range(5):
        env.step(torch.zeros(env.num_envs, env.num_actions))
    touching, ranges = policy_terms(env, "touching", "ranges")
    feet = torch.tensor(["foot" in n for n in names])
    assert torch.equal(touching, touch.in_contact.float())
    assert bool(touching[:, feet].all()) and not bool(touching[:, ~feet].any())
    assert ranges.shape == (4, 187) and torch.equal(ranges, env.scene.sensors["scan"].distances)
    assert torch.equal(mdp.contact_count(env, "touch"), torch.full((4,), 4.0))
    # a flight of every foot that lands now: the air-time reward is the flights' excess
    touch.first_contact[:] = feet
    touch.last_air_time[:] = 0.7
    command = env.command_manager.get_command("base_velocity")
    command[:, 0] = 1.0
    assert torch.allclose(
        mdp.contact_air_time(env, "touch", "base_velocity", threshold=0.5), torch.full((4,), 0.8)
    )
    command[:, :2] = 0.0  # standing still: no reward for steps
    assert float(mdp.contact_air_time(env, "touch", "base_velocity", 0.5).abs().sum()) == 0.0


def test_camera_images_are_observations():
    env = rough_env(
        sensors={"cam": CameraCfg(width=8, height=6, data_types=("rgb", "depth"), body="trunk")},
        depth=ObservationTermCfg(mdp.camera_image, params={"sensor": "cam"}),
        colour=ObservationTermCfg(mdp.camera_image, params={"sensor": "cam", "data_type": "rgb"}),
        near=ObservationTermCfg(mdp.camera_nearness, params={"sensor": "cam"}),
    )
    env.step(torch.zeros(env.num_envs, env.num_actions))
    depth, colour, near = policy_terms(env, "depth", "colour", "near")
    cam = env.scene.sensors["cam"]
    assert depth.shape == (4, 48) and colour.shape == (4, 144)
    assert torch.equal(depth, cam.depth.reshape(4, -1))
    assert torch.allclose(near, 1 - depth / cam.cfg.max_distance)
    assert float(near.min()) >= 0 and float(near.max()) < 1  # the ground, in range
    assert torch.equal(colour, cam.rgb.permute(0, 3, 1, 2).reshape(4, -1).float() / 255)
    assert float(depth.min()) > 0 and float(colour.max()) > 0.1  # it sees the ground, lit


def test_camera_randomization_draws_each_env_s_view_at_reset():
    cam_cfg = CameraCfg(width=8, height=6, data_types=("depth",), body="trunk", fov_y=50.0)
    env = rough_env(sensors={"cam": cam_cfg})
    params = {
        "sensor": "cam", "pos_jitter": (0.02, 0.0, 0.01), "rot_jitter": (0.0, 5.0, 0.0),
        "fov_y_range": (40.0, 60.0), "light_scale_range": (0.5, 1.5),
    }  # fmt: skip
    every = torch.ones(env.num_envs, dtype=torch.bool)
    mdp.randomize_camera(env, every, **params)
    cam = env.scene.sensors["cam"]
    assert (
        float((cam.offset[:, 0].abs()).amax()) <= 0.02 and len(set(cam.offset[:, 0].tolist())) == 4
    )
    assert bool((cam.offset[:, 1] == 0).all()) and float(cam.offset[:, 2].abs().amax()) <= 0.01
    assert bool(((cam.fov_y >= 40) & (cam.fov_y <= 60)).all())
    assert bool(((cam.light_scale >= 0.5) & (cam.light_scale <= 1.5)).all())
    pitch = 2 * torch.asin(cam.rot[:, 2].abs())  # turned about y alone
    assert float(pitch.amax()) <= torch.deg2rad(torch.tensor(5.0)) + 1e-6
    assert torch.allclose(cam.rot[:, [1, 3]], torch.zeros(4, 2), atol=1e-6)
    before = cam.offset.clone()
    mdp.randomize_camera(env, torch.tensor([True, False, False, False]), **params)
    assert torch.equal(cam.offset[1:], before[1:]) and not torch.equal(cam.offset[0], before[0])
    with pytest.raises(RobolearnError, match="pos_jitter must be 3 numbers >= 0"):
        mdp.randomize_camera(env, every, "cam", pos_jitter=(-0.1, 0, 0))
    with pytest.raises(RobolearnError, match=r"fov_y_range lies in \(0, 180\)"):
        mdp.randomize_camera(env, every, "cam", fov_y_range=(40.0, 200.0))


def test_sensors_draw_their_readings_when_asked():
    env = rough_env()
    env.step(torch.zeros(env.num_envs, env.num_actions))
    spheres = [m for m in collect_markers(env, 0) if m.kind == "sphere"]
    scan, touch = env.scene.sensors["scan"], env.scene.sensors["touch"]
    hits = [m for m in spheres if m.size == 0.012]
    assert len(hits) == int(scan.hit[0].sum()) == 187
    assert sorted(m.start[2] for m in hits)[0] == pytest.approx(float(scan.hits_w[0, :, 2].min()))
    feet = [m for m in spheres if m.size == 0.04]
    assert len(feet) == int(touch.in_contact[0].sum()) == 4


@pytest.mark.parametrize("engine", ["cpu", pytest.param("warp-cpu", marks=pytest.mark.warp)])
def test_a_step_with_sensors_never_waits_for_the_device(engine):
    env = rough_env(
        engine,
        rewards=True,
        sensors={"cam": CameraCfg(width=8, height=6, data_types=("depth",), body="trunk")},
        touching=ObservationTermCfg(mdp.contact_states, params={"sensor": "touch"}),
        near=ObservationTermCfg(mdp.camera_nearness, params={"sensor": "cam"}),
    )
    assert {"air_time", "contacts"} <= set(env.reward_manager.term_names)
    actions = torch.zeros(env.num_envs, env.num_actions)
    env.step(actions)
    with forbid_host_syncs():
        for _ in range(3):
            env.step(actions)


def test_a_term_naming_a_missing_sensor_is_one_line():
    with pytest.raises(RobolearnError, match=r"no RayCaster named 'lidar' in scene\.sensors"):
        rough_env(bad=ObservationTermCfg(mdp.ray_distances, params={"sensor": "lidar"}))
    with pytest.raises(RobolearnError, match="no BodyContactSensor named 'scan'"):
        rough_env(bad=ObservationTermCfg(mdp.contact_states, params={"sensor": "scan"}))
