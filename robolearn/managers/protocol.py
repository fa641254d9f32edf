"""What managers and terms know of the env they run in: a small protocol.

Managers and term libraries are typed against :class:`ManagedEnv` rather than the concrete
:class:`robolearn.env.ManagerBasedRLEnv`, which builds them: the env depends on the
managers, never the other way round, and any env that offers these attributes (a test
double, a future env class) can host the same terms. The term library sees the managers
too (:class:`robolearn.mdp.protocol.TaskEnv`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import torch

    from robolearn.scene import Scene


class ManagedEnv(Protocol):
    """The env as its managers and terms read it."""

    cfg: Any
    """The task config (a ``ManagerBasedRLEnvCfg``)."""
    scene: Scene
    """The world: engine, names, default and per-step state."""
    num_envs: int
    device: torch.device | str
    physics_dt: float
    step_dt: float
    """Seconds per env step (``physics_dt x decimation``)."""
    max_episode_length: int
    """Env steps per episode."""
    max_episode_length_s: float
    episode_length_buf: torch.Tensor
    """(N,) env steps since each env's last reset."""
    common_step_counter: int
    """Env steps since the env was built."""
    host_masks: bool
    """Whether masks may be read on the host (the cpu engine's plain step): masked work
    that selects no env is then skipped, and the selected rows are written by index."""
    reset_rows: tuple
    """While envs reset, the :class:`~robolearn.managers.EnvRows` of the reset's masks."""
