"""Left-right mirror images of observations and actions, for symmetry augmentation.

A mirror-symmetric robot doing the mirror image of what it did is as good a sample as the
original: a policy that saw the left foot step should know what the right foot does. PPO
with symmetry augmentation (Mittal et al., ICRA 2024, rsl-rl's ``symmetry_cfg``) trains on
both. It needs each observation column's mirror image, which here is always a signed
permutation of the columns (``IndexMirror``): reflecting through the robot's x-z plane
negates y components of vectors, x and z of angular velocities, swaps left and right joints
and feet, and shifts a two-foot gait clock by half a cycle.

Each observation term says how it mirrors, by its ``ObservationTermCfg.mirror``:

* a name: ``"invariant"`` (unchanged: heights, contact counts), ``"vector"`` (x, -y, z per
  3 columns: linear velocity, gravity, positions in the base frame), ``"axial"`` (-x, y, -z
  per 3 columns: angular velocity), ``"joints"`` (the term's ``joints`` param, default all,
  mirrored joint by joint), ``"actions"`` (the action vector's mirror), ``"command"`` (the
  command term's :meth:`~robolearn.managers.CommandTerm.mirror` map), ``"feet"`` (one column
  per foot of ``scene.feet``, swapped), ``"scan"`` (a :class:`~robolearn.mdp.height_scan`
  grid, flipped across the x axis);
* a callable ``(env, term_cfg, term, width) -> IndexMirror`` of your own;
* nothing, for the built-in terms below, which know theirs (:data:`DEFAULT_RULES`).

A term with a history mirrors each of its frames alike. Noise, clip and scale commute with
the mirror when the clip is symmetric about 0 or the term's signs are all positive.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from robolearn.errors import RobolearnError
from robolearn.managers import ObservationTermCfg
from robolearn.managers.base import ManagerTerm
from robolearn.mdp import observations as obs
from robolearn.mdp.protocol import TaskEnv
from robolearn.scene.mirror import IndexMirror

Rule = Callable[["TaskEnv", ObservationTermCfg, Any, int], IndexMirror]
"""``(env, term_cfg, term, width) -> IndexMirror`` over the term's ``width`` columns (one
history frame); ``term`` is the resolved function or :class:`ManagerTerm` instance."""


def _tiled(width: int, signs: tuple[float, ...], what: str) -> IndexMirror:
    if width % len(signs):
        raise RobolearnError(f"a {what!r} mirror needs columns in groups of {len(signs)}")
    return IndexMirror(tuple(range(width)), signs * (width // len(signs)))


def _invariant(env, cfg, term, width: int) -> IndexMirror:
    return IndexMirror(tuple(range(width)), (1.0,) * width)


def _vector(env, cfg, term, width: int) -> IndexMirror:
    return _tiled(width, (1.0, -1.0, 1.0), "vector")


def _axial(env, cfg, term, width: int) -> IndexMirror:
    return _tiled(width, (-1.0, 1.0, -1.0), "axial")


def restrict(full: IndexMirror, ids: list[int], names: list[str]) -> IndexMirror:
    """``full`` (over all elements) on the elements ``ids``, in that order; RobolearnError
    naming the elements whose partner is not among ``ids``."""
    where = {e: i for i, e in enumerate(ids)}
    missing = [names[e] for e in ids if full.perm[e] not in where]
    if missing:
        raise RobolearnError(
            f"mirror partners of {', '.join(missing)} are not among the term's elements"
        )
    return IndexMirror(tuple(where[full.perm[e]] for e in ids), tuple(full.sign[e] for e in ids))


def joints_mirror(env: TaskEnv, joints: Any = ".*") -> IndexMirror:
    """The mirror over the robot's joints matching ``joints``, in the scene's order."""
    ids = env.scene.index("joint", joints).tolist()
    return restrict(env.scene.joint_mirror(), ids, env.scene.joint_names)


def _joints(env, cfg, term, width: int) -> IndexMirror:
    return joints_mirror(env, cfg.params.get("joints", ".*"))


def action_mirror(env: TaskEnv) -> IndexMirror:
    """The mirror over the action vector: each column drives a joint (every action term
    must name joint actuators); the mirrored action drives the partner joints."""
    scene = env.scene
    joints: list[int] = []
    for name, term in env.action_manager.terms.items():
        of = scene.actuator_joint[term.actuator_ids].tolist()
        if min(of, default=0) < 0:
            raise RobolearnError(f"actions.{name}: only actions on joints can be mirrored")
        joints += of
    return restrict(env.scene.joint_mirror(), joints, scene.joint_names)


def _actions(env, cfg, term, width: int) -> IndexMirror:
    return action_mirror(env)


def _command(env, cfg, term, width: int) -> IndexMirror:
    name = cfg.params.get("command_name")
    command = env.command_manager.terms.get(name)
    if command is None:
        raise RobolearnError(f"a 'command' mirror needs the command_name param, got {name!r}")
    return command.mirror()


def _feet(env, cfg, term, width: int) -> IndexMirror:
    if env.scene.feet_body_ids is None:
        raise RobolearnError("a 'feet' mirror needs scene.feet")
    return env.scene.body_mirror(env.scene.feet_body_ids.tolist())


def _scan(env, cfg, term, width: int) -> IndexMirror:
    pattern = getattr(term, "pattern", None)
    if pattern is None:
        raise RobolearnError("a 'scan' mirror needs a height_scan term")
    points = pattern.cpu().double()
    mirrored = points * torch.tensor([1.0, -1.0], dtype=torch.float64)
    dist = torch.cdist(mirrored, points)
    perm = dist.argmin(dim=1)
    if bool((dist.gather(1, perm[:, None]) > 1e-6).any()):
        raise RobolearnError("the height scan's grid is not symmetric about its x axis")
    return IndexMirror(tuple(perm.tolist()), (1.0,) * len(perm))


RULES: dict[str, Rule] = {
    "invariant": _invariant,
    "vector": _vector,
    "axial": _axial,
    "joints": _joints,
    "actions": _actions,
    "command": _command,
    "feet": _feet,
    "scan": _scan,
}
"""The mirror rules a term names in ``ObservationTermCfg.mirror``."""

DEFAULT_RULES: dict[Any, str] = {
    obs.base_lin_vel: "vector",
    obs.base_ang_vel: "axial",
    obs.projected_gravity: "vector",
    obs.base_height: "invariant",
    obs.entity_pos_b: "vector",
    obs.joint_pos_rel: "joints",
    obs.joint_pos: "joints",
    obs.joint_vel_rel: "joints",
    obs.last_action: "actions",
    obs.generated_commands: "command",
    obs.feet_contact: "feet",
    obs.height_scan: "scan",
}
"""The rule of each built-in observation term (a class term by its class)."""


def term_mirror(
    env: TaskEnv, name: str, cfg: ObservationTermCfg, term: Any, width: int, frames: int
) -> IndexMirror:
    """The mirror over one term's ``width`` columns, ``frames`` history frames of them."""
    rule = cfg.mirror
    if rule is None:
        rule = DEFAULT_RULES.get(type(term) if isinstance(term, ManagerTerm) else term)
    if rule is None:
        raise RobolearnError(
            f"observation term {name!r} does not say how it mirrors: set its mirror to one of "
            f"{', '.join(RULES)} or a function (docs/training.md, 'Symmetry and mixed precision')"
        )
    if isinstance(rule, str):
        if rule not in RULES:
            raise RobolearnError(
                f"observation term {name!r}: mirror {rule!r} is not one of {', '.join(RULES)}"
            )
        rule = RULES[rule]
    try:
        one = rule(env, cfg, term, width // frames)
    except RobolearnError as exc:
        raise RobolearnError(f"observation term {name!r} cannot be mirrored: {exc}") from None
    if len(one.perm) * frames != width:
        raise RobolearnError(
            f"observation term {name!r}: its mirror covers {len(one.perm)} columns, "
            f"the term has {width // frames}"
        )
    k = len(one.perm)
    perm = tuple(f * k + p for f in range(frames) for p in one.perm)
    return IndexMirror(perm, one.sign * frames)


def group_mirror(env: TaskEnv, group: str) -> IndexMirror:
    """The mirror over all columns of observation group ``group``."""
    manager = env.observation_manager
    slices = manager.term_slices(group)
    perm: list[int] = []
    sign: list[float] = []
    override = manager.cfg[group].history_length
    for name, cfg, term in manager.group_terms(group):
        sl = slices[name]
        frames = max(1, cfg.history_length if override is None else override)
        one = term_mirror(env, name, cfg, term, sl.stop - sl.start, frames)
        perm += [sl.start + p for p in one.perm]
        sign += one.sign
    return IndexMirror(tuple(perm), tuple(sign))


class Mirror:
    """Applies an :class:`IndexMirror` to (..., width) tensors: one gather, one multiply."""

    def __init__(self, mirror: IndexMirror, device: torch.device | str) -> None:
        self.perm = torch.as_tensor(mirror.perm, dtype=torch.long, device=device)
        self.sign = torch.as_tensor(mirror.sign, dtype=torch.float32, device=device)

    def __call__(self, value: torch.Tensor) -> torch.Tensor:
        return value.index_select(-1, self.perm) * self.sign.to(value.dtype)
