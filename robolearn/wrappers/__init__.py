"""The env as other learners and APIs expect it: one package for every wrapper.

* :mod:`robolearn.wrappers.rsl_rl`: :class:`~robolearn.wrappers.rsl_rl.RslRlVecEnv`,
  rsl-rl's ``VecEnv`` (what ``robolearn train`` trains on);
* :mod:`robolearn.wrappers.gymnasium`:
  :class:`~robolearn.wrappers.gymnasium.GymVectorEnv` and
  :class:`~robolearn.wrappers.gymnasium.GymEnv`, gymnasium's ``VectorEnv`` and ``Env``
  (``gymnasium.make_vec("robolearn/<task>-v0")`` builds them);
* :mod:`robolearn.wrappers.sb3`: :class:`~robolearn.wrappers.sb3.Sb3VecEnv`, a
  Stable-Baselines3 ``VecEnv`` (``pip install 'robolearn[sb3]'``);
* :mod:`robolearn.wrappers.skrl`: :class:`~robolearn.wrappers.skrl.SkrlVecEnv`, an skrl
  ``Wrapper`` (``pip install 'robolearn[skrl]'``).

What they share: :func:`make_env` (a task's env by name, with overrides),
:mod:`~robolearn.wrappers.spaces` (the action and observation spaces) and
:mod:`~robolearn.wrappers.episode_log`. Each wraps the whole batch of envs, with no loop
over envs in Python; each learner is imported only by its own module, so robolearn works
without the optional ones.
"""

from robolearn.wrappers.make import make_env

__all__ = ["make_env"]
