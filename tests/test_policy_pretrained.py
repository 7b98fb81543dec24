"""policy.pretrained: the seed starts from a released model, copied into step_0 unchanged."""

import pytest
import torch
from transformers import AutoModelForCausalLM

from audiobook_rl.errors import UserError
from audiobook_rl.policy.build import copy_pretrained

from helpers.policy import shared_tiny_policy


def test_a_local_model_is_copied_with_identical_weights(tmp_path_factory, tmp_path):
    source = shared_tiny_policy(tmp_path_factory)
    copy_pretrained(str(source), str(tmp_path / "step_0"))
    a = AutoModelForCausalLM.from_pretrained(source).state_dict()
    b = AutoModelForCausalLM.from_pretrained(tmp_path / "step_0").state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert (tmp_path / "step_0" / "tokenizer.json").is_file()


def test_an_unloadable_model_names_the_key(tmp_path):
    with pytest.raises(UserError, match="config key 'policy.pretrained': cannot load"):
        copy_pretrained(str(tmp_path / "missing"), str(tmp_path / "out"))
