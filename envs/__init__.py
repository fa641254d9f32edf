"""Robot worlds: one module per robot (asset, actuators, default pose, sensors)."""
