"""The fused env step: the managers' work between policy and physics compiled into a few
fused kernels.

Each manager computes its terms one small torch op at a time: humanoid_walk's plain step
issues about 340 top-level torch ops (torch's profiler on the cpu engine, 64 envs, falling
robots; about 580 as a GPU runs it, every env's rows under masks), and on a GPU each is at
least one kernel launch of a few microseconds over a few thousand numbers, so at the env
counts a GPU runs the step is launch-bound. The fused step (``FusedStep`` in
:mod:`robolearn.env`) hands the managers' part to ``torch.compile`` (TorchInductor), which
traces the terms once and generates a few fused loops (Triton kernels on CUDA, C++ on the
CPU) in their place, in :class:`Region` s: the actions; the terminations and rewards; the
curriculum; and the reset of the finished envs, the commands, the interval events and the
observations, which torch.compile splits around the engine's own calls (MuJoCo's C batch
or a Warp graph, opaque to it).

The fused step computes every env's rows as a GPU does, on every engine: no decision on
the host, static shapes. Random draws inside a region are torch's own
(``fallback_random``): they consume the generator as the plain step does, so a fused and a
plain env seeded alike draw the same numbers. The numbers a region computes are the plain
step's to float32 rounding, not bit for bit: Inductor's loops evaluate ``sqrt``, ``sin``,
vector norms and cross products with other instruction sequences than ATen's kernels and
differ in the last bit (measured: 1 to 4 ulp), so a fused run and a plain run of the same
seed drift apart once a policy acts on its observations. Terminations, time-outs and
episode lengths are equal (tests/test_fused_step.py).

Compiling is the cost: 6-20 s per task the first time on this 2-core machine with
Inductor's cache on disk warm, more with it cold. A region that torch.compile cannot
trace whole runs plainly, with one warning that names the region and the reason.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch

from robolearn.errors import RobolearnError
from robolearn.sim.engine import ENGINE_CALL

FUSED_CHOICES = ("auto", "on", "off")
"""The values of ``ManagerBasedRLEnvCfg.fused_step``."""


def fused_wanted(choice: str, device: torch.device | str) -> bool:
    """Whether the env step is fused: ``on``/``off`` as said; ``auto`` on a GPU only (where
    launches bound the step), not on the CPU (where a plain step costs no compile time and
    the fused one saves a few ms per step, BENCHMARKS.md)."""
    if choice not in FUSED_CHOICES:
        raise RobolearnError(
            f"fused_step must be one of {', '.join(FUSED_CHOICES)}, got {choice!r}"
        )
    if choice == "auto":
        return torch.device(device).type == "cuda"
    return choice == "on"


class Region:
    """One part of the step, compiled at its second call; ``fn`` plainly if that fails.

    A region compiled whole (``fullgraph``): a failure to compile (torch.compile cannot
    trace a term, or no C++ compiler is found) is said once, naming the region and the
    first line of the reason, and the region runs plainly from then on. Such a failure
    has no side effect (it comes before anything runs), so the plain call that follows
    computes the step as if nothing had been tried. A region compiled in pieces compiles
    each piece when the call reaches it, after the pieces before it ran: there a piece
    that cannot be compiled at the first compiled call runs plainly instead (Dynamo's
    ``suppress_errors``, with torch's own warning), and nothing runs twice. Errors of
    robolearn's own (a term returning the wrong shape) are raised as they are.
    """

    def __init__(
        self, name: str, fn: Callable[..., Any], fullgraph: bool = True, dynamic: bool = False
    ) -> None:
        self.name = name
        self.fn = fn
        self.compiled: Callable[..., Any] | None = torch.compile(
            fn, fullgraph=fullgraph, dynamic=dynamic, options={"fallback_random": True}
        )
        self.whole = fullgraph
        self._calls = 0

    @property
    def fused(self) -> bool:
        """Whether the region runs compiled (False after a failure to compile)."""
        return self.compiled is not None

    def __call__(self, *args: Any) -> Any:
        self._calls += 1
        # The first call runs plainly: terms fill their caches of what never changes
        # (robolearn.scene.cache.fixed) from the model's names, which Dynamo cannot trace.
        if self.compiled is None or self._calls == 1:
            return self.fn(*args)
        if self._calls > 2:
            return self.compiled(*args)
        if not self.whole:
            import torch._dynamo  # loaded by torch.compile's first call anyway

            with torch._dynamo.config.patch(suppress_errors=True):
                return self.compiled(*args)
        try:
            result = self.compiled(*args)
        except RobolearnError:
            raise
        except Exception as exc:
            self.compiled = None
            reason = next((line for line in str(exc).splitlines() if line.strip()), "")
            warnings.warn(
                f"fused step: {self.name} runs plainly, torch.compile failed: "
                f"{type(exc).__name__}: {reason[:200]}",
                stacklevel=3,
            )
            return self.fn(*args)
        return result


def opaque_engine_calls(engine: Any) -> None:
    """Hide ``engine``'s public calls (MuJoCo's C batch, Warp graph launches) from
    torch.compile: compiled code calls them as they are, without tracing into them.

    Done on the one engine the fused step drives, when it is built, rather than where the
    calls are defined: ``torch.compiler.disable`` loads torch.compile's machinery, about a
    second and 70 MB that a process with no fused step would pay at import.
    """
    for name in dir(type(engine)):
        method = getattr(type(engine), name, None)
        if getattr(method, ENGINE_CALL, False):
            setattr(engine, name, torch.compiler.disable(getattr(engine, name)))
