"""The Franka Panda manipulation family: reach a goal, lift a cube, open a drawer.

``recipe`` holds what the Panda's tasks share (its physics, the arm action, the reset that
scatters the arm's pose, the PPO settings and the play variant); then one module per task:
panda_reach, panda_lift (panda_lift and panda_lift_ik) and panda_open_drawer.
"""
