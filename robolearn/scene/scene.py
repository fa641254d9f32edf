"""The Scene: an engine, the robot's names, its default state, and its state each step.

How the pieces are made lives beside this module: :mod:`~robolearn.scene.assembly` (the
MJCF and the engine), :mod:`~robolearn.scene.names` (names and regex lookups),
:mod:`~robolearn.scene.defaults` (the reset state) and :mod:`~robolearn.scene.cache` (state
computed once per step).
"""

from __future__ import annotations

import mujoco
import torch

from robolearn.errors import RobolearnError
from robolearn.math import quat_rotate, quat_rotate_inverse, take_columns
from robolearn.scene.assembly import build_engine, resolve_model_path
from robolearn.scene.cache import per_step
from robolearn.scene.config import SceneCfg, SimCfg
from robolearn.scene.defaults import default_state
from robolearn.scene.names import SceneNames, match_names
from robolearn.sim import Engine

__all__ = ["Scene", "SceneCfg", "SimCfg", "match_names", "resolve_model_path"]


class Scene(SceneNames):
    """An engine with the robot's names and state, as the managers read them.

    Joints are the model's hinge and slide joints in qpos order; the floating root (a free
    joint), if any, is separate. All tensors are on ``engine.device``. State quantities
    (joint and root state, contact forces) are float32 whatever the engine's dtype, and are
    computed once per env step: many terms read them, and one computation serves all.
    """

    def __init__(self, cfg: SceneCfg, sim: SimCfg) -> None:
        self.cfg = cfg
        self.engine: Engine = build_engine(cfg, sim)
        self.num_envs = self.engine.num_envs
        super().__init__(self.engine.model, self.engine.device)
        self.default_qpos, self.default_ctrl = default_state(
            self.model, cfg.keyframe, cfg.model, self.engine.dtype, self.device
        )
        """(nq,) and (nu,): the state every env resets to, in the engine's dtype."""
        self.default_joint_pos = (
            self.default_qpos[self.joint_qpos_adr].float().unsqueeze(0).repeat(self.num_envs, 1)
        )
        """(N, num_joints) joint positions each env resets around; events may change rows."""
        m = self.model
        self.has_free_root = m.njnt > 0 and int(m.jnt_type[0]) == int(mujoco.mjtJoint.mjJNT_FREE)
        self.root_body_id = self._find_root_body(cfg.root_body)
        """The floating base's body id, or None (see :meth:`require_floating_base`)."""
        self.feet_body_ids = (
            torch.as_tensor(self.body_ids(list(cfg.feet)), device=self.device) if cfg.feet else None
        )
        self.gravity_dir = torch.tensor([0.0, 0.0, -1.0], device=self.device)
        self._step_cache: dict[str, torch.Tensor] = {}
        self._nominal: dict[str, torch.Tensor] = {}

    def _find_root_body(self, root_body: str | None) -> int | None:
        if root_body is None:
            return None
        root = self.body_ids(root_body)
        if not self.has_free_root or int(self.model.jnt_bodyid[0]) != root[0]:
            raise RobolearnError(
                f"scene.root_body {root_body!r} is not the body of the model's free joint"
            )
        return root[0]

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

    def nominal(self, field: str) -> torch.Tensor:
        """The compiled model's value of a model field, on the device (cached): what
        per-env randomization draws around, so repeated draws never drift."""
        cached = self._nominal.get(field)
        if cached is None:
            value = getattr(self.model, field)
            cached = torch.as_tensor(value, device=self.device, dtype=self.engine.dtype)
            self._nominal[field] = cached
        return cached

    # ---- state, computed once per env step -------------------------------------------

    def invalidate(self) -> None:
        """Forget the cached per-step quantities below; call after the state changes.

        The env does this after stepping the engine and after resets and events; code that
        writes engine state directly and reads the scene in the same step calls it too.
        """
        self._step_cache.clear()

    @per_step
    def joint_pos(self) -> torch.Tensor:
        """(N, num_joints) joint positions, float32."""
        return take_columns(self.engine.qpos, self._joint_qpos_cols).float()

    @per_step
    def joint_vel(self) -> torch.Tensor:
        """(N, num_joints) joint velocities, float32."""
        return take_columns(self.engine.qvel, self._joint_dof_cols).float()

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

    def _root_state(self, field: str, start: int) -> torch.Tensor:
        """Three columns of the free joint's part of qpos or qvel, float32."""
        self.require_floating_base()
        return getattr(self.engine, field)[:, start : start + 3].float()

    @per_step
    def root_pos_w(self) -> torch.Tensor:
        """(N, 3) world position of the root body, float32."""
        return self._root_state("qpos", 0)

    @per_step
    def root_quat_w(self) -> torch.Tensor:
        """(N, 4) root orientation, w x y z, float32."""
        self.require_floating_base()
        return self.engine.qpos[:, 3:7].float()

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
