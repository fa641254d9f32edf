"""Left-right symmetry: the mirror maps found in the MJCF, the mirrored observations, and
PPO's symmetry augmentation.

The check that matters: put one env in a state and a second env in that state's mirror
image (joints swapped with their partners and signed, the root reflected through the x-z
plane, the commands, gait clock and last action mirrored), and the second env's observation
must be the mirror of the first's, column for column; stepping both with mirrored actions
keeps them mirrored, so the robot and its actuators really are symmetric.
"""

from __future__ import annotations

import pytest
import torch
from cli_helpers import one_line_error, progress, robolearn_in_process, run_train

from robolearn.env import ManagerBasedRLEnv
from robolearn.errors import RobolearnError
from robolearn.managers import ObservationTermCfg
from robolearn.mdp.mirror import Mirror, action_mirror, group_mirror, term_mirror
from robolearn.registry import get_task

VECTOR = torch.tensor([1.0, -1.0, 1.0], dtype=torch.float64)
AXIAL = -VECTOR


_ENVS: dict[str, ManagerBasedRLEnv] = {}


def make(task: str) -> ManagerBasedRLEnv:
    """Two envs of ``task`` on the cpu engine, without random events or observation noise
    (built once per module: each test resets it)."""
    if task not in _ENVS:
        cfg = get_task(task).env_cfg()
        cfg.scene.num_envs = 2
        cfg.sim.engine = "cpu"
        cfg.events = {}
        for group in cfg.observations.values():
            group.enable_corruption = False
        _ENVS[task] = ManagerBasedRLEnv(cfg)
    return _ENVS[task]


def mirror_env1_of_env0(env: ManagerBasedRLEnv) -> None:
    """Env 1 becomes the mirror image of env 0: state, commands, gait clock, last action."""
    e, scene = env.scene.engine, env.scene
    joints = scene.joint_mirror()
    perm = torch.as_tensor(joints.perm)
    sign = torch.as_tensor(joints.sign, dtype=e.dtype)
    qadr, dadr = scene.joint_qpos_adr, scene.joint_dof_adr
    r, v = scene.root_qpos_adr, scene.root_dof_adr
    q, qd = e.qpos[0].clone(), e.qvel[0].clone()
    q[qadr] = sign * e.qpos[0, qadr[perm]]
    qd[dadr] = sign * e.qvel[0, dadr[perm]]
    q[r : r + 3] = e.qpos[0, r : r + 3] * VECTOR.to(e.dtype)
    w, x, y, z = e.qpos[0, r + 3 : r + 7]
    q[r + 3 : r + 7] = torch.stack((w, -x, y, -z))
    qd[v : v + 3] = e.qvel[0, v : v + 3] * VECTOR.to(e.dtype)  # world frame
    qd[v + 3 : v + 6] = e.qvel[0, v + 3 : v + 6] * AXIAL.to(e.dtype)  # body frame
    e.qpos[1], e.qvel[1] = q, qd
    # Position targets are joint positions: the partner's, signed (contact forces depend on
    # the actuators' forces, so the controls must mirror too).
    of = scene.actuator_joint.tolist()
    actuator_of_joint = {j: a for a, j in enumerate(of)}
    for a, j in enumerate(of):
        e.ctrl[1, a] = joints.sign[j] * e.ctrl[0, actuator_of_joint[joints.perm[j]]]
    scene.forward(torch.ones(env.num_envs, dtype=torch.bool))
    for term in env.command_manager.terms.values():
        m = Mirror(term.mirror(), "cpu")
        if hasattr(term, "phase"):  # the gait clock: half a cycle on
            term.phase[1] = torch.remainder(term.phase[0] + 0.5, 1.0)
            term._update_command()
        else:
            term.command[1] = m(term.command[0:1])[0]
    actions = Mirror(action_mirror(env), "cpu")
    env.action_manager.action[1] = actions(env.action_manager.action[0:1])[0]


@pytest.mark.parametrize("task", ["humanoid_walk", "quadruped_walk"])
def test_the_mirrored_state_observes_the_mirrored_observation(task):
    env = make(task)
    env.reset(seed=3)
    gen = torch.Generator().manual_seed(0)
    for _ in range(10):  # a few steps of random actions: feet down, joints off default
        env.step(0.5 * torch.randn(2, env.num_actions, generator=gen))
    env.scene.engine.qvel[0] += 0.3 * torch.randn(env.scene.engine.qvel.shape[1], generator=gen).to(
        env.scene.engine.dtype
    )
    env.action_manager.action[0] = torch.randn(env.num_actions, generator=gen)
    mirror_env1_of_env0(env)
    obs = env.observation_manager.compute(update_history=False)
    assert obs  # every group
    for group, value in obs.items():
        mirrored = Mirror(group_mirror(env, group), "cpu")(value[0:1])[0]
        slices = env.observation_manager.term_slices(group)
        for name, sl in slices.items():
            torch.testing.assert_close(
                value[1, sl], mirrored[sl], atol=2e-4, rtol=1e-4, msg=f"{group}.{name}"
            )


def test_a_height_scan_mirrors_across_the_robots_x_axis():
    # On a terrain the mirrored state stands on other ground, so check the scan's grid.
    env = make("quadruped_walk_rough")
    ((name, cfg, term),) = [t for t in env.observation_manager.group_terms("policy")
                            if t[0] == "height_scan"]  # fmt: skip
    m = term_mirror(env, name, cfg, term, len(term.pattern), frames=1)
    flipped = term.pattern * torch.tensor([1.0, -1.0])
    torch.testing.assert_close(term.pattern[list(m.perm)], flipped)
    assert len(group_mirror(env, "policy").perm) == env.observation_manager.group_dims["policy"]


def test_mirrored_actions_keep_a_mirrored_humanoid_mirrored():
    env = make("humanoid_walk")
    env.reset(seed=1)
    mirror_env1_of_env0(env)
    actions = Mirror(action_mirror(env), "cpu")
    gen = torch.Generator().manual_seed(2)
    pos = env.scene.root_pos_w
    for _ in range(25):  # half a second: the feet touch down and push off
        a = 0.5 * torch.randn(1, env.num_actions, generator=gen)
        _, _, terminated, time_outs, _ = env.step(torch.cat((a, actions(a))))
        assert not bool((terminated | time_outs).any())
        pos = env.scene.root_pos_w
    torch.testing.assert_close(pos[1], pos[0] * VECTOR.float(), atol=2e-3, rtol=0)
    joints = env.scene.joint_mirror()
    q = env.scene.joint_pos
    expected = torch.as_tensor(joints.sign) * q[0, list(joints.perm)]
    torch.testing.assert_close(q[1], expected.float(), atol=2e-3, rtol=0)


def test_the_humanoid_and_quadruped_mirror_maps():
    env = make("humanoid_walk")
    names, m = env.scene.joint_names, env.scene.joint_mirror()
    pairs = {names[i]: (names[p], s) for i, (p, s) in enumerate(zip(m.perm, m.sign, strict=True))}
    assert pairs["left_hip_roll"] == ("right_hip_roll", -1.0)
    assert pairs["right_knee"] == ("left_knee", 1.0)
    assert pairs["left_shoulder_yaw"] == ("right_shoulder_yaw", -1.0)
    assert pairs["waist_yaw"] == ("waist_yaw", -1.0)
    env = make("quadruped_walk")
    names, m = env.scene.joint_names, env.scene.joint_mirror()
    pairs = {names[i]: (names[p], s) for i, (p, s) in enumerate(zip(m.perm, m.sign, strict=True))}
    assert pairs["FL_hip"] == ("FR_hip", -1.0)
    assert pairs["RR_thigh"] == ("RL_thigh", 1.0)


def test_a_term_without_a_mirror_rule_is_named():
    cfg = get_task("humanoid_walk").env_cfg()
    cfg.scene.num_envs = 2
    cfg.observations["policy"].terms["mine"] = ObservationTermCfg(
        func=lambda env: env.scene.root_height
    )
    env = ManagerBasedRLEnv(cfg)
    with pytest.raises(RobolearnError, match="'mine' does not say how it mirrors"):
        group_mirror(env, "policy")
    cfg.observations["policy"].terms["mine"].mirror = "invariant"
    env = ManagerBasedRLEnv(cfg)
    assert len(group_mirror(env, "policy").perm) == env.observation_manager.group_dims["policy"]


def test_symmetry_on_a_robot_that_cannot_mirror_is_refused_before_training(tmp_path, capsys):
    """The cartpole has no floating base to mirror across: refused when the learner is
    built (not after a rollout), naming the setting, the term and the way out."""
    out = robolearn_in_process(
        capsys, "train", "--task", "cartpole_balance", "--num_envs", 4, "--log_root", tmp_path,
        "agent.algorithm.symmetry.use_data_augmentation=true",
    )  # fmt: skip
    one_line_error(
        out,
        "agent.algorithm.symmetry trains on mirrored samples, but observation term "
        "'joint_pos' cannot be mirrored: ",
    )
    assert "or turn agent.algorithm.symmetry off" in out.stderr
    assert "Learning iteration" not in out.stdout and not any(tmp_path.rglob("*"))


def test_training_with_symmetry_augmentation(tmp_path):
    run_train(
        "--task", "humanoid_walk", "--num_envs", "32", "--max_iterations", "2",
        "--log_root", tmp_path, "agent.algorithm.symmetry.use_data_augmentation=true",
        "agent.algorithm.symmetry.use_mirror_loss=true",
        "agent.algorithm.symmetry.mirror_loss_coeff=0.5",
    )  # fmt: skip
    (run,) = (tmp_path / "humanoid_walk").iterdir()
    rows = progress(run)
    assert len(rows) == 2
    assert all(r["Loss/symmetry"] >= 0.0 for r in rows)


def test_the_mirror_loss_from_the_updates_own_pass_equals_rsl_rls():
    """The runner takes the mirror loss from the update's actor pass instead of rsl-rl's
    second pass: the same loss, and the same gradient when it is trained on."""
    from rsl_rl.extensions.symmetry import Symmetry

    from robolearn.app.configs import build_setup
    from robolearn.rl.runner import Runner
    from robolearn.rl.symmetry import SharedForwardSymmetry
    from robolearn.wrappers.rsl_rl import RslRlVecEnv

    overrides = [
        "agent.algorithm.symmetry.use_data_augmentation=true",
        "agent.algorithm.symmetry.use_mirror_loss=true",
        "agent.algorithm.symmetry.mirror_loss_coeff=0.5",
        "agent.algorithm.use_mixed_precision=false",
    ]
    setup = build_setup("humanoid_walk", overrides, num_envs=8, engine="cpu")
    agent = setup.agent_cfg.to_rsl_rl("cpu")
    agent["num_steps_per_env"] = 4
    runner = Runner(RslRlVecEnv(ManagerBasedRLEnv(setup.env_cfg)), agent, device="cpu")
    alg, sym = runner.alg, runner.alg.symmetry
    assert isinstance(sym, SharedForwardSymmetry)  # our PPO put its own in place
    obs = runner.env.get_observations()
    with torch.inference_mode():
        for _ in range(4):
            actions = alg.act(obs)
            obs, rewards, dones, extras = runner.env.step(actions)
            alg.process_env_step(obs, rewards, dones, extras)
    batch = next(alg.storage.mini_batch_generator(1, 1))
    n = batch.observations.batch_size[0]
    sym.augment_batch(batch, n)

    params = list(alg.actor.parameters())

    def loss_and_grads(compute) -> tuple[torch.Tensor, list[torch.Tensor | None]]:
        alg.actor.zero_grad()
        alg.actor(batch.observations, stochastic_output=True)
        loss = compute(alg.actor, batch, n)
        loss.backward()
        # the std has no gradient from a loss on the means: None in both
        return loss.detach(), [p.grad if p.grad is None else p.grad.clone() for p in params]

    ours, our_grads = loss_and_grads(sym.compute_loss)
    theirs, their_grads = loss_and_grads(lambda *a: Symmetry.compute_loss(sym, *a))
    assert ours > 0  # an untrained policy is not symmetric: the loss measures something
    torch.testing.assert_close(ours, theirs)
    assert sum(g is not None for g in our_grads) >= 6  # the MLP's weights and biases
    for a, b in zip(our_grads, their_grads, strict=True):
        assert (a is None) == (b is None)
        if a is not None:
            torch.testing.assert_close(a, b)
