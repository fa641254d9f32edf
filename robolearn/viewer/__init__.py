"""Seeing what the robots do: offscreen frames and videos (and, later, interactive viewers)."""
