"""The robolearn quadruped on flat ground (``assets/quadruped``).

13.4 kg, 12 position-controlled joints: legs FL, FR, RL, RR, each ``<leg>_hip``
(abduction), ``<leg>_thigh`` and ``<leg>_calf`` (knee, always negative). Default pose: the
``stand`` keyframe (trunk at 0.30 m); qpos0 has straight legs past the knee limit, so the
scene always resets to the keyframe.
"""

from __future__ import annotations

from robolearn.scene import EntityCfg

FEET = ("FL_foot", "FR_foot", "RL_foot", "RR_foot")

STANDING_HEIGHT = 0.30
"""The trunk's height above flat ground in the ``stand`` keyframe (m)."""


def quadruped_robot() -> EntityCfg:
    """The quadruped (its MJCF holds the ground), starting from the ``stand`` keyframe."""
    return EntityCfg(
        model="quadruped/scene.xml",
        keyframe="stand",
        root_body="trunk",
        feet=FEET,
    )
