"""Terms that read the scene's sensors (``SceneCfg.sensors``) by name: ray distances,
camera images, contact states, and Isaac Lab's air-time and contact-count rewards over a
contact sensor.

The height scan over a ray caster is :class:`robolearn.mdp.height_scan` with ``sensor``.
"""

from __future__ import annotations

import torch

from robolearn.errors import RobolearnError
from robolearn.mdp.protocol import TaskEnv
from robolearn.scene.sensors import BodyContactSensor, Camera, RayCaster, Sensor
from robolearn.scene.sensors.camera import DATA_TYPES


def scene_sensor(env: TaskEnv, name: str, kind: type[Sensor]) -> Sensor:
    """The scene's sensor ``name``, which must be a ``kind``; else a one-line error naming
    the sensors there are."""
    sensor = env.scene.sensors.get(name)
    if not isinstance(sensor, kind):
        have = ", ".join(f"{k} ({type(s).__name__})" for k, s in env.scene.sensors.items())
        raise RobolearnError(
            f"no {kind.__name__} named {name!r} in scene.sensors; the scene's sensors: "
            f"{have or 'none'}"
        )
    return sensor


# ---- observations ------------------------------------------------------------------


def ray_distances(env: TaskEnv, sensor: str) -> torch.Tensor:
    """Each ray's distance to what it hit, m (R): ``max_distance`` where it hit nothing
    (a lidar's ranges, a pinhole's distances along its rays), in the pattern's order."""
    return scene_sensor(env, sensor, RayCaster).read().distances


def contact_states(env: TaskEnv, sensor: str) -> torch.Tensor:
    """1 for each body of a contact sensor that touches something, else 0 (B)."""
    return scene_sensor(env, sensor, BodyContactSensor).in_contact.float()


# ---- rewards ------------------------------------------------------------------------


def contact_air_time(
    env: TaskEnv, sensor: str, command_name: str, threshold: float
) -> torch.Tensor:
    """Isaac Lab's ``feet_air_time`` over a contact sensor: for each body that touches down
    in this step, its flight's length less ``threshold`` (s), summed; zero while the
    commanded planar speed is under 0.1 m/s, so that standing still costs nothing."""
    contacts = scene_sensor(env, sensor, BodyContactSensor)
    reward = ((contacts.last_air_time - threshold) * contacts.first_contact).sum(-1)
    moving = env.command_manager.get_command(command_name)[:, :2].norm(dim=-1) > 0.1
    return reward * moving


def contact_count(env: TaskEnv, sensor: str, threshold: float = 1.0) -> torch.Tensor:
    """How many of a contact sensor's bodies pushed on something with more than
    ``threshold`` newtons at any step of its force history (Isaac Lab's
    ``undesired_contacts``: knees and thighs that touch the ground)."""
    contacts = scene_sensor(env, sensor, BodyContactSensor)
    peak = contacts.force_history.norm(dim=-1).amax(dim=1)  # (N, B)
    return (peak > threshold).sum(-1).float()


def camera_image(env: TaskEnv, sensor: str, data_type: str = "depth") -> torch.Tensor:
    """A camera's image, flattened channels first (H * W, or 3 * H * W for ``rgb``: all
    red, then green, then blue), as an image group (``ObservationGroupCfg.image_shape``)
    reads it: depth in metres, RGB scaled to [0, 1], segmentation as geom ids."""
    camera = scene_sensor(env, sensor, Camera)
    image = getattr(camera, data_type) if data_type in DATA_TYPES else None
    if image is None:
        raise RobolearnError(f"camera_image: data_type is one of {', '.join(DATA_TYPES)}")
    if data_type == "rgb":
        return image.permute(0, 3, 1, 2).float().div_(255.0).reshape(env.num_envs, -1)
    return image.float().reshape(env.num_envs, -1)


def camera_nearness(env: TaskEnv, sensor: str) -> torch.Tensor:
    """A camera's depth image as nearness, ``1 - depth / max_distance``, flattened (H * W):
    0 where nothing lies within ``max_distance``, 1 at the lens. What a CNN should read
    rather than raw depth: the empty background, most of an image, is then 0 and adds
    nothing to a convolution's sums, where raw depth makes it the image's largest value."""
    camera = scene_sensor(env, sensor, Camera)
    depth = camera.depth.reshape(env.num_envs, -1)
    return 1.0 - depth / camera.cfg.max_distance
