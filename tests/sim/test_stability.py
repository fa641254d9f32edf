"""The timestep check (robolearn.sim.stability): the limit it computes is where MuJoCo's
own stepping of a position actuator turns unstable, and a task beyond it is refused before
anything is built or written."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest
from cli_helpers import robolearn

from robolearn.errors import RobolearnError
from robolearn.sim.stability import check_timestep, stiffest_joint

# A rod on a hinge, no gravity, held at 0 by a position actuator of kp 50 and no damping:
# inertia 0.02 (body) + 0.005 (armature) about the hinge, so w = sqrt(50 / 0.025) rad/s.
_HINGE = """
<mujoco>
  <option timestep="{dt}" gravity="0 0 0" integrator="{integrator}"/>
  <worldbody>
    <body>
      <joint name="hinge" type="hinge" axis="0 0 1" armature="0.005"/>
      <geom type="sphere" size="0.01" mass="1e-6" contype="0" conaffinity="0"/>
      <inertial pos="0 0 0" mass="1" diaginertia="0.02 0.02 0.02"/>
    </body>
  </worldbody>
  <actuator><position joint="hinge" kp="50"/></actuator>
</mujoco>
"""
_OMEGA = math.sqrt(50 / 0.025)


def _hinge(dt: float, integrator: str = "implicitfast") -> mujoco.MjModel:
    return mujoco.MjModel.from_xml_string(_HINGE.format(dt=dt, integrator=integrator))


def _largest_swing(model: mujoco.MjModel, steps: int = 400) -> float:
    """The largest angle over ``steps`` steps from 0.1 rad (MuJoCo resets a simulation it
    finds diverged, so the largest, not the last)."""
    data = mujoco.MjData(model)
    data.qpos[0] = 0.1
    largest = 0.1
    for _ in range(steps):
        mujoco.mj_step(model, data)
        largest = max(largest, abs(float(data.qpos[0])))
    return largest


@pytest.mark.parametrize("integrator, edge", [("implicitfast", 2.0), ("RK4", 2 * math.sqrt(2))])
def test_the_limit_is_where_mujoco_stepping_turns_unstable(integrator, edge):
    limit = stiffest_joint(_hinge(0.001, integrator))
    assert limit is not None and limit.joint == "hinge"
    assert limit.frequency == pytest.approx(_OMEGA, rel=1e-6)
    assert limit.max_timestep == pytest.approx(edge / _OMEGA, rel=1e-6)
    # MuJoCo's own steps: bounded just inside the limit, growing without bound just past it
    assert _largest_swing(_hinge(0.97 * limit.max_timestep, integrator)) < 1.0
    assert _largest_swing(_hinge(1.03 * limit.max_timestep, integrator)) > 1e3
    check_timestep(_hinge(0.97 * limit.max_timestep, integrator))
    with pytest.raises(RobolearnError, match=r"physics_dt .* cannot be stable.*joint hinge"):
        check_timestep(_hinge(1.03 * limit.max_timestep, integrator))


def test_no_position_feedback_no_limit():
    model = mujoco.MjModel.from_xml_string(
        _HINGE.replace('kp="50"', 'kp="0"').format(dt=0.5, integrator="Euler")
    )
    assert stiffest_joint(model) is None
    check_timestep(model)


def test_the_shipped_robots_are_well_inside_their_limits():
    """The limits of our robots at their keyframes (these are the figures docs/training.md
    quotes), and each default timestep under a third of its limit."""
    from robolearn.assets import asset_path

    for name, expected in (("humanoid", 0.0332), ("quadruped", 0.0361)):
        model = mujoco.MjModel.from_xml_path(str(asset_path(f"{name}/scene.xml")))
        limit = stiffest_joint(model, np.asarray(model.key_qpos[0]))
        assert limit.max_timestep == pytest.approx(expected, abs=5e-4), name
        assert model.opt.timestep < limit.max_timestep / 3


def test_a_task_beyond_its_limit_is_refused_before_a_run_folder_is_left(tmp_path):
    """humanoid_walk at physics_dt=0.1 (before: trained to the end with rewards of -1e21)."""
    out = robolearn(
        "train",
        "--task",
        "humanoid_walk",
        "--num_envs",
        4,
        "--log_root",
        tmp_path,
        "env.sim.physics_dt=0.1",
    )
    assert out.returncode == 2, (out.stdout[-2000:], out.stderr[-2000:])
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in out.stderr, lines
    assert "sim.physics_dt 0.1 s cannot be stable" in lines[0]
    assert "needs physics_dt < 0.0332 s" in lines[0]
    assert not (tmp_path / "humanoid_walk").exists()


@pytest.mark.parametrize("integrator", ["Euler", "RK4"])
def test_an_actuators_damping_stepped_explicitly_has_its_limit_too(integrator):
    """Euler and RK4 step a position actuator's kv explicitly: a damper kd on inertia m
    grows without bound past timestep 2 m / kd (a light wrist meets it before its spring's
    limit); implicitfast steps it implicitly, with no such limit."""
    damper = _HINGE.replace('kp="50"', 'kp="1e-6" kv="5"')
    limit = 2 * 0.025 / 5

    def model(dt: float, integrator: str) -> mujoco.MjModel:
        return mujoco.MjModel.from_xml_string(damper.format(dt=dt, integrator=integrator))

    def fastest(m: mujoco.MjModel) -> float:
        data = mujoco.MjData(m)
        data.qvel[0] = 1.0
        largest = 1.0
        for _ in range(400):
            mujoco.mj_step(m, data)
            largest = max(largest, abs(float(data.qvel[0])))
        return largest

    if integrator == "Euler":  # MuJoCo's own Euler steps: bounded inside, growing past
        assert fastest(model(0.97 * limit, integrator)) <= 1.0
        assert fastest(model(1.03 * limit, integrator)) > 1e3
    check_timestep(model(0.97 * limit, integrator))
    with pytest.raises(RobolearnError, match=r"actuator damping .* sim.integrator=implicitfast"):
        check_timestep(model(1.03 * limit, integrator))
    check_timestep(model(1.03 * limit, "implicitfast"))
    assert fastest(model(1.03 * limit, "implicitfast")) <= 1.0
