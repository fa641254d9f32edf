"""Scene sensors, declared in ``SceneCfg.sensors`` and read by terms by name.

``base`` (what every sensor shares: update period, reset, step), ``ray_patterns`` (grid,
pinhole, lidar), ``ray_caster`` (rays from a body against the scene's geoms, the robot's
own skipped), ``body_contacts`` (net contact force, air and contact time per body),
``camera`` (rendered RGB, depth and segmentation images per env).
"""

from robolearn.scene.sensors.base import Sensor, SensorCfg
from robolearn.scene.sensors.body_contacts import BodyContactSensor, BodyContactSensorCfg
from robolearn.scene.sensors.camera import Camera, CameraCfg
from robolearn.scene.sensors.ray_caster import RayCaster, RayCasterCfg
from robolearn.scene.sensors.ray_patterns import GridPattern, LidarPattern, PinholePattern

__all__ = [
    "BodyContactSensor",
    "BodyContactSensorCfg",
    "Camera",
    "CameraCfg",
    "GridPattern",
    "LidarPattern",
    "PinholePattern",
    "RayCaster",
    "RayCasterCfg",
    "Sensor",
    "SensorCfg",
]
