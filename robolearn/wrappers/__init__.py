"""Wrappers of the batched env for learners other than rsl-rl, as Isaac Lab ships them.

* :mod:`robolearn.wrappers.sb3`: :class:`~robolearn.wrappers.sb3.Sb3VecEnv`, a
  Stable-Baselines3 ``VecEnv`` (``pip install 'robolearn[sb3]'``);
* :mod:`robolearn.wrappers.skrl`: :class:`~robolearn.wrappers.skrl.SkrlVecEnv`, an skrl
  ``Wrapper`` (``pip install 'robolearn[skrl]'``).

Each wraps the whole batch of envs, with no loop over envs in Python; each learner is
imported only by its own module, so robolearn works without them. The gymnasium adapters
are in :mod:`robolearn.adapters`.
"""
