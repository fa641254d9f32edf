"""Objects that differ per env: a made object with three shapes takes one per env, at its
drawn size and mass, and rests on the floor at that shape's height on the cpu engine and
on the Warp code path."""

from __future__ import annotations

import pytest
import torch

from robolearn import mdp
from robolearn.env import ManagerBasedRLEnv, ManagerBasedRLEnvCfg
from robolearn.errors import RobolearnError
from robolearn.managers import (
    EventTermCfg,
    ObservationGroupCfg,
    ObservationTermCfg,
    TerminationTermCfg,
)
from robolearn.mdp.object_events import OBJECT_PER_ENV_FIELDS, object_shape, randomize_object
from robolearn.scene import EntityCfg, SceneCfg, SimCfg
from robolearn.sim import DEFAULT_PER_ENV_FIELDS

HALF = (0.03, 0.03, 0.05)
TABLE = """<mujoco><option timestep="0.005"/><worldbody>
  <geom name="floor" type="plane" size="2 2 0.1"/>
  <body name="pusher" pos="0 0 0.5"><joint name="slide" type="slide" axis="1 0 0"/>
    <geom type="sphere" size="0.02" mass="0.1" contype="0" conaffinity="0"/></body>
</worldbody><actuator><motor name="push" joint="slide"/></actuator></mujoco>"""


@pytest.fixture
def table(tmp_path) -> str:
    path = tmp_path / "table.xml"
    path.write_text(TABLE)
    return str(path)


def _env(model: str, engine: str, num_envs: int = 12, per_env=OBJECT_PER_ENV_FIELDS, **params):
    cfg = ManagerBasedRLEnvCfg(
        scene=SceneCfg(
            num_envs=num_envs,
            entities={
                "robot": EntityCfg(model=model),
                "object": EntityCfg(
                    box=HALF, mass=0.2, shapes=("box", "cylinder", "sphere"), pos=(1.0, 0.0, 0.2)
                ),
            },
        ),
        sim=SimCfg(engine=engine, per_env_fields=per_env),
        decimation=4,
        episode_length_s=100.0,
        actions={"cart": mdp.JointEffortActionCfg(actuators=".*")},
        observations={
            "policy": ObservationGroupCfg(terms={"q": ObservationTermCfg(func=mdp.joint_pos_rel)})
        },
        terminations={"time_out": TerminationTermCfg(func=mdp.time_out, time_out=True)},
        events={
            "object": EventTermCfg(
                func=randomize_object,
                mode="startup",
                params={"size_scale": (0.8, 1.2), "mass_range": (0.05, 0.5), **params},
            )
        },
    )
    env = ManagerBasedRLEnv(cfg)
    env.reset()
    return env


@pytest.mark.parametrize("engine", ["cpu", "warp-cpu"])
def test_each_env_gets_its_own_shape_size_and_mass_and_rests_on_it(table, engine):
    env = _env(table, engine)
    shape = object_shape(env)
    assert len(set(shape.tolist())) >= 2, shape  # 12 envs, 3 shapes: all alike has p 1e-5
    e = env.scene.engine
    model = env.scene.model
    geoms = [model.geom(f"object/{s}").id for s in ("box", "cylinder", "sphere")]
    size = e.model_field("geom_size")[:, geoms].double()
    mass = e.model_field("body_mass")[:, model.body("object/box").id]
    assert float(mass.min()) >= 0.05 and float(mass.max()) <= 0.5
    assert len(set(mass.tolist())) == env.num_envs
    for _ in range(50):  # 1 s: the object falls 15 cm and settles
        env.step(torch.zeros(env.num_envs, env.action_manager.total_action_dim))
    z = env.scene.entity_root_pose("object")[0][:, 2].double()
    for i, k in enumerate(shape.tolist()):
        # a box and an upright cylinder rest on their half-height, a sphere on its radius
        rest = size[i, k, 0] if k == 2 else size[i, k, 2 if k == 0 else 1]
        assert float(z[i]) == pytest.approx(float(rest), abs=2e-3), (i, k, float(z[i]))
        scale = float(rest) / (HALF[0] if k == 2 else HALF[2])
        assert 0.8 - 1e-6 <= scale <= 1.2 + 1e-6


def test_a_randomized_object_needs_its_fields_per_env(table):
    with pytest.raises(RobolearnError, match=r"needs per-env values of geom_size.*OBJECT_PER_ENV"):
        _env(table, "cpu", num_envs=2, per_env=DEFAULT_PER_ENV_FIELDS)


def test_an_object_shape_no_engine_varies_is_refused(table):
    with pytest.raises(RobolearnError, match=r"'mesh'.*neither MuJoCo's batch nor MuJoCo Warp"):
        ManagerBasedRLEnv(
            ManagerBasedRLEnvCfg(
                scene=SceneCfg(
                    num_envs=1,
                    entities={
                        "robot": EntityCfg(model=table),
                        "object": EntityCfg(shapes=("box", "mesh")),
                    },
                ),
                actions={"cart": mdp.JointEffortActionCfg(actuators=".*")},
                observations={
                    "policy": ObservationGroupCfg(
                        terms={"q": ObservationTermCfg(func=mdp.joint_pos_rel)}
                    )
                },
                terminations={"time_out": TerminationTermCfg(func=mdp.time_out, time_out=True)},
            )
        )


def test_videos_draw_each_env_with_its_own_shape(table):
    from robolearn.render.video import EnvRenderer

    env = _env(table, "cpu", num_envs=12)
    shape = object_shape(env).tolist()
    a, b = shape.index(shape[0]), next(i for i, k in enumerate(shape) if k != shape[0])
    e = env.scene.engine
    default_size = env.scene.model.geom_size.copy()
    renderer = EnvRenderer(e, 160, 120)
    try:
        renderer.frame(a)
        # the renderer's model holds env a's sizes: its shape full-sized, the others specks
        sizes = e.model_field("geom_size")[a].numpy()
        assert (renderer.model.geom_size == sizes).all()
        frame_a, frame_b = renderer.frame(a), renderer.frame(b)
        assert (renderer.model.geom_size == e.model_field("geom_size")[b].numpy()).all()
    finally:
        renderer.close()
    assert (env.scene.model.geom_size == default_size).all()  # the engine's model untouched
    # the same pose, another shape: the pictures differ
    assert float(abs(frame_a.astype(float) - frame_b.astype(float)).mean()) > 0.01
