"""sft.deterministic: deterministic kernels only inside the block, a clear sentence where one is lacking."""

import os

import pytest
import torch

from audiobook_rl.errors import UserError
from audiobook_rl.policy.determinism import deterministic


@pytest.fixture(autouse=True)
def _restore(monkeypatch):
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    before = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    yield
    torch.use_deterministic_algorithms(before[0], warn_only=before[1])


def test_on_it_uses_deterministic_kernels_with_the_cublas_workspace_and_restores_the_setting_after():
    assert not torch.are_deterministic_algorithms_enabled()
    with deterministic(True, "sft.deterministic"):
        assert torch.are_deterministic_algorithms_enabled()
        assert not torch.is_deterministic_algorithms_warn_only_enabled()  # warn_only would leave fused attention's backward as it is
        assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    assert not torch.are_deterministic_algorithms_enabled()


def test_off_it_changes_nothing():
    with deterministic(False, "sft.deterministic"):
        assert not torch.are_deterministic_algorithms_enabled()
        assert "CUBLAS_WORKSPACE_CONFIG" not in os.environ
        torch.zeros(3).put_(torch.tensor([0, 1]), torch.ones(2))  # no deterministic kernel: runs anyway


def test_an_operation_without_a_deterministic_kernel_is_named_in_one_sentence():
    with pytest.raises(UserError) as err:
        with deterministic(True, "sft.deterministic"):
            torch.zeros(3).put_(torch.tensor([0, 1]), torch.ones(2))  # put_ has none on the CPU
    message = str(err.value)
    assert message.startswith("sft.deterministic is true but put_ has no deterministic implementation")
    assert "set sft.deterministic: false" in message and "\n" not in message
    assert not torch.are_deterministic_algorithms_enabled()


def test_other_errors_pass_through_unchanged():
    with pytest.raises(RuntimeError, match="size mismatch|must match|shapes cannot be multiplied"):
        with deterministic(True, "sft.deterministic"):
            torch.zeros(2, 3) @ torch.zeros(2, 3)
    assert not torch.are_deterministic_algorithms_enabled()


def test_a_cublas_workspace_it_cannot_be_deterministic_with_is_refused_before_any_work(monkeypatch):
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":0:0")
    ran = []
    with pytest.raises(UserError, match=r"CUBLAS_WORKSPACE_CONFIG=:0:0.*unset it or set it to :4096:8"):
        with deterministic(True, "sft.deterministic"):
            ran.append(1)
    assert ran == [] and not torch.are_deterministic_algorithms_enabled()
