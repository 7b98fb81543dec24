"""The seed's training backend: GRPO in verl 0.6.1 through Agent Lightning 0.3.0, on GPUs.

- :mod:`.backend`: the ``train_stage`` of rule train_grpo (preflight, resume, Ray, ``trainer.fit``);
- :mod:`.config`: the verl override dict built from the ``train`` section, checked offline;
- :mod:`.trainer`: Agent Lightning's trainer, its update a token-mean over each mini-batch, keeping the
  project's per-step record;
- :mod:`.daemon`: Agent Lightning's daemon, without made-up rewards, rewards in float32;
- :mod:`.environment`: the variables the training process hands to Ray's workers;
- :mod:`.metrics`: the per-step record, and its rows in results/train/metrics.jsonl;
- :mod:`.export`: ``export_stage`` of rule export_checkpoint (verl's model merger).

Nothing here is imported by the local backend (:mod:`audiobook_rl.training.local_grpo`).
"""
