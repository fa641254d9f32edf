"""Generated terrain: the generator, the height field in the model, the ground the height
scan reads, spawning on tiles, the terrain curriculum, evaluation per terrain, bad input."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest
import torch
from cli_helpers import one_line_error, play_eval, robolearn, robolearn_in_process

from robolearn import mdp
from robolearn.env import ManagerBasedRLEnv
from robolearn.errors import RobolearnError
from robolearn.managers import ObservationTermCfg
from robolearn.registry import get_task
from robolearn.render.markers import collect_markers
from robolearn.terrain import (
    TERRAIN_GEOM,
    TYPES,
    HeightMap,
    SubTerrainCfg,
    TerrainCfg,
    add_terrain,
    generate,
)
from robolearn.terrain.generator import GAP_DEPTH, column_types


def small_terrain(**kw) -> TerrainCfg:
    """Every type once, 3 levels, 4 m tiles: a terrain that builds in a blink."""
    subs = {name: SubTerrainCfg(name) for name in TYPES}
    return TerrainCfg(
        num_rows=3, num_cols=len(subs), tile_size=(4.0, 4.0), border_width=2.0,
        sub_terrains=subs, **kw,
    )  # fmt: skip


def compiled(grid) -> tuple[mujoco.MjModel, mujoco.MjData]:
    spec = mujoco.MjSpec()
    spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 1])
    add_terrain(spec, grid)
    model = spec.compile()
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    return model, data


# ---- the generator ---------------------------------------------------------------------


def test_the_same_seed_gives_the_same_terrain_and_another_seed_another():
    a, b = generate(small_terrain(seed=3)), generate(small_terrain(seed=3))
    assert np.array_equal(a.heights, b.heights)
    assert np.array_equal(a.tile_origins, b.tile_origins)
    assert not np.array_equal(a.heights, generate(small_terrain(seed=4)).heights)


def test_columns_are_shared_out_by_proportion():
    cfg = TerrainCfg(
        num_cols=10,
        sub_terrains={
            "a": SubTerrainCfg("flat", proportion=3),
            "b": SubTerrainCfg("pyramid_stairs", proportion=7),
            "none": SubTerrainCfg("gaps", proportion=0),
        },
    )
    assert column_types(cfg) == ["a"] * 3 + ["b"] * 7


def tile(grid, row: int, col: int) -> np.ndarray:
    """The heights of one tile of a ``small_terrain`` grid."""
    n = round(4.0 / grid.horizontal_scale)
    border = round(2.0 / grid.horizontal_scale)
    i, j = border + row * n, border + col * n
    return grid.heights[i : i + n, j : j + n]


def test_difficulty_rises_with_the_row_and_sets_each_types_main_quantity():
    cfg = small_terrain()
    grid = generate(cfg)
    cols = {name: grid.column_types.index(name) for name in TYPES}
    assert list(grid.difficulties) == [0.0, 0.5, 1.0]
    for row, difficulty in enumerate(grid.difficulties):
        lo, hi = TYPES["pyramid_stairs"][1]
        step = lo + (hi - lo) * difficulty
        stairs = tile(grid, row, cols["pyramid_stairs"])
        # up to a platform: heights are whole steps, the highest at the center
        assert np.allclose(np.unique(np.round(stairs / step, 6)) % 1, 0)
        assert stairs.max() == pytest.approx(grid.tile_origins[row, cols["pyramid_stairs"], 2])
        assert np.array_equal(tile(grid, row, cols["pyramid_stairs_inv"]), -stairs)
        lo, hi = TYPES["random_rough"][1]
        rough = tile(grid, row, cols["random_rough"])
        assert np.abs(rough).max() <= lo + (hi - lo) * difficulty + 1e-12
        gaps = tile(grid, row, cols["gaps"])
        assert set(np.unique(gaps)) <= {0.0, -GAP_DEPTH}
    slopes = [tile(grid, r, cols["pyramid_slope"]).max() for r in range(3)]
    assert slopes[0] == 0 < slopes[1] < slopes[2]
    assert not tile(grid, 0, cols["flat"]).any()


def _rough(lo: float, hi: float) -> dict:
    return {"sub_terrains": {"rough": SubTerrainCfg("random_rough", range=(lo, hi))}}


@pytest.mark.parametrize(
    "change, fragment",
    [
        ({"tile_size": (-8.0, 8.0)}, "terrain.tile_size must be finite and > 0"),
        ({"tile_size": (8.0, math.inf)}, "terrain.tile_size must be finite and > 0"),
        ({"horizontal_scale": math.nan}, "terrain.horizontal_scale must be finite and > 0"),
        ({"border_width": -1.0}, "terrain.border_width must be finite and >= 0, got -1.0"),
        # before: accepted, and the inf or nan heights blamed later on the height_scan term
        (_rough(0.01, math.inf), "sub_terrains.rough.range must be finite and >= 0"),
        (_rough(0.01, math.nan), "sub_terrains.rough.range must be finite and >= 0"),
        # before: accepted, though a negative size was documented to stop the build
        (_rough(-0.05, 0.01), "sub_terrains.rough.range must be finite and >= 0"),
        # before: a numpy MemoryError traceback while allocating 200,001 x 200,001 samples
        (
            {"horizontal_scale": 0.0005},
            "a terrain of 200,001 x 200,001 height samples (terrain.horizontal_scale 0.0005 m",
        ),
        ({"num_rows": 0}, "terrain.num_rows must be >= 1"),
        ({"difficulty_range": (0.5, 1.5)}, "terrain.difficulty_range must be 0 <= low"),
        ({"sub_terrains": {"x": SubTerrainCfg("lava")}}, "type 'lava' is unknown; types: flat"),
        ({"sub_terrains": {"x": SubTerrainCfg("flat", proportion=0)}}, "sum to more than 0"),
        (
            {"sub_terrains": {"x": SubTerrainCfg("flat", proportion=-1)}},
            "proportion must be finite",
        ),
        ({"level": 10}, "terrain.level 10 is not a row; rows: 0..9"),
        ({"sub_terrain": "stairs"}, "terrain.sub_terrain 'stairs' is not one of the terrain's"),
    ],
)
def test_a_bad_terrain_config_is_one_clear_error(change, fragment):
    with pytest.raises(RobolearnError, match=None) as err:
        generate(TerrainCfg(**change))
    assert fragment in str(err.value) and "\n" not in str(err.value)


# ---- the height field and the ground the scan reads ------------------------------------------


def test_the_height_map_is_the_surface_mujoco_collides_with():
    """Ground heights from the torch side agree with MuJoCo's own ray casting against the
    compiled height field, on every type of tile (stairs' edges and gaps included)."""
    grid = generate(small_terrain())
    model, data = compiled(grid)
    assert model.geom_type.tolist() == [mujoco.mjtGeom.mjGEOM_HFIELD]  # the plane is gone
    geom = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, TERRAIN_GEOM)
    heights = HeightMap(model, geom, torch.device("cpu"))
    rng = np.random.default_rng(0)
    x0, x1, y0, y1 = heights.bounds
    points = np.stack([rng.uniform(x0, x1, 2000), rng.uniform(y0, y1, 2000)], axis=1)
    ours = heights.height_at(torch.as_tensor(points, dtype=torch.float32)).numpy()
    hit = np.zeros(1, np.int32)
    for (x, y), z in zip(points, ours, strict=True):
        down = np.array([0.0, 0.0, -1.0])
        dist = mujoco.mj_ray(model, data, np.array([x, y, 5.0]), down, None, 1, -1, hit)
        # float32 points (1e-6 m at 13 m) on a gap's wall (10 m per m) and float32 heights
        assert abs((5.0 - dist) - z) < 1e-4, (x, y)
    # the generator's own samples, at the sample points
    i, j = 37, 91
    xy = torch.tensor([[grid.x0 + i * grid.horizontal_scale, grid.y0 + j * grid.horizontal_scale]])
    assert float(heights.height_at(xy)) == pytest.approx(grid.heights[i, j], abs=1e-5)


def rough_env(
    task: str = "quadruped_walk_rough", num_envs: int = 16, **terrain
) -> ManagerBasedRLEnv:
    cfg = get_task(task).env_cfg()
    cfg.scene.num_envs = num_envs
    cfg.scene.terrain = small_terrain(**terrain)
    cfg.sim.engine = "cpu"
    return ManagerBasedRLEnv(cfg)


@pytest.fixture(scope="module")
def env():
    return rough_env()


def test_robots_spawn_standing_on_their_tiles(env):
    terrain = env.scene.terrain
    assert terrain is not None
    origins = terrain.tile_origins[terrain.levels, terrain.env_cols]
    assert torch.equal(env.scene.env_origins, origins)
    # the reset event places each robot within 0.5 m of its tile's center, on the ground
    offset = (env.scene.root_pos_w[:, :2] - origins[:, :2]).abs()
    assert bool((offset <= 0.5 + 1e-5).all())
    assert bool((env.scene.root_height - 0.30).abs().lt(0.02).all())
    # envs are shared out among every column
    assert set(terrain.env_cols.tolist()) == set(range(terrain.num_cols))


def test_the_height_scan_reads_the_ground_around_the_base(env):
    scan_term = env.observation_manager.term_slices("policy")["height_scan"]
    obs = env.observation_manager.compute(update_history=False)["policy"]
    assert scan_term.stop - scan_term.start == 17 * 11  # 1.6 m x 1.0 m every 0.1 m
    # on a flat tile standing at the standing height, every point reads about 0
    flat = int(env.scene.terrain.type_names.index("flat"))
    on_flat = env.scene.terrain.env_types == flat
    assert bool(on_flat.any())
    scan = obs[on_flat, scan_term]
    assert float(scan.abs().max()) < 5 * (0.02 + 0.02)  # noise +-0.02 m and the base's sway, x5
    # each value is what the height map gives under the point (noise-free group here)
    fn = next(f for n, _, f in env.observation_manager._terms["policy"].terms if n == "height_scan")
    base = env.scene.root_pos_w
    expected = base[:, 2:3] - env.scene.terrain.height_map.height_at(fn.points_xy) - 0.30
    assert torch.allclose(fn(env, offset=0.30), expected)
    # the scan points are drawn as markers in viewers and videos
    spheres = [m for m in collect_markers(env, 0) if m.kind == "sphere"]
    assert len(spheres) == 187


def test_viewers_and_videos_draw_the_scan_and_write_the_envs_tile(env):
    from robolearn.render.video import EnvRenderer, track_body_of

    terrain = env.scene.terrain
    (label,) = [m for m in collect_markers(env, 3) if m.kind == "text"]
    kind = terrain.column_types[int(terrain.env_cols[3])]
    assert label.text == f"{kind}, level {int(terrain.levels[3])}/2"
    renderer = EnvRenderer(env.scene.engine, 320, 240, track_body=track_body_of(env))
    try:
        markers = collect_markers(env, 3)
        plain = renderer.frame(3)
        drawn = renderer.frame(3, markers=markers)
        unlabelled = renderer.frame(3, markers=[m for m in markers if m.kind != "text"])
    finally:
        renderer.close()
    assert (plain != drawn).any(axis=-1).sum() > 200  # the scan's points
    assert (unlabelled != drawn).any(axis=-1).sum() > 50  # and the label's letters


def _end_episodes_by_time_out(env) -> None:
    """One step that ends every episode by the task's own time-out term."""
    env.episode_length_buf[:] = env.max_episode_length - 1
    _, _, _, time_outs, _ = env.step(torch.zeros(env.num_envs, env.num_actions))
    assert bool(time_outs.all())


def test_the_terrain_curriculum_moves_walkers_up_and_idlers_down():
    env = rough_env(num_envs=8)
    terrain = env.scene.terrain
    terrain.levels[:] = 1
    terrain.env_origins[:] = terrain.tile_origins[1, terrain.env_cols]
    env.reset_envs(torch.arange(8))
    assert terrain.levels.tolist() == [1] * 8
    env.command_manager.get_command("base_velocity")[:] = torch.tensor([1.0, 0.0, 0.0])
    env.step(torch.zeros(8, env.num_actions))
    qpos = env.scene.engine.qpos
    qpos[0:4, 0] += 3.0  # envs 0-3 walked 3 m (> half a 4 m tile): up
    # a reset the user asks for is no verdict on the episode: nobody moves
    env.reset_envs(torch.arange(8))
    assert terrain.levels.tolist() == [1] * 8
    env.command_manager.get_command("base_velocity")[:] = torch.tensor([1.0, 0.0, 0.0])
    env.scene.engine.qpos[0:4, 0] += 3.0
    _end_episodes_by_time_out(env)  # envs 4-7 stood still under a 1 m/s command: down
    assert terrain.levels.tolist() == [2] * 4 + [0] * 4
    assert torch.equal(
        env.scene.env_origins, terrain.tile_origins[terrain.levels, terrain.env_cols]
    )
    # past the top row an env goes to a random row, never out of the grid
    for _ in range(5):
        env.scene.engine.qpos[:, 0] += 3.0
        _end_episodes_by_time_out(env)
        assert bool((terrain.levels >= 0).all() and (terrain.levels < 3).all())


def test_evaluation_can_pin_a_level_and_a_type():
    env = rough_env(num_envs=6, level=2, sub_terrain="pyramid_stairs")
    terrain = env.scene.terrain
    assert terrain.levels.tolist() == [2] * 6
    assert {terrain.column_types[c] for c in terrain.env_cols.tolist()} == {"pyramid_stairs"}


SMALL = (
    "env.scene.terrain.num_rows=3", "env.scene.terrain.num_cols=4",
    "env.scene.terrain.tile_size=[4.0,4.0]", "env.scene.terrain.border_width=2.0",
)  # fmt: skip


def test_play_eval_reports_falls_and_tracking_per_terrain(tmp_path, capsys):
    out = robolearn_in_process(
        capsys, "train", "--task", "quadruped_walk_rough", "--num_envs", "8",
        "--max_iterations", "1", "--log_root", str(tmp_path), *SMALL,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    metrics = play_eval(
        "--task", "quadruped_walk_rough", "--num_envs", "12", "--log_root", str(tmp_path),
        "env.episode_length_s=1.0", *SMALL, capsys=capsys,
    )  # fmt: skip
    terrain = metrics["terrain"]
    assert 0 <= terrain["mean_level"] <= 2
    assert sum(t["envs"] for t in terrain["types"].values()) == 12
    assert sum(t["envs"] for t in terrain["levels"].values()) == 12
    for stats in terrain["types"].values():
        assert 0 <= stats["fall_rate"] <= 1 and stats["base_velocity/lin_vel_error"] >= 0
    # the breakdowns every task gets come along with the terrain's
    assert metrics["base_velocity/lin_vel_error"] >= 0
    assert metrics["base_velocity/ang_vel_error"] >= 0
    assert "out_of_bounds" in metrics["terminations"]["failures"]
    shares = {**metrics["terminations"]["time_outs"], **metrics["terminations"]["failures"]}
    assert sum(shares.values()) == pytest.approx(1.0)
    assert sum(metrics["reward_terms"].values()) == pytest.approx(
        metrics["mean_return"], rel=1e-4, abs=1e-5
    )


def test_a_bad_terrain_override_is_one_line_and_exit_2(tmp_path):
    result = robolearn(
        "train", "--task", "quadruped_walk_rough", "--num_envs", "4", "--max_iterations", "1",
        "--log_root", str(tmp_path), "env.scene.terrain.sub_terrains.flat.type=lava",
    )  # fmt: skip
    one_line_error(result, "type 'lava' is unknown; types: flat, random_rough")
    assert not any(tmp_path.iterdir())  # no run folder either


def test_an_inf_in_a_terrain_range_override_is_read_as_a_number_and_refused(tmp_path):
    """``range=[0.01,inf]``: the override's text became a string inside the tuple, which the
    generator turned into inf heights."""
    from robolearn.app.configs import finish_setup
    from robolearn.registry import get_task

    spec = get_task("quadruped_walk_rough")
    override = "env.scene.terrain.sub_terrains.random_rough.range=[0.01,inf]"
    env_cfg = spec.make_env_cfg()
    with pytest.raises(RobolearnError, match=r"must be finite and >= 0 .*got \(0\.01, inf\)"):
        finish_setup(spec, env_cfg, spec.agent_cfg(), [override])  # checked with the configs
    assert env_cfg.scene.terrain.sub_terrains["random_rough"].range == (0.01, math.inf)


def test_terrain_needs_are_clear_errors():
    from robolearn.tasks.velocity import quadruped_walk

    cfg = quadruped_walk.env_cfg()
    cfg.scene.num_envs = 2
    cfg.sim.engine = "cpu"
    from robolearn import mdp
    from robolearn.managers import CurriculumTermCfg

    cfg.curriculum["terrain_levels"] = CurriculumTermCfg(
        func=mdp.terrain_levels, params={"command_name": "base_velocity"}
    )
    with pytest.raises(RobolearnError, match=r"needs a generated terrain: set scene\.terrain"):
        ManagerBasedRLEnv(cfg)


def test_humanoid_walk_rough_sees_the_ground_in_both_groups():
    env = rough_env("humanoid_walk_rough", num_envs=4)
    for group in ("policy", "critic"):
        scan = env.observation_manager.term_slices(group)["height_scan"]
        assert scan.stop - scan.start == 11 * 7  # 1.0 m x 0.6 m every 0.1 m
    assert env.command_manager.get_term_cfg("base_velocity").rel_heading_envs == 1.0
    for _ in range(3):
        obs, *_ = env.step(torch.zeros(4, env.num_actions))
    assert bool(torch.isfinite(obs["critic"]).all())
    assert bool((env.scene.root_height > 0.5).all())  # standing on its tile


def test_a_height_scan_needs_a_floating_base():
    cfg = get_task("cartpole_balance").env_cfg()
    cfg.scene.num_envs = 2
    cfg.sim.engine = "cpu"
    cfg.observations["policy"].terms["scan"] = ObservationTermCfg(func=mdp.height_scan)
    with pytest.raises(RobolearnError, match=r"needs a floating base: set scene\.root_body"):
        ManagerBasedRLEnv(cfg)


def test_the_viewer_panel_names_the_watched_envs_tile(env):
    from robolearn.viewer.live_state import ActionSource, ViewerSession

    session = ViewerSession(env, ActionSource())
    session.env_id = 5
    terrain = env.scene.terrain
    assert session.status()["terrain"] == {
        "type": terrain.column_types[int(terrain.env_cols[5])],
        "level": int(terrain.levels[5]),
        "levels": 3,
    }
    assert any(m.kind == "text" for m in session.markers())
