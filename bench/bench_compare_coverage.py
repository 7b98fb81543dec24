"""How often the comparison intervals cover the truth, by simulation: the numbers behind the
minimum number of seeds (:data:`audiobook_rl.compare.seeds.MIN_SEEDS`).

    python bench/bench_compare_coverage.py [--trials 1000] [--samples 1000] [--slices 16]

Simulated gains: slice i of seed s gains ``mu + u_s + v_i + e_si`` with a seed effect
``u_s ~ N(0, sd_seed)``, a slice effect ``v_i ~ N(0, sd_slice)`` shared by every seed (the seeds of
a sweep are scored on the same test slices), and noise ``e_si ~ N(0, sd_noise)``. A fresh set of
slices and seeds is drawn for each simulated experiment, so the truth is ``mu``. Prints, per number
of seeds, the share of experiments whose 95 % interval of the mean gain contains ``mu`` (one-stage:
seeds resampled; two-stage: seeds, then slices within each seed), and the same for the paired
per-slice interval of one run (:func:`audiobook_rl.compare.paired.paired`) per number of slices.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from audiobook_rl.compare.paired import paired
from audiobook_rl.compare.seeds import arm_summary

MU, SD_SEED, SD_SLICE, SD_NOISE = 0.10, 0.05, 0.05, 0.10


def arm(rng, n_seeds: int, n_slices: int) -> dict:
    v = rng.normal(0, SD_SLICE, n_slices)
    return {
        str(s): {f"t{i}": MU + u + v[i] + e for i, e in enumerate(rng.normal(0, SD_NOISE, n_slices))}
        for s, u in enumerate(rng.normal(0, SD_SEED, n_seeds))
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--slices", type=int, default=16)
    args = ap.parse_args()
    rng = np.random.default_rng(20240)
    t0 = time.monotonic()
    print(f"model: gain = {MU} + seed N(0,{SD_SEED}) + slice N(0,{SD_SLICE}) + noise N(0,{SD_NOISE}); "
          f"{args.slices} test slices; {args.trials} experiments; {args.samples} resamples; nominal 0.95")
    for n_seeds in (2, 3, 4, 5, 8):
        hits = {True: 0, False: 0}
        for t in range(args.trials):
            gains = arm(rng, n_seeds, args.slices)
            for two_stage in hits:
                ci = arm_summary(gains, samples=args.samples, seed=t, min_seeds=2, resample_slices=two_stage).mean_ci
                hits[two_stage] += ci[0] <= MU <= ci[1]
        print(f"seeds={n_seeds}: coverage of the mean gain's interval: one-stage {hits[False] / args.trials:.3f}, "
              f"two-stage {hits[True] / args.trials:.3f}")
    for n_slices in (4, 16, 32):
        hit = 0
        for t in range(args.trials):
            base = rng.normal(0.3, 0.1, n_slices)
            ckpt = base + MU + rng.normal(0, SD_SLICE, n_slices) + rng.normal(0, SD_NOISE, n_slices)
            ci = paired({f"t{i}": c for i, c in enumerate(ckpt)}, {f"t{i}": b for i, b in enumerate(base)},
                        samples=args.samples, seed=t).diff_ci
            hit += ci[0] <= MU <= ci[1]
        print(f"slices={n_slices}: coverage of one run's paired interval: {hit / args.trials:.3f}")
    print(f"{time.monotonic() - t0:.1f} s")


if __name__ == "__main__":
    main()
