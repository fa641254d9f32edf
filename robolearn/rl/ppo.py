"""rsl-rl's algorithms as robolearn trains with them, and their construction.

:class:`PPO` is rsl-rl's algorithm with one change: with symmetry augmentation on, its
symmetry extension is :class:`~robolearn.rl.symmetry.SharedForwardSymmetry`, which takes the
mirror loss from the update's own actor pass. :func:`build_algorithm` builds it (or rsl-rl's
``Distillation``), its models and its rollout storage with rsl-rl's own construction
(``construct_algorithm``), so that the modules are made, and draw their initial weights, in
rsl-rl's order.
"""

from __future__ import annotations

import contextlib
import io
from typing import Any

import rsl_rl.algorithms
import torch
from rsl_rl.utils import resolve_callable

from robolearn.rl.config import CnnCfg
from robolearn.rl.symmetry import SharedForwardSymmetry


class PPO(rsl_rl.algorithms.PPO):
    """rsl-rl's PPO whose mirror loss, with augmentation on, shares the update's forward."""

    def __init__(self, *args: Any, symmetry_cfg: dict | None = None, **kwargs: Any) -> None:
        super().__init__(*args, symmetry_cfg=symmetry_cfg, **kwargs)
        if self.symmetry is not None and self.symmetry.use_data_augmentation:
            self.symmetry = SharedForwardSymmetry(**symmetry_cfg)


def build_algorithm(env: Any, cfg: dict[str, Any], device: str) -> Any:
    """The algorithm ``cfg`` (rsl-rl's train config) names, with its models and storage,
    built by rsl-rl on ``env``'s observations; rsl-rl's PPO becomes :class:`PPO`. A CNN
    that does not fit its image group's size is a RobolearnError.

    rsl-rl resolves ``cfg["obs_groups"]`` while building; the resolved groups are written
    back into ``cfg``, as rsl-rl's runner does (checkpoints record them). rsl-rl's printout
    of the models is dropped: the configs are saved in the run folder.
    """
    algorithm = dict(cfg["algorithm"])
    cls = resolve_callable(algorithm["class_name"])
    if cls is rsl_rl.algorithms.PPO:
        algorithm["class_name"] = cls = PPO
    obs = env.get_observations()
    _check_cnns_fit(cfg, obs)
    construction = {k: v for k, v in cfg.items() if k not in ROBOLEARN_KEYS}
    construction["algorithm"] = algorithm
    with contextlib.redirect_stdout(io.StringIO()):
        alg = cls.construct_algorithm(obs, env, construction, device)
    cfg["obs_groups"] = construction["obs_groups"]
    gain = cfg.get("actor_output_init_gain", 1.0)
    if gain != 1.0:
        # the policy being trained: a distillation's is its student
        scale_output_layer(alg.student if hasattr(alg, "student") else alg.actor, gain)
    return alg


ROBOLEARN_KEYS = ("teacher_checkpoint", "actor_output_init_gain")
"""Keys of the train config that robolearn reads and rsl-rl's construction does not."""


def scale_output_layer(model: torch.nn.Module, gain: float) -> None:
    """Multiply the last linear layer of ``model``'s MLP by ``gain`` and zero its bias (a new
    policy whose mean action is near 0 in every state; :class:`PolicyCfg`'s
    ``actor_output_init_gain``)."""
    last = [m for m in model.mlp.modules() if isinstance(m, torch.nn.Linear)][-1]
    with torch.no_grad():
        last.weight.mul_(gain)
        last.bias.zero_()


def _check_cnns_fit(cfg: dict[str, Any], obs: Any) -> None:
    """Each CNN model's layers leave at least one pixel of each image group it reads."""
    for role, model in cfg.items():
        if not isinstance(model, dict) or model.get("class_name") != "CNNModel":
            continue
        layers = CnnCfg(**model["cnn_cfg"])
        for group in cfg["obs_groups"].get(role, []):
            if obs[group].dim() == 4:
                h, w = obs[group].shape[2:]
                layers.check_fits(group, int(h), int(w))
