"""The gymnasium VectorEnv and rsl-rl VecEnv wrappers (robolearn.wrappers), and the task
registry."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest
import robolearn.tasks  # noqa: F401  (registers the tasks with gymnasium, as a user does)
import torch
from cli_helpers import runnable_tasks
from gymnasium.vector.utils import batch_space
from tensordict import TensorDict

from robolearn.env import ManagerBasedRLEnv
from robolearn.errors import RobolearnError
from robolearn.registry import get_task, gym_id, task_names
from robolearn.wrappers import make_env
from robolearn.wrappers.gymnasium import GymVectorEnv
from robolearn.wrappers.rsl_rl import RslRlVecEnv


def test_registry_lists_every_task_and_suggests_close_names():
    assert {"cartpole_balance", "quadruped_walk", "humanoid_walk"} <= set(task_names())
    with pytest.raises(
        RobolearnError, match=r"unknown task 'humanoid_wlak' \(did you mean 'humanoid_walk'"
    ):
        get_task("humanoid_wlak")


def test_cli_list_prints_each_task_with_its_description():
    out = subprocess.run(
        [sys.executable, "-m", "robolearn", "list"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0
    lines = out.stdout.strip().splitlines()
    # the tasks a fresh process sees: robolearn's own (tests may register more in this one)
    shipped = [n for n in task_names() if get_task(n).source == "robolearn"]
    assert len([ln for ln in lines if not ln.startswith("(")]) == len(shipped)
    for name in shipped:
        line = next(ln for ln in lines if ln.startswith(name + " "))
        assert get_task(name).description in line


@pytest.fixture(scope="module")
def gym_env():
    env = gym.make_vec(gym_id("cartpole_balance"), num_envs=8, engine="cpu")
    yield env
    env.close()


def test_gymnasium_make_vec_builds_the_task(gym_env):
    assert gym_env.num_envs == 8
    assert gym_env.metadata["autoreset_mode"] == gym.vector.AutoresetMode.SAME_STEP
    assert gym_env.single_observation_space.shape == (4,)
    assert gym_env.observation_space.shape == (8, 4)
    assert gym_env.action_space.shape == (8, 1)


def test_gymnasium_vector_api(gym_env):
    """The checks gymnasium's vector-env contract implies, on a real task."""
    obs, info = gym_env.reset(seed=123)
    assert isinstance(info, dict)
    assert obs.dtype == np.float32 and gym_env.observation_space.contains(obs)
    again, _ = gym_env.reset(seed=123)
    np.testing.assert_array_equal(obs, again)  # seeding makes resets reproducible
    other, _ = gym_env.reset(seed=7)
    assert not np.array_equal(obs, other)
    seen_final = False
    for _ in range(400):
        action = gym_env.action_space.sample()
        obs, reward, terminated, truncated, info = gym_env.step(action)
        assert gym_env.observation_space.contains(obs)
        assert reward.shape == (8,) and reward.dtype == np.float32
        assert terminated.dtype == np.bool_ and truncated.dtype == np.bool_
        assert not (terminated & truncated).any()
        if "final_obs" in info:
            done = terminated | truncated
            np.testing.assert_array_equal(info["_final_obs"], done)
            # same-step autoreset: the returned obs already belongs to the new episode
            assert not np.array_equal(info["final_obs"][done], obs[done])
            seen_final = True
    assert seen_final


def test_rsl_rl_vecenv_adapter():
    env = make_env("humanoid_walk", num_envs=4, engine="cpu")
    vec = RslRlVecEnv(env)
    obs = vec.get_observations()
    assert isinstance(obs, TensorDict) and obs.batch_size == torch.Size([4])
    assert set(obs.keys()) == {"policy", "critic"}
    dims = env.observation_manager.group_dims
    assert obs["policy"].shape == (4, dims["policy"]) and obs["critic"].shape == (4, dims["critic"])
    assert dims["critic"] > dims["policy"]  # the critic sees privileged terms too
    actuated = sum(t.action_dim for t in env.action_manager.terms.values())
    assert vec.num_actions == actuated and vec.max_episode_length == env.max_episode_length
    vec.episode_length_buf = torch.full((4,), env.max_episode_length - 1)  # as rsl-rl does
    _, _, dones, extras = vec.step(torch.zeros(4, vec.num_actions))
    assert dones.tolist() == [1, 1, 1, 1] and extras["time_outs"].all()
    assert "Episode_Termination/time_out" in extras["log"]


def test_the_deprecated_adapters_module_still_names_the_wrappers():
    """Code and gymnasium specs written before the wrappers moved keep working, warned."""
    import importlib

    with warnings.catch_warnings():  # the first import warns too; the reload is checked
        warnings.simplefilter("ignore", DeprecationWarning)
        import robolearn.adapters

    with pytest.warns(DeprecationWarning, match=r"import from robolearn\.wrappers"):
        adapters = importlib.reload(robolearn.adapters)
    assert (adapters.make_env, adapters.RslRlVecEnv, adapters.GymVectorEnv) == (
        make_env,
        RslRlVecEnv,
        GymVectorEnv,
    )
    spec = gym.spec(gym_id("cartpole_balance"))
    assert spec.vector_entry_point == "robolearn.wrappers.gymnasium:make_gym_vector_env"
    assert callable(adapters.make_gym_vector_env)


def _no_warnings(fn, *args, **kwargs):
    """Run ``fn`` and return the messages of every warning it raised (gymnasium's checker
    warns through ``warnings``)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn(*args, **kwargs)
    return [str(w.message) for w in caught]


def test_gymnasium_make_gives_one_env_that_passes_gymnasiums_checker():
    from gymnasium.utils.env_checker import check_env

    env = gym.make(gym_id("cartpole_balance"), render_mode="rgb_array")
    # every check, rendering included (it builds an env per declared render mode), and not
    # one warning: finite action and observation bounds, render modes and fps declared
    assert _no_warnings(check_env, env.unwrapped) == []
    obs, _ = env.reset(seed=0)
    env.action_space.seed(0)
    assert obs.shape == env.observation_space.shape and obs.dtype == np.float32
    # random actions topple the pole: the episode ends with its own final observation
    for _ in range(1000):
        obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            break
    assert terminated and not truncated
    assert isinstance(reward, float) and env.observation_space.contains(obs)
    # the observation is the state that ended the episode (pole down or cart out), not the
    # next episode's start: joint positions are (cart, pole) relative to the default pose
    cart, pole = obs[0], obs[1]
    assert abs(pole) > np.pi / 2 or abs(cart) > 2.0
    env.close()


def test_gymnasium_vector_env_spaces_pass_gymnasiums_checks(gym_env):
    """gymnasium has no checker for vector envs: its space checks on the single spaces (the
    ones check_env runs), and the batched spaces are those spaces batched."""
    from gymnasium.utils.env_checker import check_space_limit
    from gymnasium.utils.passive_env_checker import check_action_space, check_observation_space

    single_obs, single_act = gym_env.single_observation_space, gym_env.single_action_space
    assert _no_warnings(check_action_space, single_act) == []
    assert _no_warnings(check_observation_space, single_obs) == []
    assert _no_warnings(check_space_limit, single_act, "action") == []
    assert _no_warnings(check_space_limit, single_obs, "observation") == []
    assert gym_env.action_space == batch_space(single_act, 8)
    assert gym_env.observation_space == batch_space(single_obs, 8)


def test_every_task_has_finite_action_bounds_from_its_action_terms():
    """Joint position actions reach their actuators' ctrlrange at (ctrl - default) / scale;
    effort actions at ctrl / scale; every task's bounds are finite and wide enough to hold
    the default pose (action 0)."""
    for name, overrides in runnable_tasks():
        env = make_env(name, num_envs=1, engine="cpu", overrides=overrides)
        low, high = env.action_manager.action_bounds()
        space = gym.spaces.Box(low.numpy(), high.numpy(), dtype=np.float64)
        assert np.isfinite(space.low).all() and np.isfinite(space.high).all(), name
        assert (space.low < 0).all() and (space.high > 0).all(), name
        if name == "quadruped_walk":
            term = env.action_manager.terms["joint_pos"]
            model, ids = env.scene.model, term.actuator_ids.numpy()
            default = env.scene.default_joint_pos[0, term.joint_ids].double().numpy()
            low, high = model.actuator_ctrlrange[ids].T
            np.testing.assert_allclose(space.low, (low - default) / term.cfg.scale, rtol=1e-6)
            np.testing.assert_allclose(space.high, (high - default) / term.cfg.scale, rtol=1e-6)
            # the bound is where the target meets the limit: past it, nothing changes
            over = torch.as_tensor(space.high * 1.5, dtype=torch.float32)[None]
            env.step(over)
            ctrl = env.scene.engine.ctrl[0, term.actuator_ids].double().numpy()
            np.testing.assert_allclose(ctrl, default + term.cfg.scale * space.high * 1.5)
        env.close()


def test_every_task_passes_gymnasiums_checker_without_warnings():
    """Joint-position tasks have asymmetric ranges (a knee bends one way); the gymnasium env
    normalizes them to [-1, 1], so the checker's advice about unnormalized action spaces
    does not fire on any task."""
    from gymnasium.utils.env_checker import check_env

    for name, overrides in runnable_tasks():
        env = gym.make(gym_id(name), engine="cpu", overrides=overrides)
        assert _no_warnings(check_env, env.unwrapped, skip_render_check=True) == [], name
        env.close()


def test_normalized_actions_keep_zero_and_reach_each_joints_range():
    """u = 0 is the task's action 0 (the default pose), u = +-1 the wider end of each
    joint's range, and the narrower end saturates where the actuator's ctrlrange does; with
    normalize_actions=False the space is in the task's own units."""
    env = gym.make_vec(gym_id("humanoid_walk"), num_envs=1, engine="cpu")
    raw = gym.make_vec(gym_id("humanoid_walk"), num_envs=1, engine="cpu", normalize_actions=False)
    space, raw_space = env.single_action_space, raw.single_action_space
    assert (space.low == -1).all() and (space.high == 1).all()
    assert (raw_space.low < -0.5).all() and (raw_space.high > 0.5).all()
    assert not np.allclose(-raw_space.low, raw_space.high)  # asymmetric: a knee, a hip
    reach = np.maximum(-raw_space.low, raw_space.high)
    for vec in (env, raw):
        vec.reset(seed=0)
    inner = env.unwrapped.env
    term = inner.action_manager.terms["joint_pos"]
    default = inner.scene.default_joint_pos[0, term.joint_ids].numpy()
    ids = term.actuator_ids
    env.step(np.zeros((1, space.shape[0]), np.float32))
    np.testing.assert_allclose(inner.scene.engine.ctrl[0, ids].numpy(), default, atol=1e-6)
    env.step(np.ones((1, space.shape[0]), np.float32))
    ctrl = inner.scene.engine.ctrl[0, ids].double().numpy()
    np.testing.assert_allclose(ctrl, default + term.cfg.scale * reach, rtol=1e-5)
    # the same command in the task's units through the raw env writes the same controls
    raw.step(reach[None].astype(np.float32))
    raw_ctrl = raw.unwrapped.env.scene.engine.ctrl[0, ids].double().numpy()
    np.testing.assert_allclose(raw_ctrl, ctrl, rtol=1e-6)
    env.close()
    raw.close()


def test_observation_bounds_come_from_the_terms_clips():
    cfg = get_task("cartpole_balance").make_env_cfg()
    cfg.scene.num_envs = 2
    cfg.observations["policy"].terms["joint_vel"].clip = (-5.0, 5.0)
    cfg.observations["policy"].terms["joint_vel"].scale = 0.5
    env = GymVectorEnv(ManagerBasedRLEnv(cfg))
    space = env.single_observation_space
    f32 = np.finfo(np.float32).max
    # joint_pos has no clip: any finite float32; joint_vel: its clip times its scale
    np.testing.assert_array_equal(space.low, [-f32, -f32, -2.5, -2.5])
    np.testing.assert_array_equal(space.high, [f32, f32, 2.5, 2.5])
    obs, _ = env.reset(seed=0)
    for _ in range(50):
        obs, *_ = env.step(np.ones((2, 1), np.float32))
        assert env.observation_space.contains(obs)


def test_render_rgb_array_draws_the_env_offscreen():
    env = gym.make(gym_id("cartpole_balance"), render_mode="rgb_array")
    assert env.metadata["render_fps"] == pytest.approx(1 / env.unwrapped.env.step_dt)
    env.reset(seed=0)
    first = env.render()
    assert first.dtype == np.uint8 and first.shape == (480, 640, 3) and first.std() > 10
    for _ in range(20):
        env.step(np.ones(1, np.float32))
    # the cart moved: the picture changed
    assert (env.render() != first).any()
    env.close()
    vec = gym.make_vec(gym_id("cartpole_balance"), num_envs=2, render_mode="rgb_array")
    vec.reset(seed=0)
    assert vec.render().shape == (480, 640, 3)  # env 0, as robolearn play --video draws it
    vec.close()


def test_render_human_without_a_display_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    assert "human" not in gym.make(gym_id("cartpole_balance")).metadata["render_modes"]
    with pytest.raises(RobolearnError, match="render_mode='human' needs a display") as err:
        gym.make(gym_id("cartpole_balance"), render_mode="human")
    assert "\n" not in str(err.value) and "rgb_array" in str(err.value)
    with pytest.raises(RobolearnError, match=r"render_mode 'ansi' is not one of: rgb_array"):
        gym.make(gym_id("cartpole_balance"), render_mode="ansi")


def test_gymnasium_module_prefix_registers_the_tasks_in_a_fresh_interpreter():
    code = (
        "import gymnasium as gym\n"
        "env = gym.make_vec('robolearn.tasks:robolearn/cartpole_balance-v0', num_envs=2)\n"
        "print(env.reset(seed=0)[0].shape)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "(2, 4)"


def test_render_human_opens_a_window_that_shows_the_env(xvfb):
    code = (
        "import os, time\n"
        "import gymnasium as gym, mss, numpy as np\n"
        "import robolearn.tasks\n"
        "env = gym.make('robolearn/cartpole_balance-v0', render_mode='human')\n"
        "print('human' in env.metadata['render_modes'])\n"
        "env.reset(seed=0)\n"
        "for _ in range(10):\n"
        "    env.step(np.ones(1, np.float32))\n"
        "    assert env.render() is None\n"
        "deadline = time.time() + 60\n"
        "with mss.MSS(display=os.environ['DISPLAY']) as grab:\n"
        "    while True:\n"  # the window draws on its own thread: wait for a picture
        "        env.render()\n"
        "        shot = np.asarray(grab.grab(grab.monitors[1]))[..., :3]\n"
        "        if shot.std() > 10 or time.time() > deadline:\n"
        "            break\n"
        "        time.sleep(0.2)\n"
        "print(round(float(shot.std()), 1))\n"
        "env.close()\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "MUJOCO_GL"}
    env["DISPLAY"] = xvfb
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    offered, std = out.stdout.split()
    assert offered == "True"
    assert float(std) > 10  # not a blank screen: the window drew the scene
