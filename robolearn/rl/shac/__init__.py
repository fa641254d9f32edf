"""The differentiable learner: SHAC over a task's env on Newton's differentiable solvers.

:class:`DifferentiableRollout` steps a task's env with gradients from actions to rewards
and observations; :class:`ShacLearner` trains on it. ``robolearn train --algo shac`` runs
it from the command line (docs/differentiable.md).
"""

from robolearn.rl.shac.learner import IterationLog, ShacActor, ShacLearner
from robolearn.rl.shac.rollout import DifferentiableRollout, StepResult

__all__ = ["DifferentiableRollout", "IterationLog", "ShacActor", "ShacLearner", "StepResult"]
