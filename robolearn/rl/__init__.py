"""The rsl-rl adapter: agent configs, the runner around rsl-rl's PPO, checkpoints, the
symmetry extension and policies from checkpoints. The run application that uses it is
:mod:`robolearn.app`."""

from robolearn.rl.config import AgentCfg, PolicyCfg, PpoAlgorithmCfg

__all__ = ["AgentCfg", "PolicyCfg", "PpoAlgorithmCfg"]
