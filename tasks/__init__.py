"""Tasks, grouped by family as Isaac Lab groups them: a package per family holds the
family's recipe and one module per task (its robot's env config, rewards, terminations,
events, agent config).

* ``velocity``: legged robots follow velocity commands, flat and rough (humanoid, G1,
  quadruped, Go2);
* ``tracking``: humanoids imitate motion clips (BeyondMimic's recipe) and the clips
  robolearn makes itself;
* ``manipulation``: the Franka Panda reaches, lifts and opens a drawer;
* ``classic``: the cartpole, from its joint state or from depth images.

A task module imports its family's modules (never another task module), its robot
(``robolearn.envs``) and the framework: a change to one task cannot change another unseen
(tests/test_layers.py holds the rule). A file's import name follows its path:
``tasks/velocity/g1_walk.py`` is ``robolearn.tasks.velocity.g1_walk``.

Importing this package registers every shipped task with :mod:`robolearn.registry` by
name, description and the module that builds it (:func:`_task` below): a task's module,
and torch and MuJoCo with it, is imported when the task is first used, so that
``robolearn list`` and a mistyped task name answer at once. The task modules define the
functions named here: ``env_cfg``, ``agent_cfg`` and ``play_env_cfg`` (the play variant)
unless the entry says otherwise.
"""

from robolearn.registry import Deferred, TaskSpec, register_task


def _task(
    name: str,
    module: str,
    description: str,
    env_cfg: str = "env_cfg",
    play_env_cfg: str | None = "play_env_cfg",
) -> None:
    """Register task ``name``, built by the functions of ``robolearn.tasks.<module>``."""
    where = f"{__name__}.{module}"
    register_task(
        TaskSpec(
            name=name,
            description=description,
            env_cfg=Deferred(f"{where}:{env_cfg}"),
            agent_cfg=Deferred(f"{where}:agent_cfg"),
            play_env_cfg=Deferred(f"{where}:{play_env_cfg}") if play_env_cfg else None,
        )
    )


# ---- classic -----------------------------------------------------------------------------
_task(
    "cartpole_balance",
    "classic.cartpole_balance",
    "Balance a pole on a cart from a random tilt (+-45 deg); learns in a minute on CPU.",
    play_env_cfg=None,
)
_task(
    "cartpole_balance_depth",
    "classic.cartpole_balance_depth",
    "Balance the cartpole from 64x64 depth images (3 stacked frames) through a CNN; the "
    "critic reads the joint state.",
    play_env_cfg=None,
)

# ---- manipulation ------------------------------------------------------------------------
_task(
    "panda_lift",
    "manipulation.panda_lift",
    "Franka Panda lifts a cube to a commanded position (joint actions).",
)
_task(
    "panda_lift_ik",
    "manipulation.panda_lift",
    "Franka Panda lifts a cube to a commanded position (relative IK actions).",
    env_cfg="ik_env_cfg",
    play_env_cfg="ik_play_env_cfg",
)
_task(
    "panda_open_drawer",
    "manipulation.panda_open_drawer",
    "Franka Panda grasps a drawer's handle and pulls it open; success at 20 cm.",
)
_task(
    "panda_reach",
    "manipulation.panda_reach",
    "Franka Panda (Menagerie) brings its tool to a commanded pose; success within 1 cm.",
)

# ---- tracking ----------------------------------------------------------------------------
for _robot, _name in (("Unitree G1", "g1_track"), ("Humanoid", "humanoid_track")):
    _task(
        _name,
        f"tracking.{_name}",
        f"{_robot} imitates a motion clip (BeyondMimic's recipe): a recorded walk",
    )
    _task(
        f"{_name}_squat",
        f"tracking.{_name}",
        f"{_robot} imitates a motion clip (BeyondMimic's recipe): a keyframed squat with an "
        "arm swing",
        env_cfg="squat_env_cfg",
        play_env_cfg="squat_play_env_cfg",
    )

# ---- velocity ----------------------------------------------------------------------------
_task(
    "g1_walk",
    "velocity.g1_walk",
    "Unitree G1 (Menagerie's or Unitree's MJCF, 29 joints, its motors from the config) walks "
    "on velocity commands on flat ground",
)
_task(
    "g1_walk_rough",
    "velocity.g1_walk_rough",
    "Unitree G1 walks on velocity commands on generated terrain (slopes, stairs, rough) with "
    "a height scan and a terrain curriculum",
)
_task(
    "go2_walk",
    "velocity.go2_walk",
    "Unitree Go2 (Menagerie's or Unitree's MJCF, its motors from the config) tracks velocity "
    "commands on flat ground",
)
_task(
    "go2_walk_rough",
    "velocity.go2_walk_rough",
    "Unitree Go2 tracks velocity commands on generated terrain (slopes, stairs, rough, "
    "obstacles) with a height scan and a terrain curriculum",
)
_task(
    "humanoid_walk",
    "velocity.humanoid_walk",
    "Humanoid (21 joints, 13 driven) walks on velocity commands on flat ground; learns to walk "
    "in about 7 minutes on 2 CPU cores",
)
_task(
    "humanoid_walk_rough",
    "velocity.humanoid_walk_rough",
    "Humanoid walks on velocity commands on generated terrain (slopes, stairs, rough) with a "
    "height scan and a terrain curriculum",
)
_task(
    "quadruped_walk",
    "velocity.quadruped_walk",
    "Quadruped tracks velocity commands on flat ground (random mass, friction, pushes); learns "
    "to walk in about 3 minutes on 2 CPU cores",
)
_task(
    "quadruped_walk_motors",
    "velocity.quadruped_walk_motors",
    "quadruped_walk on DC motors with a 0-10 ms actuation delay and the sim-to-real "
    "randomizations (gains, torque limits, armature, friction, center of mass, encoder bias, "
    "IMU tilt and latency, action noise)",
)
_task(
    "quadruped_walk_rough",
    "velocity.quadruped_walk_rough",
    "Quadruped tracks velocity commands on generated terrain (slopes, stairs, rough, "
    "obstacles) with a height scan and a terrain curriculum",
)
_task(
    "quadruped_walk_rough_blind",
    "velocity.quadruped_walk_rough_blind",
    "An LSTM student walks quadruped_walk_rough's terrain on proprioception only, distilled "
    "from the shipped quadruped_walk_rough policy",
)
_task(
    "quadruped_walk_rough_obstacles",
    "velocity.quadruped_walk_rough_obstacles",
    "quadruped_walk_rough with boxes scattered on the terrain, seen only by a ray-cast height "
    "scan; starts from the shipped quadruped_walk_rough policy",
)
