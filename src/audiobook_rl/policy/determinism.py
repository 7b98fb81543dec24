"""Training that gives the same weights bit for bit when run again on the same GPU.

On the CPU the warm start is deterministic already. On a GPU it is not: cuBLAS may split a matrix
product's reductions differently from one run to the next, and the backward pass of PyTorch's fused
attention (flash and memory-efficient) adds its gradients in whatever order its threads finish, so
two warm starts from the same inputs and seed end with different weights and different test scores.
:func:`deterministic` has PyTorch use deterministic kernels only, with the fixed cuBLAS workspace they
need (``CUBLAS_WORKSPACE_CONFIG``, read when cuBLAS starts, so enter it before the first GPU work).
An operation that has no deterministic kernel on the device stops the stage with a sentence that names
it, instead of quietly falling back to a non-deterministic one.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import torch

from ..errors import UserError

# The workspace settings cuBLAS is deterministic with (PyTorch accepts these two).
WORKSPACES = (":4096:8", ":16:8")


@contextmanager
def deterministic(enabled: bool, key: str) -> Iterator[None]:
    """Run the block with deterministic kernels only when ``enabled`` (the config key ``key`` says so);
    PyTorch's previous setting is restored after it."""
    if not enabled:
        yield
        return
    workspace = os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", WORKSPACES[0])
    if workspace not in WORKSPACES:
        raise UserError(f"{key} is true but the environment sets CUBLAS_WORKSPACE_CONFIG={workspace}, with which "
                        f"cuBLAS is not deterministic: unset it or set it to {WORKSPACES[0]}.")
    before = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        yield
    except RuntimeError as err:
        operation = _lacking(err)
        if operation is None:
            raise
        raise UserError(f"{key} is true but {operation} has no deterministic implementation on this device: "
                        f"set {key}: false to run without it.") from err
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])


def _lacking(err: RuntimeError) -> str | None:
    """The operation a PyTorch error says has no deterministic implementation, or None for another error."""
    message = str(err)
    marker = " does not have a deterministic implementation"
    if marker in message:
        return message.split(marker)[0].strip().splitlines()[-1]
    if "use_deterministic_algorithms" in message:  # a cuBLAS call without the workspace setting, and the like
        return "an operation"
    return None
