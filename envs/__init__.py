"""Robot worlds: one module per robot (asset, default pose, joint groups, feet)."""
