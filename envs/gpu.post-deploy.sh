#!/usr/bin/env bash
# Run by Snakemake (--sdm conda) inside the environment it has just built from envs/gpu.yaml; by hand
# after `conda env create -f envs/gpu.yaml`: `conda activate audiobook-rl-gpu && bash envs/gpu.post-deploy.sh`.
# flash-attn, which verl's FSDP workers import, is built against the environment's torch: after the
# lock is installed and without build isolation (its setup.py imports torch), so not in the lock.
set -euo pipefail
pip install flash-attn==2.8.3 --no-build-isolation
