"""The MuJoCo Warp engine on warp's CPU device: the GPU code path, tested without a GPU."""

from __future__ import annotations

import pytest
import torch
from conftest import stand, stand_state

from robolearn.errors import RobolearnError
from robolearn.sim import SimCfg, make_engine

pytestmark = pytest.mark.warp


@pytest.fixture(scope="module")
def warp_engine(humanoid_scene):
    return make_engine(humanoid_scene, 4, SimCfg(engine="warp-cpu"))


def test_fields_are_views_of_warp_arrays(warp_engine):
    e = warp_engine
    assert e.name == "warp-cpu" and e.dtype == torch.float32
    for name in ("qpos", "qvel", "ctrl", "xpos", "xquat", "sensordata", "cfrc_ext", "qacc"):
        assert getattr(e, name).data_ptr() == getattr(e.d, name).ptr, name
    assert e.model_field("geom_friction").data_ptr() == e.m.geom_friction.ptr
    assert e.model_field("geom_friction").shape == (4, e.model.ngeom, 3)


def test_torch_writes_drive_the_next_step(warp_engine):
    e = warp_engine
    stand(e)
    knee = e.model.actuator("left_knee").id
    knee_q = e.model.jnt_qposadr[e.model.joint("left_knee").id]
    view = e.qpos
    e.ctrl[1, knee] = 2.0
    e.step(20)
    assert view is e.qpos
    assert view[1, knee_q] > view[0, knee_q] + 0.3


def test_subset_reset_leaves_other_envs_untouched(humanoid_scene, warp_engine):
    e = warp_engine
    stand(e)
    e.step(10)
    before = e.qpos.clone(), e.qvel.clone()
    e.reset(torch.tensor([0, 3]))
    assert torch.equal(e.qpos[1:3], before[0][1:3])
    assert torch.equal(e.qvel[1:3], before[1][1:3])
    assert torch.equal(e.qpos[0], torch.as_tensor(e.model.qpos0, dtype=torch.float32))
    # and they continue exactly as an engine that never reset anything
    ref = make_engine(humanoid_scene, 4, SimCfg(engine="warp-cpu"))
    stand(ref)
    ref.step(10)
    ctrl = ref.ctrl.clone()
    e.ctrl[:] = ctrl
    e.step(10)
    ref.step(10)
    assert torch.equal(e.qpos[1:3], ref.qpos[1:3])


def test_parity_with_the_cpu_engine(humanoid_scene, warp_engine):
    """Same MJCF, state and controls through MuJoCo C (float64) and MuJoCo Warp (float32).

    Measured over 50 to 200 steps of a standing humanoid with 8 foot contacts: qpos, xpos
    and xquat agree to about 2e-6, qvel to 4e-5, and sensor and contact forces to 5e-4 of
    their size (forces come out of an iterative contact solver, whose float32 iterates
    differ most). The bounds below give 20x headroom on those measurements; a wrong joint
    order, a missing actuator or another solver setting shows up at 1e-2 or more.
    """
    cpu = make_engine(humanoid_scene, 2, SimCfg(engine="cpu"))
    wrp = warp_engine
    for e in (cpu, wrp):
        stand(e)
        e.ctrl[1, e.model.actuator("right_hip_pitch").id] = -0.8  # env 1 kicks forward
    for _ in range(50):
        cpu.step(1)
        wrp.step(1)
    bounds = {"qpos": 5e-5, "xpos": 5e-5, "xquat": 5e-5, "qvel": 1e-3, "sensordata": 1e-2}
    for name, bound in bounds.items():
        a, b = getattr(cpu, name)[:2].float(), getattr(wrp, name)[:2]
        rel = ((a - b).abs() / (a.abs() + 1.0)).max().item()
        assert rel < bound, (name, rel)
    assert not torch.equal(cpu.qpos[0], cpu.qpos[1])  # the two envs differ, and both match


def test_diverged_env_is_reported(warp_engine):
    e = warp_engine
    stand(e)
    e.qvel[2, 0] = float("nan")
    e.step(1)
    assert e.diverged().tolist() == [False, False, True, False]
    e.reset(torch.tensor([2]))
    assert not e.diverged().any()


def test_a_feature_mujoco_warp_lacks_is_a_clear_error():
    xml = """<mujoco><option solver="PGS"/><worldbody><body><freejoint/>
             <geom size="0.1"/></body></worldbody></mujoco>"""
    with pytest.raises(RobolearnError, match=r"warp-cpu engine \(MuJoCo Warp\).*PGS"):
        make_engine(xml, 2, SimCfg(engine="warp-cpu"))
    make_engine(xml, 2, SimCfg(engine="cpu"))  # the cpu engine runs it


def test_per_env_field_warp_cannot_batch_is_a_clear_error(humanoid_scene):
    # geom_fluid has per-env values on the cpu engine, but MuJoCo Warp holds it once
    make_engine(humanoid_scene, 2, SimCfg(engine="cpu", per_env_fields=["geom_fluid"]))
    with pytest.raises(
        RobolearnError, match="MuJoCo Warp cannot hold per-env values of geom_fluid"
    ):
        make_engine(humanoid_scene, 2, SimCfg(engine="warp-cpu", per_env_fields=["geom_fluid"]))


def test_humanoid_walk_task_steps_on_warp_cpu():
    from robolearn.wrappers import make_env

    env = make_env("humanoid_walk", num_envs=4, engine="warp-cpu")
    assert env.scene.engine.name == "warp-cpu"
    for _ in range(10):
        obs, reward, *_ = env.step(0.2 * torch.randn(4, env.num_actions))
    assert obs["policy"].shape == (4, env.observation_manager.group_dims["policy"])
    assert torch.isfinite(obs["policy"]).all()
    assert torch.isfinite(reward).all()
    assert env.nonfinite_resets == 0  # no divergence, and room for every contact (njmax)
    # the reset path (reset kernel, per-env events, forward) runs on warp too
    env.reset()
    assert torch.isfinite(env.obs_buf["critic"]).all()


def test_contact_overflow_is_reported_once():
    # A box resting on the floor makes 4 contacts; room for 2 in all (nconmax 1 x 2 envs).
    xml = """<mujoco><worldbody><geom type="plane" size="5 5 .1"/>
             <body pos="0 0 3"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
             </worldbody></mujoco>"""
    e = make_engine(xml, 2, SimCfg(engine="warp-cpu", nconmax=1))
    e.step(1)
    assert not e.diverged().any()  # both boxes in the air: no contacts yet
    on_floor = torch.tensor([0, 0, 0.099, 1, 0, 0, 0], dtype=e.dtype)
    e.reset(torch.tensor([0]), qpos=on_floor)
    e.step(1)
    # MuJoCo Warp's contact buffer is shared by all envs: which env lost contacts is not
    # known, so every env is reported (a constraint overflow, per env, flags only that env)
    assert e.diverged().tolist() == [True, True]
    assert e.diverged().tolist() == [False, False]  # reported once
    # what ran out, the capacity, and the setting that raises it
    report = e.overflow_report()
    assert "contacts beyond nconmax=1 per env (narrowphase, 2 env steps)" in report, report
    assert report.endswith("raise env.sim.nconmax")
    assert e.overflow_report() is None  # counted since the last report


def test_training_that_overflows_says_which_capacity_to_raise():
    from robolearn.app.health import TrainingHealth
    from robolearn.env import ManagerBasedRLEnv
    from robolearn.registry import get_task

    cfg = get_task("quadruped_walk").make_env_cfg()
    # 4 feet, room for 1: every step that lands more than one foot overflows
    cfg.scene.num_envs, cfg.sim.engine, cfg.sim.nconmax = 2, "warp-cpu", 1
    env = ManagerBasedRLEnv(cfg)
    lines: list[str] = []
    health = TrainingHealth(env, log=lines.append, check_nonfinite=False)
    with pytest.raises(RobolearnError) as error:
        for iteration in (1, 2, 3):
            for _ in range(5):
                env.step(torch.zeros(2, env.num_actions))
            health.after_rollout(None, iteration)
    assert "training stopped" in str(error.value)
    assert "beyond nconmax=1 per env" in str(error.value), error.value
    assert str(error.value).endswith("raise env.sim.nconmax")
    # the warnings before it name the cause too, not the physics settings
    assert lines and all("raise env.sim.nconmax" in line for line in lines), lines


def test_capacity_below_the_initial_contacts_is_a_clear_error():
    xml = """<mujoco><worldbody><geom type="plane" size="5 5 .1"/>
             <body pos="0 0 0.099"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
             </worldbody></mujoco>"""
    with pytest.raises(RobolearnError, match=r"cannot hold this model's initial state.*nconmax"):
        make_engine(xml, 2, SimCfg(engine="warp-cpu", nconmax=1))


def test_final_obs_of_a_single_term_group_outlives_the_reset():
    """base_height is a view of qpos on the float32 Warp engines; a group of that term alone
    was that view, so the same step's reset overwrote extras["final_obs"]."""
    from robolearn import mdp
    from robolearn.env import ManagerBasedRLEnv
    from robolearn.managers import ObservationGroupCfg, ObservationTermCfg
    from robolearn.registry import get_task

    cfg = get_task("humanoid_walk").make_env_cfg()
    cfg.scene.num_envs = 2
    cfg.sim.engine = "warp-cpu"
    cfg.events = {}
    cfg.episode_length_s = 0.1  # 5 steps
    cfg.terminations = {"time_out": cfg.terminations["time_out"]}
    cfg.observations = {
        "policy": ObservationGroupCfg(terms={"height": ObservationTermCfg(func=mdp.base_height)})
    }
    env = ManagerBasedRLEnv(cfg)
    env.record_final_obs = True
    env.scene.engine.qpos[:, 2] = 2.0  # dropped from 2 m
    for _ in range(env.max_episode_length):
        obs, _, _, time_outs, extras = env.step(torch.zeros(2, env.num_actions))
    assert time_outs.all()
    final = extras["final_obs"]["policy"][:, 0]
    assert ((final > 1.8) & (final < 2.0)).all(), final  # falling, 5 steps after the drop
    default = env.scene.default_qpos[2].item()
    assert torch.allclose(obs["policy"][:, 0], torch.full((2,), default))  # the reset state
    assert obs["policy"].data_ptr() != env.scene.engine.qpos.data_ptr()


@pytest.mark.parametrize("engine", ["cpu", "warp-cpu"])
def test_a_users_robot_with_geom_feet_stands_on_them_on_both_engines(engine):
    """Feet given as collision geoms become bodies of their own on every engine: standing
    in its home pose, the user's quadruped carries its weight on its four feet."""
    from pathlib import Path

    from robolearn.tasks.velocity import velocity_env_cfg

    from robolearn.env import ManagerBasedRLEnv
    from robolearn.scene import robot_scene

    model = Path(__file__).parents[1] / "assets" / "user_quadruped" / "robot.xml"
    cfg = velocity_env_cfg(robot_scene(str(model), feet=".._foot", num_envs=2), "base_link")
    cfg.sim.engine = engine
    cfg.events = {}  # the home pose exactly, no pushes
    env = ManagerBasedRLEnv(cfg)
    for _ in range(50):  # 0.8 s holding the home pose
        env.step(torch.zeros(2, env.num_actions))
    weight = float(env.scene.engine.model.body_subtreemass[1]) * 9.81
    up = env.scene.feet_contact_force[..., 2].float()
    assert up.shape == (2, 4)
    assert (up > 0.1 * weight / 4).all(), up  # every foot bears load
    assert up.sum(-1).tolist() == pytest.approx([weight, weight], rel=0.1)


def test_terrain_and_height_scan_agree_with_the_cpu_engine():
    """quadruped_walk_rough on a small terrain, stepped on both engines from the same seed:
    the Warp engine collides with the same height field (the robots stand on stairs, slopes
    and rough ground alike) and the height scans agree within float32 after the steps."""
    from robolearn.env import ManagerBasedRLEnv
    from robolearn.registry import get_task
    from robolearn.terrain import SubTerrainCfg, TerrainCfg

    def env(engine: str) -> ManagerBasedRLEnv:
        cfg = get_task("quadruped_walk_rough").play_env_cfg()
        cfg.scene.num_envs = 6
        types = ("flat", "random_rough", "pyramid_slope", "pyramid_stairs", "pyramid_stairs_inv")
        cfg.scene.terrain = TerrainCfg(
            num_rows=2, num_cols=5, tile_size=(4.0, 4.0), border_width=2.0, level=1,
            sub_terrains={t: SubTerrainCfg(t) for t in types},
        )  # fmt: skip
        cfg.sim.engine = engine
        # every robot at its tile's center in the default pose: no chaotic start
        cfg.events = {k: v for k, v in cfg.events.items() if v.mode == "startup"}
        return ManagerBasedRLEnv(cfg)

    cpu, wrp = env("cpu"), env("warp-cpu")
    assert wrp.scene.engine.name == "warp-cpu"
    for e in (cpu, wrp):
        for _ in range(10):
            e.step(torch.zeros(6, e.num_actions))
    # the robots stand on the same ground (stairs, slopes, rough) on both engines
    assert wrp.nonfinite_resets == 0
    assert bool((wrp.scene.root_height > 0.2).all())
    assert torch.allclose(cpu.scene.root_pos_w, wrp.scene.root_pos_w, atol=1e-2)
    # and from the same state both engines' scans agree within float32
    wrp.scene.engine.qpos[:] = cpu.scene.engine.qpos.to(wrp.scene.engine.dtype)
    wrp.scene.forward(torch.ones(wrp.num_envs, dtype=torch.bool, device=wrp.device))
    scan = cpu.observation_manager.term_slices("policy")["height_scan"]
    a = cpu.observation_manager.compute(update_history=False)["policy"][:, scan]
    b = wrp.observation_manager.compute(update_history=False)["policy"][:, scan]
    assert float(a.abs().max()) > 0.1  # the scans see the terrain's relief
    assert torch.allclose(a, b, atol=1e-4)


def test_entities_behave_alike_on_both_engines():
    """A second robot, a free crate and a fixed post beside the robot: on warp-cpu each
    entity starts where its config puts it, the buddy stands under its own controls and
    the crate rests, as on the cpu engine."""
    from scene.test_entities import scene_cfg

    from robolearn.scene import Scene, SimCfg

    scenes = {e: Scene(scene_cfg(), SimCfg(engine=e)) for e in ("cpu", "warp-cpu")}
    poses = {}
    for name, scene in scenes.items():
        scene.engine.reset(qpos=scene.default_qpos.to(scene.engine.dtype))
        scene.engine.ctrl[:] = scene.default_ctrl.to(scene.engine.dtype)
        scene.step(100)  # 0.5 s
        poses[name] = {
            e: scene.entity_root_pose(e)[0].double() for e in ("robot", "buddy", "crate")
        }
    assert scenes["warp-cpu"].engine.name == "warp-cpu"
    assert not scenes["warp-cpu"].engine.diverged().any()
    warp = poses["warp-cpu"]
    assert bool((warp["buddy"][:, 2] > 0.2).all()) and abs(float(warp["buddy"][0, 1]) - 1) < 0.05
    assert torch.allclose(
        warp["crate"][:, 2], torch.full((2,), 0.1, dtype=torch.float64), atol=3e-3
    )
    for entity in ("robot", "buddy", "crate"):
        assert torch.allclose(poses["cpu"][entity], warp[entity], atol=1e-2), entity


# ---- graphs ------------------------------------------------------------------------------


def test_graph_replays_equal_plain_launches_exactly(humanoid_scene):
    """warp-cpu replays Warp's CPU graphs by default; an engine with plain launches computes
    the same, bit for bit (warp's CPU device runs a replay's launches as the plain calls
    run them, in the same order on the same memory: measured identical over 70 steps, so
    no tolerance), through partial resets and per-env model writes between replays."""
    graphed = make_engine(humanoid_scene, 4, SimCfg(engine="warp-cpu"))
    plain = make_engine(humanoid_scene, 4, SimCfg(engine="warp-cpu", cuda_graph=False))
    graphed.prepare(2)
    graphs = dict(graphed._graphs)
    assert set(graphs) == {("step", 2), "forward", "reset", "forward_if_any_reset"}
    assert plain._graphs == {}
    names = ("qpos", "qvel", "ctrl", "xpos", "sensordata", "cfrc_ext")
    views = {name: getattr(graphed, name) for name in names}
    pointers = {name: view.data_ptr() for name, view in views.items()}
    kick = graphed.model.actuator("right_hip_pitch").id
    torso = graphed.model.body("torso").id
    start = None
    for i in range(24):
        for e in (graphed, plain):
            if i == 0:
                stand(e)
                e.ctrl[:, kick] = -0.8  # every env kicks forward, alike...
            if i == 4:
                e.model_field("geom_friction")[2, :, 0] = 0.02  # ...but env 2 is on ice
                e.model_field("body_mass")[3, torso] *= 3.0  # and env 3 carries a load
                e.set_const([3])
                e.model_field("dof_damping")[1] += 5.0  # and env 1 moves through syrup
            if i == 12:  # env 0 starts again, from a crouch
                qpos = torch.as_tensor(e.model.key("stand").qpos, dtype=e.dtype).clone()
                qpos[2] -= 0.05
                e.reset(torch.tensor([0]), qpos=qpos)
            e.step(2)
        if i == 3:
            start = graphed.qpos.clone()
            # until the writes, every env did the same
            assert all(torch.equal(graphed.qpos[k], graphed.qpos[0]) for k in (1, 2, 3))
    for name in names:
        assert torch.equal(getattr(graphed, name), getattr(plain, name)), name
        # the torch views are the ones bound before the replays, updated in place
        assert getattr(graphed, name) is views[name], name
        assert views[name].data_ptr() == pointers[name], name
    assert not torch.equal(views["qpos"], start)
    # each write changed its env's physics in the graph (as in the plain engine)
    final = graphed.qpos
    assert not torch.equal(final[1], final[2]) and not torch.equal(final[2], final[3])
    assert not torch.equal(final[0], final[1])  # the reset one
    assert all(graphed._graphs[key] is graph for key, graph in graphs.items())  # none anew


def test_prepare_captures_up_front_and_other_counts_later(humanoid_scene, monkeypatch):
    from robolearn.sim.mjwarp import WarpEngine

    e = make_engine(humanoid_scene, 2, SimCfg(engine="warp-cpu"))
    assert e._graphs == {}  # construction captures nothing
    e.prepare(3)
    assert set(e._graphs) == {("step", 3), "forward", "reset", "forward_if_any_reset"}
    captured = []

    def capture(key, fn):
        captured.append(key)
        return WarpEngine._capture(e, key, fn)

    monkeypatch.setattr(e, "_capture", capture)
    stand(e)
    e.step(3)
    e.forward()
    e.reset(torch.tensor([1]))
    e.prepare(3)
    assert captured == []  # the env step replays what prepare captured
    e.step(1)  # another count is captured on its first call
    assert captured == [("step", 1)]
    assert torch.isfinite(e.qpos).all()
    with pytest.raises(RobolearnError, match="nsubsteps"):
        e.prepare(0)
    make_engine(humanoid_scene, 2, SimCfg(engine="cpu")).prepare(3)  # nothing to capture there


def test_the_gpus_forward_in_every_step_changes_no_state(humanoid_scene):
    """On CUDA the env step's graph runs the forward after resets in every step (CUDA
    refuses a conditional node whose body allocates, and MuJoCo Warp's forward allocates).
    warp-cpu replays that graph when asked to: the envs go on bit for bit as with the
    forward only after resets, with their derived fields current after every step."""
    cond = make_engine(humanoid_scene, 4, SimCfg(engine="warp-cpu"))
    every = make_engine(humanoid_scene, 4, SimCfg(engine="warp-cpu"))
    assert cond.forward_only_after_resets  # off CUDA, the conditional node
    every.forward_only_after_resets = False  # what the cuda engine does
    kick = cond.model.actuator("right_hip_pitch").id
    none = torch.zeros(4, dtype=torch.bool)
    env2 = torch.tensor([False, False, True, False])
    for e in (cond, every):
        e.prepare(2)
        stand(e)
        e.ctrl[:, kick] = -0.8
    moved = False
    for i in range(16):
        for e in (cond, every):
            e.step(2)
            e.reset_where(env2 if i == 8 else none)  # env 2 starts again at step 8
        for name in ("qpos", "qvel", "time"):
            assert torch.equal(getattr(cond, name), getattr(every, name)), (name, i)
        warm = [e.d.qacc_warmstart.numpy() for e in (cond, every)]  # the solver's start
        assert (warm[0] == warm[1]).all(), i
        # derived fields: current in every step on the GPU's way, one substep behind in a
        # step with no reset on the conditional one
        moved |= not torch.equal(cond.xpos, every.xpos)
        if i == 8:
            assert torch.equal(cond.xpos, every.xpos)  # a reset: both ran the forward
    assert moved
    current = make_engine(humanoid_scene, 4, SimCfg(engine="warp-cpu"))
    current.qpos[:] = every.qpos
    current.qvel[:] = every.qvel
    current.forward()
    assert torch.equal(current.xpos, every.xpos)


def test_warm_up_leaves_the_state_as_it_was(humanoid_scene):
    """Kernels load before a capture by running reset, forward and a step once on the
    real data, which is saved and restored around that: preparing changes no state."""
    e = make_engine(humanoid_scene, 2, SimCfg(engine="warp-cpu"))
    qpos, ctrl = stand_state(e)
    e.qpos[:] = qpos  # written by torch, no reset (which would capture, so warm up)
    e.qvel[1, 0] = 0.5
    e.ctrl[:] = ctrl
    before = {name: getattr(e, name).clone() for name in ("qpos", "qvel", "time", "xpos")}
    assert not e._warmed_up
    e.prepare(4)  # the first capture in this engine: the warm-up runs here
    assert e._warmed_up
    for name, value in before.items():
        assert torch.equal(getattr(e, name), value), name


def test_a_failed_capture_turns_the_garbage_collector_back_on(humanoid_scene):
    import gc

    e = make_engine(humanoid_scene, 2, SimCfg(engine="warp-cpu"))

    def broken() -> None:
        raise RuntimeError("broken launch")

    with pytest.raises(RuntimeError, match="broken launch"):
        e._capture("broken", broken)
    assert gc.isenabled()
    e.prepare(2)  # and the next capture works
    e.step(2)
    assert "broken" not in e._graphs


def test_without_graph_support_one_warning_then_plain_launches(humanoid_scene, monkeypatch):
    import warnings

    from robolearn.sim import mjwarp

    monkeypatch.setattr(mjwarp, "graphs_unsupported", lambda wp, device, model: "no graphs here")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        e = make_engine(humanoid_scene, 2, SimCfg(engine="warp-cpu"))
        e.prepare(2)
        stand(e)
        for _ in range(3):
            e.step(2)
        e.forward()
        quiet = make_engine(
            humanoid_scene, 2, SimCfg(engine="warp-cpu", cuda_graph=False)
        )  # asked for
        quiet.step(2)
    messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(messages) == 1, messages
    assert "without graphs: no graphs here" in messages[0]
    assert "one by one" in messages[0]  # what it costs
    assert e._graphs == {} and quiet._graphs == {}
    assert torch.isfinite(e.qpos).all()


def test_graph_support_check():
    """Where graphs are refused and why, on fakes of warp (CUDA is not here to ask)."""
    from types import SimpleNamespace as Fake

    from robolearn.sim.mjwarp import graphs_unsupported

    cpu, gpu = Fake(is_cpu=True), Fake(is_cpu=False)
    model = Fake(opt=Fake(graph_conditional=True))

    def warp(version="1.19.0", mempool=True, conditional=True):
        return Fake(
            __version__=version,
            is_mempool_enabled=lambda device: mempool,
            is_conditional_graph_supported=lambda: conditional,
            get_cuda_driver_version=lambda: (12, 2),
            get_cuda_toolkit_version=lambda: (12, 8),
        )

    assert graphs_unsupported(warp(), cpu, model) is None
    assert "older than the 1.19" in graphs_unsupported(warp("1.18.2"), cpu, model)
    assert graphs_unsupported(warp(), gpu, model) is None
    assert "memory pool is disabled" in graphs_unsupported(warp(mempool=False), gpu, model)
    reason = graphs_unsupported(warp(conditional=False), gpu, model)
    assert "conditional graph nodes" in reason and "driver (12, 2)" in reason
    # a model whose solver does not loop in a conditional node needs none
    plain_loop = Fake(opt=Fake(graph_conditional=False))
    assert graphs_unsupported(warp(conditional=False), gpu, plain_loop) is None
