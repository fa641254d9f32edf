"""What the term tests compare with: a task's env without its random events, states
written by hand, and MuJoCo's own view of them on an MjData (mj_objectVelocity for body
velocities, mj_contactForce for contact forces, sensordata, actuator_force, qacc)."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import torch

from robolearn.env import ManagerBasedRLEnv
from robolearn.registry import get_task

F32 = torch.float32
# terms compute in float32 from float64 MuJoCo state
TOL = {"atol": 1e-4, "rtol": 1e-5}
FEET = ("left_foot", "right_foot")


def make(task: str, num_envs: int) -> ManagerBasedRLEnv:
    """A task on the cpu engine without its random events (friction, mass, gains, initial
    state, pushes): every env runs the compiled model, as an MjData of it does."""
    cfg = get_task(task).env_cfg()
    cfg.scene.num_envs = num_envs
    cfg.sim.engine = "cpu"
    cfg.events = {}
    return ManagerBasedRLEnv(cfg)


# ---- state by hand, and MuJoCo's view of it ---------------------------------------------


def set_state(env, qpos, qvel=None, ctrl=None) -> None:
    """Write the state of every env, run the forward pass, drop the scene's cache."""
    e = env.scene.engine
    e.qpos[:] = torch.as_tensor(qpos, dtype=e.dtype)
    e.qvel[:] = 0.0 if qvel is None else torch.as_tensor(qvel, dtype=e.dtype)
    if ctrl is not None:
        e.ctrl[:] = torch.as_tensor(ctrl, dtype=e.dtype)
    env.scene.forward(torch.ones(env.num_envs, dtype=torch.bool, device=env.device))


def mj_data(env, i: int) -> mujoco.MjData:
    """A fresh MjData of the env's model holding env ``i``'s state, forward computed."""
    m = env.scene.engine.model
    d = mujoco.MjData(m)
    d.qpos[:] = env.scene.engine.qpos[i].numpy()
    d.qvel[:] = env.scene.engine.qvel[i].numpy()
    d.ctrl[:] = env.scene.engine.ctrl[i].numpy()
    mujoco.mj_forward(m, d)
    return d


def body_velocity(env, d, body: str, local: bool) -> tuple[np.ndarray, np.ndarray]:
    """(linear, angular) velocity of a body's frame origin, MuJoCo's mj_objectVelocity:
    in the body's frame (``local``) or the world's."""
    res = np.zeros(6)
    bid = env.scene.engine.model.body(body).id
    mujoco.mj_objectVelocity(
        env.scene.engine.model, d, mujoco.mjtObj.mjOBJ_XBODY, bid, res, int(local)
    )
    return res[3:6], res[0:3]


def contact_force(env, d, bodies) -> np.ndarray:
    """(len(bodies), 3) world force the contacts put on each body, summed from MuJoCo's
    contact list (mj_contactForce, in each contact's frame; geom2 is pushed along +normal)."""
    m = env.scene.engine.model
    ids = [m.body(b).id for b in bodies]
    total = np.zeros((len(bodies), 3))
    f6 = np.zeros(6)
    for c in range(d.ncon):
        con = d.contact[c]
        mujoco.mj_contactForce(m, d, c, f6)
        world = con.frame.reshape(3, 3).T @ f6[:3]
        for k, b in enumerate(ids):
            if m.geom_bodyid[con.geom2] == b:
                total[k] += world
            if m.geom_bodyid[con.geom1] == b:
                total[k] -= world
    return total


def per_env(env, fn) -> torch.Tensor:
    """Stack ``fn(d)`` over the envs, d an MjData of each env's state."""
    return torch.as_tensor(np.stack([fn(mj_data(env, i)) for i in range(env.num_envs)]), dtype=F32)


def check(value: torch.Tensor, expected, env, dtype=F32, **tol) -> None:
    """A term's value: its shape and dtype, on the env's device, equal to ``expected``."""
    expected = torch.as_tensor(expected)
    assert value.shape == expected.shape, (value.shape, expected.shape)
    assert value.dtype == dtype, value.dtype
    assert value.device == env.device
    torch.testing.assert_close(value, expected.to(dtype), **(tol or TOL))


def joint(env, name: str) -> int:
    """qpos column of a hinge joint."""
    return int(env.scene.engine.model.joint(name).qposadr[0])


def dof(env, name: str) -> int:
    """qvel column of a hinge joint."""
    return int(env.scene.engine.model.joint(name).dofadr[0])


def keyframe(env) -> torch.Tensor:
    return torch.as_tensor(env.scene.engine.model.key("stand").qpos, dtype=torch.float64)


def poses(env, *kinds: str) -> torch.Tensor:
    """One humanoid qpos row per env from its standing keyframe.

    ``stand``: both feet pressed 5 mm into the floor; ``air``: 0.3 m above it; ``left_up``:
    pressed down, left leg bent so that only the right foot touches; ``high``: 2 m up.
    """
    rows = keyframe(env).repeat(len(kinds), 1)
    for row, kind in zip(rows, kinds, strict=True):
        row[2] += {"stand": -0.005, "air": 0.3, "left_up": -0.005, "high": 1.3}[kind]
        if kind == "left_up":
            row[joint(env, "left_hip_pitch")] -= 0.4
            row[joint(env, "left_knee")] += 0.8
    return rows


def random_quats(rng, n: int) -> torch.Tensor:
    q = torch.as_tensor(rng.normal(size=(n, 4)))
    return q / q.norm(dim=-1, keepdim=True)


def tilted(roll: float) -> torch.Tensor:
    return torch.tensor([math.cos(roll / 2), math.sin(roll / 2), 0.0, 0.0], dtype=torch.float64)


def quat_about_z(angles) -> torch.Tensor:
    a = torch.as_tensor(angles, dtype=torch.float64)
    zero = torch.zeros_like(a)
    return torch.stack((torch.cos(a / 2), zero, zero, torch.sin(a / 2)), dim=-1)
