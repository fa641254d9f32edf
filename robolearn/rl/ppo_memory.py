"""The memory PPO needs per env, checked before the runner allocates it.

rsl-rl stores a whole rollout (``num_steps_per_env`` steps of every env: the observation
groups, actions, their mean and std, values, rewards, returns...) and then trains on
mini-batches of it, whose activations and gradients are kept for the backward pass; with
symmetry augmentation each mini-batch doubles. Per env, in float32:

    rollout     steps x (observations + 3 x actions + 6)
    update      steps / mini_batches x (2 with symmetry) x (2 x observations
                + 2 x hidden units of actor and critic + 64)

The networks themselves are checked apart from the envs: their weights, gradients and
Adam's two moments, four float32 copies of every parameter.

Measured (peak resident memory over one iteration, per env, between 512 and 4096 envs):
humanoid_walk 103 KiB (estimate 93), quadruped_walk 81 KiB (88), cartpole_balance 12 KiB
(6: small networks leave rsl-rl's fixed costs per sample uncounted).
"""

from __future__ import annotations

from robolearn.rl.config import AgentCfg
from robolearn.rl.nets import mlp_parameters
from robolearn.sim.memory import require

_FLOAT = 4
# weights, gradients and Adam's first and second moments
_COPIES_TRAINED = 4
# per sample of a mini-batch: the loss's temporaries (ratios, surrogates, entropy, ...)
_LOSS_TEMPORARIES = 64


def training_bytes_per_env(agent: AgentCfg, group_dims: dict[str, int], num_actions: int) -> int:
    """Bytes of rollout storage and of the update's mini-batches per env (module docstring).

    ``group_dims``: the size of each observation group the env makes."""
    groups = {g for role in agent.roles for g in agent.obs_groups.get(role, [])}
    observations = sum(group_dims.get(g, 0) for g in groups)
    steps = agent.num_steps_per_env
    rollout = steps * (observations + 3 * num_actions + 6)
    samples = steps / (1 if agent.distillation.enabled else agent.algorithm.num_mini_batches)
    if agent.algorithm.symmetry.use_data_augmentation:
        samples *= 2
    hidden = sum(agent.policy.actor_hidden_dims) + sum(agent.policy.critic_hidden_dims)
    update = samples * (2 * observations + 2 * hidden + _LOSS_TEMPORARIES)
    return int((rollout + update) * _FLOAT)


def network_bytes(agent: AgentCfg, group_dims: dict[str, int], num_actions: int) -> int:
    """Bytes of the actor's and the critic's MLPs as trained: every parameter four times."""
    actor_role, critic_role = agent.roles

    def inputs(role: str) -> int:
        return sum(group_dims.get(g, 0) for g in agent.obs_groups.get(role, []))

    policy = agent.policy
    count = mlp_parameters(inputs(actor_role), tuple(policy.actor_hidden_dims), num_actions)
    count += mlp_parameters(inputs(critic_role), tuple(policy.critic_hidden_dims), 1)
    return count * _COPIES_TRAINED * _FLOAT


def require_training_memory(env, agent: AgentCfg) -> None:
    """Refuse networks, or an env count whose rollout and update, that do not fit beside
    the env built.

    Raises:
        RobolearnError: one line with the estimate and what is available.
    """
    dims = {g: sum(d.values()) for g, d in env.observation_manager.term_dims.items()}
    require(
        network_bytes(agent, dims, env.num_actions),
        env.device,
        "the policy's networks (agent.policy.actor_hidden_dims, critic_hidden_dims)",
        advice="use narrower or fewer hidden layers",
    )
    per_env = training_bytes_per_env(agent, dims, env.num_actions)
    require(
        per_env * env.num_envs,
        env.device,
        f"training {env.num_envs:,} envs (rollout storage and the PPO update)",
        env.num_envs,
    )
