"""What the browser's 3D mode draws: the scene once, then body poses per frame.

The page (``static/scene3d.js``, drawn with three.js) asks once for
``GET /scene3d.json`` (:func:`scene_description`): every geom a user sees (MuJoCo's default
visible groups 0 to 2) with its type, size, colour, body and pose in that body's frame,
the meshes and height fields they use, which bodies are welded to the world (drawn once,
never moved), and each env's origin. Then, at its frame rate, it asks for
``GET /poses.bin?envs=...`` (:func:`encode_poses`): a 32-byte header and, per env asked,
every body's position and orientation as float32, little-endian. The physics never runs in
the browser: a frame of 64 humanoids is 41 KB.

Poses are read on the simulation thread only (:class:`PoseSnapshots`): the engine's tensors
are overwritten by every step, so an HTTP thread reading them could see half a step; it
gets the latest complete snapshot instead, as ``GET /frame.jpg`` gets the latest frame.

Everything here is plain functions of a compiled ``MjModel`` and arrays, testable without a
browser (tests/viewer/test_scene3d.py; the page: tests/viewer/test_web_3d.py).
"""

from __future__ import annotations

import base64
import re
import struct
import threading
import time
from typing import Any

import mujoco
import numpy as np

VISIBLE_GROUPS = (0, 1, 2)
"""The geom groups MuJoCo's viewers show by default; the other groups (collision-only
geoms, by convention 3) are not sent."""
GEOM_TYPES = {
    int(mujoco.mjtGeom.mjGEOM_PLANE): "plane",
    int(mujoco.mjtGeom.mjGEOM_HFIELD): "hfield",
    int(mujoco.mjtGeom.mjGEOM_SPHERE): "sphere",
    int(mujoco.mjtGeom.mjGEOM_CAPSULE): "capsule",
    int(mujoco.mjtGeom.mjGEOM_ELLIPSOID): "ellipsoid",
    int(mujoco.mjtGeom.mjGEOM_CYLINDER): "cylinder",
    int(mujoco.mjtGeom.mjGEOM_BOX): "box",
    int(mujoco.mjtGeom.mjGEOM_MESH): "mesh",
}
"""The geom types the page draws (signed distance fields are not sent)."""
MAX_ENVS_PER_REQUEST = 1024
"""The most envs one ``GET /poses.bin`` may ask for (the page shows at most 64)."""
POSES_MAGIC = b"RLP1"
POSES_HEADER = struct.Struct("<4sIIIdd")
"""The header of ``/poses.bin``: magic ``RLP1``, frame counter (uint32), number of envs n
(uint32), bodies per env nbody (uint32), env steps taken (float64), simulated seconds
(float64); then n env ids (uint32) and n x nbody x 7 float32 (position x y z, orientation
w x y z, world frame), all little-endian."""
POSE_FLOATS = 7


def _b64(array: np.ndarray, dtype: str) -> str:
    return base64.b64encode(np.ascontiguousarray(array, dtype=dtype).tobytes()).decode("ascii")


def _round(values, digits: int = 6) -> list[float]:
    return [round(float(v), digits) for v in np.asarray(values).ravel()]


def static_bodies(model: mujoco.MjModel) -> list[int]:
    """The bodies welded to the world (the world itself included) that no mocap moves: their
    pose is the same in every env and never changes."""
    return [
        b
        for b in range(model.nbody)
        if int(model.body_weldid[b]) == 0 and int(model.body_mocapid[b]) < 0
    ]


def _texture_rgb(model: mujoco.MjModel, mat: int) -> list[float] | None:
    """The mean colour of a material's RGB texture, or None: the page draws one colour per
    geom, and the mean is what a textured floor looks like from afar."""
    texids = np.asarray(model.mat_texid[mat]).ravel()
    if texids.size > 1:  # one slot per texture role (MuJoCo 3.2 and later)
        tex = int(texids[int(mujoco.mjtTextureRole.mjTEXROLE_RGB)])
    else:
        tex = int(texids[0]) if texids.size else -1
    if tex < 0:
        return None
    adr, w, h = int(model.tex_adr[tex]), int(model.tex_width[tex]), int(model.tex_height[tex])
    channels = int(model.tex_nchannel[tex])
    pixels = model.tex_data[adr : adr + w * h * channels].reshape(-1, channels)
    if channels < 3 or pixels.size == 0:
        return None
    return _round(pixels[:, :3].mean(axis=0) / 255.0, 4)


def geom_rgba(model: mujoco.MjModel, geom: int) -> list[float]:
    """A geom's colour: its material's rgba when it has a material, else its own."""
    mat = int(model.geom_matid[geom])
    rgba = model.mat_rgba[mat] if mat >= 0 else model.geom_rgba[geom]
    return _round(rgba, 4)


def visible_geoms(model: mujoco.MjModel) -> list[int]:
    """The geoms the page draws: of a drawable type, in a visible group, not transparent."""
    return [
        g
        for g in range(model.ngeom)
        if int(model.geom_type[g]) in GEOM_TYPES
        and int(model.geom_group[g]) in VISIBLE_GROUPS
        and float(geom_rgba(model, g)[3]) > 0.0
    ]


def _kinematics(model: mujoco.MjModel) -> mujoco.MjData:
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    return data


def anchor_body(model: mujoco.MjModel, root_body: int | None) -> int:
    """The body the 3D camera follows and clicks pick: the floating root, else the first
    body that moves (a cart on a rail), else the world."""
    if root_body is not None:
        return int(root_body)
    fixed = set(static_bodies(model))
    return next((b for b in range(model.nbody) if b not in fixed), 0)


def spread_spacing(model: mujoco.MjModel, data: mujoco.MjData | None = None) -> float:
    """The distance between neighbouring envs when the page spreads them on a grid (flat
    tasks start every env at the same place): 1.5 x the model's extent, or more when geoms
    fixed to the world (a cart's rail) are wider."""
    data = data if data is not None else _kinematics(model)
    span = 0.0
    for g in visible_geoms(model):
        kind = int(model.geom_type[g])
        if kind in (int(mujoco.mjtGeom.mjGEOM_PLANE), int(mujoco.mjtGeom.mjGEOM_HFIELD)):
            continue
        if int(model.body_weldid[model.geom_bodyid[g]]) != 0:
            continue
        reach = float(np.abs(data.geom_xpos[g, :2]).max()) + float(model.geom_rbound[g])
        span = max(span, reach)
    return round(max(1.5 * float(model.stat.extent), 2.0 * span + 0.5, 0.5), 3)


def scene_description(
    model: mujoco.MjModel,
    env_origins: np.ndarray | None = None,
    root_body: int | None = None,
    num_envs: int = 1,
) -> dict[str, Any]:
    """``GET /scene3d.json``: everything the page needs to draw the model, sent once.

    ``geoms``: one entry per visible geom (see :func:`visible_geoms`): ``id``, ``name``,
    ``type`` (plane, sphere, capsule, ellipsoid, cylinder, box, mesh, hfield), ``size``
    (MuJoCo's geom_size), ``rgba`` (:func:`geom_rgba`), ``texture_rgb`` (the mean colour of
    its material's texture, or null), ``body``, ``static`` (its body is welded to the world),
    ``pos`` and ``quat`` (w x y z) in the body's frame, ``mesh`` and ``hfield`` ids or null.
    ``meshes``: ``vertices`` (float32 x 3), ``faces`` (uint32 x 3), ``normals`` (float32 x
    3) and ``face_normals`` (uint32 x 3, the normal of each face corner), base64. ``hfields``:
    ``nrow``, ``ncol``, ``size`` (x and y half sizes, top height, base depth) and ``data``
    (nrow x ncol float32 in [0, 1], base64, row-major, rows along y). ``bodies``: name,
    parent, whether ``static``, the ``radius`` of a sphere about its origin that holds its
    visible geoms (what a click is tested against; 0 for a static body or one without
    geoms); a static body's world ``pos`` and ``quat``. Plus the env
    origins, the body the camera follows (``anchor_body``) with a bounding radius of what
    moves around it (``robot_radius``), the spacing for spread envs, camera and light.
    """
    data = _kinematics(model)
    fixed = set(static_bodies(model))
    geoms, used_meshes, used_hfields = _geom_entries(model, fixed)
    anchor = anchor_body(model, root_body)
    robot_radius, body_radius = _radii(model, data, fixed, anchor)
    origins = (
        np.zeros((num_envs, 3)) if env_origins is None else np.asarray(env_origins, np.float64)
    )
    flat = bool(len(origins) > 1 and np.ptp(origins, axis=0).max() < 1e-6)
    return {
        "version": 1,
        "nbody": int(model.nbody),
        "num_envs": len(origins),
        "bodies": _body_entries(model, data, fixed, body_radius),
        "static_bodies": sorted(fixed),
        "geoms": geoms,
        "meshes": [mesh_description(model, m) for m in used_meshes],
        "hfields": [hfield_description(model, h) for h in used_hfields],
        "env_origins": [_round(o, 4) for o in origins],
        "root_body": None if root_body is None else int(root_body),
        "anchor_body": anchor,
        "robot_radius": round(max(robot_radius, 0.05), 4),
        "spread": {"default": flat, "spacing": spread_spacing(model, data)},
        "extent": round(float(model.stat.extent), 4),
        "center": _round(model.stat.center, 4),
        "camera": _camera(model, root_body),
        "light": _light(model),
    }


def _geom_entries(
    model: mujoco.MjModel, fixed: set[int]
) -> tuple[list[dict[str, Any]], list[int], list[int]]:
    """``/scene3d.json``'s ``geoms`` (see :func:`scene_description`), and the meshes and
    height fields they use, in the order first used."""
    geoms = []
    used_meshes: list[int] = []
    used_hfields: list[int] = []
    for g in visible_geoms(model):
        kind = GEOM_TYPES[int(model.geom_type[g])]
        body = int(model.geom_bodyid[g])
        mat = int(model.geom_matid[g])
        dataid = int(model.geom_dataid[g])
        mesh = dataid if kind == "mesh" and dataid >= 0 else None
        hfield = dataid if kind == "hfield" and dataid >= 0 else None
        if kind in ("mesh", "hfield") and dataid < 0:
            continue
        if mesh is not None and mesh not in used_meshes:
            used_meshes.append(mesh)
        if hfield is not None and hfield not in used_hfields:
            used_hfields.append(hfield)
        geoms.append(
            {
                "id": g,
                "name": model.geom(g).name,
                "type": kind,
                "size": _round(model.geom_size[g]),
                "rgba": geom_rgba(model, g),
                "texture_rgb": _texture_rgb(model, mat) if mat >= 0 else None,
                "body": body,
                "static": body in fixed,
                "pos": _round(model.geom_pos[g]),
                "quat": _round(model.geom_quat[g]),
                "mesh": mesh,
                "hfield": hfield,
            }
        )
    return geoms, used_meshes, used_hfields


def _radii(
    model: mujoco.MjModel, data: mujoco.MjData, fixed: set[int], anchor: int
) -> tuple[float, np.ndarray]:
    """How far what moves reaches from the anchor body (the robot's radius), and per body
    the radius of a sphere about its origin that holds its visible geoms (0 for a static
    body or one without geoms)."""
    radius = 0.0
    body_radius = np.zeros(model.nbody)
    for g in visible_geoms(model):
        body = int(model.geom_bodyid[g])
        if body in fixed:
            continue
        reach = float(np.linalg.norm(data.geom_xpos[g] - data.xpos[anchor]))
        radius = max(radius, reach + float(model.geom_rbound[g]))
        around = float(np.linalg.norm(model.geom_pos[g])) + float(model.geom_rbound[g])
        body_radius[body] = max(body_radius[body], around)
    return radius, body_radius


def _body_entries(
    model: mujoco.MjModel, data: mujoco.MjData, fixed: set[int], body_radius: np.ndarray
) -> list[dict[str, Any]]:
    """``/scene3d.json``'s ``bodies`` (see :func:`scene_description`)."""
    return [
        {
            "id": b,
            "name": model.body(b).name,
            "parent": int(model.body_parentid[b]),
            "static": b in fixed,
            "radius": round(float(body_radius[b]), 4),
            **({"pos": _round(data.xpos[b]), "quat": _round(data.xquat[b])} if b in fixed else {}),
        }
        for b in range(model.nbody)
    ]


def _camera(model: mujoco.MjModel, root_body: int | None) -> dict[str, float]:
    """The page's first camera: MuJoCo's free camera angles, 3 m from a robot."""
    return {
        "azimuth": float(model.vis.global_.azimuth),
        "elevation": float(model.vis.global_.elevation),
        "fovy": float(model.vis.global_.fovy),
        "distance": 3.0 if root_body is not None else round(1.5 * float(model.stat.extent), 4),
    }


def _light(model: mujoco.MjModel) -> dict[str, Any]:
    """The headlight's ambient and diffuse colours, and the model's first light (the key
    light), if it has one."""
    headlight = model.vis.headlight
    key_light = None
    if model.nlight:
        key_light = {
            "dir": _round(model.light_dir[0], 4),
            "diffuse": _round(model.light_diffuse[0], 4),
        }
    return {
        "ambient": _round(headlight.ambient, 4),
        "headlight": _round(headlight.diffuse, 4),
        "key": key_light,
    }


def mesh_description(model: mujoco.MjModel, mesh: int) -> dict[str, Any]:
    """One mesh as ``/scene3d.json`` sends it (see :func:`scene_description`)."""
    vadr, vnum = int(model.mesh_vertadr[mesh]), int(model.mesh_vertnum[mesh])
    fadr, fnum = int(model.mesh_faceadr[mesh]), int(model.mesh_facenum[mesh])
    nadr, nnum = int(model.mesh_normaladr[mesh]), int(model.mesh_normalnum[mesh])
    return {
        "id": mesh,
        "name": model.mesh(mesh).name,
        "nvert": vnum,
        "nface": fnum,
        "vertices": _b64(model.mesh_vert[vadr : vadr + vnum], "<f4"),
        "faces": _b64(model.mesh_face[fadr : fadr + fnum], "<u4"),
        "normals": _b64(model.mesh_normal[nadr : nadr + nnum], "<f4"),
        "face_normals": _b64(model.mesh_facenormal[fadr : fadr + fnum], "<u4"),
    }


def hfield_description(model: mujoco.MjModel, hfield: int) -> dict[str, Any]:
    """One height field as ``/scene3d.json`` sends it (see :func:`scene_description`):
    sample (r, c) lies at x = -size[0] + 2 size[0] c / (ncol - 1), y likewise with r and
    nrow, z = data[r, c] x size[2] in its geom's frame."""
    nrow, ncol = int(model.hfield_nrow[hfield]), int(model.hfield_ncol[hfield])
    adr = int(model.hfield_adr[hfield])
    return {
        "id": hfield,
        "nrow": nrow,
        "ncol": ncol,
        "size": _round(model.hfield_size[hfield]),
        "data": _b64(model.hfield_data[adr : adr + nrow * ncol], "<f4"),
    }


def decode_b64(text: str, dtype: str) -> np.ndarray:
    """The inverse of the base64 arrays in ``/scene3d.json`` (for tests and scripts)."""
    return np.frombuffer(base64.b64decode(text), dtype=dtype)


# ---- poses --------------------------------------------------------------------------


def parse_env_list(text: str, num_envs: int, limit: int = MAX_ENVS_PER_REQUEST) -> list[int]:
    """Env ids from ``envs=0,1,5`` (ranges as ``8-15`` too), in order, without repeats;
    ValueError with a short message for anything else or an id out of range."""
    text = text.strip()
    if not text:
        raise ValueError("envs is a comma list of env ids, e.g. envs=0,1 or envs=0-15")
    ids: dict[int, None] = {}
    for part in text.split(","):
        match = re.fullmatch(r"\s*([0-9]{1,9})\s*(?:-\s*([0-9]{1,9})\s*)?", part)
        if match is None:
            raise ValueError("envs is a comma list of env ids, e.g. envs=0,1 or envs=0-15")
        lo = int(match.group(1))
        hi = int(match.group(2)) if match.group(2) is not None else lo
        if hi < lo:
            raise ValueError(f"the range {lo}-{hi} is empty")
        if hi >= num_envs:
            raise ValueError(f"env {hi} does not exist; env ids go from 0 to {num_envs - 1}")
        if hi - lo + 1 + len(ids) > limit:
            raise ValueError(f"at most {limit} envs per request")
        for i in range(lo, hi + 1):
            ids[i] = None
    return list(ids)


def encode_poses(
    frame: int, steps: int, sim_time: float, env_ids: list[int] | np.ndarray, poses: np.ndarray
) -> bytes:
    """``/poses.bin``'s body (see :data:`POSES_HEADER`) for ``poses`` (n, nbody, 7) float32:
    position then w x y z orientation of every body of each env in ``env_ids``."""
    poses = np.ascontiguousarray(poses, dtype="<f4")
    n, nbody, width = poses.shape
    if width != POSE_FLOATS or n != len(env_ids):
        raise ValueError(f"poses are (len(env_ids), nbody, 7), got {poses.shape}")
    header = POSES_HEADER.pack(
        POSES_MAGIC, frame & 0xFFFFFFFF, n, nbody, float(steps), float(sim_time)
    )
    return header + np.asarray(env_ids, dtype="<u4").tobytes() + poses.tobytes()


def decode_poses(body: bytes) -> dict[str, Any]:
    """The inverse of :func:`encode_poses`: frame, steps, sim_time, env_ids (n,), poses
    (n, nbody, 7) float32."""
    magic, frame, n, nbody, steps, sim_time = POSES_HEADER.unpack_from(body)
    if magic != POSES_MAGIC:
        raise ValueError("not a poses.bin body")
    offset = POSES_HEADER.size
    if offset + 4 * n * (1 + nbody * POSE_FLOATS) != len(body):
        raise ValueError("poses.bin has the wrong length for its header")
    env_ids = np.frombuffer(body, "<u4", n, offset)
    offset += 4 * n
    poses = np.frombuffer(body, "<f4", n * nbody * POSE_FLOATS, offset)
    return {
        "frame": frame,
        "steps": int(steps),
        "sim_time": sim_time,
        "env_ids": env_ids,
        "poses": poses.reshape(n, nbody, POSE_FLOATS),
    }


def read_poses(engine, env_ids: list[int] | None = None) -> np.ndarray:
    """(n, nbody, 7) float32 of the engine's current body poses (every env, or ``env_ids``),
    on the host: one transfer. Call it on the simulation thread."""
    import torch

    with torch.no_grad():
        xpos, xquat = engine.xpos, engine.xquat
        if env_ids is not None:
            index = torch.as_tensor(env_ids, dtype=torch.long, device=xpos.device)
            xpos, xquat = xpos.index_select(0, index), xquat.index_select(0, index)
        both = torch.cat((xpos, xquat), dim=-1).to(torch.float32)
        return both.cpu().numpy()


class PoseSnapshots:
    """The latest body poses of the envs pages ask for, taken on the simulation thread.

    An HTTP thread calls :meth:`request`: it notes which envs are wanted and waits (briefly)
    for a snapshot that holds them and is newer than the frame the page already has. The
    simulation thread calls :meth:`due` and :meth:`capture` between steps: only envs asked
    for within the last ``keep_s`` seconds are read, so a viewer of 4096 envs copies the
    few dozen shown, and nothing at all while no page is in 3D mode.
    """

    def __init__(self, num_envs: int, max_fps: float = 60.0, keep_s: float = 5.0) -> None:
        self.num_envs = num_envs
        self.min_interval = 1.0 / max_fps
        self.keep_s = keep_s
        self.frame = 0
        self._ready = threading.Condition()
        self._asked: dict[int, float] = {}
        self._ids: np.ndarray = np.zeros(0, dtype=np.int64)
        self._poses: np.ndarray | None = None
        self._index: dict[int, int] = {}
        self._steps, self._sim_time = 0, 0.0
        self._taken_at = -1e9
        self._dirty = True

    def changed(self) -> None:
        """The simulation moved (a step, a reset): the next capture is worth taking."""
        self._dirty = True

    def wanted(self, now: float | None = None) -> list[int]:
        """The envs asked for within the last ``keep_s`` seconds, sorted."""
        now = time.monotonic() if now is None else now
        with self._ready:
            for env, asked in list(self._asked.items()):
                if now - asked > self.keep_s:
                    del self._asked[env]
            return sorted(self._asked)

    def due(self, now: float | None = None) -> bool:
        """Whether the simulation thread should capture now: a page asked recently, the
        simulation moved or a page waits for envs the last snapshot lacks, and the frame
        rate cap allows it."""
        now = time.monotonic() if now is None else now
        if now - self._taken_at < self.min_interval:
            return False
        with self._ready:
            if not self._asked:
                return False
            missing = any(env not in self._index for env in self._asked)
        return self._dirty or missing

    def capture(self, engine, steps: int, sim_time: float) -> None:
        """On the simulation thread: read the wanted envs' poses and, when they differ from
        the last snapshot, publish them as a new frame and wake the waiting requests."""
        ids = self.wanted()
        self._taken_at = time.monotonic()
        self._dirty = False
        if not ids:
            return
        poses = read_poses(engine, ids)
        with self._ready:
            if (
                self._poses is not None
                and np.array_equal(self._ids, ids)
                and np.array_equal(self._poses, poses)
            ):
                return  # nothing moved: no new frame (a page waits for one that differs)
            self.frame += 1
            self._ids = np.asarray(ids, dtype=np.int64)
            self._index = {env: k for k, env in enumerate(ids)}
            self._poses = poses
            self._steps, self._sim_time = steps, sim_time
            self._ready.notify_all()

    def request(
        self, env_ids: list[int], after: int | None = None, timeout: float = 1.0
    ) -> tuple[int, bytes]:
        """(frame, ``/poses.bin`` body) for ``env_ids``: the latest snapshot that holds them
        all, waiting up to ``timeout`` s for one newer than frame ``after`` (the page's
        latest) and for envs not captured yet; the same frame again when nothing moved
        meanwhile. Raises TimeoutError when no snapshot holds them in time."""
        deadline = time.monotonic() + timeout
        with self._ready:
            now = time.monotonic()
            for env in env_ids:
                self._asked[env] = now

            def has_all() -> bool:
                return self._poses is not None and all(env in self._index for env in env_ids)

            def ready() -> bool:
                return has_all() and (after is None or self.frame != after)

            self._ready.wait_for(ready, max(0.0, deadline - time.monotonic()))
            if not has_all():
                raise TimeoutError("the simulation has not captured these envs yet")
            assert self._poses is not None
            rows = [self._index[env] for env in env_ids]
            body = encode_poses(self.frame, self._steps, self._sim_time, env_ids, self._poses[rows])
            return self.frame, body
