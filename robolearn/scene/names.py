"""The model's names, and the regex lookups terms use to pick joints, bodies, actuators.

Joints are the model's hinge and slide joints in qpos order (a free joint is the floating
root, not a joint here); the other kinds are MuJoCo's own ids.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import mujoco
import torch

from robolearn.errors import RobolearnError
from robolearn.math import columns
from robolearn.scene.entities import ROBOT, Entity, SceneEntityCfg, find_entities
from robolearn.scene.patterns import compile_patterns, match_names

__all__ = ["SceneNames", "compile_patterns", "match_names"]

_FIELD = {
    "joint": "joints",
    "body": "bodies",
    "actuator": "actuators",
    "site": "sites",
    "geom": "geoms",
}
"""The SceneEntityCfg field that selects each kind."""
_KINDS = tuple(_FIELD)


class SceneNames:
    """Names by kind, the joints' addresses and limits, and cached lookups by regex.

    Tensors are on ``device``; the lookups return ids in the model's order.
    """

    def __init__(
        self, model: mujoco.MjModel, device: torch.device, entity_names: Sequence[str] = ()
    ) -> None:
        self.model = model
        self.device = device
        self.entities: dict[str, Entity] = find_entities(model, list(entity_names))
        """The robot (``robot``) and the scene's other entities, by name."""

        def names(kind: str, count: int) -> list[str]:
            return [getattr(model, kind)(i).name for i in range(count)]

        self.body_names = names("body", model.nbody)
        self.site_names = names("site", model.nsite)
        self.sensor_names = names("sensor", model.nsensor)
        self.actuator_names = names("actuator", model.nu)
        self.geom_names = names("geom", model.ngeom)
        self._init_joints()
        self._index_cache: dict[tuple, torch.Tensor] = {}

    def _init_joints(self) -> None:
        m, dev = self.model, self.device
        hinge_like = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
        joints = [j for j in range(m.njnt) if int(m.jnt_type[j]) in hinge_like]
        self._joint_mj_ids = joints
        self.joint_names = [m.joint(j).name for j in joints]
        self.joint_qpos_adr = torch.as_tensor(m.jnt_qposadr[joints], device=dev, dtype=torch.long)
        self.joint_dof_adr = torch.as_tensor(m.jnt_dofadr[joints], device=dev, dtype=torch.long)
        self._joint_qpos_cols = columns(self.joint_qpos_adr)
        self._joint_dof_cols = columns(self.joint_dof_adr)
        limited = torch.as_tensor(m.jnt_limited[joints], device=dev, dtype=torch.bool)
        rng = torch.as_tensor(m.jnt_range[joints], device=dev, dtype=torch.float32)
        inf = torch.full_like(rng[:, 0], float("inf"))
        self.joint_pos_limits = torch.stack(
            (torch.where(limited, rng[:, 0], -inf), torch.where(limited, rng[:, 1], inf)), -1
        )
        """(num_joints, 2) position limits; +-inf for unlimited joints."""
        # Actuators driving a joint: which joint (index into joint_names) each one drives.
        joint_of_jnt = {j: i for i, j in enumerate(joints)}
        self.actuator_joint = torch.full((m.nu,), -1, dtype=torch.long, device=dev)
        """(nu,) the joint (index into :attr:`joint_names`) each actuator drives, or -1."""
        for a in range(m.nu):
            if int(m.actuator_trntype[a]) == int(mujoco.mjtTrn.mjTRN_JOINT):
                self.actuator_joint[a] = joint_of_jnt.get(int(m.actuator_trnid[a, 0]), -1)
        self.joint_actuator_ids = (self.actuator_joint >= 0).nonzero().flatten()
        """Actuators that drive one of :attr:`joint_names` (the rest drive tendons, sites...)."""

    def entity(self, name: str) -> Entity:
        """The entity called ``name``; RobolearnError naming the scene's entities if none."""
        entity = self.entities.get(name)
        if entity is None:
            raise RobolearnError(
                f"no entity {name!r} in the scene; entities: {', '.join(self.entities)}"
            )
        return entity

    def index(self, kind: str, patterns: str | Sequence[str] | SceneEntityCfg) -> torch.Tensor:
        """Cached long tensor of ``kind`` ids (joint, body, actuator, site, geom) matching
        ``patterns``: regexes of the robot's names, or a :class:`SceneEntityCfg` (an entity
        and regexes of its own names). Terms call this every step; the regexes run once."""
        key = (kind, patterns if isinstance(patterns, str | SceneEntityCfg) else tuple(patterns))
        cached = self._index_cache.get(key)
        if cached is None:
            if kind not in _KINDS:
                raise RobolearnError(f"unknown kind {kind!r}; kinds: {', '.join(_KINDS)}")
            if isinstance(patterns, SceneEntityCfg):
                entity, regexes = self.entity(patterns.name), getattr(patterns, _FIELD[kind])
            else:
                entity, regexes = self.entities[ROBOT], patterns
            ids = self._ids_in(entity, kind, regexes)
            cached = torch.as_tensor(ids, device=self.device, dtype=torch.long)
            self._index_cache[key] = cached
        return cached

    def _ids_in(self, entity: Entity, kind: str, patterns: str | Sequence[str]) -> list[int]:
        """Ids of ``entity``'s elements of ``kind`` whose own names (without the entity's
        prefix) match ``patterns``: MuJoCo ids, or indices into joint_names for joints."""
        if kind == "joint":
            mine = set(entity.joint_ids)
            candidates = [i for i, j in enumerate(self._joint_mj_ids) if j in mine]
            names = [self.joint_names[i] for i in candidates]
        else:
            candidates = getattr(entity, f"{kind}_ids")
            names = [getattr(self, f"{kind}_names")[i] for i in candidates]
        what = kind if entity.name == ROBOT else f"{entity.name} {kind}"
        local = [entity.local_name(n) for n in names]
        return [candidates[i] for i in match_names(local, patterns, what)]

    def joint_ids(self, patterns: str | Sequence[str]) -> list[int]:
        """Indices into :attr:`joint_names` of the robot's joints matching regex ``patterns``."""
        return self._ids_in(self.entities[ROBOT], "joint", patterns)

    def body_ids(self, patterns: str | Sequence[str]) -> list[int]:
        """Body ids (MuJoCo's) of the robot's bodies matching regex ``patterns``."""
        return self._ids_in(self.entities[ROBOT], "body", patterns)

    def actuator_ids(self, patterns: str | Sequence[str]) -> list[int]:
        """Actuator ids (MuJoCo's, i.e. ctrl columns) of the robot matching ``patterns``."""
        return self._ids_in(self.entities[ROBOT], "actuator", patterns)

    def site_ids(self, patterns: str | Sequence[str]) -> list[int]:
        """Site ids (MuJoCo's) of the robot's sites matching regex ``patterns``."""
        return self._ids_in(self.entities[ROBOT], "site", patterns)

    def geom_ids(self, patterns: str | Sequence[str]) -> list[int]:
        """Geom ids (MuJoCo's) of the robot's geoms (and the world's) matching ``patterns``."""
        return self._ids_in(self.entities[ROBOT], "geom", patterns)

    def sensor_slice(self, name: str) -> slice:
        """The columns of ``engine.sensordata`` that sensor ``name`` fills."""
        match_names(self.sensor_names, re.escape(name), "sensor")
        s = self.model.sensor(name)
        return slice(int(s.adr[0]), int(s.adr[0] + s.dim[0]))
