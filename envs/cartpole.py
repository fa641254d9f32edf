"""A cart on a rail with a pole on a free hinge (``assets/cartpole``).

Joints: ``slider`` (cart position, m, limited to +-2.4) and ``hinge`` (pole angle, rad, 0 is
upright, unlimited). One motor on the slider: ctrl in [-1, 1] is +-30 N.
"""

from __future__ import annotations

from robolearn.scene import EntityCfg


def cartpole_robot() -> EntityCfg:
    """The cartpole, starting upright at the centre of the rail."""
    return EntityCfg(model="cartpole/cartpole.xml")
