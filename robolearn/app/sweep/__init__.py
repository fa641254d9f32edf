"""``robolearn sweep``: many training runs at once on Ray Tune, locally or on a cluster.

A sweep is a search space over override paths (grid, random, or Optuna's model-based
search), several seeds per configuration, a metric with its direction, a budget per trial,
and optionally ASHA's early stopping or population-based training. Every trial is a normal
``robolearn train`` run, started as its own process by a Ray worker, whose run folder sits
under the sweep's folder; the worker follows its progress.jsonl and checkpoints and reports
them to Tune.

* :mod:`.spec`: the sweep's settings (the YAML schema and the flags), checked before
  anything runs, and the trials they make;
* :mod:`.trial`: what a Ray worker runs for one trial;
* :mod:`.driver`: Ray started or joined, Tune run or resumed;
* :mod:`.progress`: Tune's events as the sweep's lines;
* :mod:`.results`: the results table, the curves plot and ``sweep show``.
"""
