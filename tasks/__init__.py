"""Tasks: one module per task (commands, rewards, terminations, events, agent config)."""
