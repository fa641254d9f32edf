"""The cpu engine (mujoco.batch): zero-copy views, resets, per-env parameters, determinism."""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pytest
import torch
from conftest import SLIDER_XML, stand_state

from robolearn.sim import SimCfg, make_engine, messages


def random_ctrl(engine, generator: torch.Generator) -> torch.Tensor:
    lo, hi = (torch.as_tensor(engine.model.actuator_ctrlrange[:, i]) for i in (0, 1))
    u = torch.rand(engine.num_envs, engine.model.nu, generator=generator, dtype=torch.float64)
    return lo + (hi - lo) * u


def rollout(engine, steps: int, seed: int) -> torch.Tensor:
    """qpos after each of ``steps`` env steps of random controls, from the standing pose."""
    qpos0, _ = stand_state(engine)
    engine.reset(qpos=qpos0)
    gen = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(steps):
        engine.ctrl[:] = random_ctrl(engine, gen)
        engine.step(2)
        out.append(engine.qpos.clone())
    return torch.stack(out)


def test_fields_are_views_of_batch_memory(humanoid_scene):
    engine = make_engine(humanoid_scene, 4, SimCfg(engine="cpu"))
    batch = engine.batch
    for name in ("qpos", "qvel", "ctrl", "xpos", "xquat", "sensordata", "cfrc_ext", "qacc"):
        assert getattr(engine, name).data_ptr() == batch.bind(name).ctypes.data, name
    assert engine.site_xmat.data_ptr() == batch.bind("site_xmat").ctypes.data
    assert engine.qpos.dtype == torch.float64 and engine.qpos.shape == (4, engine.model.nq)
    assert engine.model_field("body_mass").data_ptr() == batch.expand("body_mass").ctypes.data


def test_ctrl_written_through_torch_drives_the_next_step(humanoid_scene):
    engine = make_engine(humanoid_scene, 2, SimCfg(engine="cpu"))
    qpos0, ctrl0 = stand_state(engine)
    engine.reset(qpos=qpos0)
    qpos_view = engine.qpos
    knee = engine.model.actuator("left_knee").id
    knee_q = engine.model.jnt_qposadr[engine.model.joint("left_knee").id]
    engine.ctrl[:] = ctrl0
    engine.ctrl[1, knee] = 2.0  # only env 1 bends its knee further
    engine.step(20)
    # The tensor we held before stepping is the new state: no re-binding, no copy.
    assert qpos_view is engine.qpos
    assert qpos_view[1, knee_q] > qpos_view[0, knee_q] + 0.3
    assert engine.actuator_force[1, knee] != engine.actuator_force[0, knee]


def test_subset_reset_leaves_other_envs_untouched(humanoid_scene):
    ref = make_engine(humanoid_scene, 6, SimCfg(engine="cpu"))
    eng = make_engine(humanoid_scene, 6, SimCfg(engine="cpu"))
    for e in (ref, eng):
        e.reset(qpos=stand_state(e)[0])
    gen_a, gen_b = torch.Generator().manual_seed(1), torch.Generator().manual_seed(1)
    for step in range(30):
        u_ref, u = random_ctrl(ref, gen_a), random_ctrl(eng, gen_b)
        ref.ctrl[:] = u_ref
        eng.ctrl[:] = u
        ref.step(2)
        eng.step(2)
        if step == 10:
            eng.reset(torch.tensor([1, 4]))
            assert torch.equal(eng.qpos[1], torch.as_tensor(eng.model.qpos0))
            assert torch.all(eng.qvel[[1, 4]] == 0)
    keep = [0, 2, 3, 5]
    assert torch.equal(eng.qpos[keep], ref.qpos[keep])
    assert torch.equal(eng.qvel[keep], ref.qvel[keep])
    assert not torch.equal(eng.qpos[1], ref.qpos[1])


def test_reset_to_given_state_makes_derived_fields_current(humanoid_scene):
    engine = make_engine(humanoid_scene, 3, SimCfg(engine="cpu"))
    qpos0, _ = stand_state(engine)
    qpos = qpos0.repeat(2, 1)
    qpos[:, 0] = torch.tensor([1.0, -2.0])  # move the root in x
    engine.reset(torch.tensor([0, 2]), qpos=qpos)
    pelvis = engine.model.body("pelvis").id
    expected = torch.tensor([1.0, -2.0], dtype=torch.float64)
    assert torch.allclose(engine.xpos[[0, 2], pelvis, 0], expected)
    assert torch.equal(engine.qpos[1], torch.as_tensor(engine.model.qpos0))


def test_per_env_friction_changes_only_that_env():
    engine = make_engine(SLIDER_XML, 4, SimCfg(engine="cpu"))
    friction = engine.model_field("geom_friction")
    box = engine.model.geom("box").id
    floor = engine.model.geom("floor").id
    friction[2, [box, floor], 0] = 0.05  # env 2 on ice
    qvel = torch.zeros(4, 6, dtype=torch.float64)
    qvel[:, 0] = 2.0  # every box slides along x at 2 m/s
    engine.reset(qvel=qvel)
    engine.step(100)
    x = engine.qpos[:, 0]
    assert x[2] > x[0] + 0.3
    assert torch.equal(x[0], x[1]) and torch.equal(x[0], x[3])


def test_per_env_mass_changes_only_that_env():
    engine = make_engine(SLIDER_XML, 3, SimCfg(engine="cpu"))
    box = engine.model.body("box").id
    engine.model_field("body_mass")[1, box] = 4.0
    engine.reset()
    engine.xfrc_applied[:, box, 2] = 30.0  # lift every box with the same force
    engine.step(40)
    z = engine.qpos[:, 2]
    assert z[0] > 0.1 and z[1] < 0.06  # 30 N lifts 1 kg, not 4 kg
    assert torch.equal(z[0], z[2])


def test_a_mass_change_moves_a_simple_body_as_its_new_mass_after_set_const():
    """MuJoCo treats a free body with one geom as "simple" and computes its mass matrix
    from body_mass once: without set_const a 4 kg box accelerates under 10 N like the 1 kg
    box it was compiled as (gravity alone, m g, does use the new mass)."""
    engine = make_engine(SLIDER_XML, 3, SimCfg(engine="cpu"))
    box = engine.model.body("box").id
    engine.model_field("body_mass")[1, box] = 4.0
    engine.reset()
    engine.qpos[:, 2] = 1.0  # in the air: no contact
    engine.xfrc_applied[:, box, 0] = 10.0
    engine.set_const(torch.tensor([1]))
    engine.forward()
    assert engine.qacc[:, 0].tolist() == pytest.approx([10.0, 2.5, 10.0])
    assert engine.qpos[1, 2] == 1.0  # the state is kept


def test_bit_identical_across_thread_counts_and_runs(humanoid_scene):
    one = rollout(make_engine(humanoid_scene, 8, SimCfg(engine="cpu", nthread=1)), 40, seed=3)
    two = rollout(make_engine(humanoid_scene, 8, SimCfg(engine="cpu", nthread=2)), 40, seed=3)
    again = rollout(make_engine(humanoid_scene, 8, SimCfg(engine="cpu", nthread=2)), 40, seed=3)
    assert torch.equal(one, two)
    assert torch.equal(two, again)
    assert not torch.equal(one[-1, 0], one[-1, 1])  # the envs did different things


def test_bit_identical_to_a_plain_mj_step_loop(humanoid_scene):
    engine = make_engine(humanoid_scene, 3, SimCfg(engine="cpu"))
    trajectory = rollout(engine, 30, seed=7)
    model = engine.model
    gen = torch.Generator().manual_seed(7)
    datas = [mujoco.MjData(model) for _ in range(3)]
    for d in datas:
        d.qpos[:] = model.key("stand").qpos
        mujoco.mj_forward(model, d)
    for t in range(30):
        ctrl = random_ctrl(engine, gen).numpy()
        for i, d in enumerate(datas):
            d.ctrl[:] = ctrl[i]
            mujoco.mj_step(model, d, nstep=2)
            assert np.array_equal(d.qpos, trajectory[t, i].numpy()), (t, i)


def test_contact_forces_carry_the_robot_weight(humanoid_scene):
    engine = make_engine(humanoid_scene, 2, SimCfg(engine="cpu"))
    qpos0, ctrl0 = stand_state(engine)
    engine.reset(qpos=qpos0)
    engine.ctrl[:] = ctrl0
    engine.step(60)
    feet = [engine.model.body(n).id for n in ("left_foot", "right_foot")]
    weight = engine.model.body_subtreemass[1] * 9.81
    vertical = engine.contact_force[:, feet, 2].sum(-1)
    assert torch.allclose(vertical, torch.full_like(vertical, weight), rtol=0.1)
    touch = engine.sensordata[:, -2:].sum(-1)  # the foot touch sensors agree
    assert torch.allclose(touch, vertical, rtol=0.1)


def test_body_velocity_matches_mujoco(humanoid_scene):
    engine = make_engine(humanoid_scene, 2, SimCfg(engine="cpu"))
    gen = torch.Generator().manual_seed(0)
    qvel = torch.randn(2, engine.model.nv, generator=gen, dtype=torch.float64)
    engine.reset(qpos=stand_state(engine)[0], qvel=qvel)
    engine.forward()
    lin, ang = engine.body_velocity()
    model = engine.model
    data = engine.batch.get_data(1)
    mujoco.mj_forward(model, data)
    res = np.zeros(6)
    for body in ("pelvis", "left_foot", "right_forearm"):
        b = model.body(body).id
        mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_XBODY, b, res, 0)
        np.testing.assert_allclose(ang[1, b].numpy(), res[:3], atol=1e-9)
        np.testing.assert_allclose(lin[1, b].numpy(), res[3:], atol=1e-9)


def test_diverged_env_is_reported_once_and_alone(humanoid_scene):
    engine = make_engine(humanoid_scene, 4, SimCfg(engine="cpu"))
    engine.reset(qpos=stand_state(engine)[0])
    engine.qvel[2, 0] = float("nan")
    engine.step(1)  # MuJoCo resets simulation 2 inside the step and warns
    assert engine.diverged().tolist() == [False, False, True, False]
    engine.step(1)
    assert not engine.diverged().any()
    engine.qpos[1, 3] = float("inf")  # a bad state written between steps
    engine.step(1)
    assert engine.diverged().tolist() == [False, True, False, False]
    assert torch.isfinite(engine.qpos).all()  # MuJoCo reset it


def test_diverged_is_the_check_and_nonfinite_its_older_name(humanoid_scene):
    engine = make_engine(humanoid_scene, 3, SimCfg(engine="cpu"))
    engine.reset(qpos=stand_state(engine)[0])
    engine.qvel[1, 0] = float("nan")
    engine.step(1)
    assert engine.diverged().tolist() == [False, True, False]
    engine.qvel[0, 0] = float("nan")
    engine.step(1)
    assert engine.diverged().tolist() == [True, False, False]  # the same check, once


def test_engine_times_its_own_calls_only_when_asked(humanoid_scene):
    engine = make_engine(humanoid_scene, 4, SimCfg(engine="cpu"))
    assert engine.timer is None
    with engine.timed() as timer:
        engine.reset(qpos=stand_state(engine)[0])  # forwards the reset envs inside
        for _ in range(3):
            engine.step(2)
            engine.diverged()
        engine.forward_envs(torch.tensor([1]))
        engine.reset_where(torch.tensor([True, False, False, False]))  # the env step's form
    assert engine.timer is None  # restored after the block
    counted = {k: v for k, v in timer.calls.items() if v}
    assert counted == {"step": 3, "forward_envs": 1, "reset": 1, "reset_where": 1, "diverged": 3}
    assert all(timer.seconds[c] > 0 for c in ("step", "forward_envs", "reset", "diverged"))
    assert timer.seconds["forward"] == 0.0
    assert timer.total() == pytest.approx(sum(timer.seconds.values()))
    assert timer.total("step", "reset") == timer.seconds["step"] + timer.seconds["reset"]
    engine.step(1)  # outside the block: not counted
    assert timer.calls["step"] == 3
    timer.clear()
    assert timer.total() == 0.0 and not any(timer.calls.values())


@pytest.mark.parametrize("nthread", [1, 2])
def test_thread_count_is_honoured(humanoid_scene, nthread):
    assert (
        make_engine(humanoid_scene, 4, SimCfg(engine="cpu", nthread=nthread)).batch.nthread
        == nthread
    )


# A box on a slide joint pushed by an unlimited motor (tests/assets/exploding_slider.xml).
EXPLODING = str(Path(__file__).parents[1] / "assets" / "exploding_slider.xml")


def test_env_diverging_in_every_step_is_reported_in_every_step():
    """MuJoCo's reset inside mj_step zeroes the warning counters and counts the warning
    again, so an env that diverges in every step holds 1 after each step: it was reported
    the first time only, and then trained on as if healthy."""
    engine = make_engine(EXPLODING, 3, SimCfg(engine="cpu"))
    engine.model_field("actuator_gainprm")[1, 0, 0] = 1e12  # env 1: 1e12 N on 1 kg (bad qacc)
    engine.reset()
    for _ in range(5):
        engine.ctrl[:] = 1.0
        engine.step(2)
        assert engine.diverged().tolist() == [False, True, False]
    for _ in range(3):  # a NaN control (MuJoCo zeroes it and warns) in every step, env 2
        engine.ctrl[:] = 0.0
        engine.ctrl[2] = float("nan")
        engine.step(2)
        assert engine.diverged().tolist() == [False, False, True]
    engine.ctrl[:] = 0.0
    engine.step(2)
    assert not engine.diverged().any()


def test_mujoco_warnings_are_rate_limited_per_kind(capfd):
    """A diverging env warns in every step once reset: without a limit, thousands of lines
    per iteration (18k in 3 iterations of cartpole); with it, one per kind per interval."""
    make_engine(EXPLODING, 1, SimCfg(engine="cpu"))
    assert mujoco.get_mju_user_warning() is messages._limiter  # installed by make_engine
    lines: list[str] = []
    limiter = messages.WarningLimiter(interval_s=3600, write=lines.append)
    previous = mujoco.get_mju_user_warning()
    mujoco.set_mju_user_warning(limiter)
    try:
        engine = make_engine(EXPLODING, 64, SimCfg(engine="cpu", nthread=2))
        engine.model_field("actuator_gainprm")[:, 0, 0] = 1e12
        engine.reset()
        for _ in range(20):
            engine.ctrl[:] = 1.0
            engine.step(2)
            flagged = engine.diverged()
            engine.reset(flagged)  # as the env does: the counters restart at 0, MuJoCo warns
            engine.ctrl[:] = 1e30  # and a second kind of warning: bad controls
            engine.step(1)
            engine.reset(engine.diverged())
    finally:
        mujoco.set_mju_user_warning(previous)
    assert limiter.total >= 2 * 20 * 64
    assert len(lines) == 2 and "QACC" in lines[0] and "CTRL" in lines[1], lines
    limiter.flush(force=True)
    assert len(lines) == 4 and f"x{limiter.total // 2 - 1}" in lines[2] + lines[3], lines
    out, err = capfd.readouterr()
    assert "Nan, Inf" not in out + err  # MuJoCo printed nothing itself


def test_warning_limiter_summarizes_each_kind_once_per_interval():
    now = [0.0]
    lines: list[str] = []
    limiter = messages.WarningLimiter(interval_s=10, write=lines.append, clock=lambda: now[0])
    limiter("Nan, Inf or huge value in QACC at DOF 0. Time = 0.0100.")
    for t in range(1, 10):
        now[0] = float(t)
        limiter(f"Nan, Inf or huge value in QACC at DOF {t}. Time = {t}.0000.")
    assert len(lines) == 1
    limiter.flush()  # the interval has not passed: nothing yet
    assert len(lines) == 1
    now[0] = 10.0
    limiter("Nan, Inf or huge value in QACC at DOF 3. Time = 9.0000.")
    assert len(lines) == 2 and lines[1].startswith("MuJoCo warning x10 in the last 10 s")
    limiter("Too many contacts: increase nconmax")  # another kind: printed at once
    assert len(lines) == 3 and "nconmax" in lines[2]
    now[0] = 30.0
    limiter("Nan, Inf or huge value in QACC at DOF 1. Time = 0.0000.")
    assert lines[3].startswith("MuJoCo warning x1 in the last 20 s")
    limiter.flush(force=True)  # nothing held back
    assert len(lines) == 4
