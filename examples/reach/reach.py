"""reach_target: a three-joint arm brings its end effector to a commanded point.

A worked example of a task that is not locomotion, written outside robolearn with its own
command term (targets drawn as spheres in the viewers and videos, and success measures
that ``robolearn play --eval --json`` reports), its own observation and reward terms, and a
declared evaluation metric (``held``):

    robolearn train --import examples/reach/reach.py --task reach_target
    robolearn play --import examples/reach/reach.py --task reach_target --eval --json
    robolearn view --import examples/reach/reach.py --task reach_target --checkpoint latest
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import torch

from robolearn import mdp
from robolearn.env import ManagerBasedRLEnv, ManagerBasedRLEnvCfg, MetricTermCfg
from robolearn.managers import (
    CommandTerm,
    CommandTermCfg,
    Marker,
    ObservationGroupCfg,
    ObservationTermCfg,
    RewardTermCfg,
    TerminationTermCfg,
)
from robolearn.math import sample_uniform
from robolearn.mdp import JointPositionActionCfg
from robolearn.mdp.frames import frame_pos
from robolearn.registry import TaskSpec, register_task
from robolearn.rl.config import AgentCfg, PolicyCfg, PpoAlgorithmCfg
from robolearn.scene import EntityCfg, SceneCfg

ARM = Path(__file__).parent / "arm.xml"
SHOULDER = (0.0, 0.0, 0.4)  # where the arm's reach is centred (the shoulder joint), m
REACHED = 0.05  # a target counts as reached within this distance, m
STILL = 0.2  # the arm counts as at rest with every joint slower than this, rad/s


def ee_pos(env: ManagerBasedRLEnv) -> torch.Tensor:
    """(N, 3) world position of the end-effector site, float32 (the library's frame term:
    a site or body of the robot, resolved once)."""
    return frame_pos(env, "ee")


class ReachTargetCommand(CommandTerm):
    """``command`` is (N, 3): a target point in the world, drawn in a shell around the
    shoulder that the arm can reach."""

    cfg: ReachTargetCommandCfg

    def __init__(self, cfg: ReachTargetCommandCfg, env: ManagerBasedRLEnv, name: str) -> None:
        super().__init__(cfg, env, name)
        self._target = torch.zeros(env.num_envs, 3, device=env.device)
        self._centre = torch.tensor(SHOULDER, device=env.device)
        self.metrics = {"position_error": torch.zeros(env.num_envs, device=env.device)}

    @property
    def command(self) -> torch.Tensor:
        return self._target

    def _resample(self, env_mask: torch.Tensor) -> None:
        # a target for every env, kept where env_mask holds (no wait for the GPU)
        n, dev, c = self.env.num_envs, self.env.device, self.cfg
        radius = sample_uniform(*c.radius, (n,), dev)
        azimuth = sample_uniform(-math.pi, math.pi, (n,), dev)
        elevation = sample_uniform(*c.elevation, (n,), dev)
        offset = torch.stack(
            (
                radius * elevation.cos() * azimuth.cos(),
                radius * elevation.cos() * azimuth.sin(),
                radius * elevation.sin(),
            ),
            dim=-1,
        )
        torch.where(env_mask.unsqueeze(-1), self._centre + offset, self._target, out=self._target)

    def _distance(self) -> torch.Tensor:
        return (ee_pos(self.env) - self._target).norm(dim=-1)

    def _update_metrics(self) -> None:
        self.metrics["position_error"] += self._distance() / self.env.max_episode_length

    def step_metrics(self) -> dict[str, torch.Tensor]:
        distance = self._distance()
        return {"position_error": distance, "reached": (distance < REACHED).float()}

    def debug_markers(self, env_id: int) -> list[Marker]:
        """The target as a red sphere and the end effector as a small green one."""
        rows = torch.stack((self._target[env_id], ee_pos(self.env)[env_id]))
        target, ee = rows.tolist()  # one transfer from the device
        return [
            Marker("sphere", tuple(target), rgba=(0.9, 0.15, 0.15, 0.8), size=0.035),
            Marker("sphere", tuple(ee), rgba=(0.15, 0.8, 0.25, 0.8), size=0.02),
        ]


@dataclass
class ReachTargetCommandCfg(CommandTermCfg):
    """Targets at ``radius`` m from the shoulder, ``elevation`` rad above its horizon, any
    azimuth."""

    class_type: type[CommandTerm] | None = ReachTargetCommand
    radius: tuple[float, float] = (0.25, 0.55)
    elevation: tuple[float, float] = (-0.6, 0.9)


def ee_to_target(env: ManagerBasedRLEnv, command_name: str) -> torch.Tensor:
    """(N, 3) the vector from the end effector to the target, world frame."""
    return env.command_manager.get_command(command_name) - ee_pos(env)


def target_distance(env: ManagerBasedRLEnv, command_name: str) -> torch.Tensor:
    """(N,) distance from the end effector to the target, m."""
    return ee_to_target(env, command_name).norm(dim=-1)


def target_reached_tanh(env: ManagerBasedRLEnv, command_name: str, std: float) -> torch.Tensor:
    """(N,) in (0, 1]: 1 at the target, falling off over ``std`` m (a fine-grained pull
    where the distance penalty is flat)."""
    return 1.0 - torch.tanh(target_distance(env, command_name) / std)


def target_held(
    env: ManagerBasedRLEnv, command_name: str, distance: float = REACHED, joint_speed: float = STILL
) -> torch.Tensor:
    """(N,) bool: the end effector is within ``distance`` m of its target with every joint
    slower than ``joint_speed`` rad/s, holding the target rather than sweeping through it.

    The task's objective as an evaluation metric: ``play --eval`` reports the share of steps
    it holds (``metrics.held``)."""
    near = target_distance(env, command_name) < distance
    return near & (env.scene.joint_vel.abs().amax(dim=-1) < joint_speed)


def env_cfg() -> ManagerBasedRLEnvCfg:
    cmd = {"command_name": "target"}
    return ManagerBasedRLEnvCfg(
        scene=SceneCfg(
            num_envs=512, entities={"robot": EntityCfg(model=str(ARM), keyframe="home")}
        ),
        decimation=4,
        episode_length_s=6.0,
        actions={"joint_pos": JointPositionActionCfg(scale=0.5)},
        commands={"target": ReachTargetCommandCfg(resampling_time_range=(3.0, 3.0))},
        observations={
            "policy": ObservationGroupCfg(
                terms={
                    "joint_pos": ObservationTermCfg(func=mdp.joint_pos_rel),
                    "joint_vel": ObservationTermCfg(func=mdp.joint_vel_rel, scale=0.1),
                    "target": ObservationTermCfg(func=mdp.generated_commands, params=cmd),
                    "ee_to_target": ObservationTermCfg(func=ee_to_target, params=cmd),
                    "actions": ObservationTermCfg(func=mdp.last_action),
                }
            )
        },
        rewards={
            "distance": RewardTermCfg(func=target_distance, weight=-2.0, params=cmd),
            "reached": RewardTermCfg(
                func=target_reached_tanh, weight=1.0, params={**cmd, "std": 0.1}
            ),
            "action_rate": RewardTermCfg(func=mdp.action_rate_l2, weight=-0.01),
            "joint_vel": RewardTermCfg(func=mdp.joint_vel_l2, weight=-1e-3),
        },
        terminations={"time_out": TerminationTermCfg(func=mdp.time_out, time_out=True)},
        metrics={
            "held": MetricTermCfg(
                func=target_held, params={**cmd, "distance": REACHED, "joint_speed": STILL}
            )
        },
    )


def play_env_cfg() -> ManagerBasedRLEnvCfg:
    cfg = env_cfg()
    cfg.scene.num_envs = 64
    return cfg


def agent_cfg() -> AgentCfg:
    return AgentCfg(
        num_steps_per_env=24,
        max_iterations=150,
        save_interval=50,
        algorithm=PpoAlgorithmCfg(learning_rate=1e-3, entropy_coef=0.005),
        policy=PolicyCfg(actor_hidden_dims=(64, 64), critic_hidden_dims=(64, 64)),
    )


register_task(
    TaskSpec(
        name="reach_target",
        description="A 3-joint arm brings its end effector to commanded points (an example)",
        env_cfg=env_cfg,
        agent_cfg=agent_cfg,
        play_env_cfg=play_env_cfg,
    )
)
