"""The Scene: an engine, the robot's names, its default state, and its state each step.

How the pieces are made lives beside this module: :mod:`~robolearn.scene.assembly` (the
MJCF and the engine), :mod:`~robolearn.scene.names` (names and regex lookups),
:mod:`~robolearn.scene.defaults` (the reset state) and :mod:`~robolearn.scene.cache` (state
computed once per step).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import NamedTuple

import mujoco
import numpy as np
import torch

from robolearn.actuators.apply import DrivenJoint
from robolearn.actuators.delay import ModelDelay, model_delays
from robolearn.actuators.drive import Drive
from robolearn.errors import RobolearnError
from robolearn.math import columns_of, quat_rotate, quat_rotate_inverse, take_columns
from robolearn.scene.assembly import build_engine
from robolearn.scene.cache import fixed, names_key, per_step
from robolearn.scene.config import SceneCfg
from robolearn.scene.defaults import default_state
from robolearn.scene.entities import SceneEntityCfg
from robolearn.scene.mirror import (
    IndexMirror,
    body_mirror,
    configured_joint_mirror,
    joint_mirror,
)
from robolearn.scene.names import SceneNames, match_names
from robolearn.scene.sensor_errors import SensorErrors
from robolearn.scene.sensors import Sensor, SensorCfg
from robolearn.scene.sensors.ray_groups import RayGroups
from robolearn.scene.terrain import SceneTerrain
from robolearn.sim import Engine, SimCfg
from robolearn.terrain import generate

__all__ = ["JointColumns", "Scene", "SceneCfg", "SimCfg", "match_names"]


class JointColumns(NamedTuple):
    """Where some joints are: each a slice where they are consecutive (every joint of a
    robot, as most terms read), so that taking them is a view, else an index tensor."""

    joints: slice | torch.Tensor
    """Columns of the scene's (N, num_joints) tensors (joint_pos, default_joint_pos...)."""
    qpos: slice | torch.Tensor
    """Columns of the engine's qpos."""
    dofs: slice | torch.Tensor
    """Columns of the engine's qvel and qacc."""


class Scene(SceneNames):
    """An engine with the robot's names and state, as the managers read them.

    Joints are the model's hinge and slide joints in qpos order; the floating root (a free
    joint), if any, is separate. All tensors are on ``engine.device``. State quantities
    (joint and root state, contact forces) are float32 whatever the engine's dtype, and are
    computed once per env step: many terms read them, and one computation serves all.
    """

    def __init__(self, cfg: SceneCfg, sim: SimCfg) -> None:
        self.cfg = cfg
        grid = generate(cfg.terrain) if cfg.terrain is not None else None
        self.engine: Engine
        self.engine, driven = build_engine(cfg, sim, grid)
        self.num_envs = self.engine.num_envs
        self.drive = Drive(driven, self.engine.model, self.engine) if Drive.needed(driven) else None
        """What acts between physics steps (explicit motor models, delays), or None where
        MuJoCo drives every joint and a decimation is one engine call."""
        self.model_delay = (
            ModelDelay(driven, self.engine.model, self.engine) if model_delays(driven) else None
        )
        """Each env's lags of the delayed MuJoCo loops, which MuJoCo runs, or None."""
        self.command = self.engine.ctrl if self.drive is None else self.drive.command
        """(N, nu) what the actuators are commanded: position targets for position loops,
        controls for the rest. The engine's ``ctrl`` itself unless a :attr:`drive`
        computes the controls from it at every physics step."""
        self.driven: tuple[DrivenJoint, ...] = tuple(driven)
        """Each joint the entities' actuator configs drive, with its gains and limits (the
        robot's first; another entity's joint by its prefixed name, ``<name>/joint``)."""
        self.explicit_actuators = frozenset(d.actuator for d in driven if d.explicit)
        """Names of the actuators whose torque robolearn computes from a position target."""
        self.sensor_errors = SensorErrors()
        """How each env's encoders and IMU misread the robot, once a term draws them:
        observations read through it, joint position targets are offset by it."""
        robot = cfg.robot
        super().__init__(self.engine.model, self.engine.device, list(cfg.attached()))
        self.default_qpos, self.default_ctrl = default_state(
            self.model, robot.default_keyframe, robot.model, self.engine.dtype, self.device
        )
        self._entity_keyframes()
        """(nq,) and (nu,): the state every env resets to, in the engine's dtype."""
        self.default_joint_pos = (
            self.default_qpos[self.joint_qpos_adr].float().unsqueeze(0).repeat(self.num_envs, 1)
        )
        """(N, num_joints) joint positions each env resets around; events may change rows."""
        self.root_body_id, self.root_qpos_adr, self.root_dof_adr = self._find_root(robot.root_body)
        """The floating base's body id and its free joint's first qpos and qvel columns, or
        None (see :meth:`require_floating_base`)."""
        self.terrain = (
            SceneTerrain(cfg.terrain, grid, self.model, self.num_envs, self.device)
            if grid is not None and cfg.terrain is not None
            else None
        )
        """The generated terrain and each env's tile, or None on the MJCF's own ground."""
        self.env_origins = (
            self.terrain.env_origins
            if self.terrain is not None
            else torch.zeros(self.num_envs, 3, device=self.device)
        )
        """(N, 3) where each env's robot spawns: its tile's center on a terrain, else 0."""
        if self.terrain is not None:
            self._refuse_fixed_entities()
        self.feet_body_ids = (
            torch.as_tensor(self.body_ids(list(robot.feet)), device=self.device)
            if robot.feet
            else None
        )
        self.gravity_dir = torch.tensor([0.0, 0.0, -1.0], device=self.device)
        self._step_cache: dict[str, torch.Tensor] = {}
        self._state_override: tuple[torch.Tensor, torch.Tensor] | None = None
        self._cache_stamp: tuple[int, int] = self._state_stamp()
        self._nominal: dict[str, torch.Tensor] = {}
        self._joint_mirror: IndexMirror | None = None
        if robot.mirror is not None:
            self.joint_mirror()  # a map naming a joint the model lacks fails here, at once
        self.ray_groups = RayGroups(self.model, self.engine, cfg.sensors.values())
        """The spare geom groups the ray casters skip (their robots' own geoms, the
        terrain they read from its height field)."""
        self.sensors: dict[str, Sensor] = {}
        """The scene's sensors by name (``SceneCfg.sensors``), built and ready to read."""
        self._build_sensors()

    def _build_sensors(self) -> None:
        """Build each sensor of ``SceneCfg.sensors`` on this scene, in order, into
        :attr:`sensors`; a bad one is a RobolearnError naming it."""
        for name, sensor_cfg in self.cfg.sensors.items():
            if not isinstance(sensor_cfg, SensorCfg):
                raise RobolearnError(
                    f"scene.sensors.{name} must be a sensor config (RayCasterCfg, "
                    f"BodyContactSensorCfg), got {type(sensor_cfg).__name__}"
                )
            try:
                self.sensors[name] = sensor_cfg.build(name, self)
            except RobolearnError as exc:
                if f"sensors.{name}" in str(exc):
                    raise
                raise RobolearnError(f"scene.sensors.{name}: {exc}") from None

    def _refuse_fixed_entities(self) -> None:
        """On a generated terrain each env has its own tile; an entity welded to the world
        (no free joint) has one place for every env, so it would stand on one tile only."""
        fixed = [
            name
            for name, entity in self.entities.items()
            if entity.root_body_id is None
            and entity.mocap_id is None
            and any(b != 0 for b in entity.body_ids)
        ]
        if fixed:
            raise RobolearnError(
                f"scene.entities: {', '.join(fixed)} {'is' if len(fixed) == 1 else 'are'} "
                "fixed to the world, one place for every env, but on a generated terrain "
                "each env has its own tile: give it a free joint (EntityCfg(free=True), "
                "heavy to stay put), make it a mocap body that events place per env "
                "(EntityCfg(free=False, mocap=True)), or leave the terrain out"
            )

    def _find_root(self, root_body: str | None) -> tuple[int | None, int, int]:
        """The root body's id and its free joint's qpos and qvel addresses (the free joint
        may be any joint of the model: a scene can hold fixed arms and free props too)."""
        if root_body is None:
            return None, 0, 0
        root = self.body_ids(root_body)[0]
        m = self.model
        for j in range(m.njnt):
            if int(m.jnt_bodyid[j]) == root and int(m.jnt_type[j]) == int(
                mujoco.mjtJoint.mjJNT_FREE
            ):
                return root, int(m.jnt_qposadr[j]), int(m.jnt_dofadr[j])
        raise RobolearnError(f"scene.root_body {root_body!r} has no free joint")

    def _entity_keyframes(self) -> None:
        """Write each attached entity's own keyframe (``EntityCfg.keyframe``, or its
        ``init_state``'s) into its part of the default state: MuJoCo imports it as
        ``<name>/<keyframe>``."""
        m = self.model
        for name, ecfg in self.cfg.attached().items():
            keyframe = ecfg.default_keyframe
            if keyframe is None:
                continue
            entity, key_name = self.entities[name], f"{name}/{keyframe}"
            keys = [m.key(k).name for k in range(m.nkey)]
            if key_name not in keys:
                own = [k[len(name) + 1 :] for k in keys if k.startswith(f"{name}/")]
                raise RobolearnError(
                    f"scene.entities.{name}.keyframe {keyframe!r} is not in "
                    f"{ecfg.model}; keyframes: {', '.join(own) or 'none'}"
                )
            key = m.key(key_name)
            for j in entity.joint_ids:
                adr = int(m.jnt_qposadr[j])
                size = {0: 7, 1: 4}.get(int(m.jnt_type[j]), 1)  # free, ball, hinge/slide
                value = torch.as_tensor(key.qpos[adr : adr + size], dtype=self.default_qpos.dtype)
                if size == 7:  # the keyframe's root is in the entity's own frame: move it
                    value[0:3] += torch.as_tensor(ecfg.pos, dtype=value.dtype)
                self.default_qpos[adr : adr + size] = value
            for a in entity.actuator_ids:
                self.default_ctrl[a] = float(key.ctrl[a])

    def default_qpos_at_origins(self, env_ids: torch.Tensor | None = None) -> torch.Tensor:
        """(n, nq) the default state of ``env_ids`` (None: every env, (N, nq)) with every
        floating entity (the robot first) moved to their origins."""
        n = self.num_envs if env_ids is None else env_ids.numel()
        qpos = self.default_qpos.expand(n, -1)
        if self.terrain is None:
            return qpos
        qpos = qpos.clone()
        origins = self.env_origins if env_ids is None else self.env_origins[env_ids]
        origins = origins.to(qpos.dtype)
        for entity in self.entities.values():
            if entity.root_body_id is not None:
                cols = slice(entity.root_qpos_adr, entity.root_qpos_adr + 3)
                qpos[:, cols] += origins
        return qpos

    def entity_root_pose(self, name: str) -> tuple[torch.Tensor, torch.Tensor]:
        """(N, 3) position and (N, 4) orientation (w x y z) of entity ``name``'s floating
        root in the world, float32; RobolearnError if it does not float."""
        entity = self.entity(name)
        if entity.root_body_id is None:
            raise RobolearnError(f"entity {name!r} has no free joint: it does not float")
        adr = entity.root_qpos_adr
        qpos = self.engine.qpos[:, adr : adr + 7].float()
        return qpos[:, 0:3], qpos[:, 3:7]

    def require_terrain(self) -> SceneTerrain:
        """The scene's terrain; raises RobolearnError when the scene has none."""
        if self.terrain is None:
            raise RobolearnError("this term needs a generated terrain: set scene.terrain")
        return self.terrain

    def require_floating_base(self) -> int:
        """The floating base's body id; raises RobolearnError when the scene has none.

        Terms that read or move the base call it (commands when they are built), so that a
        task without ``scene.root_body`` fails with a message naming that setting.
        """
        if self.root_body_id is None:
            raise RobolearnError(
                "this term needs a floating base: set scene.root_body to the free joint's body"
            )
        return self.root_body_id

    def joint_mirror(self) -> IndexMirror:
        """The robot's left-right mirror over :attr:`joint_names`: the config's
        ``scene.mirror``, else found once in the MJCF (:mod:`robolearn.scene.mirror`);
        RobolearnError if it names a joint the model lacks, or the model is not
        symmetric."""
        mirror = self.cfg.robot.mirror
        if self._joint_mirror is None and mirror is not None:
            self._joint_mirror = configured_joint_mirror(mirror, self.joint_names)
        if self._joint_mirror is None:
            self.require_floating_base()
            self._joint_mirror = joint_mirror(
                self.model, self.root_body_id, self._joint_mj_ids, self.joint_names
            )
        return self._joint_mirror

    def body_mirror(self, body_ids: list[int]) -> IndexMirror:
        """The left-right mirror over ``body_ids`` (e.g. the feet: left and right swap)."""
        self.require_floating_base()
        names = [self.body_names[b] for b in body_ids]
        return body_mirror(self.model, self.root_body_id, body_ids, names)

    def joint_columns(self, joints: str | Sequence[str] | SceneEntityCfg) -> JointColumns:
        """:class:`JointColumns` of ``joints`` (name patterns or an entity's selector), found
        once per scene: terms call this every step. A robot's are read from the model's
        names on the host (a slice made from the device's ids would have the first step
        wait for the GPU); an entity's selector keeps index tensors."""

        def make() -> JointColumns:
            if isinstance(joints, SceneEntityCfg):
                ids = self.index("joint", joints)
                return JointColumns(ids, self.joint_qpos_adr[ids], self.joint_dof_adr[ids])
            found = self.joint_ids(joints)
            model_joints = [self.model.joint(self.joint_names[i]) for i in found]
            qpos = [int(j.qposadr[0]) for j in model_joints]
            dofs = [int(j.dofadr[0]) for j in model_joints]
            return JointColumns(*(columns_of(c, self.device) for c in (found, qpos, dofs)))

        return fixed(self, ("joint_columns", names_key(joints)), make)

    def nominal(self, field: str) -> torch.Tensor:
        """The compiled model's value of a model field, on the device (cached): what
        per-env randomization draws around, so repeated draws never drift."""
        cached = self._nominal.get(field)
        if cached is None:
            value = getattr(self.model, field)
            cached = torch.as_tensor(value, device=self.device, dtype=self.engine.dtype)
            self._nominal[field] = cached
        return cached

    # ---- the step, and the writes that change the state --------------------------------

    def prepare(self, decimation: int) -> None:
        """Ready the engine for steps of ``decimation`` substeps (the Warp engines capture
        their graphs here): one call for them all, or one per substep with a drive."""
        self.engine.prepare(decimation if self.drive is None else 1)

    def step(self, decimation: int) -> None:
        """Advance every env's physics by ``decimation`` substeps, with the commands that
        the action terms wrote; the per-step state is computed afresh when next read."""
        if self.drive is None:
            self.engine.step(decimation)
        else:
            for _ in range(decimation):
                self.drive.apply(self.engine)
                self.engine.step(1)
        self._step_cache.clear()
        dt = self.engine.physics_dt * decimation
        for sensor in self.sensors.values():
            sensor.step(dt)

    def reset_to_default(self, env_mask: torch.Tensor) -> None:
        """Put the envs where ``env_mask`` ((N,) bool) is true in the default state (every
        floating entity at its env's origin), at rest, without the forward pass: reset
        events change it next, then :meth:`forward` makes it consistent."""
        self.engine.reset_where(env_mask, qpos=self.default_qpos_at_origins(), forward=False)
        if self.drive is not None:
            self.drive.reset(env_mask, self.default_ctrl)
        if self.model_delay is not None:
            self.model_delay.reset(env_mask, self.default_ctrl)
        self._step_cache.clear()
        for sensor in self.sensors.values():
            sensor.reset(env_mask)
            sensor.invalidate(env_mask)

    def forward(self, env_mask: torch.Tensor) -> None:
        """MuJoCo's forward pass (positions, contacts, forces) where ``env_mask`` is true:
        after a reset wrote positions, the bodies' poses and contacts follow them."""
        self.engine.forward_where(env_mask)
        self._step_cache.clear()
        for sensor in self.sensors.values():
            sensor.invalidate(env_mask)

    def write_ctrl(self, cols: slice | torch.Tensor, values: torch.Tensor) -> None:
        """Command actuator columns ``cols`` for every env, (N, k) ``values`` (position
        targets for position loops): what the next :meth:`step` holds constant over its
        substeps."""
        command = self.command
        command[:, cols] = values.to(command.dtype)

    def takes_position_targets(self, actuator_ids: Sequence[int]) -> list[bool]:
        """Per actuator: whether its command is a joint position target (MuJoCo's position
        loop, or an explicit motor model), not a force."""
        m = self.model
        affine = int(mujoco.mjtBias.mjBIAS_AFFINE)
        return [
            m.actuator(a).name in self.explicit_actuators or int(m.actuator_biastype[a]) == affine
            for a in actuator_ids
        ]

    def command_range(self, actuator_ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """((k, 2) range, (k,) bool limited) of each actuator's command: its ``ctrlrange``,
        or for an explicit motor model, whose ``ctrl`` is a torque, its joint's range."""
        m = self.model
        ids = list(actuator_ids)
        ranges = np.array(m.actuator_ctrlrange[ids], dtype=float).reshape(-1, 2)
        limited = np.array(m.actuator_ctrllimited[ids], dtype=bool).reshape(-1)
        for k, a in enumerate(ids):
            if m.actuator(a).name in self.explicit_actuators:
                joint = int(m.actuator_trnid[a, 0])
                ranges[k] = m.jnt_range[joint]
                limited[k] = bool(m.jnt_limited[joint]) and ranges[k, 0] < ranges[k, 1]
        return ranges, limited

    def _state_stamp(self) -> tuple[int, int]:
        """Torch's version counters of qpos and qvel: advanced by every in-place write
        through torch (a reset event's, a push's), so the per-step cache knows when its
        state changed under it (:mod:`robolearn.scene.cache`)."""
        qpos, qvel = self._read_state
        return qpos._version, qvel._version

    @property
    def _read_state(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The (qpos, qvel) the state quantities derive from: the engine's, or the pair
        :meth:`reading_state` put in its place."""
        return self._state_override or (self.engine.qpos, self.engine.qvel)

    @contextlib.contextmanager
    def reading_state(self, qpos: torch.Tensor, qvel: torch.Tensor) -> Iterator[None]:
        """Within the block, the joint and root state (``joint_pos``, ``root_lin_vel_b``,
        ``projected_gravity_b``...) derive from ``qpos`` (N, nq) and ``qvel`` (N, nv) instead
        of the engine's memory, so terms that read only them are functions of the given
        tensors, autograd history included (the differentiable learner evaluates a task's
        rewards and observations on the differentiable state this way). Body poses,
        contact forces and sensors stay the engine's."""
        saved = self._state_override
        self._state_override = (qpos, qvel)
        self._step_cache.clear()
        try:
            yield
        finally:
            self._state_override = saved
            self._step_cache.clear()

    # ---- state, computed once per env step -------------------------------------------

    @per_step
    def joint_pos(self) -> torch.Tensor:
        """(N, num_joints) joint positions, float32."""
        return take_columns(self._read_state[0], self._joint_qpos_cols).float()

    @per_step
    def joint_vel(self) -> torch.Tensor:
        """(N, num_joints) joint velocities, float32."""
        return take_columns(self._read_state[1], self._joint_dof_cols).float()

    def contact_force_of(self, body_ids: torch.Tensor) -> torch.Tensor:
        """(N, len(body_ids), 3) net external force on the given bodies, world frame,
        float32, gathered from the engine's memory (terms read a few bodies; converting all
        of them costs more)."""
        return self.engine.cfrc_ext.index_select(1, body_ids)[..., 3:6].float()

    @per_step
    def feet_contact_force(self) -> torch.Tensor:
        """(N, num_feet, 3) net external force on each foot body, world frame, float32."""
        return self.contact_force_of(self._require_feet())

    @per_step
    def feet_force_norm(self) -> torch.Tensor:
        """(N, num_feet) magnitude of the external force on each foot, N (read by every term
        that asks whether a foot is down: four in a biped's task)."""
        return self.feet_contact_force.norm(dim=-1)

    @per_step
    def feet_pos_w(self) -> torch.Tensor:
        """(N, num_feet, 3) world position of each foot body's origin, float32."""
        return self.engine.xpos.index_select(1, self._require_feet()).float()

    @per_step
    def feet_lin_vel_w(self) -> torch.Tensor:
        """(N, num_feet, 3) linear velocity of each foot body's origin, world frame."""
        lin, _ = self.engine.body_velocity(self._require_feet())
        return lin.float()

    def _require_feet(self) -> torch.Tensor:
        if self.feet_body_ids is None:
            raise RobolearnError("this term needs scene.feet: the names of the foot bodies")
        return self.feet_body_ids

    def _root_state(self, field: str, start: int, size: int = 3) -> torch.Tensor:
        """Columns ``start:start+size`` of the free joint's part of qpos or qvel, float32."""
        self.require_floating_base()
        adr = self.root_qpos_adr if field == "qpos" else self.root_dof_adr
        state = self._read_state[0 if field == "qpos" else 1]
        return state[:, adr + start : adr + start + size].float()

    @per_step
    def root_pos_w(self) -> torch.Tensor:
        """(N, 3) world position of the root body, float32."""
        return self._root_state("qpos", 0)

    @per_step
    def root_quat_w(self) -> torch.Tensor:
        """(N, 4) root orientation, w x y z, float32."""
        return self._root_state("qpos", 3, 4)

    def ground_height(self, xy: torch.Tensor) -> torch.Tensor:
        """Ground height (m) under each (x, y) point of ``xy`` (..., 2): the terrain's, or
        0 where the scene keeps the MJCF's own (flat) ground."""
        if self.terrain is None:
            return torch.zeros(xy.shape[:-1], device=xy.device)
        return self.terrain.height_map.height_at(xy)

    @per_step
    def root_height(self) -> torch.Tensor:
        """(N,) height of the root body above the ground under it (m), float32: its world
        z on the MJCF's flat ground, its z minus the terrain's height on a terrain."""
        z = self.root_pos_w[:, 2]
        if self.terrain is None:
            return z
        return z - self.terrain.height_map.height_at(self.root_pos_w[:, :2])

    @per_step
    def root_lin_vel_w(self) -> torch.Tensor:
        """(N, 3) root linear velocity in the world frame, float32."""
        return self._root_state("qvel", 0)

    @per_step
    def root_ang_vel_b(self) -> torch.Tensor:
        """(N, 3) root angular velocity in the root frame (MuJoCo's free joint convention)."""
        return self._root_state("qvel", 3)

    @per_step
    def root_lin_vel_b(self) -> torch.Tensor:
        """(N, 3) root linear velocity in the root frame."""
        return quat_rotate_inverse(self.root_quat_w, self.root_lin_vel_w)

    @per_step
    def root_ang_vel_w(self) -> torch.Tensor:
        """(N, 3) root angular velocity in the world frame."""
        return quat_rotate(self.root_quat_w, self.root_ang_vel_b)

    @per_step
    def projected_gravity_b(self) -> torch.Tensor:
        """(N, 3) unit gravity direction in the root frame ((0, 0, -1) when upright)."""
        q = self.root_quat_w
        return quat_rotate_inverse(q, self.gravity_dir.expand(q.shape[0], 3))
