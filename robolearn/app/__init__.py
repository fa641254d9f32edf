"""The run application: training runs, play and evaluation, benchmarks, export, run folders
and the public policy API, over the rsl-rl adapter in :mod:`robolearn.rl`."""
