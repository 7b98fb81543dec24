"""Comparisons a reviewer can check: is a checkpoint better than the base, across seeds, because
of the reward, by more than one judge, and not only on the judge's surface checks?

One job per module; each docstring names the statistic and where it comes from.

- :mod:`.ranks`: the tie rule, average ranks, Spearman's rho and Kendall's tau-b.
- :mod:`.bootstrap`: the seeded percentile bootstrap every interval here uses.
- :mod:`.paired`: a checkpoint against the base on the same slices (mean difference, probability
  of improvement, both with a paired bootstrap interval; relative change as a secondary number).
- :mod:`.seeds`: several training seeds per arm (per-seed gains, mean, interquartile mean, a
  stratified bootstrap interval, the probability that one arm beats another).
- :mod:`.control`: the shuffled-reward control (the permutation training applies, and how much of
  the gain the reward explains).
- :mod:`.agreement`: two or more judges on the same outputs.
- :mod:`.hacking`: which rubric dimensions a gain comes from.

Inputs are plain mappings (slice id → score, or a ``scores.jsonl`` row), so the modules are used
without reading any file; every random draw comes from a generator seeded by the caller.
"""
