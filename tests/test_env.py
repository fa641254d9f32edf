"""Each manager's behaviour on real tasks, through ManagerBasedRLEnv on real physics."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
import torch
from conftest import slider_task_cfg

from robolearn import mdp
from robolearn.env import ManagerBasedRLEnv, ManagerBasedRLEnvCfg
from robolearn.errors import RobolearnError
from robolearn.managers import (
    ActionTerm,
    ActionTermCfg,
    CommandTerm,
    CommandTermCfg,
    CurriculumTermCfg,
    EventTermCfg,
    ManagerTerm,
    ObservationGroupCfg,
    ObservationTermCfg,
    RewardTermCfg,
    TerminationTermCfg,
)
from robolearn.math import yaw_from_quat
from robolearn.mdp import (
    JointEffortAction,
    JointEffortActionCfg,
    UniformVelocityCommand,
    UniformVelocityCommandCfg,
)
from robolearn.registry import get_task

BIASED = str(Path(__file__).parent / "assets" / "biased_slider.xml")


def make(task: str, num_envs: int = 16, engine: str = "cpu", play: bool = False, edit=None):
    cfg = get_task(task).make_env_cfg(play=play)
    cfg.scene.num_envs = num_envs
    cfg.sim.engine = engine
    if edit is not None:
        edit(cfg)
    return ManagerBasedRLEnv(cfg)


def zeros(env: ManagerBasedRLEnv) -> torch.Tensor:
    return torch.zeros(env.num_envs, env.num_actions)


def test_reset_event_puts_root_states_inside_the_configured_ranges():
    env = make("humanoid_walk", num_envs=256)
    params = env.cfg.events["reset_base"].params
    default = env.scene.default_qpos
    pos = env.scene.engine.qpos[:, :3]
    for axis, col in (("x", 0), ("y", 1)):
        lo, hi = params["pose_range"][axis]
        offset = pos[:, col] - default[col]
        assert offset.min() >= lo and offset.max() <= hi
        assert offset.max() - offset.min() > 0.5 * (hi - lo)  # they are spread, not all equal
    assert torch.allclose(pos[:, 2], default[2].expand(256))
    yaw = yaw_from_quat(env.scene.engine.qpos[:, 3:7])
    assert yaw.min() >= -3.14 - 1e-6 and yaw.max() <= 3.14 + 1e-6 and yaw.std() > 1.0
    vx = env.scene.engine.qvel[:, 0]
    lo, hi = params["velocity_range"]["x"]
    assert vx.min() >= lo and vx.max() <= hi
    joint_offset = env.scene.joint_pos - env.scene.default_joint_pos
    assert joint_offset.abs().max() <= 0.05 + 1e-9


def test_interval_push_changes_only_the_pushed_envs():
    env = make("humanoid_walk", num_envs=8)
    env.step(zeros(env))
    before = env.scene.engine.qvel.clone()
    timers = env.event_manager._time_left["push"]
    timers[:] = 100.0
    timers[[2, 5]] = 0.0  # only envs 2 and 5 are due
    env.event_manager.apply("interval", dt=env.step_dt)
    changed = (env.scene.engine.qvel[:, :6] != before[:, :6]).any(-1)
    assert changed.tolist() == [i in (2, 5) for i in range(8)]
    assert torch.equal(env.scene.engine.qvel[:, 6:], before[:, 6:])  # joints untouched
    assert timers[2] >= 10.0 and timers[5] >= 10.0  # timers redrawn from (10, 15)


def test_commands_resample_on_schedule():
    def edit(cfg):
        cfg.commands["base_velocity"].resampling_time_range = (1.0, 1.0)
        cfg.commands["base_velocity"].rel_standing_envs = 0.0
        cfg.terminations = {"time_out": cfg.terminations["time_out"]}

    env = make("humanoid_walk", num_envs=32, edit=edit)
    command = env.command_manager.get_command("base_velocity")
    first = command.clone()
    steps = round(1.0 / env.step_dt)  # 50 steps of 0.02 s
    for _ in range(steps - 1):
        env.step(zeros(env))
        assert torch.equal(command, first)
    env.step(zeros(env))
    assert (command != first).any(-1).all()
    r = env.cfg.commands["base_velocity"].ranges
    assert command[:, 0].min() >= r.lin_vel_x[0] and command[:, 0].max() <= r.lin_vel_x[1]
    assert command[:, 2].min() >= r.ang_vel_z[0] and command[:, 2].max() <= r.ang_vel_z[1]


def test_curriculum_widens_command_ranges_only_when_tracking_succeeds():
    env = make("quadruped_walk", num_envs=16)
    term = env.command_manager.terms["base_velocity"]
    start = env.cfg.commands["base_velocity"].ranges.lin_vel_x
    ending = torch.arange(16) < 8
    sums = env.reward_manager.episode_sums["track_lin_vel_xy"]
    weight = env.cfg.rewards["track_lin_vel_xy"].weight
    env.common_step_counter = env.max_episode_length
    sums[:] = 0.5 * weight * env.max_episode_length_s  # 50% of the best tracking: not enough
    env.curriculum_manager.compute(ending)
    assert term.live_ranges().lin_vel_x == pytest.approx(start)
    env.common_step_counter = 2 * env.max_episode_length
    sums[:8] = 0.9 * weight * env.max_episode_length_s  # above the 80% threshold
    log = env.curriculum_manager.compute(torch.zeros(16, dtype=torch.bool))
    assert term.live_ranges().lin_vel_x == pytest.approx(start)  # no episode ended
    env.common_step_counter = 3 * env.max_episode_length
    log = env.curriculum_manager.compute(ending)
    wider = pytest.approx((start[0] - 0.25, start[1] + 0.25))  # float32 on the device
    assert term.live_ranges().lin_vel_x == wider
    assert float(log["Curriculum/command_levels"]) == pytest.approx(start[1] + 0.25)
    env.curriculum_manager.compute(ending)  # again within the same episode length: no change
    assert term.live_ranges().lin_vel_x == wider
    # the widened range is what resampled commands are drawn from
    term.resample(torch.ones(16, dtype=torch.bool))
    assert term.command[:, 0].min() >= start[0] - 0.25 - 1e-6
    assert term.command[:, 0].max() <= start[1] + 0.25 + 1e-6


def test_termination_and_time_out_are_distinct():
    env = make("cartpole_balance", num_envs=4)
    # The pole falls under zero force: a failure, not a time-out.
    env.scene.engine.qpos[:] = torch.tensor([0.0, 0.3], dtype=torch.float64)
    env.scene.engine.qvel[:] = 0.0
    for _ in range(100):
        _, _, terminated, time_outs, extras = env.step(zeros(env))
        if terminated.any():
            break
    assert terminated.all() and not time_outs.any()
    assert extras["log"]["Episode_Termination/pole_fell"] == 4

    def short(cfg):
        cfg.episode_length_s = 0.2
        cfg.events = {}  # start exactly upright: an unbalanced pole needs longer than 0.2 s

    env = make("cartpole_balance", num_envs=4, edit=short)
    for _ in range(env.max_episode_length):
        _, _, terminated, time_outs, extras = env.step(zeros(env))
        assert not terminated.any()
    assert time_outs.all() and env.common_step_counter == env.max_episode_length
    assert extras["log"]["Episode_Termination/time_out"] == 4


def test_logged_reward_sums_equal_the_sum_of_step_rewards():
    env = make("humanoid_walk", num_envs=16)
    total = torch.zeros(16)
    gen = torch.Generator().manual_seed(0)
    for _ in range(400):
        action = 0.3 * torch.randn(16, env.num_actions, generator=gen)
        _, reward, terminated, time_outs, extras = env.step(action)
        total += reward
        done = terminated | time_outs
        if done.any():
            ids = done.nonzero().flatten()
            assert not any(torch.isnan(v).any() for v in extras["log"].values())
            logged = (
                sum(v for k, v in extras["log"].items() if k.startswith("Episode_Reward/"))
                * env.max_episode_length_s
            )
            assert logged == pytest.approx(total[ids].mean().item(), rel=1e-4, abs=1e-4)
            total[ids] = 0.0
            return
    pytest.fail("no episode ended in 400 steps")


def _exploding_cfg(num_envs: int) -> ManagerBasedRLEnvCfg:
    return slider_task_cfg("exploding_slider.xml", num_envs)


def test_nonfinite_guard_resets_only_the_exploding_env():
    env = ManagerBasedRLEnv(_exploding_cfg(4))
    twin = ManagerBasedRLEnv(_exploding_cfg(4))
    action = torch.ones(4, 1)
    for _ in range(5):
        env.step(action)
        twin.step(action)
    blast = action.clone()
    blast[2] = 1e30  # diverges: 1e30 N on a 1 kg box
    obs, reward, terminated, time_outs, extras = env.step(blast)
    twin.step(action)
    assert terminated.tolist() == [False, False, True, False] and not time_outs.any()
    assert extras["log"]["Episode_Termination/nonfinite"] == 1 and env.nonfinite_resets == 1
    assert torch.isfinite(obs["policy"]).all() and torch.isfinite(reward).all()
    assert reward[2] == 0.0
    assert env.scene.engine.qpos[2, 0] == 0.0 and env.episode_length_buf[2] == 0  # a fresh episode
    keep = [0, 1, 3]
    assert torch.equal(env.scene.engine.qpos[keep], twin.scene.engine.qpos[keep])
    assert torch.equal(env.scene.engine.qvel[keep], twin.scene.engine.qvel[keep])
    env.step(action)  # and it carries on
    assert env.nonfinite_resets == 1


def test_same_seed_same_rollout_different_seed_different():
    def run(seed: int) -> torch.Tensor:
        env = make("quadruped_walk", num_envs=8, edit=lambda c: setattr(c, "seed", seed))
        gen = torch.Generator().manual_seed(1)
        for _ in range(30):
            env.step(0.5 * torch.randn(8, env.num_actions, generator=gen))
        return env.scene.engine.qpos.clone()

    a, b, c = run(3), run(3), run(4)
    assert torch.equal(a, b)
    assert not torch.equal(a, c)


def test_observation_groups_noise_clip_scale_and_history():
    def edit(cfg):
        terms = cfg.observations["policy"].terms
        terms["projected_gravity"].history_length = 3
        terms["base_lin_vel"].clip = (-0.01, 0.01)

    env = make("humanoid_walk", num_envs=4, edit=edit)
    dims = env.observation_manager.term_dims["policy"]
    assert dims["projected_gravity"] == 9 and dims["joint_pos"] == 21
    assert env.observation_manager.group_dims["policy"] == sum(dims.values())
    obs, *_ = env.step(zeros(env))
    lin = obs["policy"][:, :3]
    assert lin.abs().max() <= 0.01 + 1e-6
    # critic group: no noise, so two computations of the same state agree exactly
    a = env.observation_manager.compute(update_history=False)
    b = env.observation_manager.compute(update_history=False)
    assert torch.equal(a["critic"], b["critic"]) and not torch.equal(a["policy"], b["policy"])
    # history: after a reset the whole history is the reset state's value
    env.reset()
    grav = env.obs_buf["policy"][:, 6:15].view(4, 3, 3)
    assert torch.equal(grav[:, 0], grav[:, 2])


def test_bad_term_params_name_the_term_and_valid_params():
    def edit(cfg):
        cfg.rewards["track_lin_vel_xy"].params["stdev"] = 0.5

    with pytest.raises(RobolearnError, match=r"rewards.track_lin_vel_xy: unknown param\(s\) stdev"):
        make("humanoid_walk", num_envs=2, edit=edit)

    def no_timeout(cfg):
        del cfg.terminations["time_out"]

    with pytest.raises(RobolearnError, match="time-out termination"):
        make("cartpole_balance", num_envs=2, edit=no_timeout)


def _unmatched(edit, step: bool = False) -> str:
    """The message of the error that quadruped_walk, changed by ``edit``, ends in: when it
    is built, or (``step``) at its first step, where rewards and terminations first run."""
    with pytest.raises(RobolearnError) as err:
        env = make("quadruped_walk", num_envs=2, edit=edit)
        if step:
            env.step(zeros(env))
    message = str(err.value)
    assert "\n" not in message
    return message


def test_a_pattern_in_a_terms_params_that_matches_nothing_names_the_term_and_param():
    """Before: "no geom matches '.*_foot'; geoms: ...", which term's pattern left unsaid
    (the velocity recipe's friction, found on a robot whose feet are named otherwise)."""

    def friction(cfg):
        cfg.events["friction"].params = {"friction_range": (0.6, 1.25), "geoms": ".*_toe"}

    assert _unmatched(friction).startswith(
        "events.friction: params.geoms '.*_toe' matches no geom; geoms: floor, trunk, head, "
    )

    def hips(cfg):
        cfg.rewards["hip_deviation"] = RewardTermCfg(
            func=mdp.joint_deviation_l1, weight=-0.1, params={"joints": ["FL_hip", ".*_hip_yaw"]}
        )

    assert _unmatched(hips, step=True).startswith(
        "rewards.hip_deviation: params.joints '.*_hip_yaw' matches no joint; joints: FL_hip, "
    )

    def contact(cfg):
        cfg.terminations["base_contact"].params["bodies"] = "torso"

    assert _unmatched(contact, step=True).startswith(
        "terminations.base_contact: params.bodies 'torso' matches no body; bodies: world, "
    )

    def observed(cfg):
        cfg.observations["policy"].terms["joint_pos"].params = {"joints": "FL_knee"}

    assert _unmatched(observed).startswith(
        "observations.policy.joint_pos: params.joints 'FL_knee' matches no joint; joints: "
    )

    def feet(cfg):  # the recipe's friction follows the robot config's feet
        cfg.scene.robot.feet = ()

    assert _unmatched(feet).startswith(
        "events.friction: params.feet: the robot config names no feet"
    )


def test_actions_drive_position_targets_around_the_default_pose():
    env = make("humanoid_walk", num_envs=2)
    action = torch.zeros(2, env.num_actions)
    action[1, 3] = 1.0  # env 1, left knee
    env.step(action)
    ctrl = env.scene.engine.ctrl.float()
    default = env.scene.default_joint_pos
    knee = env.scene.joint_ids("left_knee")[0]
    assert ctrl[0, knee] == pytest.approx(default[0, knee].item())
    assert ctrl[1, knee] == pytest.approx(default[1, knee].item() + 0.5)  # scale 0.5


@pytest.mark.parametrize("task", ["cartpole_balance", "quadruped_walk", "humanoid_walk"])
def test_every_task_steps_on_cpu(task):
    env = make(task, num_envs=8)
    for _ in range(20):
        obs, reward, terminated, time_outs, _ = env.step(torch.rand(8, env.num_actions) - 0.5)
    assert all(torch.isfinite(v).all() for v in obs.values())
    assert reward.shape == (8,) and reward.dtype == torch.float32
    assert terminated.dtype == torch.bool and time_outs.dtype == torch.bool


def test_cartpole_pole_angle_observation_is_the_hinge():
    env = make("cartpole_balance", num_envs=2, edit=lambda c: setattr(c, "events", {}))
    env.scene.engine.qpos[1, 1] = 0.2  # written behind the env's back: the scene follows
    obs = env.observation_manager.compute()["policy"]
    assert obs[1, 1] == pytest.approx(0.2) and obs[0, 1] == 0.0
    assert math.isclose(env.step_dt, 0.02)


def test_zero_weight_reward_terms_log_zero_and_leave_the_rest_unchanged():
    def edit(cfg):
        cfg.rewards["feet_slide"].weight = 0.0

    env = make("humanoid_walk", num_envs=8, edit=edit)
    reference = make("humanoid_walk", num_envs=8)
    action = 0.3 * torch.randn(8, env.num_actions, generator=torch.Generator().manual_seed(0))
    for _ in range(5):
        env.step(action)
        reference.step(action)
    slide = env.reward_manager.term_names.index("feet_slide")
    assert env.reward_manager.episode_sums["feet_slide"].abs().max() == 0.0
    # every other term contributes exactly what it does with the term on
    others = [i for i in range(len(env.reward_manager.term_names)) if i != slide]
    torch.testing.assert_close(
        env.reward_manager.step_reward[:, others], reference.reward_manager.step_reward[:, others]
    )


def test_columns_are_views_only_when_consecutive():
    from robolearn.math import columns, take_columns

    x = torch.arange(24.0).reshape(4, 6)
    assert columns(torch.tensor([2, 3, 4])) == slice(2, 5)
    gappy = columns(torch.tensor([0, 2, 3]))
    assert isinstance(gappy, torch.Tensor)
    assert torch.equal(take_columns(x, gappy), x[:, [0, 2, 3]])
    assert take_columns(x, slice(2, 5)).data_ptr() == x[:, 2:].data_ptr()  # a view


# ---- divergence: counted once, as nonfinite, and kept out of the episode logs ----------


def _diverging_cfg(num_envs: int) -> ManagerBasedRLEnvCfg:
    """A slider whose actuator has a per-env bias force, and a termination that a diverged
    state trips."""
    cfg = _exploding_cfg(num_envs)
    cfg.scene.robot.model = BIASED
    cfg.terminations["far"] = TerminationTermCfg(
        func=mdp.joint_pos_out_of_bounds, params={"joints": "slide", "bounds": (-100.0, 100.0)}
    )
    return cfg


def test_diverged_env_counts_only_as_nonfinite_and_stays_out_of_episode_logs():
    env = ManagerBasedRLEnv(_diverging_cfg(4))
    twin = ManagerBasedRLEnv(_diverging_cfg(4))  # the same, without the diverging env
    # env 2's actuator pushes with 1e12 N whatever the control: its physics diverges in
    # every substep (bad qacc), also after MuJoCo's reset inside the step, which leaves a
    # state far out (qpos 1e8, qvel 1e10) that terms read as if it were real
    env.scene.engine.model_field("actuator_biasprm")[2, 0, 0] = 1e12
    action = torch.full((4, 1), 0.5)
    for step in range(4):
        _, reward, terminated, time_outs, extras = env.step(action)
        twin.step(action)
        log = extras["log"]
        assert terminated.tolist() == [False, False, True, False], step
        assert log["Episode_Termination/nonfinite"] == 1
        assert log["Episode_Termination/far"] == 0  # not counted twice
        assert reward[2] == 0.0 and torch.isfinite(reward).all()
        # its episode was garbage: no Episode_Reward mean from it alone (NaN: the runner
        # averages the steps that have one)
        rewards = [v for k, v in log.items() if k.startswith("Episode_Reward/")]
        assert rewards and all(torch.isnan(v) for v in rewards), log
    assert env.nonfinite_resets == 4
    assert torch.isfinite(env.reward_manager.episode_sums["vel"]).all()
    # envs 0 and 1 time out in the step env 2 diverges again: the means are theirs alone
    for e in (env, twin):
        e.episode_length_buf[:2] = e.max_episode_length - 1
    _, _, _, time_outs, extras = env.step(action)
    _, _, _, _, twin_extras = twin.step(action)
    assert time_outs.tolist() == [True, True, False, False]
    assert extras["log"]["Episode_Termination/time_out"] == 2
    assert extras["log"]["Episode_Termination/nonfinite"] == 1
    assert extras["log"]["Episode_Reward/vel"] == pytest.approx(
        float(twin_extras["log"]["Episode_Reward/vel"]), rel=1e-6
    )
    assert float(extras["log"]["Episode_Reward/vel"]) > -10.0


def test_command_metrics_leave_diverged_episodes_out_of_their_means():
    env = make("quadruped_walk", num_envs=4)
    term = env.command_manager.terms["base_velocity"]
    term.metrics["error_vel_xy"][:] = torch.tensor([1.0, 2.0, 3.0, float("nan")])
    every = torch.ones(4, dtype=torch.bool)
    keep = torch.tensor([True, True, True, False])  # env 3 diverged
    log = env.command_manager.reset(every, keep=keep)
    assert float(log["Metrics/base_velocity/error_vel_xy"]) == pytest.approx(2.0)
    log = env.command_manager.reset(every, keep=~every)
    assert torch.isnan(log["Metrics/base_velocity/error_vel_xy"])  # no clean episode: no mean


# ---- reward weights are live ------------------------------------------------------------


def _scale_weight_once(env, env_mask, term: str, factor: float, after_step: int) -> float:
    """A curriculum term: multiplies a reward weight by ``factor`` once, after a step."""
    rewards = env.reward_manager
    cfg = rewards.get_term_cfg(term)
    if env.common_step_counter >= after_step and not getattr(env, "_scaled", False):
        env._scaled = True
        cfg = dataclasses.replace(cfg, weight=cfg.weight * factor)
        rewards.set_term_cfg(term, cfg)
    return cfg.weight


def test_a_curriculum_that_changes_a_reward_weight_changes_the_reward():
    def edit(cfg):
        cfg.curriculum = {
            "alive_x100": CurriculumTermCfg(
                func=_scale_weight_once, params={"term": "alive", "factor": 100.0, "after_step": 3}
            )
        }

    env = make("cartpole_balance", num_envs=4, edit=edit)
    twin = make("cartpole_balance", num_envs=4)
    alive = env.reward_manager.term_names.index("alive")
    for _ in range(2):
        env.step(zeros(env))
        twin.step(zeros(twin))
    assert env.reward_manager.get_term_cfg("alive").weight == 1.0
    # the curriculum runs as episodes end (here by the time-out, in step 3)
    for e in (env, twin):
        e.episode_length_buf[:] = e.max_episode_length - 1
        e.step(zeros(e))
    assert env.reward_manager.get_term_cfg("alive").weight == 100.0
    _, reward, *_ = env.step(zeros(env))
    _, twin_reward, *_ = twin.step(zeros(twin))
    torch.testing.assert_close(
        env.reward_manager.step_reward[:, alive], 100 * twin.reward_manager.step_reward[:, alive]
    )
    assert (reward - twin_reward).min() > 0.5 * 99 * env.step_dt
    # a weight changed on the config itself also applies, and a term switched on from 0
    env.cfg.rewards["alive"].weight = 0.0
    env.cfg.rewards["cart_vel"].weight = 0.0
    env.step(zeros(env))
    assert env.reward_manager.step_reward[:, [alive]].abs().max() == 0.0
    env.reward_manager.get_term_cfg("cart_vel").weight = -1.0
    env.step(zeros(env))
    cart_vel = env.reward_manager.term_names.index("cart_vel")
    assert env.reward_manager.step_reward[:, cart_vel].abs().max() > 0.0
    with pytest.raises(RobolearnError, match="no reward term 'alvie'"):
        env.reward_manager.get_term_cfg("alvie")


def test_a_task_without_reward_terms_steps_with_zero_reward():
    env = make("cartpole_balance", num_envs=4, edit=lambda c: setattr(c, "rewards", {}))
    for _ in range(3):
        _, reward, *_ = env.step(zeros(env))
    assert torch.equal(reward, torch.zeros(4))
    env.reset()


# ---- reset events read the state after the reset ---------------------------------------


def _record_joint_pos(env, env_mask, seen: list) -> None:
    """A reset event that reads the scene, as a user's event does."""
    seen.append(
        (env.scene.joint_pos[env_mask].clone(), env.scene.engine.qpos[env_mask].float().clone())
    )


def test_reset_events_read_the_state_the_engine_holds():
    seen: list = []

    def edit(cfg):
        cfg.events = {
            "record": EventTermCfg(func=_record_joint_pos, mode="reset", params={"seen": seen}),
        }
        cfg.episode_length_s = 0.1  # 5 steps

    env = make("cartpole_balance", num_envs=2, edit=edit)
    env.scene.engine.qpos[:, 1] = 1.0  # tilt the poles: the state that steps read
    for _ in range(env.max_episode_length):
        env.step(zeros(env))  # fills the scene's cache with the pre-reset state
    # a reset event runs at every step, for the envs that reset (often none: the step
    # does not wait for the GPU to tell): here at build, and at the time-out
    seen = [s for s in seen if len(s[0])]
    assert len(seen) == 2
    scene_view, engine_view = seen[-1]
    assert engine_view[:, 1].abs().max() == 0.0  # the engine was reset to qpos0...
    torch.testing.assert_close(scene_view, engine_view)  # ...and the event saw that


# ---- action and command configs name their term class ---------------------------------


@dataclasses.dataclass
class _MyEffortCfg(JointEffortActionCfg):
    """A user's subclass of a built-in config, adding a field: it inherits class_type."""

    note: str = "mine"


class _DoubledEffort(JointEffortAction):
    """A user's action term: twice the effort of JointEffortAction."""

    def process_actions(self, actions: torch.Tensor) -> None:
        super().process_actions(actions)
        self.processed_actions *= 2.0


@dataclasses.dataclass
class _DoubledEffortCfg(ActionTermCfg):
    class_type: type[ActionTerm] | None = _DoubledEffort


def test_action_configs_name_their_term_class():
    env = make("cartpole_balance", num_envs=2, edit=lambda c: _set_action(c, _MyEffortCfg))
    assert type(env.action_manager.terms["cart_force"]) is JointEffortAction
    env.step(torch.full((2, 1), 0.25))
    assert env.scene.engine.ctrl[:, 0].tolist() == [0.25, 0.25]
    env = make("cartpole_balance", num_envs=2, edit=lambda c: _set_action(c, _DoubledEffortCfg))
    assert type(env.action_manager.terms["cart_force"]) is _DoubledEffort
    env.step(torch.full((2, 1), 0.25))
    assert env.scene.engine.ctrl[:, 0].tolist() == [0.5, 0.5]
    with pytest.raises(RobolearnError, match=r"actions.cart_force: ActionTermCfg.class_type"):
        make("cartpole_balance", num_envs=2, edit=lambda c: _set_action(c, ActionTermCfg))


def _set_action(cfg, cfg_type) -> None:
    cfg.actions = {"cart_force": cfg_type(actuators="slider")}


@dataclasses.dataclass
class _MyVelocityCfg(UniformVelocityCommandCfg):
    note: str = "mine"


class _ConstantCommand(CommandTerm):
    """A user's command term: (1, 2) for every env."""

    def __init__(self, cfg, env, name) -> None:
        super().__init__(cfg, env, name)
        self._command = torch.tensor([[1.0, 2.0]]).repeat(env.num_envs, 1)

    @property
    def command(self) -> torch.Tensor:
        return self._command

    def _resample(self, env_mask: torch.Tensor) -> None:
        pass


@dataclasses.dataclass
class _ConstantCommandCfg(CommandTermCfg):
    class_type: type[CommandTerm] | None = _ConstantCommand


def test_command_configs_name_their_term_class():
    def edit(cfg):
        cfg.commands["base_velocity"] = _MyVelocityCfg(ranges=cfg.commands["base_velocity"].ranges)
        cfg.commands["constant"] = _ConstantCommandCfg()

    env = make("quadruped_walk", num_envs=2, edit=edit)
    assert type(env.command_manager.terms["base_velocity"]) is UniformVelocityCommand
    assert env.command_manager.get_command("constant").tolist() == [[1.0, 2.0]] * 2
    env.step(zeros(env))
    with pytest.raises(RobolearnError, match=r"commands.bad: CommandTermCfg.class_type"):
        make("quadruped_walk", num_envs=2, edit=lambda c: c.commands.update(bad=CommandTermCfg()))


# ---- observation groups never alias memory that changes later -------------------------


def test_a_single_term_group_is_not_a_view_of_memory_the_step_overwrites():
    def edit(cfg):
        cfg.observations["policy"] = ObservationGroupCfg(
            terms={"actions": ObservationTermCfg(func=mdp.last_action)}
        )
        cfg.episode_length_s = 0.1  # 5 steps
        cfg.terminations = {"time_out": cfg.terminations["time_out"]}

    env = make("cartpole_balance", num_envs=2, edit=edit)
    env.record_final_obs = True
    action = torch.full((2, 1), 0.75)
    for _ in range(env.max_episode_length):
        obs, _, _, time_outs, extras = env.step(action)
    assert time_outs.all()
    # the observation the episodes ended in: the last action, which the reset then zeroed
    assert extras["final_obs"]["policy"].tolist() == [[0.75], [0.75]]
    assert obs["policy"].tolist() == [[0.0], [0.0]]
    kept = obs["policy"]
    env.step(action)  # what the learner stored stays what the policy saw
    assert kept.tolist() == [[0.0], [0.0]]


# ---- feet_gait_contact compares speed and yaw rate apart -------------------------------


def test_gait_contact_compares_speed_and_yaw_rate_with_their_own_thresholds():
    env = make("humanoid_walk", num_envs=4)
    command = env.command_manager.get_command("base_velocity")
    # 0.08 m/s and 0.08 rad/s: both below their 0.1 thresholds (their norm, 0.113, is not)
    command[:] = torch.tensor(
        [[0.08, 0.0, 0.08], [0.0, 0.0, 0.5], [0.5, 0.0, 0.0], [0.0, 0.0, 0.0]]
    )
    gait = env.command_manager.terms["gait"]
    gait.phase[:] = 0.25  # foot 0 in stance, foot 1 swinging, away from a switch
    params = env.cfg.rewards["gait_contact"].params
    value = mdp.feet_gait_contact(env, **params)
    in_contact = mdp.feet_contact(env).bool()
    standing = in_contact.float().sum(-1)
    stepping = (in_contact == torch.tensor([True, False])).float().sum(-1)
    expected = torch.where(torch.tensor([False, True, True, False]), stepping, standing)
    torch.testing.assert_close(value, expected)
    # the yaw-rate threshold is its own (rad/s)
    value = mdp.feet_gait_contact(env, **params, min_yaw_rate=1.0)
    torch.testing.assert_close(value[1], standing[1])


# ---- one manager shape: terms built once, live configs, resets -------------------------


class _ResetCounter(ManagerTerm):
    """A stateful curriculum term that only records the envs it was reset for."""

    def __init__(self, cfg, env) -> None:
        super().__init__(cfg, env)
        self.resets: list[list[int]] = []

    def reset(self, env_mask: torch.Tensor) -> None:
        self.resets.append(env_mask.nonzero().flatten().tolist())

    def __call__(self, env, env_mask) -> None:
        return None


def test_managers_hand_out_live_term_configs_and_refuse_what_they_fixed():
    env = make("quadruped_walk", num_envs=4)
    assert env.reward_manager.active_terms == list(env.cfg.rewards)
    assert env.observation_manager.active_terms == ["policy"]
    push = env.event_manager.get_term_cfg("push")
    assert push is env.cfg.events["push"]
    assert env.command_manager.get_term_cfg("base_velocity") is (
        env.command_manager.terms["base_velocity"].cfg
    )
    with pytest.raises(RobolearnError, match="no event term 'pusj'; events: "):
        env.event_manager.get_term_cfg("pusj")
    refused = [
        (env.event_manager, "push", dataclasses.replace(push, mode="reset")),
        (
            env.termination_manager,
            "base_contact",
            dataclasses.replace(env.cfg.terminations["base_contact"], time_out=True),
        ),
        (env.action_manager, "joint_pos", env.cfg.actions["joint_pos"]),
        (env.command_manager, "base_velocity", env.cfg.commands["base_velocity"]),
        (env.observation_manager, "policy", env.cfg.observations["policy"]),
    ]
    for manager, name, cfg in refused:
        with pytest.raises(RobolearnError, match=rf"{manager.section}\.{name}: "):
            manager.set_term_cfg(name, cfg)
    # a new function is resolved, and applies from the next step
    always = TerminationTermCfg(func=lambda env: torch.ones(env.num_envs, dtype=torch.bool))
    env.termination_manager.set_term_cfg("base_contact", always)
    _, _, terminated, _, _ = env.step(zeros(env))
    assert terminated.all()
    with pytest.raises(RobolearnError, match="unknown param"):
        bad = dataclasses.replace(always, params={"nope": 1})
        env.termination_manager.set_term_cfg("base_contact", bad)


def test_reset_envs_starts_new_episodes_in_those_envs_only():
    def edit(cfg):
        cfg.curriculum = {"counter": CurriculumTermCfg(func=_ResetCounter)}

    env = make("cartpole_balance", num_envs=4, edit=edit)
    counter = env.curriculum_manager._terms["counter"]
    assert counter.resets == [[0, 1, 2, 3]]  # the first reset, when the env was built
    for _ in range(3):
        env.step(zeros(env))
    obs, extras = env.reset_envs(torch.tensor([2]))
    assert env.episode_length_buf.tolist() == [3, 3, 0, 3]
    assert obs is env.obs_buf and "Episode_Reward/alive" in extras["log"]
    assert counter.resets[-1] == [2]  # class terms of every manager are reset
    env.reset_envs([True, False, False, False])  # a mask, or a list, as the engine takes
    assert env.episode_length_buf.tolist() == [0, 3, 0, 3]


def test_root_quantities_need_a_floating_base():
    env = make("cartpole_balance", num_envs=2)
    with pytest.raises(RobolearnError, match=r"set scene\.root_body"):
        env.scene.require_floating_base()
    with pytest.raises(RobolearnError, match=r"set scene\.root_body"):
        env.scene.root_pos_w  # noqa: B018 - the read is the test
    scene = make("quadruped_walk", num_envs=2).scene
    assert scene.require_floating_base() == scene.body_ids("trunk")[0]


def test_the_cpu_engine_resets_envs_by_index_and_the_warp_path_by_mask():
    """On the cpu engine a reset's rows are found by index (its masks are in host memory:
    that costs nothing, and spares masked work over every env); a device engine keeps the
    mask form, which never waits for the GPU."""
    from robolearn.managers import EnvRows

    env = make("cartpole_balance", num_envs=4)
    mask = torch.tensor([False, True, False, True])
    rows = EnvRows.of(env, mask)
    assert rows.ids is not None and rows.ids.tolist() == [1, 3] and rows.n == 2
    env.host_masks = False  # as on a Warp engine, or in the fused step
    assert EnvRows.of(env, mask).ids is None


@pytest.mark.parametrize("host_side", [True, False])
def test_column_writes_change_the_selected_rows_alone_in_either_form(host_side):
    """EnvRows.put_columns (a value per selected env) and copy_columns (a value per env)
    write the same bits by index (cpu) and by mask (device), through a view too."""
    from robolearn.managers import EnvRows

    env = make("cartpole_balance", num_envs=4)
    env.host_masks = host_side
    rows = EnvRows.of(env, torch.tensor([False, True, False, True]))
    assert (rows.ids is not None) is host_side
    cols = torch.tensor([0, 2])
    every = torch.arange(12, dtype=torch.float32).view(4, 3) + 0.5  # a row per env
    dst = torch.zeros(4, 3, 2, dtype=torch.float64)
    rows.copy_columns(dst[:, :, 1], cols, every[:, :2])  # a view: lands in dst
    rows.put_columns(dst[:, :, 0], slice(1, 3), rows.take(every[:, 1:]))
    rows.put_columns(dst[:, :, 0], cols[:1], rows.take(-every[:, :1]))
    expected = torch.zeros(4, 3, 2, dtype=torch.float64)
    for i in (1, 3):
        expected[i, [0, 2], 1] = every[i, :2].double()
        expected[i, 1:3, 0] = every[i, 1:].double()
        expected[i, 0, 0] = -every[i, 0].double()
    assert torch.equal(dst, expected)
