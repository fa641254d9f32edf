"""rsl-rl's PPO as robolearn trains with it, and its construction.

:class:`PPO` is rsl-rl's algorithm with one change: with symmetry augmentation on, its
symmetry extension is :class:`~robolearn.rl.symmetry.SharedForwardSymmetry`, which takes the
mirror loss from the update's own actor pass. :func:`build_ppo` builds it, its models and
its rollout storage with rsl-rl's own construction (``PPO.construct_algorithm``), so that
the modules are made, and draw their initial weights, in rsl-rl's order.
"""

from __future__ import annotations

import contextlib
import io
from typing import Any

import rsl_rl.algorithms
from rsl_rl.utils import resolve_callable

from robolearn.rl.symmetry import SharedForwardSymmetry


class PPO(rsl_rl.algorithms.PPO):
    """rsl-rl's PPO whose mirror loss, with augmentation on, shares the update's forward."""

    def __init__(self, *args: Any, symmetry_cfg: dict | None = None, **kwargs: Any) -> None:
        super().__init__(*args, symmetry_cfg=symmetry_cfg, **kwargs)
        if self.symmetry is not None and self.symmetry.use_data_augmentation:
            self.symmetry = SharedForwardSymmetry(**symmetry_cfg)


def build_ppo(env: Any, cfg: dict[str, Any], device: str) -> rsl_rl.algorithms.PPO:
    """The algorithm ``cfg`` (rsl-rl's train config) names, with its models and storage,
    built by rsl-rl on ``env``'s observations; rsl-rl's PPO becomes :class:`PPO`.

    rsl-rl resolves ``cfg["obs_groups"]`` while building; the resolved groups are written
    back into ``cfg``, as rsl-rl's runner does (checkpoints record them). rsl-rl's printout
    of the models is dropped: the configs are saved in the run folder.
    """
    algorithm = dict(cfg["algorithm"])
    if resolve_callable(algorithm["class_name"]) is rsl_rl.algorithms.PPO:
        algorithm["class_name"] = PPO
    construction = {**cfg, "algorithm": algorithm}
    with contextlib.redirect_stdout(io.StringIO()):
        alg = PPO.construct_algorithm(env.get_observations(), env, construction, device)
    cfg["obs_groups"] = construction["obs_groups"]
    return alg
