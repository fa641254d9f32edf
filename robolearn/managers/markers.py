"""Debug drawings: what terms ask the viewers and videos to draw, in one small API.

A term of any manager (a :class:`~robolearn.managers.ManagerTerm` class term of rewards,
events, terminations, curricula or observations, a :class:`~robolearn.managers.CommandTerm`,
an :class:`~robolearn.managers.ActionTerm`) draws by implementing
``debug_markers(env_id) -> list[Marker]``: shapes in the world frame for env ``env_id``
(function terms have nowhere to keep the method, so they draw nothing).
:func:`robolearn.render.markers.collect_markers` gathers them from every manager, with the
terrain label and, on request, contact forces and the root's frame; the videos and the
server-rendered frames (:func:`robolearn.render.overlays.add_marker`), the native viewer
and the browser's 3D mode (``GET /markers.json``, :meth:`Marker.to_json`) all draw that
one list.

It runs per displayed env per frame, never in the training step: a term should read its
env's row and bring it to the host in one transfer (``torch.stack(...).tolist()``), not a
tensor per number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from robolearn.errors import RobolearnError

KINDS = ("arrow", "sphere", "box", "frame", "line", "text")
"""The kinds of :class:`Marker`."""

Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]


@dataclass(frozen=True)
class Marker:
    """A debug drawing for the viewers and videos, in the world frame (m).

    By ``kind``:

    * ``arrow``: from ``start`` to ``end``; ``size`` is the shaft's radius.
    * ``sphere``: centred at ``start``, of radius ``size``.
    * ``box``: centred at ``start``, of ``half_extents`` (x, y, z; a cube of half side
      ``size`` when None), turned by ``quat``.
    * ``frame``: three axes from ``start`` turned by ``quat`` (x red, y green, z blue, the
      alpha of ``rgba``), each ``size`` long (give frames a size: 0.2 to 0.3 m suits a
      robot's base).
    * ``line``: a segment from ``start`` to ``end``; ``size`` is its radius.
    * ``text``: ``text`` written at ``start``.

    Colors are RGBA in [0, 1]; ``quat`` is (w, x, y, z), None for no rotation. Give plain
    tuples of floats (``tensor.tolist()``), not tensors.
    """

    kind: str
    start: Vec3
    end: Vec3 | None = None
    rgba: tuple[float, float, float, float] = (1.0, 0.2, 0.2, 0.9)
    size: float = 0.025
    text: str = ""
    quat: Quat | None = None
    half_extents: Vec3 | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise RobolearnError(f"marker kind {self.kind!r} is not one of: {', '.join(KINDS)}")
        if self.kind in ("arrow", "line") and self.end is None:
            raise RobolearnError(f"a {self.kind} marker needs an end")

    def to_json(self) -> dict[str, Any]:
        """The marker as the browser's 3D mode reads it: ``{"kind", "start", "end", "size",
        "rgba", "text", "quat", "half_extents"}``, lists of numbers or None, every number
        finite (a NaN or infinity becomes None) and rounded to 10 µm."""
        return {
            "kind": self.kind,
            "start": _numbers(self.start),
            "end": _numbers(self.end),
            "size": _number(self.size),
            "rgba": _numbers(self.rgba),
            "text": self.text,
            "quat": _numbers(self.quat),
            "half_extents": _numbers(self.half_extents),
        }


def _number(x: Any) -> float | None:
    x = float(x)
    return round(x, 5) if math.isfinite(x) else None


def _numbers(values: Any) -> list[float | None] | None:
    return None if values is None else [_number(v) for v in values]


COMMAND_RGBA = (0.1, 0.8, 0.2, 0.9)
"""Green: a commanded quantity (e.g. the commanded base velocity)."""
ACTUAL_RGBA = (0.15, 0.35, 1.0, 0.9)
"""Blue: the quantity the robot achieves (e.g. its actual base velocity)."""
CONTACT_RGBA = (1.0, 0.45, 0.05, 0.9)
"""Orange: an external (contact) force on a body."""
LABEL_RGBA = (1.0, 1.0, 1.0, 1.0)
"""A text label's color (MuJoCo writes labels in its own color)."""
