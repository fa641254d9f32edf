"""quadruped_walk_rough_obstacles: boxes as mocap entities scattered on the terrain per env,
which the robot collides with and the ground does not, which the ray-cast height scan sees
and the height field's does not; and the policy it starts from."""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np
import pytest
import torch
from robolearn.tasks.velocity import quadruped_walk_rough_obstacles as task

from robolearn import mdp
from robolearn.env import ManagerBasedRLEnv
from robolearn.errors import RobolearnError
from robolearn.managers import EventTermCfg
from robolearn.render.video import EnvRenderer
from robolearn.rl.ppo_learner import make_runner
from robolearn.scene import EntityCfg


def obstacle_env(num_envs: int = 8, engine: str = "cpu", **overrides) -> ManagerBasedRLEnv:
    cfg = task.env_cfg()
    cfg.scene.num_envs = num_envs
    cfg.sim.engine = engine
    for name, value in overrides.items():
        setattr(cfg, name, value)
    return ManagerBasedRLEnv(cfg)


@pytest.fixture(scope="module")
def env() -> ManagerBasedRLEnv:
    env = obstacle_env()
    env.reset()
    return env


def box_geoms(env) -> list[int]:
    return [env.scene.model.geom(f"{name}/box").id for name in task.OBSTACLES]


def test_each_env_scatters_its_boxes_on_the_ground_around_its_robot(env):
    e, scene = env.scene.engine, env.scene
    pos = e.mocap_pos.float()  # (N, 6, 3)
    rel = pos[..., :2] - scene.root_pos_w[:, None, :2]  # around the robot, where it spawned
    dist = rel.norm(dim=-1)
    assert bool((dist >= 1.0 - 1e-5).all()) and bool((dist <= 3.5 + 1e-5).all())
    # every env its own places
    assert len({tuple(np.round(p, 3)) for p in rel[:, 0].tolist()}) == env.num_envs
    # standing in the ground from its lowest point under the box: never above the ground
    # at its centre (no overhang), and on flat ground exactly on it
    half_z = torch.tensor([h[2] for h in task.OBSTACLES.values()])
    bottom = pos[..., 2] - half_z
    centre = scene.terrain.height_map.height_at(pos[..., :2])
    assert bool((bottom <= centre + 1e-4).all())
    assert bool((bottom >= centre - 0.5).all())
    assert bool(((bottom - centre).abs() < 1e-4).any())
    # another reset draws new places
    before = pos.clone()
    env.reset()
    assert not torch.allclose(e.mocap_pos.float(), before)


def test_the_ray_scan_sees_the_boxes_the_height_field_scan_does_not(env):
    """Put a box under the scan of env 0: the task's height scan (rays) rises by its
    height there; the height field's scan of the same points does not."""
    scene, e = env.scene, env.scene.engine
    half = task.OBSTACLES["box_d"]
    base = scene.root_pos_w[0]
    ground = float(scene.terrain.height_map.height_at(base[None, :2] + 0.4)[0])
    e.mocap_pos[0, 3] = torch.tensor([base[0] + 0.4, base[1] + 0.4, ground + half[2]]).double()
    e.mocap_quat[0, 3] = torch.tensor([1.0, 0.0, 0.0, 0.0]).double()
    every = torch.ones(env.num_envs, dtype=torch.bool)
    scene.forward(every)
    scan = scene.sensors["scan"].read()
    on_box = scan.geom[0] == scene.model.geom("box_d/box").id
    assert int(on_box.sum()) >= 4
    assert torch.allclose(scan.hits_w[0, on_box, 2], torch.tensor(ground + 2 * half[2]), atol=1e-4)
    # the height field under the same points: the ground
    blind = scene.terrain.height_map.height_at(scan.hits_w[0, on_box, :2])
    assert bool((scan.hits_w[0, on_box, 2] - blind > 2 * half[2] - 0.02).all())


def test_the_robot_collides_with_a_box_and_the_ground_does_not(env):
    """Drop env 0's robot onto a box: it stands on it. No contact between a box and the
    terrain is ever computed (MuJoCo skips bodies that physics does not move)."""
    scene, e = env.scene, env.scene.engine
    boxes = set(box_geoms(env))
    terrain = scene.terrain.geom_id
    # the widest box (0.6 m x 0.5 m, 12 cm high) under the robot's base, heading along x
    base = e.qpos[0, :2].float()
    ground = float(scene.terrain.height_map.height_at(base[None])[0])
    half = task.OBSTACLES["box_d"]
    e.mocap_pos[0, 3] = torch.tensor([base[0], base[1], ground + half[2]]).double()
    e.mocap_quat[0, 3] = torch.tensor([1.0, 0.0, 0.0, 0.0]).double()
    e.qpos[0, 2] = ground + 2 * half[2] + 0.35
    e.qpos[0, 3:7] = torch.tensor([1.0, 0.0, 0.0, 0.0]).double()
    e.qvel[0] = 0.0
    e.ctrl[:] = scene.default_ctrl.to(e.dtype)
    for _ in range(40):  # the physics alone: no episode ends and moves the box
        scene.step(4)
    # standing on the box: the trunk about 0.30 m over its top, not over the ground
    assert float(e.qpos[0, 2]) > ground + 2 * half[2] + 0.22
    data = mujoco.MjData(scene.model)
    e.copy_state_to(0, data)
    mujoco.mj_forward(scene.model, data)
    pairs = {(int(c.geom1), int(c.geom2)) for c in data.contact[: data.ncon]}
    robot = set(scene.entity("robot").geom_ids)
    assert any((a in boxes and b in robot) or (b in boxes and a in robot) for a, b in pairs)
    assert not any({a, b} & boxes and terrain in (a, b) for a, b in pairs)


def test_videos_draw_the_boxes_where_each_env_has_them(env):
    """A renderer's host copy of an env holds its boxes' places, not the model's."""
    renderer = EnvRenderer(env.scene.engine, width=32, height=32)
    try:
        for env_id in (0, 1):
            data = renderer.sync(env_id)
            b = env.scene.model.body("box_a/box").id
            assert np.allclose(data.xpos[b], env.scene.engine.mocap_pos[env_id, 0].numpy())
    finally:
        renderer.close()


def test_scatter_needs_a_made_object_that_moves():
    cfg = task.env_cfg()
    cfg.scene.num_envs = 2
    cfg.events["scatter_obstacles"] = EventTermCfg(
        func=mdp.scatter_on_ground, mode="reset", params={"entities": ("robot",)}
    )
    with pytest.raises(RobolearnError, match="not a mocap or floating made object") as err:
        ManagerBasedRLEnv(cfg).reset()
    assert "box_a" in str(err.value) and "\n" not in str(err.value)


def test_a_fixed_box_on_the_terrain_is_refused_and_a_mocap_one_is_not():
    cfg = task.env_cfg()
    cfg.scene.num_envs = 2
    cfg.scene.entities["box_a"] = dataclasses.replace(cfg.scene.entities["box_a"], mocap=False)
    with pytest.raises(RobolearnError, match="mocap body that events place per env"):
        ManagerBasedRLEnv(cfg)
    cfg.scene.entities["box_a"] = EntityCfg(box=(0.2, 0.2, 0.03), free=False, mocap=True)
    ManagerBasedRLEnv(cfg)


def test_training_starts_from_the_shipped_rough_policy(env):
    """The task's observations keep quadruped_walk_rough's sizes: its agent loads the
    shipped policy, and that policy's actions here are its actions there."""
    runner = make_runner(env, task.agent_cfg())
    assert runner.iterations == 0
    obs = env.observation_manager.compute()
    actions = runner.get_inference_policy()(obs)
    assert actions.shape == (env.num_envs, 12) and bool(torch.isfinite(actions).all())
    fresh_cfg = task.agent_cfg()
    fresh_cfg.init_from = ""
    fresh = make_runner(env, fresh_cfg).get_inference_policy()(obs)
    assert not torch.allclose(actions, fresh)


def test_an_exported_policy_plays_on_a_variant_of_its_task(capsys):
    """The shipped rough policy, exported, evaluates among the boxes (it observes what the
    policy reads); its checkpoint is still refused on another task."""

    from cli_helpers import play_eval, robolearn_in_process

    from robolearn.app.runs import pretrained_path

    shipped = pretrained_path("quadruped_walk_rough")
    args = ("--task", "quadruped_walk_rough_obstacles", "--num_envs", 4, "--checkpoint")
    report = play_eval(*args, shipped.parent / "policy.onnx", capsys=capsys)
    assert report["episodes"] == 4 and 0.0 <= report["fall_rate"] <= 1.0
    refused = robolearn_in_process(capsys, "play", "--eval", "--json", *args, shipped)
    assert refused.returncode == 2
    assert "trained on 'quadruped_walk_rough'" in refused.stderr


@pytest.mark.parametrize(
    ("radius", "fragment"), [((-1.0, 2.0), "radii >= 0"), ((3.0, 1.0), "low <= high")]
)
def test_a_bad_scatter_radius_is_a_one_line_error(env, radius, fragment):
    every = torch.ones(env.num_envs, dtype=torch.bool)
    with pytest.raises(RobolearnError, match=fragment) as err:
        mdp.scatter_on_ground(env, every, entities=("box_a",), radius=radius)
    assert "\n" not in str(err.value)
