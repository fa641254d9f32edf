"""Scene sensors on real MuJoCo physics: ray casters (grid, pinhole, lidar) that see every
body but the robot's own, and contact sensors with air and contact time, on ``cpu`` and
on MuJoCo Warp (warp-cpu)."""

from __future__ import annotations

import math

import pytest
import torch
from robolearn.envs.quadruped import quadruped_robot

from robolearn.config import config_from_data, config_to_data
from robolearn.errors import RobolearnError
from robolearn.scene import (
    BodyContactSensorCfg,
    CameraCfg,
    EntityCfg,
    GridPattern,
    LidarPattern,
    PinholePattern,
    RayCasterCfg,
    Scene,
    SceneCfg,
    SensorCfg,
    SimCfg,
)

# a fixed box 10 cm high ahead of each robot, over x in [0.35, 0.79] and |y| < 0.17 of its
# env's origin: its edges lie between the scan's points (every 0.1 m), none on one
STEP = (0.22, 0.17, 0.05)
STEP_AT = (0.57, 0.0, 0.05)


def scene_cfg(num_envs: int = 2, **sensors) -> SceneCfg:
    cfg = SceneCfg(num_envs=num_envs, entities={"robot": quadruped_robot()})
    cfg.entities["step"] = EntityCfg(box=STEP, free=False, pos=STEP_AT)
    cfg.sensors = sensors
    return cfg


def robot_geoms(scene: Scene) -> list[int]:
    """The robot's geoms on its moving bodies (its MJCF's floor is the world's)."""
    model = scene.model
    return [
        g
        for g in scene.entity("robot").geom_ids
        if int(model.body_weldid[model.geom_bodyid[g]]) != 0
    ]


def standing(cfg: SceneCfg, engine: str = "cpu", steps: int = 20) -> Scene:
    """The scene with every robot in its default pose, settled for ``steps`` env steps."""
    scene = Scene(cfg, SimCfg(engine=engine))
    every = torch.ones(scene.num_envs, dtype=torch.bool, device=scene.device)
    scene.reset_to_default(every)
    scene.forward(every)
    scene.engine.ctrl[:] = scene.default_ctrl.to(scene.engine.dtype)
    for _ in range(steps):
        scene.step(4)
    return scene


@pytest.fixture(scope="module")
def scanned() -> Scene:
    return standing(scene_cfg(scan=RayCasterCfg(pattern=GridPattern((1.6, 1.0), 0.1))))


def test_a_grid_scan_sees_the_box_and_the_floor_but_not_the_robots_own_legs(scanned):
    scan = scanned.sensors["scan"].read()
    assert scan.shape == (17, 11) and scan.num_rays == 187
    hits = scan.hits_w  # (N, 187, 3)
    assert bool(scan.hit.all())
    box = scanned.model.geom("step/box").id
    # every ray reads the floor or the box top: the legs under the base are looked past
    on_box = scan.geom == box
    assert torch.allclose(hits[..., 2][on_box], torch.tensor(0.1), atol=1e-5)
    assert torch.allclose(hits[..., 2][~on_box], torch.tensor(0.0), atol=1e-5)
    assert not set(robot_geoms(scanned)) & set(scan.geom.flatten().tolist())
    # the scan's points over the box land on it, and only those
    rel = hits[..., :2] - scanned.env_origins[:, None, :2]
    inside = (rel[..., 0] > 0.35) & (rel[..., 0] < 0.79) & (rel[..., 1].abs() < 0.17)
    assert bool(inside.any()) and bool((on_box == inside).all())


def test_rays_that_hit_the_robot_go_on_to_the_ground_under_its_feet(scanned):
    """The feet stand on the floor under the scan's grid: a ray straight down through a foot
    reads the floor (z = 0), not the foot, though MuJoCo's own ray stops at the foot."""
    scan = scanned.sensors["scan"].read()
    engine = scanned.engine
    feet = [scanned.model.body(f"{leg}_foot").id for leg in ("FL", "FR", "RL", "RR")]
    foot_xy = engine.xpos[0, feet, :2].float()
    origins = scan.origins_w[0]
    nearest = (origins[None, :, :2] - foot_xy[:, None]).norm(dim=-1).argmin(dim=1)
    # MuJoCo's own cast from the same origins stops on the robot's legs for some of them
    _, geom = engine.cast_rays(
        origins[None, nearest],
        scan.directions_w[0, nearest][None],
        exclude_body=scan.body_id,
        env_ids=torch.tensor([0]),
    )
    assert bool(torch.isin(geom[0], torch.tensor(robot_geoms(scanned))).any())
    assert torch.allclose(scan.hits_w[0, nearest, 2], torch.zeros(4), atol=1e-5)


def test_the_warp_engine_casts_the_same_rays():
    cfg = scene_cfg(
        scan=RayCasterCfg(pattern=GridPattern((1.6, 1.0), 0.1)),
        lidar=RayCasterCfg(pattern=LidarPattern(channels=4, horizontal_resolution=15.0)),
    )
    cpu, wrp = standing(cfg, "cpu", 10), standing(cfg, "warp-cpu", 10)
    assert wrp.engine.name == "warp-cpu"
    # from the same state (the derived poses computed on each engine)
    wrp.engine.qpos[:] = cpu.engine.qpos.to(wrp.engine.dtype)
    every = torch.ones(2, dtype=torch.bool)
    for scene in (cpu, wrp):
        scene.forward(every)
    for name in ("scan", "lidar"):
        a, b = cpu.sensors[name].read(), wrp.sensors[name].read()
        assert torch.equal(a.hit, b.hit), name
        assert torch.equal(a.geom, b.geom), name
        assert torch.allclose(a.distances, b.distances, atol=1e-4), name
    assert bool((cpu.sensors["lidar"].geom == cpu.model.geom("step/box").id).any())


def test_rays_skip_the_robot_by_its_geom_group_and_the_renderer_still_draws_it(scanned):
    """The robot's moving geoms sit in a spare geom group of the simulated model that the
    scan leaves out (one cast, nothing cast again); the host model, which the renderers
    draw, keeps the groups its MJCF gave."""
    scan = scanned.sensors["scan"]
    assert scan._excluded is None  # no casting again past the legs
    spare = set(range(6)) - set(scan._groups)
    assert len(spare) == 1
    groups = scanned.engine.batch.expanded("geom_group")
    assert {int(g) for g in groups[:, robot_geoms(scanned)].flatten()} == spare
    compiled = Scene(scene_cfg(), SimCfg(engine="cpu")).model.geom_group
    assert scanned.model.geom_group.tolist() == compiled.tolist()
    assert not spare & {int(g) for g in compiled}


def test_a_sensor_that_names_its_geom_groups_casts_again_past_the_robot():
    """Naming groups keeps every geom in its own group (a move would break the names):
    the rays are then cast again past the legs, and read the same."""
    cfg = scene_cfg(scan=RayCasterCfg(pattern=GridPattern((1.6, 1.0), 0.1), geom_groups=(0, 1)))
    named = standing(cfg).sensors["scan"].read()
    assert named._excluded is not None and named._groups == (0, 1)
    default = standing(scene_cfg(scan=RayCasterCfg(pattern=GridPattern((1.6, 1.0), 0.1))))
    reading = default.sensors["scan"].read()
    assert torch.equal(named.geom, reading.geom)
    assert torch.allclose(named.distances, reading.distances, atol=1e-6)


@pytest.mark.parametrize(("engine", "crate"), [("cpu", True), ("cpu", False), ("warp-cpu", True)])
def test_a_scan_over_a_generated_terrain_reads_what_mujoco_casts(engine, crate):
    """Straight-down rays read the terrain from its height field, not from MuJoCo's cast
    (which then has the crate alone to test, or nothing: no cast at all); over stairs and
    rough ground every ray reads the distance and the geom that MuJoCo's own cast of it
    finds, wherever that is not the robot."""
    from robolearn.terrain import SubTerrainCfg, TerrainCfg

    cfg = scene_cfg(4, scan=RayCasterCfg(pattern=GridPattern((1.6, 1.0), 0.1)))
    cfg.entities = {"robot": cfg.robot}
    if crate:
        cfg.entities["crate"] = EntityCfg(box=(0.2, 0.2, 0.1), mass=20.0, pos=(0.6, 0.1, 0.3))
    cfg.terrain = TerrainCfg(
        num_rows=2, num_cols=2, tile_size=(4.0, 4.0), border_width=1.0, max_init_level=1,
        sub_terrains={
            "stairs": SubTerrainCfg("pyramid_stairs", platform_width=1.0),
            "rough": SubTerrainCfg("random_rough"),
        },
    )  # fmt: skip
    scene = standing(cfg, engine, steps=10)
    scan = scene.sensors["scan"]
    assert scan._terrain is not None and scan._excluded is None
    assert scan._cast_by_mujoco == crate
    reading = scan.read()
    # MuJoCo's own cast of the same rays, every group, nothing skipped but the base
    dist, geom = scene.engine.cast_rays(
        reading.origins_w, reading.directions_w, exclude_body=reading.body_id
    )
    robot = torch.isin(geom, torch.tensor(robot_geoms(scene), device=geom.device))
    assert bool((~robot).any()) and bool(robot.any())
    assert torch.equal(reading.geom[~robot], geom[~robot])
    assert torch.allclose(reading.distances[~robot], dist[~robot].float(), atol=1e-4)
    if crate:
        assert bool((reading.geom == scene.model.geom("crate/box").id).any())
    assert bool((reading.geom == scene.terrain.geom_id).any())
    # under the legs, the ground or the crate beyond them
    assert bool((reading.distances[robot] > dist[robot].float()).all())


def test_a_pinhole_sees_a_wall_at_its_distance_along_the_optical_axis():
    wall = EntityCfg(box=(0.05, 2.0, 1.0), free=False, pos=(1.5, 0.0, 1.0))  # face at x = 1.45
    cfg = SceneCfg(num_envs=1, entities={"robot": quadruped_robot(), "wall": wall})
    cfg.sensors = {
        "depth": RayCasterCfg(
            pattern=PinholePattern(width=16, height=12, fov_y=40.0),
            offset=(0.3, 0.0, 0.2),
            alignment="world",
        )
    }
    scene = standing(cfg, steps=2)
    cam = scene.sensors["depth"].read()
    depth = cam.depth[0]  # (12, 16)
    assert depth.shape == (12, 16)
    expected = 1.45 - float(cam.pos_w[0, 0] - scene.env_origins[0, 0])
    # the upper half looks level or up: all of it on the wall, at the same axial depth
    assert torch.allclose(depth[:6], torch.full((6, 16), expected), atol=1e-4)
    # along the rays, the image's corners are farther than its centre
    assert float(cam.distances[0, 0]) > float(cam.distances[0, 6 * 16 + 8]) + 0.05


def test_a_lidar_ring_finds_the_box_ahead_and_nothing_elsewhere():
    cfg = scene_cfg(
        1,
        lidar=RayCasterCfg(
            pattern=LidarPattern(channels=1, vertical_range=(0.0, 0.0), horizontal_resolution=10.0),
            offset=(0.0, 0.0, -0.24),  # 4-5 cm over the floor: as high as the box's middle
            max_distance=3.0,
        ),
    )
    scene = standing(cfg, steps=2)
    lidar = scene.sensors["lidar"].read()
    assert lidar.shape == (1, 36) and lidar.num_rays == 36
    ahead = int(lidar.local_directions[:, 0].argmax())  # the ray along +x
    box = scene.model.geom("step/box").id
    assert int(lidar.geom[0, ahead]) == box
    face = 0.35 - float(lidar.pos_w[0, 0] - scene.env_origins[0, 0])
    assert abs(float(lidar.distances[0, ahead]) - face) < 1e-4
    # behind and beside: nothing within 3 m (the floor is level with the rays)
    assert not bool(lidar.hit[0, :10].any())
    assert float(lidar.distances[0, 0]) == 3.0


def test_a_slower_sensor_keeps_its_reading_and_reset_envs_read_afresh():
    cfg = scene_cfg(scan=RayCasterCfg(pattern=GridPattern((0.4, 0.4), 0.2), update_period=3))
    scene = standing(cfg, steps=3)  # a reading is due now
    scan = scene.sensors["scan"]
    scene.engine.qpos[:, 2] += 0.2  # both robots drop from 20 cm higher
    scene.forward(torch.ones(2, dtype=torch.bool))
    before = scan.read().distances.clone()
    scene.step(4)
    assert torch.equal(scan.read().distances, before)  # 1 of 3 steps: the old reading
    # env 1 starts again: it alone reads afresh
    one = torch.tensor([False, True])
    scene.reset_to_default(one)
    scene.forward(one)
    after = scan.read().distances
    assert torch.equal(after[0], before[0])
    assert float((after[1] - before[1]).abs().max()) > 0.1
    scene.step(4)
    scene.step(4)  # the third step: every env reads afresh
    assert not torch.equal(scan.read().distances[0], before[0])


def test_a_contact_sensor_times_flights_and_stances():
    cfg = scene_cfg(1, feet=BodyContactSensorCfg(bodies=".*_foot", history_length=2))
    scene = standing(cfg, steps=10)
    feet = scene.sensors["feet"]
    dt = 4 * scene.engine.physics_dt
    assert feet.body_names == ["FL_foot", "FR_foot", "RL_foot", "RR_foot"]
    assert bool(feet.in_contact.all())
    assert torch.allclose(feet.current_contact_time, torch.full((1, 4), 10 * dt), atol=1e-6)
    assert bool((feet.force_history[:, 0].norm(dim=-1) > 1.0).all())
    # lift the robot 30 cm: the feet leave the ground in the next step, then land
    scene.engine.qpos[:, 2] += 0.3
    scene.forward(torch.ones(1, dtype=torch.bool))
    scene.step(4)
    assert bool(feet.first_air.all()) and not bool(feet.in_contact.any())
    assert torch.allclose(feet.last_contact_time, torch.full((1, 4), 11 * dt), atol=1e-6)
    flight = 1
    while not bool(feet.in_contact.any()):
        scene.step(4)
        flight += 1
        assert flight < 50, "the robot never landed"
    landed = feet.first_contact[0]
    assert bool(landed.any())
    assert torch.allclose(
        feet.last_air_time[0][landed], torch.full((int(landed.sum()),), flight * dt), atol=1e-6
    )
    scene.reset_to_default(torch.ones(1, dtype=torch.bool))
    assert float(feet.current_air_time.abs().sum() + feet.last_air_time.abs().sum()) == 0.0


def test_sensor_configs_round_trip_through_saved_params():
    cfg = scene_cfg(
        scan=RayCasterCfg(pattern=GridPattern((1.0, 0.6), 0.2), update_period=2),
        depth=RayCasterCfg(pattern=PinholePattern(8, 6), body="base", alignment="full"),
        feet=BodyContactSensorCfg(bodies=(".*_foot",), threshold=5.0),
    )
    back = config_from_data(config_to_data(cfg), SceneCfg)
    assert back.sensors == cfg.sensors
    assert isinstance(back.sensors["depth"].pattern, PinholePattern)


def camera_scene(num_envs: int = 2, engine: str = "cpu", **cameras) -> Scene:
    """The quadruped 1.2 m from a red wall (its face at x = 1.15), standing still."""
    wall = EntityCfg(box=(0.05, 1.0, 0.5), free=False, pos=(1.2, 0, 0.5), rgba=(1.0, 0, 0, 1.0))
    cfg = SceneCfg(num_envs=num_envs, entities={"robot": quadruped_robot(), "wall": wall})
    cfg.sensors = cameras
    return standing(cfg, engine, steps=0)


def test_a_camera_renders_the_wall_in_colour_depth_and_geom_ids():
    """A camera on the trunk, and a pinhole ray caster with the same pose and lens: the
    renderer's depth image is the rays' (two independent ways to the same numbers)."""
    pose = {"body": "trunk", "offset": (0.3, 0.0, 0.05)}
    scene = camera_scene(
        cam=CameraCfg(
            width=32, height=24, fov_y=45.0, data_types=("rgb", "depth", "segmentation"), **pose
        ),
        rays=RayCasterCfg(pattern=PinholePattern(32, 24, 45.0), alignment="full", **pose),
    )
    cam, rays = scene.sensors["cam"], scene.sensors["rays"].read()
    rgb, depth, seg = cam.rgb, cam.depth, cam.segmentation
    assert rgb.shape == (2, 24, 32, 3) and rgb.dtype == torch.uint8
    assert depth.shape == (2, 24, 32) and seg.shape == (2, 24, 32)
    # the wall fills the view's centre: red, at its distance, its geom's id
    centre = rgb[:, 12, 16].int()
    assert bool((centre[:, 0] > 40).all()) and bool((centre[:, 1:] < 10).all())
    assert int(seg[0, 12, 16]) == scene.model.geom("wall/box").id
    assert torch.allclose(depth[:, :12], rays.depth[:, :12], atol=1e-4)
    assert abs(float(depth[0, 12, 16]) - 0.85) < 0.01  # 1.15 - (0.3 + the trunk's x)


def test_antialiasing_smooths_edges_only():
    """Off (the default), each pixel is one sample; on, pixels along the wall's edges blend
    what meets there, and its face's pixels do not change."""
    view = {"width": 48, "height": 48, "fov_y": 100.0, "body": "trunk", "offset": (0.3, 0, 0)}
    scene = camera_scene(
        1,
        plain=CameraCfg(data_types=("rgb", "segmentation"), **view),
        smooth=CameraCfg(data_types=("rgb",), antialias=True, **view),
    )
    plain, smooth = scene.sensors["plain"], scene.sensors["smooth"]
    changed = (plain.rgb[0].int() - smooth.rgb[0].int()).abs().amax(-1) > 8
    seg = torch.nn.functional.pad(plain.segmentation[:1].float(), (1, 1, 1, 1), "replicate")[0]
    centre = seg[1:-1, 1:-1]
    edge = torch.ones_like(changed)
    edge[1:-1, 1:-1] = False  # the image's own border is an edge too
    for dy, dx in ((0, 1), (2, 1), (1, 0), (1, 2)):  # a neighbour shows another geom
        edge |= seg[dy : dy + 48, dx : dx + 48] != centre
    face = (plain.segmentation[0] == scene.model.geom("wall/box").id) & ~edge
    assert int((changed & edge).sum()) > 10, "antialiasing changed no edge"
    assert int(face.sum()) > 300 and not bool((changed & face).any())


def turn_env(scene: Scene, env_id: int, yaw: float, forward: bool = True) -> None:
    """Turn one env's robot about z by ``yaw`` radians where it stands (and, with
    ``forward``, tell the sensors every env's state changed)."""
    qpos = scene.engine.qpos
    qpos[env_id, 3:7] = torch.tensor([math.cos(yaw / 2), 0, 0, math.sin(yaw / 2)])
    if forward:
        scene.forward(torch.ones(scene.num_envs, dtype=torch.bool))


def test_the_batch_renderer_draws_what_opengl_draws():
    """The two renderers from the same poses, one robot turned away from the wall: the
    same depth (metres) and geom ids in each env, the wall red in both; the colours
    themselves differ (two lighting models)."""
    view = {"width": 32, "height": 24, "fov_y": 60.0, "body": "trunk", "offset": (0.3, 0, 0.05)}
    kinds = ("rgb", "depth", "segmentation")
    scene = camera_scene(
        batch=CameraCfg(data_types=kinds, **view),
        gl=CameraCfg(data_types=kinds, renderer="opengl", **view),
    )
    turn_env(scene, 1, 2.0)
    batch, gl = scene.sensors["batch"], scene.sensors["gl"]
    assert torch.allclose(batch.depth, gl.depth, atol=1e-4)
    assert bool((batch.segmentation == gl.segmentation).all())
    wall = scene.model.geom("wall/box").id
    assert int((batch.segmentation[0] == wall).sum()) > 300
    assert int((batch.segmentation[1] == wall).sum()) == 0  # turned away
    for image in (batch.rgb[0, 12, 16].int(), gl.rgb[0, 12, 16].int()):
        assert int(image[0]) > 40 and int(image[1:].amax()) < 10


@pytest.mark.parametrize("engine", ["cpu", pytest.param("warp-cpu", marks=pytest.mark.warp)])
def test_each_env_is_drawn_with_its_own_colours_and_sizes(engine):
    """Events that give an env's wall another colour and thickness show in its images only,
    on the cpu engine (whose per-env fields the renderer copies) as on MuJoCo Warp."""
    wall = EntityCfg(box=(0.05, 1.0, 0.5), free=False, pos=(1.2, 0, 0.5), rgba=(1.0, 0, 0, 1.0))
    cfg = SceneCfg(num_envs=2, entities={"robot": quadruped_robot(), "wall": wall})
    cfg.sensors = {
        "cam": CameraCfg(
            width=16, height=16, data_types=("rgb", "depth"), body="trunk", offset=(0.3, 0, 0.05)
        )
    }
    scene = Scene(cfg, SimCfg(engine=engine, per_env_fields=("geom_rgba", "geom_size")))
    every = torch.ones(2, dtype=torch.bool, device=scene.device)
    scene.reset_to_default(every)
    scene.forward(every)
    box = scene.model.geom("wall/box").id
    scene.engine.model_field("geom_rgba")[1, box] = torch.tensor([0.0, 1.0, 0.0, 1.0])
    scene.engine.model_field("geom_size")[1, box, 0] = 0.25  # 20 cm nearer
    cam = scene.sensors["cam"]
    rgb, depth = cam.rgb[:, 8, 8].int(), cam.depth[:, 8, 8]
    assert int(rgb[0, 0]) > 40 and int(rgb[0, 1]) < 10  # red
    assert int(rgb[1, 1]) > 40 and int(rgb[1, 0]) < 10  # green
    assert abs(float(depth[0] - depth[1]) - 0.2) < 1e-3


def test_a_reading_renders_only_the_envs_it_must():
    """Between readings (update_period) an env's image holds, unless the env reset; the
    batch renderer draws every env at once but keeps the new image of the reset one only."""
    view = {"width": 16, "height": 16, "body": "trunk", "offset": (0.3, 0, 0.05)}
    scene = camera_scene(cam=CameraCfg(data_types=("depth",), update_period=1000, **view))
    cam = scene.sensors["cam"]
    before = cam.depth.clone()
    turn_env(scene, 0, 2.0, forward=False)
    turn_env(scene, 1, 2.0, forward=False)
    cam.invalidate(torch.tensor([False, True]))  # as a reset of env 1 does
    after = cam.depth
    assert torch.equal(after[0], before[0])  # not stale: the old image holds
    assert float((after[1] - before[1]).abs().amax()) > 0.5


@pytest.mark.parametrize("renderer", ["batch", "opengl"])
def test_each_env_s_camera_can_move_turn_widen_and_dim(renderer):
    """Camera randomization's levers (Camera.set_view), env by env, on both renderers:
    env 0 keeps the config's view of the wall throughout."""
    view = {"width": 24, "height": 16, "fov_y": 45.0, "body": "trunk", "offset": (0.3, 0, 0.05)}
    kinds = ("rgb", "depth", "segmentation")
    scene = camera_scene(5, cam=CameraCfg(data_types=kinds, renderer=renderer, **view))
    cam, wall = scene.sensors["cam"], scene.model.geom("wall/box").id
    depth0, rgb0 = cam.depth[:, 8, 12].clone(), cam.rgb.float().mean((1, 2, 3))
    envs = lambda *ids: torch.tensor([i in ids for i in range(5)])  # noqa: E731
    cam.set_view(envs(1), offset=cam.offset + torch.tensor([0.2, 0.0, 0.0]))
    half_turn = torch.tensor([0.0, 0.0, 0.0, 1.0]).expand(5, 4)  # about z
    cam.set_view(envs(2), rot=half_turn, fov_y=torch.full((5,), 120.0))
    # envs 3 and 4 look down at the floor, which the model's light (from above) lights
    down = torch.tensor([math.cos(math.pi / 4), 0.0, math.sin(math.pi / 4), 0.0]).expand(5, 4)
    cam.set_view(envs(3, 4), rot=down)
    cam.set_view(envs(4), light_scale=torch.zeros(5))
    depth, seg, rgb = cam.depth[:, 8, 12], cam.segmentation, cam.rgb.float().mean((1, 2, 3))
    assert abs(float(depth[0] - depth0[0])) < 1e-5 and abs(float(rgb[0] - rgb0[0])) < 1e-3
    assert abs(float(depth0[1] - depth[1]) - 0.2) < 1e-3  # 20 cm nearer the wall
    assert int((seg[0] == wall).sum()) == 24 * 16 and int((seg[2] == wall).sum()) == 0
    assert int((seg[3] == wall).sum()) == 0 and torch.equal(seg[3], seg[4])
    assert float(rgb[4]) < 0.8 * float(rgb[3])  # the same view, the model's light off


@pytest.mark.parametrize("renderer", ["batch", "opengl"])
def test_a_wider_field_of_view_sees_past_the_wall(renderer):
    """The batch renderer traces rays precomputed for the config's field of view until
    one is set per env; then each env's own is drawn (and with antialiasing, whose
    sub-pixel rays are fixed, setting one is refused)."""
    view = {"width": 24, "height": 16, "fov_y": 45.0, "body": "trunk", "offset": (0.3, 0, 0.05)}
    scene = camera_scene(2, cam=CameraCfg(data_types=("segmentation",), renderer=renderer, **view))
    cam, wall = scene.sensors["cam"], scene.model.geom("wall/box").id
    assert int((cam.segmentation == wall).sum()) == 2 * 24 * 16  # both see only the wall
    cam.set_view(torch.tensor([False, True]), fov_y=torch.full((2,), 150.0))
    seen = (cam.segmentation == wall).sum((1, 2))
    assert int(seen[0]) == 24 * 16 and 0 < int(seen[1]) < 24 * 16 // 2
    if renderer == "batch":
        smooth = CameraCfg(data_types=("rgb",), antialias=True, **view)
        cam = camera_scene(1, cam=smooth).sensors["cam"]
        with pytest.raises(RobolearnError, match="randomize fov_y with antialias=False"):
            cam.set_view(torch.tensor([True]), fov_y=torch.full((1,), 60.0))


@pytest.mark.warp
def test_the_batch_renderer_draws_alike_on_cpu_and_warp_cpu():
    view = {"width": 24, "height": 16, "body": "trunk", "offset": (0.3, 0, 0.05)}
    scenes = [
        camera_scene(2, engine, cam=CameraCfg(data_types=("depth", "segmentation"), **view))
        for engine in ("cpu", "warp-cpu")
    ]
    for scene in scenes:
        turn_env(scene, 1, 0.5)
    cpu, warp = (s.sensors["cam"] for s in scenes)
    assert torch.allclose(cpu.depth, warp.depth, atol=1e-4)
    assert float((cpu.segmentation == warp.segmentation).float().mean()) > 0.99


@pytest.mark.parametrize("engine", ["cpu", pytest.param("warp-cpu", marks=pytest.mark.warp)])
def test_a_camera_fixed_in_the_env_and_what_it_does_not_render(engine):
    scene = camera_scene(
        1, engine, cam=CameraCfg(width=8, height=8, data_types=("depth",), offset=(0, 0, 0.5))
    )
    cam = scene.sensors["cam"]
    assert cam.body_id is None
    assert torch.allclose(cam.depth[0, 3:5, 3:5], torch.full((2, 2), 1.15), atol=1e-3)
    with pytest.raises(RobolearnError, match="renders depth, not rgb"):
        _ = cam.rgb


@pytest.mark.parametrize(
    "sensor, message",
    [
        (RayCasterCfg(pattern=GridPattern((1.0, 1.0), 0.0)), "grid pattern needs"),
        (RayCasterCfg(pattern=PinholePattern(0, 8)), "width must be an integer >= 1"),
        (RayCasterCfg(pattern=LidarPattern(channels=0)), "channels must be an integer >= 1"),
        (RayCasterCfg(body="tail"), "has no body 'tail'"),
        (RayCasterCfg(alignment="roll"), "alignment must be one of"),
        (RayCasterCfg(max_distance=0.0), "max_distance must be > 0"),
        (RayCasterCfg(update_period=0), "update_period must be an integer >= 1"),
        (RayCasterCfg(entity="crate"), "crate"),
        (BodyContactSensorCfg(bodies="wing"), "wing"),
        (BodyContactSensorCfg(history_length=0), "history_length must be"),
        (CameraCfg(width=0), "width must be an integer >= 1"),
        (CameraCfg(data_types=("thermal",)), "data_types must name some of"),
        (CameraCfg(fov_y=180.0), r"fov_y lies in \(0, 180\)"),
        (CameraCfg(width=5000, renderer="opengl"), "larger than the model's offscreen buffer"),
        (
            CameraCfg(width=10**5, height=10**5),
            r"need about [0-9,.]+ GiB of memory \(.* of it scene\.sensors\.bad's 100000x100000 "
            r"rgb images\), .*make that smaller",
        ),
        (
            RayCasterCfg(pattern=PinholePattern(10**5, 10**5)),
            "a 100,000 x 100,000 pinhole is 10,000,000,000 rays per env, beyond the 4,194,304",
        ),
        (
            RayCasterCfg(pattern=LidarPattern(channels=128, horizontal_resolution=1e-3)),
            "128 rings of 360,000 rays",
        ),
        (CameraCfg(renderer="vulkan"), "renderer must be one of batch, opengl"),
        (CameraCfg(reflections=True), "reflections are drawn by the opengl renderer only"),
        (CameraCfg(body="tail"), "has no body 'tail'"),
        ("not a sensor", "must be a sensor config"),
        (SensorCfg(), "is no kind of sensor"),
    ],
)
def test_bad_sensor_configs_are_one_line_errors(sensor, message):
    with pytest.raises(RobolearnError, match=message) as info:
        Scene(scene_cfg(1, bad=sensor), SimCfg(engine="cpu"))
    assert "\n" not in str(info.value) and "bad" in str(info.value)


def test_a_fixed_entity_on_a_generated_terrain_is_a_one_line_error():
    """A body welded to the world has one place for every env; on a terrain each env has
    its own tile, so the box would stand on one of them only."""
    from robolearn.terrain import SubTerrainCfg, TerrainCfg

    cfg = scene_cfg()
    cfg.terrain = TerrainCfg(
        num_rows=1, num_cols=2, tile_size=(4.0, 4.0), border_width=1.0,
        sub_terrains={"flat": SubTerrainCfg("flat")},
    )  # fmt: skip
    with pytest.raises(RobolearnError, match="step is fixed to the world") as info:
        Scene(cfg, SimCfg(engine="cpu"))
    assert "\n" not in str(info.value)
