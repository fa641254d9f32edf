"""Frames: a site or a body of an entity, with an offset, as a pose per env; and one frame
seen from another (Isaac Lab's frame transformer).

A :class:`FrameCfg` names a site or body by the entity's own name for it (a site first,
then a body), plus a fixed offset in that element's frame: ``FrameCfg("hand", offset=(0,
0, 0.1034))`` is a Franka's tool centre point. Terms resolve it once with :func:`frame`
and read its pose every step, from the engine's body poses (``xpos``, ``xquat``), so a
site's pose costs no matrix conversion.
"""

from __future__ import annotations

import torch

from robolearn.errors import RobolearnError
from robolearn.math import quat_conjugate, quat_mul, quat_rotate, quat_rotate_inverse
from robolearn.mdp.protocol import TaskEnv
from robolearn.scene.entities import ROBOT, FrameCfg

__all__ = ["Frame", "FrameCfg", "frame", "frame_pos", "frame_pose", "pose_in", "pose_to_world"]

Pose = tuple[torch.Tensor, torch.Tensor]
"""(N, 3) positions and (N, 4) quaternions (w x y z), float32."""


class Frame:
    """A resolved :class:`FrameCfg`: the body it moves with and its fixed pose in that body."""

    def __init__(self, cfg: FrameCfg, env: TaskEnv, what: str) -> None:
        scene, m = env.scene, env.scene.model
        entity = scene.entity(cfg.entity)
        sites = {entity.local_name(m.site(s).name): s for s in entity.site_ids}
        bodies = {entity.local_name(m.body(b).name): b for b in entity.body_ids}
        offset = torch.tensor(cfg.offset, dtype=torch.float64)
        rot = torch.tensor(cfg.rot, dtype=torch.float64)
        if offset.shape != (3,) or rot.shape != (4,) or not float(rot.norm()) > 0:
            raise RobolearnError(
                f"{what}: a frame's offset is (x, y, z) and its rot a nonzero (w, x, y, z), "
                f"got {cfg.offset} and {cfg.rot}"
            )
        rot = rot / rot.norm()
        if cfg.name in sites:
            s = sites[cfg.name]
            self.body_id = int(m.site_bodyid[s])
            site_pos = torch.as_tensor(m.site_pos[s], dtype=torch.float64)
            site_quat = torch.as_tensor(m.site_quat[s], dtype=torch.float64)
            local_pos = site_pos + quat_rotate(site_quat, offset)
            local_quat = quat_mul(site_quat, rot)
        elif cfg.name in bodies:
            self.body_id = bodies[cfg.name]
            local_pos, local_quat = offset, rot
        else:
            owner = "the robot" if cfg.entity == ROBOT else f"entity {cfg.entity!r}"
            raise RobolearnError(
                f"{what}: {cfg.name!r} is neither a site nor a body of {owner}; sites: "
                f"{', '.join(sites) or 'none'}; bodies: {', '.join(b for b in bodies if b)}"
            )
        self.name = cfg.name
        dev = env.device
        self.local_pos = local_pos.to(dev, torch.float32)
        self.local_quat = local_quat.to(dev, torch.float32)
        self._moved = bool(local_pos.abs().max() > 0)
        self._turned = bool((local_quat - torch.tensor([1.0, 0, 0, 0])).abs().max() > 0)
        self._env = env
        self.entity = cfg.entity

    def describe(self) -> dict[str, object]:
        """The frame as a program with the model needs it: the body it moves with and its
        pose in that body."""
        return {
            "name": self.name,
            "entity": self.entity,
            "body": self._env.scene.model.body(self.body_id).name,
            "pos_in_body": self.local_pos.tolist(),
            "quat_in_body": self.local_quat.tolist(),
        }

    def pose_w(self) -> Pose:
        """The frame's world pose in every env (the derived fields' timing)."""
        e = self._env.scene.engine
        pos = e.xpos[:, self.body_id].float()
        quat = e.xquat[:, self.body_id].float()
        if self._moved:
            pos = pos + quat_rotate(quat, self.local_pos.expand_as(pos))
        if self._turned:
            quat = quat_mul(quat, self.local_quat.expand_as(quat))
        return pos, quat


def frame(env: TaskEnv, cfg: FrameCfg | str, what: str) -> Frame:
    """The resolved frame of ``cfg`` (a bare name: the robot's site or body), made once per
    env and config (``what`` names the setting in errors)."""
    if isinstance(cfg, str):
        cfg = FrameCfg(cfg)
    if not isinstance(cfg, FrameCfg):
        raise RobolearnError(f"{what}: a frame is a FrameCfg or a name, got {cfg!r}")
    cache = env.__dict__.setdefault("_frames", {})
    found = cache.get(cfg)
    if found is None:
        found = cache[cfg] = Frame(cfg, env, what)
    return found


def pose_in(pose: Pose, ref: Pose) -> Pose:
    """``pose`` expressed in the frame ``ref`` (both world poses)."""
    pos = quat_rotate_inverse(ref[1], pose[0] - ref[0])
    return pos, quat_mul(quat_conjugate(ref[1]), pose[1])


def pose_to_world(pose: Pose, ref: Pose) -> Pose:
    """A pose given in the frame ``ref`` (a world pose) as a world pose."""
    return ref[0] + quat_rotate(ref[1], pose[0]), quat_mul(ref[1], pose[1])


def frame_pose(
    env: TaskEnv, frame_cfg: FrameCfg | str, relative_to: FrameCfg | str | None = None
) -> torch.Tensor:
    """Observation: a frame's pose seen from another (the world where ``relative_to`` is
    None), (7): position (m) and quaternion (w x y z, the sign with w >= 0)."""
    pose = frame(env, frame_cfg, "frame_pose.frame_cfg").pose_w()
    if relative_to is not None:
        pose = pose_in(pose, frame(env, relative_to, "frame_pose.relative_to").pose_w())
    quat = pose[1]
    quat = torch.where(quat[:, :1] < 0, -quat, quat)
    return torch.cat((pose[0], quat), dim=-1)


def frame_pos(
    env: TaskEnv, frame_cfg: FrameCfg | str, relative_to: FrameCfg | str | None = None
) -> torch.Tensor:
    """Observation: a frame's position seen from another (the world where ``relative_to``
    is None), m (3)."""
    pose = frame(env, frame_cfg, "frame_pos.frame_cfg").pose_w()
    if relative_to is None:
        return pose[0]
    return pose_in(pose, frame(env, relative_to, "frame_pos.relative_to").pose_w())[0]
