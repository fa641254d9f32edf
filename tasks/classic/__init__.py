"""Classic control: the cartpole.

``cartpole`` holds the balancing env both cartpole tasks share (physics, rewards, resets);
then one module per task: cartpole_balance (from the joint state) and
cartpole_balance_depth (from depth images).
"""
