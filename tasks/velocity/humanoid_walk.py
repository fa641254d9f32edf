"""humanoid_walk: the robolearn humanoid follows base velocity commands on flat ground.

The velocity family's recipe (``velocity/recipe.py``; the shape of Isaac Lab's H1 flat
velocity task: yaw-frame velocity tracking with exponential kernels, posture and smoothness
penalties, falls terminate), changed where that made learning fast enough for a 2-core CPU
(docs/humanoid_walk.md); the changes are ``velocity/biped.py``'s, which g1_walk shares:

* a gait clock: each env carries a phase (period 0.8 s), the policy observes its sine and
  cosine, and a reward asks the left foot to be down in the first half of the cycle and the
  right foot in the second (both down when standing), with a swing-height penalty;
* the policy drives the legs and the waist (13 joints); the arms hold their pose under their
  own position control;
* physics at 100 Hz (dt 0.01 s, implicitfast) with the policy at 50 Hz, where 200 Hz
  physics gave the same walking at half the throughput;
* PPO trains on every sample and its left-right mirror image, the update in bf16 where the
  hardware has it, and yaw-rate tracking weighs as much as linear tracking: the walking
  thresholds in 3.7-4.3M env steps instead of 9.8M.

Randomized: foot friction, torso mass, actuator gains, initial pose, pushes.
"""

from __future__ import annotations

from robolearn.tasks.velocity.biped import biped_flat_agent_cfg
from robolearn.tasks.velocity.recipe import velocity_play_cfg
from robolearn.tasks.velocity.robots import humanoid_flat_cfg

from robolearn.env import ManagerBasedRLEnvCfg

env_cfg = humanoid_flat_cfg  # in velocity/robots.py: humanoid_walk_rough starts from it
agent_cfg = biped_flat_agent_cfg  # in velocity/biped.py: g1_walk trains with it too


def play_env_cfg() -> ManagerBasedRLEnvCfg:
    return velocity_play_cfg(env_cfg())
