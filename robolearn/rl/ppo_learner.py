"""rsl-rl's PPO (and its distillation) as a learner of the run driver: the runner sized to
the env's observation groups (a CNN for each image group), the teacher of a distillation
found, checked and loaded, the starting weights of ``agent.init_from``, and a checkpoint's
policy for play, view and export."""

from __future__ import annotations

import contextlib
import io
from typing import Any

import torch

from robolearn.errors import RobolearnError
from robolearn.rl.checkpoint import checkpoint_path, load_checkpoint
from robolearn.rl.config import AgentCfg, compile_problem
from robolearn.rl.learner import Algorithm, CheckpointPolicy, LearnerContext
from robolearn.rl.pipelined import ONE_PROCESS
from robolearn.rl.ppo_memory import require_training_memory
from robolearn.rl.runner import Runner
from robolearn.rl.symmetry import env_mirrors, mirror_setting


class PPO(Algorithm):
    """rsl-rl's PPO, the default learner; distillation when ``agent.distillation`` is on."""

    name = "ppo"

    def check(self, agent_cfg: AgentCfg, distributed: bool = False) -> None:
        if distributed and agent_cfg.pipelined:
            raise RobolearnError(ONE_PROCESS)

    def build(self, env: Any, agent_cfg: AgentCfg, ctx: LearnerContext) -> Runner:
        """A runner on ``env``, once it is known that it can train here: a C++ compiler
        where its networks are compiled, memory for the rollout and the update."""
        if agent_cfg.policy.compile and (problem := compile_problem(str(env.device))):
            raise RobolearnError(problem)
        require_training_memory(env, agent_cfg)
        if agent_cfg.algorithm.symmetry.enabled:
            # built now rather than at the first update, so a task that cannot mirror is
            # refused before a rollout is collected
            with mirror_setting("agent.algorithm.symmetry"):
                env_mirrors(env)
        meta = {**ctx.meta, "agent": None}
        return make_runner(
            env,
            agent_cfg,
            run_dir=ctx.run_dir if ctx.dist.is_main else None,
            meta=meta,
            dist_info=ctx.dist,
            monitor=ctx.monitor,
        )

    def policy(self, env: Any, data: dict[str, Any]) -> CheckpointPolicy:
        return runner_policy(build_runner(env, data))

    def actor(self, data: dict[str, Any], where: str) -> tuple[torch.nn.Module, list[str], int]:
        return actor_of_checkpoint(data, where)


def runner_policy(runner: Runner) -> CheckpointPolicy:
    """A runner's current policy, acting in evaluation mode on its device."""
    model = runner.alg.get_policy()
    act = runner.get_inference_policy(device=runner.device)
    return CheckpointPolicy(act, model, list(model.obs_groups), runner.meta)


def image_groups(env) -> set[str]:
    """The env's observation groups delivered as images (channels, height, width)."""
    shapes = env.observation_manager.group_shapes
    return {name for name, shape in shapes.items() if len(shape) == 3}


def load_teacher(spec: str, device: str) -> dict[str, Any]:
    """The teacher's checkpoint data; a checkpoint that holds no PPO actor (a distilled
    student's, say) is a RobolearnError."""
    data = load_checkpoint(checkpoint_path(spec), map_location=device)
    agent = data.get("agent") or {}
    if "actor" not in agent or "actor_state_dict" not in data["model"]:
        raise RobolearnError(
            f"agent.distillation.teacher {spec} holds no PPO policy (no actor); a teacher "
            "is a checkpoint trained with PPO"
        )
    return data


def make_runner(env, agent_cfg: AgentCfg, vec_env=None, **runner_kwargs: Any) -> Runner:
    """A :class:`Runner` of ``agent_cfg`` on ``env`` (``vec_env``: rsl-rl's view of it, made
    here if None), with the teacher loaded for distillation; ``runner_kwargs`` go to the
    runner (``run_dir``, ``meta``, ``dist_info``, ``monitor``). ``meta["agent"]``, when
    given as None, is filled with the rsl-rl config the checkpoints record, and
    ``meta["obs_shapes"]`` with each observation group's shape."""
    from robolearn.wrappers.rsl_rl import RslRlVecEnv

    device = str(env.device)
    teacher = None
    if agent_cfg.distillation.enabled:
        teacher = load_teacher(agent_cfg.distillation.teacher, device)
    agent = agent_cfg.to_rsl_rl(
        device,
        image_groups=image_groups(env),
        teacher=None if teacher is None else teacher["agent"]["actor"],
    )
    meta = runner_kwargs.get("meta")
    if meta is not None and "agent" in meta and meta["agent"] is None:
        meta["agent"] = agent
        # what rebuilds an image or recurrent actor without the env (load_policy)
        shapes = env.observation_manager.group_shapes
        meta["obs_shapes"] = {name: list(shape) for name, shape in shapes.items()}
    runner = Runner(vec_env or RslRlVecEnv(env), agent, device=device, **runner_kwargs)
    if teacher is not None:
        runner.load_teacher(teacher, agent_cfg.distillation.teacher)
    if agent_cfg.init_from:
        runner.load_weights(
            load_checkpoint(checkpoint_path(agent_cfg.init_from), map_location=device),
            f"agent.init_from {agent_cfg.init_from}",
        )
    return runner


def build_runner(env, data: dict) -> Runner:
    """An rsl-rl runner around ``env`` holding a PPO checkpoint's policy (no optimizer
    state)."""
    from robolearn.wrappers.rsl_rl import RslRlVecEnv

    runner = Runner(
        RslRlVecEnv(env),
        data["agent"],
        device=str(env.device),
        meta={"task": data.get("task"), "overrides": list(data.get("overrides", []))},
    )
    try:
        runner.restore(data, training_state=False)
    except RuntimeError as exc:  # shapes do not match: another task or other overrides
        raise RobolearnError(
            f"the checkpoint's policy does not fit this env ({str(exc).splitlines()[0][:200]}); "
            "was it trained with other observation or action settings?"
        ) from exc
    return runner


def actor_of_checkpoint(data: dict[str, Any], where: str) -> tuple[torch.nn.Module, list[str], int]:
    """(rsl-rl's actor model with the checkpoint's weights, its observation groups, the
    action width): the student of a distillation. Image and recurrent actors need the
    observation shapes the checkpoint records (``obs_shapes``, since robolearn's image
    groups); an MLP's or RNN's width is read off its first layer where they are not."""
    from rsl_rl.models import CNNModel, MLPModel, RNNModel
    from tensordict import TensorDict

    agent = data["agent"]
    role = "student" if "student" in agent else "actor"
    cfg = dict(agent.get(role) or {})
    class_name = cfg.pop("class_name", "MLPModel")
    classes = {"MLPModel": MLPModel, "CNNModel": CNNModel, "RNNModel": RNNModel}
    if class_name not in classes:
        raise RobolearnError(f"{where}: load_policy runs {', '.join(classes)}; not {class_name}")
    state = data["model"].get(f"{role}_state_dict", {})
    layers = sorted(
        (int(key.split(".")[1]), value)
        for key, value in state.items()
        if key.startswith("mlp.") and key.endswith(".weight")
    )
    if not layers:
        raise RobolearnError(f"{where}: the checkpoint holds no actor MLP")
    action_dim = int(layers[-1][1].shape[0])
    groups = list((agent.get("obs_groups") or {}).get(role) or ["policy"])
    shapes = data.get("obs_shapes")
    if shapes:
        sample = TensorDict({g: torch.zeros(1, *shapes[g]) for g in groups}, batch_size=[1])
        obs_groups = {role: groups}
    elif class_name in ("MLPModel", "RNNModel"):  # the first layer says the width
        first = state.get("rnn.rnn.weight_ih_l0", layers[0][1])
        sample = TensorDict({"obs": torch.zeros(1, int(first.shape[1]))}, batch_size=[1])
        obs_groups = {role: ["obs"]}
    else:
        raise RobolearnError(f"{where}: a {class_name} checkpoint that records no obs_shapes")
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # rsl-rl prints what it builds
            model = classes[class_name](sample, obs_groups, role, action_dim, **cfg)
        model.load_state_dict(state, strict=True)
    except (RuntimeError, TypeError, ValueError, KeyError) as exc:
        reason = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc)
        raise RobolearnError(f"{where}: the actor cannot be rebuilt ({reason})") from exc
    return model.eval(), groups, action_dim
