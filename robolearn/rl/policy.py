"""Policies from checkpoints, for play, evaluation and export."""

from __future__ import annotations

from pathlib import Path

import torch

from robolearn.errors import RobolearnError
from robolearn.rl.checkpoint import load_checkpoint
from robolearn.rl.runs import resolve_checkpoint, resolve_run


def pretrained_path(task: str) -> Path:
    """The checkpoint shipped with robolearn for ``task``."""
    from robolearn.assets import ASSETS_DIR

    path = ASSETS_DIR / "pretrained" / task / "model.pt"
    if not path.is_file():
        shipped = sorted(p.parent.name for p in (ASSETS_DIR / "pretrained").glob("*/model.pt"))
        raise RobolearnError(
            f"no pretrained checkpoint ships for {task!r}; "
            f"pretrained tasks: {', '.join(shipped) or 'none'}"
        )
    return path


def find_checkpoint(
    task: str, experiment: str, checkpoint: str | None, load_run: str | None, log_root: str | Path
) -> Path:
    """A checkpoint from ``--checkpoint`` (a file, a run folder for its latest checkpoint,
    a checkpoint's name or regex, ``latest`` or ``pretrained``) and ``--load_run``: by
    default the latest checkpoint of the latest run of the task."""
    if checkpoint == "pretrained":
        return pretrained_path(task)
    if checkpoint and checkpoint != "latest":
        path = Path(checkpoint).expanduser()
        if path.is_dir():  # a run folder, as load_policy takes it: its latest checkpoint
            return resolve_checkpoint(path, None)
        if path.suffix in (".pt", ".onnx") or "/" in checkpoint:
            if not path.exists():
                raise RobolearnError(f"checkpoint {checkpoint} does not exist")
            return path
    run = resolve_run(Path(log_root), experiment, load_run, need_checkpoint=True)
    return resolve_checkpoint(run, None if checkpoint in (None, "latest") else checkpoint)


def is_shipped(path: Path) -> bool:
    """Whether ``path`` lies inside robolearn's installed package (a pretrained checkpoint):
    nothing may be written beside it."""
    import robolearn

    package = Path(robolearn.__file__).resolve().parent
    from robolearn.assets import ASSETS_DIR

    resolved = path.resolve()
    return any(resolved.is_relative_to(p.resolve()) for p in (package, ASSETS_DIR))


def output_dir(checkpoint: Path, log_root: str | Path, experiment: str) -> Path:
    """Where outputs about ``checkpoint`` go (videos, exports): beside it in its run folder,
    or ``<log_root>/<experiment>/pretrained/`` for a checkpoint shipped with robolearn."""
    if is_shipped(checkpoint):
        return Path(log_root) / experiment / "pretrained"
    return checkpoint.parent


def build_runner(env, data: dict):
    """An rsl-rl runner around ``env`` holding the checkpoint's policy (no optimizer state)."""
    from robolearn.adapters import RslRlVecEnv
    from robolearn.rl.runner import Runner

    vec = RslRlVecEnv(env)
    runner = Runner(
        vec,
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


def load_for_env(env, path: Path):
    """(policy callable on observation TensorDicts, checkpoint data) for ``env``."""
    data = load_checkpoint(path, map_location=env.device)
    runner = build_runner(env, data)
    policy = runner.get_inference_policy(device=str(env.device))
    return policy, runner, data


@torch.inference_mode()
def act(policy, obs: dict[str, torch.Tensor], num_envs: int) -> torch.Tensor:
    from tensordict import TensorDict

    return policy(TensorDict(obs, batch_size=[num_envs]))
