"""Camera randomization: each env's camera pose, field of view and lighting drawn anew, so
that a policy that reads images does not learn one camera's exact view (mjlab randomizes
``cam_pos``, ``cam_fovy`` and the lights' colours per env likewise).

Use it as a ``reset`` event (redrawn each episode) or a ``startup`` one (once per env).
"""

from __future__ import annotations

import math

import torch

from robolearn.config import check_range
from robolearn.errors import RobolearnError
from robolearn.managers.base import as_env_mask
from robolearn.math import quat_from_euler_xyz, quat_mul, sample_uniform
from robolearn.mdp.protocol import TaskEnv
from robolearn.mdp.sensor_terms import scene_sensor
from robolearn.scene.sensors import Camera

Triple = tuple[float, float, float]


def randomize_camera(
    env: TaskEnv,
    env_mask: torch.Tensor,
    sensor: str,
    pos_jitter: Triple = (0.0, 0.0, 0.0),
    rot_jitter: Triple = (0.0, 0.0, 0.0),
    fov_y_range: tuple[float, float] | None = None,
    light_scale_range: tuple[float, float] | None = None,
) -> None:
    """Draw, for each env in ``env_mask``, camera ``sensor``'s pose as its config's
    ``offset`` plus uniform(-``pos_jitter``, ``pos_jitter``) m per axis of the body's frame
    and its ``rot`` turned by uniform(-``rot_jitter``, ``rot_jitter``) degrees of roll,
    pitch and yaw about the camera's own axes; its vertical field of view uniform in
    ``fov_y_range`` degrees (None: the config's); and the model lights' diffuse colour
    times uniform(``light_scale_range``) (None: unchanged)."""
    cam = scene_sensor(env, sensor, Camera)
    what = f"randomize_camera({sensor!r})"
    for name, value in (("pos_jitter", pos_jitter), ("rot_jitter", rot_jitter)):
        if len(value) != 3 or any(not v >= 0 for v in value):
            raise RobolearnError(f"{what}: {name} must be 3 numbers >= 0, got {value!r}")
    if fov_y_range is not None:
        low, high = check_range(fov_y_range, f"{what}: fov_y_range", floor=None)
        if low <= 0 or high >= 180:
            raise RobolearnError(f"{what}: fov_y_range lies in (0, 180) degrees, got {fov_y_range}")
    if light_scale_range is not None:
        check_range(light_scale_range, f"{what}: light_scale_range")
        if env.scene.model.nlight == 0:
            raise RobolearnError(
                f"{what}: the model has no lights to scale (add a <light> to the MJCF)"
            )
    mask = as_env_mask(env, env_mask)
    n, dev, cfg = env.num_envs, env.device, cam.cfg
    jitter = torch.tensor(pos_jitter, device=dev)
    offset = torch.tensor(cfg.offset, device=dev) + jitter * (2 * torch.rand(n, 3, device=dev) - 1)
    angles = torch.tensor([math.radians(a) for a in rot_jitter], device=dev)
    turn = angles * (2 * torch.rand(n, 3, device=dev) - 1)
    nominal = torch.tensor(cfg.rot, device=dev).expand(n, 4)
    rot = quat_mul(nominal, quat_from_euler_xyz(turn[:, 0], turn[:, 1], turn[:, 2]))
    fov = None if fov_y_range is None else sample_uniform(*fov_y_range, (n,), dev)
    light = None if light_scale_range is None else sample_uniform(*light_scale_range, (n,), dev)
    cam.set_view(mask, offset=offset, rot=rot, fov_y=fov, light_scale=light)
