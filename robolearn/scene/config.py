"""The scene's configs: which engine runs the physics, and which world it runs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import mujoco

from robolearn.scene.actuators import ImplicitPDCfg
from robolearn.scene.contact_sensors import ContactSensorCfg
from robolearn.scene.entities import EntityCfg
from robolearn.scene.init_state import INIT_KEY, InitStateCfg
from robolearn.scene.mirror import JointMirrorCfg
from robolearn.scene.sensors.base import SensorCfg
from robolearn.sim import DEFAULT_PER_ENV_FIELDS
from robolearn.terrain import TerrainCfg


@dataclass
class NewtonCfg:
    """The Newton engines' settings (``env.sim.engine=newton`` or ``newton-cpu``)."""

    solver: str = "mujoco"
    """Newton's solver: ``mujoco`` (MuJoCo Warp, MuJoCo's actuators), ``featherstone``,
    ``xpbd`` or ``semi_implicit`` (Newton's own, with its collision pipeline)."""
    substeps: int | None = None
    """Solver steps per physics step; None for the solver's default (1 on ``mujoco``;
    enough for steps of 1 ms on featherstone and xpbd, 50 us on semi_implicit)."""
    friction_stiffness: float | None = None
    """Newton's friction coefficient ``kf`` of every shape on Newton's own solvers (N s/m:
    the slope of the regularized Coulomb friction below its cap); None keeps Newton's
    (1000). A differentiable run of a legged task wants about 100: at 1000 a foot's
    friction multiplies the state's gradient by up to 290,000 per env step (the quadruped,
    docs/differentiable.md), at 100 by at most 3.2; the feet slip more before friction
    holds them."""
    differentiable: bool = False
    """Build Newton's model for gradients through the step (``featherstone`` or
    ``semi_implicit`` only); the differentiable learner (``--algo shac``) sets it."""


@dataclass
class SimCfg:
    """Which engine runs the physics, and how."""

    engine: str = "auto"
    """``auto`` (cuda if available, else cpu), ``cpu``, ``cuda``, ``cuda:N``, ``warp-cpu``,
    ``newton`` or ``newton-cpu`` (Newton's solvers: :class:`NewtonCfg`)."""
    newton: NewtonCfg = field(default_factory=NewtonCfg)
    """The Newton engines' solver and substeps; unused by the other engines."""
    physics_dt: float | None = None
    """Physics timestep in seconds; None keeps the MJCF's ``<option timestep>``."""
    gravity: tuple[float, float, float] | None = None
    """Gravity (x, y, z) in m/s^2; None keeps the MJCF's ``<option gravity>`` (e.g.
    ``env.sim.gravity=[0,0,-1.62]`` for the Moon)."""
    nthread: int | None = None
    """Threads of the cpu engine; None for every core this process may use."""
    per_env_fields: tuple[str, ...] = DEFAULT_PER_ENV_FIELDS
    """Model fields with one value per env (domain randomization writes these)."""
    max_speed: float = 1e4
    """Speed in m/s or rad/s (any entry of qvel) beyond which an env's physics counts as
    diverged: the env is reset and counted as ``nonfinite``, as for NaN. No robot moves at
    10 km/s or 95,000 rpm, but a simulation blowing up does, long before MuJoCo's own bound
    (1e10) and with rewards of 1e20 meanwhile; ``inf`` keeps MuJoCo's bound alone."""
    integrator: str | None = None
    """``euler``, ``implicitfast``, ``implicit`` or ``rk4``; None keeps the MJCF's
    ``<option integrator>``. Menagerie's G1 ships ``implicitfast``, Unitree's files Euler,
    which steps a position actuator's damping explicitly (see
    :func:`robolearn.sim.stability.check_actuator_damping`)."""
    cone: str | None = None
    """Friction cone, ``pyramidal`` or ``elliptic``; None keeps the MJCF's ``<option cone>``.
    An elliptic cone with a high ``impratio`` (Menagerie's and Unitree's Go2 files ship
    ``elliptic`` at 100) resists slip better and costs the solver more."""
    impratio: float | None = None
    """Ratio of frictional to normal constraint impedance; None keeps the MJCF's."""
    iterations: int | None = None
    """Most solver iterations per physics step; None keeps the MJCF's (MuJoCo's default 100).
    A policy that learns on a capped solver (mjlab: 10) is checked uncapped in sim2sim."""
    ls_iterations: int | None = None
    """Most line-search iterations per solver iteration; None keeps the MJCF's (50)."""
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
    """Keyframe giving the default state (root pose, joint positions, ctrl); None: qpos0.
    Unused where ``init_state`` is set."""
    init_state: InitStateCfg | None = None
    """The default state stated by the robot config, written into the model as the keyframe
    ``init_state`` (see :mod:`robolearn.scene.init_state`); None: ``keyframe``."""
    joints: tuple[str, ...] = ()
    """The joint names a robot config was written for: a model lacking any of them is
    refused, naming them; empty checks nothing."""
    ground: bool = False
    """Add a ground plane (and a light) at z = 0 when the MJCF's world has no plane, as a
    robot's own file usually has not; a terrain replaces it."""
    root_body: str | None = None
    """Body of the floating base (a free joint) for base-frame quantities; None if fixed."""
    feet: tuple[str, ...] = field(default_factory=tuple)
    """Bodies that are feet, for gait terms (air time, slip, contact)."""
    mirror: JointMirrorCfg | None = None
    """The robot config's left-right joint map for symmetry augmentation; None finds it in
    the model's geometry (:mod:`robolearn.scene.mirror`)."""
    gravity_compensation: tuple[str, ...] = ()
    """Regexes of the robot's bodies whose weight the robot's own controller cancels
    (MuJoCo's ``gravcomp="1"``): a Franka arm's controller adds each link's gravity torque
    to what it is commanded, so its position loops do not sag. Empty: none."""
    edit: Callable[[mujoco.MjSpec], None] | None = None
    """A robot config's own change to the robot's MJCF, run on its spec before the actuator
    configs apply (e.g. a gripper actuator's gains from the vendor's grasp force, which no
    field states); None: none."""
    actuators: dict[str, ImplicitPDCfg] = field(default_factory=dict)
    """How the robot's joints are driven, by name: each config selects joints by regex and
    replaces or adds their actuators (see :mod:`robolearn.scene.actuators`); empty keeps
    the MJCF's actuators."""
    entities: dict[str, EntityCfg] = field(default_factory=dict)
    """More robots and objects beside the robot (the entity ``robot`` is ``model``), each
    attached under the prefix ``<name>/`` (see :mod:`robolearn.scene.entities`)."""
    contact_sensors: dict[str, ContactSensorCfg] = field(default_factory=dict)
    """MuJoCo contact sensors between bodies of the entities, by name (a finger and the
    cube): how many contacts and their net force, in ``sensordata`` on every engine (see
    :mod:`robolearn.scene.contact_sensors`)."""
    sensors: dict[str, SensorCfg] = field(default_factory=dict)
    """Sensors by name, updated with the physics and read by terms by name: ray casters
    (height scans that see boxes, depth images, lidars), contact sensors with air time (see
    :mod:`robolearn.scene.sensors`)."""
    terrain: TerrainCfg | None = None
    """A generated terrain in place of the MJCF's ground planes; None keeps the MJCF's
    ground. With a terrain, each env spawns on a tile (see :mod:`robolearn.terrain`)."""

    @property
    def default_keyframe(self) -> str | None:
        """The keyframe every env resets to: ``init_state``'s, else ``keyframe``."""
        return INIT_KEY if self.init_state is not None else self.keyframe
