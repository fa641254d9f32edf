"""cartpole_balance: keep a pole upright by pushing its cart, starting from a random tilt.

Small enough to learn in a minute on a laptop CPU: the test suite trains it.
"""

from __future__ import annotations

from robolearn.tasks.classic.cartpole import balance_env_cfg

from robolearn.rl.config import AgentCfg, PolicyCfg, PpoAlgorithmCfg
from robolearn.rl.config.offpolicy import OffPolicyCfg

env_cfg = balance_env_cfg  # in classic/cartpole.py: cartpole_balance_depth starts from it


def agent_cfg() -> AgentCfg:
    return AgentCfg(
        num_steps_per_env=16,
        max_iterations=150,
        save_interval=50,
        algorithm=PpoAlgorithmCfg(learning_rate=1e-3, num_mini_batches=4, entropy_coef=0.005),
        policy=PolicyCfg(actor_hidden_dims=(32, 32), critic_hidden_dims=(32, 32)),
        # --algo td3 / sac: small networks and many small updates (8 per env step): the
        # pole balanced after 20 iterations (82k env steps, about 15 s on 2 cores)
        offpolicy=OffPolicyCfg(
            batch_size=256,
            updates_per_step=8,
            buffer_size=256 * 512,
            actor_hidden_dims=(64, 64),
            critic_hidden_dims=(64, 64),
        ),
    )
