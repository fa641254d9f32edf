"""How far each PPO update moves the policy: a training run with one line per update.

    python benchmarks/update_kl.py train --task humanoid_walk --seed 1 --max_iterations 8 \\
        env.sim.nthread=1 agent.pipelined=true

Runs ``robolearn ARGS`` in this process with rsl-rl's PPO update instrumented: for every
mini-batch, the KL of the policy from the one its update started from (the KL that rsl-rl's
adaptive schedule reads), the part of it in the mean action, and the learning rate. Each
update prints one line to stderr: its mini-batches' KLs (every third), where they peaked
and ended, the learning rate at its start and end, and the std's largest change. What
BENCHMARKS.md section 40 compares between plain and pipelined PPO.
"""

from __future__ import annotations

import sys

import rsl_rl.algorithms


def _instrumented(update):
    def run(alg, *args, **kwargs):
        kind = type(alg.actor)
        kl_of = kind.get_kl_divergence
        rows: list[tuple[float, float, float, float]] = []

        def measured(actor, old, new):
            kl = kl_of(actor, old, new)
            mean_part = ((new[0] - old[0]) ** 2 / (2 * old[1] ** 2)).sum(-1).mean()
            std_change = (new[1] / old[1] - 1).abs().max()
            rows.append((float(kl.mean()), float(mean_part), float(std_change), alg.learning_rate))
            return kl

        kind.get_kl_divergence = measured
        try:
            losses = update(alg, *args, **kwargs)
        finally:
            kind.get_kl_divergence = kl_of
        kls = [r[0] for r in rows]
        print(
            f"update: KL peak {max(kls):.3f} end {kls[-1]:.3f} (mean action {rows[-1][1]:.3f}), "
            f"rate {rows[0][3]:.1e} -> {alg.learning_rate:.1e}, std moved <= "
            f"{max(r[2] for r in rows):.1%} | " + " ".join(f"{k:.3f}" for k in kls[::3]),
            file=sys.stderr,
            flush=True,
        )
        return losses

    return run


def main() -> int:
    rsl_rl.algorithms.PPO.update = _instrumented(rsl_rl.algorithms.PPO.update)
    from robolearn.cli import main as robolearn

    return robolearn(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
