"""rsl-rl integration: agent configs, the runner, checkpoints and export."""

from robolearn.rl.config import AgentCfg, PolicyCfg, PpoAlgorithmCfg

__all__ = ["AgentCfg", "PolicyCfg", "PpoAlgorithmCfg"]
