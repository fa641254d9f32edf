"""The Scene: an engine plus the names and index maps terms use."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import mujoco
import torch

from robolearn.errors import RobolearnError
from robolearn.math import columns, quat_rotate, quat_rotate_inverse, take_columns
from robolearn.sim import DEFAULT_PER_ENV_FIELDS, Engine, compile_model, load_spec, make_engine


@dataclass
class SimCfg:
    """Which engine runs the physics, and how."""

    engine: str = "auto"
    """``auto`` (cuda if available, else cpu), ``cpu``, ``cuda``, ``cuda:N`` or ``warp-cpu``."""
    physics_dt: float | None = None
    """Physics timestep in seconds; None keeps the MJCF's ``<option timestep>``."""
    gravity: tuple[float, float, float] | None = None
    """Gravity (x, y, z) in m/s^2; None keeps the MJCF's ``<option gravity>`` (e.g.
    ``env.sim.gravity=[0,0,-1.62]`` for the Moon)."""
    nthread: int | None = None
    """Threads of the cpu engine; None for every core this process may use."""
    per_env_fields: tuple[str, ...] = DEFAULT_PER_ENV_FIELDS
    """Model fields with one value per env (domain randomization writes these)."""
    nconmax: int | None = None
    """Contacts allocated per env on the Warp engines; None for MuJoCo Warp's estimate."""
    njmax: int | None = None
    """Constraint rows allocated per env on the Warp engines; None for the estimate."""


@dataclass
class SceneCfg:
    """The world: which MJCF, how many copies, and the default state."""

    model: str = ""
    """MJCF file: a path inside robolearn's assets (``humanoid/scene.xml``) or any path."""
    num_envs: int = 1024
    """Number of parallel envs."""
    keyframe: str | None = None
    """Keyframe giving the default state (root pose, joint positions, ctrl); None: qpos0."""
    root_body: str | None = None
    """Body of the floating base (a free joint) for base-frame quantities; None if fixed."""
    feet: tuple[str, ...] = field(default_factory=tuple)
    """Bodies that are feet, for gait terms (air time, slip, contact)."""


def resolve_model_path(model: str) -> Path:
    """An MJCF path from a SceneCfg: robolearn's assets first, then the filesystem."""
    from robolearn.assets import ASSETS_DIR

    if not model:
        raise RobolearnError("scene.model is empty: name an MJCF file")
    shipped = ASSETS_DIR / model
    if shipped.is_file():
        return shipped
    path = Path(model).expanduser()
    if path.is_file():
        return path.resolve()
    choices = sorted(str(p.relative_to(ASSETS_DIR)) for p in ASSETS_DIR.rglob("scene.xml"))
    raise RobolearnError(
        f"scene.model {model!r} is neither a robolearn asset nor a file; "
        f"robolearn assets: {', '.join(choices)}"
    )


def match_names(names: Sequence[str], patterns: str | Sequence[str], what: str) -> list[int]:
    """Indices of ``names`` that fully match any regex in ``patterns``, in ``names`` order.

    Raises RobolearnError naming the valid names if a pattern matches nothing.
    """
    if isinstance(patterns, str):
        patterns = [patterns]
    ids: list[int] = []
    for pattern in patterns:
        regex = re.compile(pattern)
        hits = [i for i, n in enumerate(names) if regex.fullmatch(n)]
        if not hits:
            raise RobolearnError(
                f"no {what} matches {pattern!r}; {what}s: {', '.join(n for n in names if n)}"
            )
        ids.extend(h for h in hits if h not in ids)
    return sorted(ids)


def _per_step(fn: Callable[[Scene], torch.Tensor]) -> property:
    """A read-only property computed at most once per env step (see Scene.invalidate)."""
    key = fn.__name__

    def get(self: Scene) -> torch.Tensor:
        value = self._step_cache.get(key)
        if value is None:
            value = self._step_cache[key] = fn(self)
        return value

    get.__doc__ = fn.__doc__
    return property(get)


class Scene:
    """An engine with the robot's names and state, as the managers read them.

    Joints are the model's hinge and slide joints in qpos order; the floating root (a free
    joint), if any, is separate. All tensors are on ``engine.device``. State quantities
    (joint and root state, contact forces) are float32 whatever the engine's dtype, and are
    computed once per env step: many terms read them, and one computation serves all.
    """

    def __init__(self, cfg: SceneCfg, sim: SimCfg) -> None:
        self.cfg = cfg
        spec = load_spec(resolve_model_path(cfg.model))
        if sim.physics_dt is not None:
            if sim.physics_dt <= 0:
                raise RobolearnError(f"sim.physics_dt must be > 0, got {sim.physics_dt}")
            spec.option.timestep = sim.physics_dt
        if sim.gravity is not None:
            gravity = [float(g) for g in sim.gravity]
            if len(gravity) != 3:
                raise RobolearnError(f"sim.gravity must be 3 numbers (x, y, z), got {sim.gravity}")
            spec.option.gravity = gravity
        self.engine: Engine = make_engine(
            compile_model(spec),
            cfg.num_envs,
            sim.engine,
            nthread=sim.nthread,
            per_env_fields=sim.per_env_fields,
            nconmax=sim.nconmax,
            njmax=sim.njmax,
        )
        e, m = self.engine, self.engine.model
        self.model: mujoco.MjModel = m
        self.num_envs = e.num_envs
        self.device = e.device
        dev = self.device

        def names(kind: str, count: int) -> list[str]:
            return [getattr(m, kind)(i).name for i in range(count)]

        self.body_names = names("body", m.nbody)
        self.site_names = names("site", m.nsite)
        self.sensor_names = names("sensor", m.nsensor)
        self.actuator_names = names("actuator", m.nu)
        self.geom_names = names("geom", m.ngeom)

        hinge_like = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
        joints = [j for j in range(m.njnt) if int(m.jnt_type[j]) in hinge_like]
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

        # Actuators driving a joint: which joint (index into joint_names) each one drives.
        joint_of_jnt = {j: i for i, j in enumerate(joints)}
        self.actuator_joint = torch.full((m.nu,), -1, dtype=torch.long, device=dev)
        for a in range(m.nu):
            if int(m.actuator_trntype[a]) == int(mujoco.mjtTrn.mjTRN_JOINT):
                self.actuator_joint[a] = joint_of_jnt.get(int(m.actuator_trnid[a, 0]), -1)
        self.joint_actuator_ids = (self.actuator_joint >= 0).nonzero().flatten()
        """Actuators that drive one of :attr:`joint_names` (the rest drive tendons, sites...)."""
        self.actuator_ctrlrange = torch.as_tensor(m.actuator_ctrlrange, device=dev)
        self.actuator_forcerange = torch.as_tensor(m.actuator_forcerange, device=dev)

        # Default state: a keyframe's, or the model's qpos0.
        if cfg.keyframe is not None:
            keys = [m.key(k).name for k in range(m.nkey)]
            if cfg.keyframe not in keys:
                raise RobolearnError(
                    f"scene.keyframe {cfg.keyframe!r} is not in {cfg.model}; keyframes: "
                    f"{', '.join(keys) or 'none'}"
                )
            key = m.key(cfg.keyframe)
            qpos0, ctrl0 = key.qpos, key.ctrl
        else:
            qpos0, ctrl0 = m.qpos0, torch.zeros(m.nu)
        self.default_qpos = torch.as_tensor(qpos0, device=dev, dtype=e.dtype)
        self.default_ctrl = torch.as_tensor(ctrl0, device=dev, dtype=e.dtype)
        self.default_joint_pos = (
            self.default_qpos[self.joint_qpos_adr].float().unsqueeze(0).repeat(self.num_envs, 1)
        )
        """(N, num_joints) joint positions each env resets around; events may change rows."""

        self.has_free_root = m.njnt > 0 and int(m.jnt_type[0]) == int(mujoco.mjtJoint.mjJNT_FREE)
        if cfg.root_body is not None:
            root = self.body_ids(cfg.root_body)
            if not self.has_free_root or int(m.jnt_bodyid[0]) != root[0]:
                raise RobolearnError(
                    f"scene.root_body {cfg.root_body!r} is not the body of the model's free joint"
                )
            self.root_body_id = root[0]
        else:
            self.root_body_id = None
        self.feet_body_ids = (
            torch.as_tensor(self.body_ids(list(cfg.feet)), device=dev) if cfg.feet else None
        )
        self.gravity_dir = torch.tensor([0.0, 0.0, -1.0], device=dev)
        self._step_cache: dict[str, torch.Tensor] = {}
        self._index_cache: dict[tuple, torch.Tensor] = {}
        self._nominal: dict[str, torch.Tensor] = {}

    # ---- name lookups -----------------------------------------------------------------

    def index(self, kind: str, patterns: str | Sequence[str]) -> torch.Tensor:
        """Cached long tensor of ``kind`` ids (joint, body, actuator, site, geom) matching
        regex ``patterns``; terms call this every step, so the regexes run once."""
        key = (kind, patterns if isinstance(patterns, str) else tuple(patterns))
        cached = self._index_cache.get(key)
        if cached is None:
            lookup = {
                "joint": self.joint_ids,
                "body": self.body_ids,
                "actuator": self.actuator_ids,
                "site": self.site_ids,
                "geom": self.geom_ids,
            }[kind]
            cached = torch.as_tensor(lookup(patterns), device=self.device, dtype=torch.long)
            self._index_cache[key] = cached
        return cached

    def joint_ids(self, patterns: str | Sequence[str]) -> list[int]:
        """Indices into :attr:`joint_names` of the joints matching regex ``patterns``."""
        return match_names(self.joint_names, patterns, "joint")

    def body_ids(self, patterns: str | Sequence[str]) -> list[int]:
        """Body ids (MuJoCo's) of the bodies matching regex ``patterns``."""
        return match_names(self.body_names, patterns, "body")

    def actuator_ids(self, patterns: str | Sequence[str]) -> list[int]:
        """Actuator ids (MuJoCo's, i.e. ctrl columns) matching regex ``patterns``."""
        return match_names(self.actuator_names, patterns, "actuator")

    def site_ids(self, patterns: str | Sequence[str]) -> list[int]:
        return match_names(self.site_names, patterns, "site")

    def geom_ids(self, patterns: str | Sequence[str]) -> list[int]:
        return match_names(self.geom_names, patterns, "geom")

    def sensor_slice(self, name: str) -> slice:
        """The columns of ``engine.sensordata`` that sensor ``name`` fills."""
        match_names(self.sensor_names, re.escape(name), "sensor")
        s = self.model.sensor(name)
        return slice(int(s.adr[0]), int(s.adr[0] + s.dim[0]))

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

    @_per_step
    def joint_pos(self) -> torch.Tensor:
        """(N, num_joints) joint positions, float32."""
        return take_columns(self.engine.qpos, self._joint_qpos_cols).float()

    @_per_step
    def joint_vel(self) -> torch.Tensor:
        """(N, num_joints) joint velocities, float32."""
        return take_columns(self.engine.qvel, self._joint_dof_cols).float()

    @_per_step
    def contact_force(self) -> torch.Tensor:
        """(N, nbody, 3) net external force on each body, world frame, float32."""
        # All of cfrc_ext converted at once, then viewed: on cpu a strided float64->float32
        # copy of its force columns alone takes several times as long.
        return self.engine.cfrc_ext.float()[..., 3:6]

    def contact_force_of(self, body_ids: torch.Tensor) -> torch.Tensor:
        """(N, len(body_ids), 3): :attr:`contact_force` of the given bodies, gathered from
        the engine's memory (terms read a few bodies; converting all of them costs more)."""
        return self.engine.cfrc_ext.index_select(1, body_ids)[..., 3:6].float()

    @_per_step
    def feet_contact_force(self) -> torch.Tensor:
        """(N, num_feet, 3) net external force on each foot body, world frame, float32."""
        return self.contact_force_of(self._require_feet())

    @_per_step
    def feet_pos_w(self) -> torch.Tensor:
        """(N, num_feet, 3) world position of each foot body's origin, float32."""
        return self.engine.xpos.index_select(1, self._require_feet()).float()

    def _require_feet(self) -> torch.Tensor:
        if self.feet_body_ids is None:
            raise RobolearnError("this term needs scene.feet: the names of the foot bodies")
        return self.feet_body_ids

    @_per_step
    def feet_lin_vel_w(self) -> torch.Tensor:
        """(N, num_feet, 3) linear velocity of each foot body's origin, world frame."""
        lin, _ = self.engine.body_velocity(self._require_feet())
        return lin.float()

    def _require_root(self) -> None:
        if self.root_body_id is None:
            raise RobolearnError(
                "this term needs a floating base: set scene.root_body to the free joint's body"
            )

    @_per_step
    def root_pos_w(self) -> torch.Tensor:
        """(N, 3) world position of the root body, float32."""
        self._require_root()
        return self.engine.qpos[:, 0:3].float()

    @_per_step
    def root_quat_w(self) -> torch.Tensor:
        """(N, 4) root orientation, w x y z, float32."""
        self._require_root()
        return self.engine.qpos[:, 3:7].float()

    @_per_step
    def root_lin_vel_w(self) -> torch.Tensor:
        """(N, 3) root linear velocity in the world frame, float32."""
        self._require_root()
        return self.engine.qvel[:, 0:3].float()

    @_per_step
    def root_ang_vel_b(self) -> torch.Tensor:
        """(N, 3) root angular velocity in the root frame (MuJoCo's free joint convention)."""
        self._require_root()
        return self.engine.qvel[:, 3:6].float()

    @_per_step
    def root_lin_vel_b(self) -> torch.Tensor:
        """(N, 3) root linear velocity in the root frame."""
        return quat_rotate_inverse(self.root_quat_w, self.root_lin_vel_w)

    @_per_step
    def root_ang_vel_w(self) -> torch.Tensor:
        """(N, 3) root angular velocity in the world frame."""
        return quat_rotate(self.root_quat_w, self.root_ang_vel_b)

    @_per_step
    def projected_gravity_b(self) -> torch.Tensor:
        """(N, 3) unit gravity direction in the root frame ((0, 0, -1) when upright)."""
        q = self.root_quat_w
        return quat_rotate_inverse(q, self.gravity_dir.expand(q.shape[0], 3))
