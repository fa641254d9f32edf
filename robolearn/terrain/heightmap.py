"""The terrain's surface on the torch side: ground height under any (x, y), batched.

MuJoCo draws a height field cell between samples (r, c) and (r+1, c+1) as two triangles
split along that diagonal; :meth:`HeightMap.height_at` interpolates on the same triangles
from the compiled model's own data, so it returns what a vertical ray cast by MuJoCo hits
(within float32; tests/terrain/test_terrain.py checks it against ``mj_ray``). A height scan is then
a gather of four samples per point: no ray casting, no host synchronisation, the same on
every engine.
"""

from __future__ import annotations

import mujoco
import numpy as np
import torch


class HeightMap:
    """Ground heights of one height field geom of a compiled model, on ``device``."""

    def __init__(self, model: mujoco.MjModel, geom_id: int, device: torch.device) -> None:
        hid = int(model.geom_dataid[geom_id])
        nrow, ncol = int(model.hfield_nrow[hid]), int(model.hfield_ncol[hid])
        adr = int(model.hfield_adr[hid])
        size = model.hfield_size[hid]
        pos = model.geom_pos[geom_id]
        data = model.hfield_data[adr : adr + nrow * ncol].reshape(nrow, ncol).astype(np.float64)
        heights = pos[2] + data * size[2]
        self.heights = torch.as_tensor(heights.T.copy(), dtype=torch.float32, device=device)
        """(nx, ny) ground height at each sample, x-major."""
        self.nx, self.ny = ncol, nrow
        self.x0, self.y0 = float(pos[0] - size[0]), float(pos[1] - size[1])
        self.dx, self.dy = 2 * float(size[0]) / (ncol - 1), 2 * float(size[1]) / (nrow - 1)
        self.bounds = (self.x0, self.x0 + 2 * float(size[0]), self.y0, self.y0 + 2 * float(size[1]))
        """(x min, x max, y min, y max) of the height field (m)."""
        h = self.heights
        # each cell's four corner samples side by side: one 16-byte read per point instead
        # of four reads from two rows ny samples apart (1.5x faster over a 1001 x 1001 field)
        corners = (h[:-1, :-1], h[1:, :-1], h[:-1, 1:], h[1:, 1:])
        self._cells = torch.stack(corners, -1).reshape(-1, 4)

    def height_at(self, xy: torch.Tensor) -> torch.Tensor:
        """Ground height (m) under each point of ``xy`` (..., 2); points off the height
        field take the nearest edge's height."""
        # in place on the fresh tensors: this runs on every scan point at every step
        u = (xy[..., 0] - self.x0).div_(self.dx).clamp_(0, self.nx - 1)
        v = (xy[..., 1] - self.y0).div_(self.dy).clamp_(0, self.ny - 1)
        i = u.floor().clamp_(max=self.nx - 2)
        j = v.floor().clamp_(max=self.ny - 2)
        fu, fv = u.sub_(i), v.sub_(j)
        k = i.int().mul_(self.ny - 1).add_(j.int())  # int32: a field has < 2**31 cells
        # the cell's samples: at (i, j), one along x, one along y, one along both
        h00, h10, h01, h11 = self._cells.index_select(0, k.reshape(-1)).view(*k.shape, 4).unbind(-1)
        lower = h00 + fu * (h10 - h00) + fv * (h11 - h10)
        upper = h00 + fv * (h01 - h00) + fu * (h11 - h01)
        return torch.where(fu >= fv, lower, upper)
